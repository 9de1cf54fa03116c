"""Helpers of the reliability suite (`tests/test_reliability_*.py`): shared test
utilities in `common`, and scripts the tests run as real subprocesses."""
