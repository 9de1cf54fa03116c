"""The benchmark harness: `python -m benchmarks run --memories N --queries Q`."""
