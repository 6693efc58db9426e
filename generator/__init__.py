"""The responses-stream generator: YAML state machines in, a typed Python package out."""
