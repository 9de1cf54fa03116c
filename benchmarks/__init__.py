"""The benchmark entry point, reports and micro-benchmarks of a checkout (not installed:
the harness itself is `cortex.bench`)."""
