"""The pytest plugin shim, written beside the generated package as a top-level module."""
