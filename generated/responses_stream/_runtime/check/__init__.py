"""The conformance kit: scenarios driven against a live Responses endpoint, each answer
judged by the validator, the strict openai SDK and the accumulator (``responses-stream
check URL``, and the pytest plugin).  Needs the ``check`` extra (the openai SDK).

Imports ``consumers`` and ``core``; never ``inputs``, ``gateway`` or ``cli``.
"""
