"""tests/test_reliability_concurrency.py again, on PostgreSQL (the mapping:
tests/backends.py): reader threads beside a writer thread never see a torn bundle,
and a second writer handle gets StoreLocked. The process tests hand directory paths
to helper scripts; tests/test_backends_leases.py runs their PostgreSQL counterparts."""

import pytest

from test_reliability_concurrency import *  # noqa: F403 - the suite's tests and fixtures, collected again here

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY = {
    "test_writer_process_and_two_reader_processes":
        "the helper processes are given directory paths (tests/test_backends_leases.py has the PostgreSQL readers)",
    "test_second_writer_process_gets_store_locked":
        "the child process is given the directory path (tests/test_backends_leases.py has two writer processes)",
}
