"""erase() on PostgreSQL: the erased rows leave the table files. (tests/test_erase.py runs
on both backends through tests/backends.py; this test reads the server's own files.)"""

import time

import cortex


def test_on_postgresql_the_erased_rows_leave_the_table_files(pg_server, pg_actor):
    """After erase() (rows deleted, the table vacuumed) and a checkpoint, no file of
    the database's tables holds the text; the server's WAL still may (docs/trust.md)."""
    import psycopg

    SECRET = "Zt4Yq8Wn2Kd6Xp0Lm5Rb9Hs3Jv7Cf1Ga"  # this test's own: the suite's other tests keep theirs

    def holders() -> list[str]:
        base = pg_server.folder / "data" / "base"
        return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes())

    def checkpoint() -> None:
        with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
            conn.execute("CHECKPOINT")

    with cortex.open(pg_server.dsn, actor=pg_actor) as c:
        uri = c.write(cortex.Fact(statement=f"card {SECRET}", subject="s", predicate="p"))
        checkpoint()
        assert holders()
        c.erase(uri, "forget the card")
        # VACUUM cannot remove rows that an older snapshot may still see, and another
        # session of the shared test server can hold one for a moment (one CI run out
        # of three found the rows still there). So the store's own purge, the step
        # erase() ends with, runs again until no such snapshot is left: bounded, and
        # without it nothing ever removes the rows (autovacuum ignores a few dead rows).
        for _ in range(50):
            checkpoint()
            if not holders():
                break
            time.sleep(0.2)
            c._engine.storage.purge()
        assert holders() == [], _snapshots(pg_server.dsn)
        assert c.verify() == []


def _snapshots(dsn: str) -> list[tuple[object, ...]]:
    """The other sessions and their snapshots' horizons, for the failure message."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT pid, state, backend_xmin, xact_start, left(query, 60) FROM pg_stat_activity "
                            "WHERE pid <> pg_backend_pid() AND datname = current_database()").fetchall()
