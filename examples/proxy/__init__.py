"""Example: a Chat Completions <-> Responses proxy built on responses_stream."""
