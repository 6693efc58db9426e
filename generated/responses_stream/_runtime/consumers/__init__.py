"""Consumers: a Responses stream read into something else.

The conformance validator (``validate``), the accumulator that folds a stream into
its final Response (``accumulate``) and the adapter back to Chat Completions chunks
(``to_chat``).  Imports ``core`` only; never ``inputs``, ``gateway`` or ``cli``.
"""
