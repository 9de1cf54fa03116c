"""PostgreSQL's backward scan reads pages that grow (16, 128, then 1,000 rows): at every
size around a page boundary it gives every key once, last first, inside a view too."""

from __future__ import annotations

import pytest

from cortex.storage.postgres import open_postgres

pytest_plugins = ["pgfixture"]  # pg_dsn, pg_actor (a no-op once tests/conftest.py lists it)


@pytest.mark.parametrize("count", [0, 1, 15, 16, 17, 143, 144, 145, 1144, 1145])
def test_backward_scans_across_page_boundaries(pg_dsn, pg_actor, count) -> None:
    keys = [b"a/" + i.to_bytes(4, "big") for i in range(count)]
    s = open_postgres(pg_dsn, actor=pg_actor, read_only=False, sync=False)
    try:
        s.write({key: key[-2:] for key in keys} | {b"a.": b"after", b"A/": b"before"})
        assert list(s.scan_items_backward(b"a/")) == [(key, key[-2:]) for key in reversed(keys)]
        with s.view():
            newest = s.scan_items_backward(b"a/")
            assert [next(newest, None) for _ in range(3)] == [(k, k[-2:]) for k in keys[::-1][:3]] + [None] * (3 - min(3, count))
    finally:
        s.close()
