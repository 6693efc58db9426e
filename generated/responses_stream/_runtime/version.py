"""The project's version: the one place it is written.

The generator reports it, the generated package exports it as
``responses_stream.__version__`` and both packages' metadata carry it.
"""

__version__ = "0.2.0"
