"""tests/test_import_in_progress.py again, on PostgreSQL (the mapping: tests/backends.py)."""

import pytest

from test_import_in_progress import *  # noqa: F403 - the suite's tests and fixtures, collected again here

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY: dict[str, str] = {}
