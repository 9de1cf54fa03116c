"""tests/test_provenance.py (provenance on memories) again, on PostgreSQL (the mapping: tests/backends.py)."""

import pytest

from test_provenance import *  # noqa: F403 - the suite's tests and fixtures, collected again here

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY: dict[str, str] = {}
NO_STORE = {"test_a_provenance_record_decodes_to_what_was_written", "test_origin_checks_its_fields"}
