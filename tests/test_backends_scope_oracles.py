"""tests/test_scope_oracles.py (scopes without oracles) again, on PostgreSQL (the mapping: tests/backends.py)."""

import pytest

from test_scope_oracles import *  # noqa: F403 - the suite's tests and fixtures, collected again here

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY = {
    "test_a_store_made_before_store_ids_gets_one_from_its_first_writer": "removes the id with RocksDB's own storage layer",
}
