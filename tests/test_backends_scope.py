"""tests/test_scope.py (scoped views) again, on PostgreSQL (the mapping: tests/backends.py)."""

import pytest

from test_scope import *  # noqa: F403 - the suite's tests and fixtures, collected again here

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY = {
    "test_refusals_from_a_reader_in_another_process": "the child process is given the directory path",
}
NO_STORE = {"test_fuzzed_bytes_raise_scope_invalid_only", "test_fuzzed_json_raises_scope_invalid_only"}
