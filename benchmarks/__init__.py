"""The benchmark suite behind ``make bench`` (``python -m benchmarks``)."""
