"""The gateway: a Responses API in front of a Chat Completions server, and back."""
