"""tests/test_store.py again, on PostgreSQL (the mapping: tests/backends.py)."""

import pytest

from test_store import *  # noqa: F403 - the suite's tests and fixtures, collected again here

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY = {
    "test_open_under_another_actor_raises_actor_mismatch":
        "a PostgreSQL database holds many actors: another actor's open() is another store, not a mismatch",
    "test_acknowledged_writes_survive_a_killed_process":
        "the child process is given the directory path (tests/test_backends_leases.py kills PostgreSQL writers)",
}
