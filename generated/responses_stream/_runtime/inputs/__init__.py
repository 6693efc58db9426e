"""Inputs: what a model produced, turned into a Responses stream.

Chat Completions chunks (``chat``), Harmony segments and tokens (``harmony``,
``harmony_tokens``) and the public entry points that drive them, sync and async
(``api``).  Imports ``core`` only; never ``consumers``, ``gateway`` or ``cli``.
"""
