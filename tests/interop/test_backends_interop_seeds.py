"""tests/interop/test_interop_seeds_*.py again, on PostgreSQL (the mapping: tests/backends.py)."""

import pytest

from test_interop_seeds_contextos import *  # noqa: F403 - the suites' tests and fixtures, collected again here
from test_interop_seeds_events import *  # noqa: F403
from test_interop_seeds_fingerprint import *  # noqa: F403
from test_interop_seeds_pack import *  # noqa: F403

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY: dict[str, str] = {}
