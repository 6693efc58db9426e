"""The protocol core: one Responses stream's state, events and encoding.

The stream processor and the item state machines it drives (``processor``,
``stream``), SSE encoding and parsing (``sse``, ``sse_parse``), the wire dialects
and the strict checks of direct-API values (``dialect``, ``wire``), ids, limits,
errors, the chat shapes every layer reads (``convert``: usage, logprobs, tools) and
tool names as chat APIs take them (``tool_names``).  It imports only the standard
library, msgspec and the generated tables (through the package's ``DIALECTS``);
nothing here imports ``inputs``, ``consumers``, ``gateway`` or ``cli``.
"""
