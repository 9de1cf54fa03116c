"""tests/test_recall.py (the lexical index and find(near=...)) again, on PostgreSQL
(the mapping: tests/backends.py)."""

import pytest

from test_recall import *  # noqa: F403 - the suite's tests and fixtures, collected again here

pytest_plugins = ["pgfixture", "backends"]  # no-ops once tests/conftest.py lists them

pytestmark = pytest.mark.usefixtures("postgresql_stores")  # first among the module's fixtures

ROCKSDB_ONLY: dict[str, str] = {}
NO_STORE = {
    "test_the_analyzer_folds_case_splits_words_drops_stop_words_and_stems",
    "test_a_memory_is_indexed_by_every_string_of_its_data_and_its_tags",
}
