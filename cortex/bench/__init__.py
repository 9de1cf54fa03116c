"""The benchmark harness, shipped with the package so that `cortex bench` works from
an installed wheel: `workload` builds the synthetic agent store, `baselines` holds
the two implementations cortex is compared with (the original algorithm, and the
same design on SQLite), and `harness` runs and reports (`cortex bench`, or
`python -m benchmarks run` from a checkout). The checkout's `benchmarks/` folder
keeps the entry point, the reports (`benchmarks/results/`), RESULTS.md and the
pytest-benchmark micro-benchmarks.
"""
