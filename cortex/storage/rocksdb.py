"""The RocksDB backend: one directory per store, through rocksdict in raw mode.

Everything that knows about rocksdict or RocksDB lives here, with the traps of the
shared ROCKSDB-NOTES that the code works around stated beside the code:

* Reopening a store ignores the Options passed for the default column family unless
  they are passed again for it (trap 1): `_options()` does.
* A `ReadOptions` with an iterate bound must stay referenced until its iterator is
  used up (trap 5): the scans below hold it in their frame.
* `set_iterate_lower_bound` behaves as an upper bound in rocksdict 0.3.29, so
  backward scans stop on the prefix themselves.
* Bulk iterators stop quietly at a corrupt block: `_check_scan_end` probes where a
  scan stopped.
* One writer: RocksDB's LOCK file. A second read-write open fails with "lock", which
  becomes `StoreLocked`.
* Followers (`mode="r"`) are secondary instances in a private folder. A secondary
  follows plain WAL appends with `try_catch_up_with_primary()`, but one that catches
  up across the writer's memtable flush can keep a torn view, so when the writer's
  WAL set or MANIFEST changed it is replaced by a fresh instance instead.
* Column families (`FAMILIES`): the canonical records whose keys only grow live in
  families of their own, so compaction does not rewrite them. Which family a key
  lives in is decided in one place, `_Families`.
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

from rocksdict import (
    AccessType,
    BlockBasedOptions,
    Cache,
    DBCompressionType,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)

from ..errors import CorruptRecord, NotAStore, NotFound, StoreError, StoreLocked
from ..records import HEAD_PREFIX, VERSION_PREFIX, prefix_end
from . import Batch

# Column families, and the key prefix each one holds; every other key (the indexes,
# the journal, the salience records, the settings) lives in RocksDB's "default" family.
#
# Why: heads and versions are keyed by id, and a new memory's id is larger than
# every one before it, so each family's keys arrive in ascending order, apart from
# the few an update rewrites. A file flushed from such a family overlaps nothing
# already stored in it, and RocksDB moves it down the levels without rewriting it.
# Mixed with the index keys, which land all over the key space, every flushed file
# overlapped everything below it, and compaction rewrote each byte about five
# times: at 10M memories, ~430 s of compaction CPU on a two-core machine while a
# bulk load ran. Heads and versions are two thirds of a store's bytes.
#
# Why only these two: a flush writes one table file per family and the families
# never merge their files, so every family adds files a follower must open. Each
# of these two fills its memtable at about the rate "default" does (~750 bytes a
# memory each), so one flush gives three full files. Journal entries (200 bytes a
# memory) and salience records (34) in families of their own made five files a
# flush, most of them small: 706 table files at 10M memories instead of 156.
#
# A store made before the families existed keeps everything in "default" and is
# read and written that way (`_Families.split` is false); `cortex migrate` copies it
# into a new store that has them.
FAMILIES: tuple[tuple[str, bytes], ...] = (
    ("heads", HEAD_PREFIX),
    ("versions", VERSION_PREFIX),
)
_DEFAULT_FAMILY = "default"

# The most WAL the writer keeps before it flushes every family. A WAL file lives
# until every family that wrote to it has flushed, and a follower that opens afresh
# replays every live WAL file. A bulk load fills "default" first (a flush every
# ~65,000 memories, ~150 MB of WAL), so this bound does not add flushes there; it
# caps the WAL when a family is written rarely (updates that touch heads and the
# indexes but write no version), which would otherwise pin WAL files until RocksDB's
# own bound of four times all memtables (1.5 GB).
_MAX_TOTAL_WAL_BYTES = 256 << 20

# Fresh secondary instances a catch-up tries while the writer keeps flushing.
_MAX_REOPENS = 5
_SECONDARY_PREFIX = "cortex-secondary-"
_SECONDARY_RE = re.compile(rf"{_SECONDARY_PREFIX}(\d+)-")

# How long after the folder's time its entries must have been read for that time to
# vouch that no file came or went since (`RocksStorage._known_files_signature`).
_FOLDER_TIME_MARGIN_NS = 2_000_000_000

# Files a RocksDB directory always has; a folder holding one of them is a store.
_STORE_MARKER = "CURRENT"


def open_rocksdb(path: str, *, read_only: bool, cache_mb: int, sync: bool) -> RocksStorage:
    """Open the store directory at `path` as its writer or as a follower.

    A writer creates the store when the folder does not exist or is empty and
    refuses (`NotAStore`) a folder that holds other things; a follower needs an
    existing store (`NotFound`).
    """
    has_store = os.path.exists(os.path.join(path, _STORE_MARKER))
    if read_only and not has_store:
        raise NotFound(f"no cortex store at {path!r}")
    if not read_only and not has_store and os.path.isdir(path):
        found = sorted(os.listdir(path))
        if found:
            shown = ", ".join(found[:3]) + (", …" if len(found) > 3 else "")
            raise NotAStore(f"{path!r} is a non-empty folder that holds no cortex store (found {shown}); "
                            "give an empty or new folder")
    if not read_only and os.path.exists(path) and not os.path.isdir(path):
        raise NotAStore(f"{path!r} is a file, not a store folder")
    return RocksStorage(path, read_only=read_only, cache_bytes=cache_mb << 20, sync=sync)


def _options(cache: Cache, create: bool, split: bool = False) -> Options:
    """The options that paid off (ROCKSDB-NOTES): raw mode, LZ4, a bloom filter, a
    block cache sized to the working set.

    Index and filter blocks live in the block cache too, read when a read first needs
    them. Otherwise an open reads those blocks of every table file first: 265 ms of
    the 290 ms a follower took to open a 10M-memory store (163 files), against 17 ms.
    (Partitioned index and filters would make a file's first touch cheaper still,
    but cost warm calls ~10%: 1M mix p50 1.50-1.63 ms against 1.30-1.47.)
    """
    opts = Options(raw_mode=True)
    opts.create_if_missing(create)
    if split:
        opts.create_missing_column_families(create)
        opts.set_max_total_wal_size(_MAX_TOTAL_WAL_BYTES)
        # All families flush together, in one MANIFEST write: a follower reopens
        # when the MANIFEST changes, and families flushed one by one made it reopen
        # once for each (reader beside a writer at 1M: p99 19-21 ms became 36-39).
        opts.set_atomic_flush(True)
    opts.set_compression_type(DBCompressionType.lz4())
    table = BlockBasedOptions()
    table.set_bloom_filter(10, False)
    table.set_block_cache(cache)
    table.set_cache_index_and_filter_blocks(True)
    opts.set_block_based_table_factory(table)
    return opts


def _open_db(path: str, cache: Cache, secondary: str | None) -> _Families:
    split = _has_families(path, create=secondary is None)
    opts = _options(cache, create=secondary is None, split=split)
    if secondary is not None:
        opts.set_max_open_files(-1)  # required by secondary instances
        # A secondary loads table files in the thread that opens or catches up. With
        # RocksDB's default of 16 loader threads, every catch-up started and joined
        # threads for each column family, with or without new files: 0.7 ms for an
        # idle catch-up of one family, 3.5 ms for five; 0.04 and 0.06 ms without.
        opts.set_max_file_opening_threads(1)
        access = AccessType.secondary(secondary)
    else:
        access = AccessType.read_write()
    names = [_DEFAULT_FAMILY] + ([name for name, _ in FAMILIES] if split else [])
    try:
        # Options again for every family, "default" included (trap 1).
        db = Rdict(path, opts, column_families={name: opts for name in names}, access_type=access)
    except Exception as exc:
        if "lock" in str(exc).lower():
            raise StoreLocked(
                f"store {path!r} is open for writing by another process or handle; "
                'open it with mode="r" to read beside the writer'
            ) from None
        raise StoreError(f"cannot open store {path!r}: {exc}") from None
    return _Families(db, split)


def _has_families(path: str, create: bool) -> bool:
    """Whether the store at `path` keeps its canonical records in `FAMILIES`: a new
    store does; an existing one does when it was made with them."""
    if create and not os.path.exists(os.path.join(path, _STORE_MARKER)):
        return True
    try:
        names = set(Rdict.list_cf(path))
    except Exception as exc:
        raise StoreError(f"cannot open store {path!r}: {exc}") from None
    wanted = {name for name, _ in FAMILIES}
    if names == {_DEFAULT_FAMILY}:
        return False
    if names == wanted | {_DEFAULT_FAMILY}:
        return True
    raise StoreError(f"cannot open store {path!r}: its column families {sorted(names)} are not "
                     f"{sorted(wanted | {_DEFAULT_FAMILY})} (a cortex store) or just 'default' (an older one)")


class _Families:
    """An open instance's column families, and the one rule for where a key lives:
    in the family whose prefix it starts with (no family's prefix starts another's),
    else in "default". In a store without families everything is in "default"."""

    def __init__(self, db: Rdict, split: bool) -> None:
        self.split = split
        chosen = FAMILIES if split else ()
        # Index 0 is "default"; family i + 1 holds chosen[i]'s prefix.
        self.prefixes: tuple[bytes, ...] = tuple(prefix for _, prefix in chosen)
        self.dbs: list[Rdict] = [db] + [db.get_column_family(name) for name, _ in chosen]
        self.handles: list[Any] = [None] + [db.get_column_family_handle(name) for name, _ in chosen]
        self._by_lead = {prefix[:2]: i + 1 for i, prefix in enumerate(self.prefixes)}
        assert len(self._by_lead) == len(self.prefixes), "family prefixes must differ in their first two bytes"

    def of(self, key: bytes) -> int:
        """The index (in `dbs`) of the family `key` lives in."""
        i = self._by_lead.get(key[:2], 0)
        return i if i and key.startswith(self.prefixes[i - 1]) else 0

    def covering(self, prefix: bytes) -> list[int]:
        """The families that hold keys starting with `prefix`: the one family whose
        prefix it starts with, else "default" and every family whose prefix starts with it."""
        for i, own in enumerate(self.prefixes):
            if prefix.startswith(own):
                return [i + 1]
        return [0] + [i + 1 for i, own in enumerate(self.prefixes) if own.startswith(prefix)]

    def close(self) -> None:
        """Close the family handles, then the instance: any live handle keeps RocksDB open."""
        for db in self.dbs[1:]:
            db.close()
        self.handles.clear()
        self.dbs[0].close()
        self.dbs.clear()


def _remove_stale_secondaries() -> None:
    """Remove the secondary folders of processes that are gone (a follower that was
    never closed leaves its folder behind)."""
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        match = _SECONDARY_RE.match(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RocksStorage:
    """A raw-mode rocksdict handle: the store's writer, or a follower of it."""

    def __init__(self, path: str, *, read_only: bool, cache_bytes: int, sync: bool) -> None:
        self.location = path
        self.read_only = read_only
        self.live_reads = False  # a follower's view moves only in catch_up()
        # One block cache for every instance this handle opens: a follower's fresh
        # secondary finds the blocks its predecessor read (RocksDB keys cached blocks
        # by the table file's unique id, which a reopen does not change).
        self._cache = Cache(cache_bytes)
        self._secondary: str | None = None
        self._files_seen: tuple[tuple[str, int, int], ...] = ()
        self._folder_seen = (-1, 0)  # the folder's time and when its entries were read
        self._closed = False
        if read_only:
            _remove_stale_secondaries()
            self._files_seen = self._files_signature()
            self._families = self._open_secondary()
        else:
            self._families = _open_db(path, self._cache, None)
        self._write_opts = WriteOptions()
        self._write_opts.sync = sync

    @property
    def db(self) -> Rdict:
        """The instance itself (its "default" family)."""
        return self._families.dbs[0]

    @property
    def split(self) -> bool:
        """Whether the canonical records live in `FAMILIES` (stores made since they exist)."""
        return self._families.split

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._families.close()
        finally:
            self._drop_secondary_folder()

    def _open_secondary(self) -> _Families:
        folder = tempfile.mkdtemp(prefix=f"{_SECONDARY_PREFIX}{os.getpid()}-")
        try:
            families = _open_db(self.location, self._cache, folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        self._drop_secondary_folder()
        self._secondary = folder
        return families

    def _drop_secondary_folder(self) -> None:
        if self._secondary:
            shutil.rmtree(self._secondary, ignore_errors=True)
            self._secondary = None

    # -- reads and writes --------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        families = self._families
        try:
            return cast("bytes | None", families.dbs[families.of(key)].get(key))
        except Exception as exc:
            raise _translated(key, exc) from None

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """One multi-get per family the keys live in (a call's survivors are all heads: one)."""
        if not keys:
            return []
        families = self._families
        try:
            if not families.split:
                return cast("list[bytes | None]", self.db.get(list(keys)))
            groups: dict[int, list[int]] = {}
            for i, key in enumerate(keys):
                groups.setdefault(families.of(key), []).append(i)
            if len(groups) == 1:
                return cast("list[bytes | None]", families.dbs[next(iter(groups))].get(list(keys)))
            found: list[bytes | None] = [None] * len(keys)
            for family, places in groups.items():
                for i, value in zip(places, families.dbs[family].get([keys[i] for i in places]), strict=True):
                    found[i] = value
            return found
        except Exception as exc:
            raise _translated(keys[0], exc) from None

    def write(self, puts: Batch) -> None:
        """Write `puts` atomically, in key order: RocksDB inserts a batch into its
        memtable in the batch's order, and a follower replays it the same way, so in
        key order each insert starts beside the last. A 1,000-memory batch (8,800
        keys) wrote in 7.5 ms instead of 12.5, and a follower caught up on it in
        8.6 ms instead of 13; the sort costs under 2 ms. In key order, each family's
        keys are one run, found by bisection instead of a test per key, and the runs
        go into the batch in key order too."""
        families = self._families
        keys = sorted(puts)
        runs: list[tuple[int, int, Any]] = [(0, len(keys), None)]
        if families.split:
            runs = []
            for prefix, handle in zip(families.prefixes, families.handles[1:], strict=True):
                lo = bisect.bisect_left(keys, prefix)
                runs.append((lo, bisect.bisect_left(keys, prefix_end(prefix), lo), handle))
            runs.sort(key=lambda run: run[0])
            runs += [(lo, hi, None) for lo, hi in _gaps(runs, len(keys))]  # "default"
            runs.sort(key=lambda run: run[0])
        batch = WriteBatch(raw_mode=True)
        for lo, hi, handle in runs:
            for key in keys[lo:hi]:
                value = puts[key]
                if value is None:
                    batch.delete(key, handle)
                else:
                    batch.put(key, value, handle)
        try:
            self.db.write(batch, self._write_opts)
        except Exception as exc:
            raise _translated(next(iter(puts), b""), exc) from None

    def scan_values(self, prefix: bytes, key_of: Callable[[bytes], bytes] | None = None) -> list[bytes]:
        """Consumed in C (a Python generator here cost more than the scan itself);
        with `key_of` the scan reads values only, 30% faster than with the keys."""
        covering = self._families.covering(prefix)
        if len(covering) > 1:
            return [value for _, value in self.scan_items(prefix)]
        db = self._families.dbs[covering[0]]
        ro = _bounded(prefix)
        try:
            if key_of is not None:
                values = cast("list[bytes]", list(db.values(from_key=prefix, read_opt=ro)))
                _check_scan_end(db, prefix, key_of(values[-1]) if values else None)
                return values
            items = list(_raw_items(db.items(from_key=prefix, read_opt=ro)))
        except CorruptRecord:
            raise
        except Exception as exc:
            raise _translated(prefix, exc) from None
        _check_scan_end(db, prefix, items[-1][0] if items else None)
        return [value for _, value in items]

    def scan_items(self, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        scans = [_scan_items(self._families.dbs[i], prefix, start) for i in self._families.covering(prefix)]
        return scans[0] if len(scans) == 1 else heapq.merge(*scans)

    def scan_items_backward(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        scans = [_scan_items_backward(self._families.dbs[i], prefix) for i in self._families.covering(prefix)]
        return scans[0] if len(scans) == 1 else heapq.merge(*scans, reverse=True)

    def last_key(self, prefix: bytes) -> bytes | None:
        return next((key for key, _ in self.scan_items_backward(prefix)), None)

    def view(self) -> AbstractContextManager[None]:
        # In-process writes are held off by the engine's readers-writer lock, and a
        # follower's view moves only in catch_up(): nothing to do here.
        return contextlib.nullcontext()

    def flush(self) -> None:
        """Flush the memtables to SST files (tests and tools that read the files)."""
        for db in self._families.dbs:
            db.flush()

    def all_items(self) -> dict[bytes, bytes]:
        """Every key and value of the store (tests and tools; small stores)."""
        return dict(self.scan_items(b""))

    # -- following the writer (mode "r") -----------------------------------------

    def _files_signature(self) -> tuple[tuple[str, int, int], ...]:
        """Names, sizes and times of the writer's WAL and MANIFEST files: when they
        have not changed, the writer has committed nothing new. Reads the folder's
        entries (and notes its time, for `_known_files_signature`)."""
        try:
            folder = os.stat(self.location)
        except FileNotFoundError:
            folder = None
        self._folder_seen = (folder.st_mtime_ns if folder else -1, time.time_ns())
        sig = []
        with os.scandir(self.location) as it:
            for e in it:
                if e.name.endswith(".log") or e.name.startswith("MANIFEST") or e.name == "CURRENT":
                    try:
                        st = e.stat()
                    except FileNotFoundError:
                        continue  # the writer removed an obsolete WAL meanwhile
                    sig.append((e.name, st.st_size, st.st_mtime_ns))
        return tuple(sorted(sig))

    def _known_files_signature(self) -> tuple[tuple[str, int, int], ...]:
        """`_files_signature()`, from one stat per file already known when the
        folder's time says no file came or went since the last read of its entries
        (one stat of the folder: reading its entries cost 40 µs at 1M memories and
        100 µs at 10M, a twentieth of a warm call).

        A file's creation, removal or rename sets the folder's time, but file times
        are coarse (a tick of the kernel's clock, a second on some file systems): a
        file made in the same tick as the time noted would leave it unchanged. So
        the folder's time is trusted only when the entries were read well after it."""
        mtime, read_at = self._folder_seen
        try:
            folder = os.stat(self.location)
        except FileNotFoundError:
            return self._files_signature()
        if folder.st_mtime_ns != mtime or read_at - mtime < _FOLDER_TIME_MARGIN_NS:
            return self._files_signature()
        sig = []
        for name, _, _ in self._files_seen:
            try:
                st = os.stat(os.path.join(self.location, name))
            except FileNotFoundError:
                return self._files_signature()
            sig.append((name, st.st_size, st.st_mtime_ns))
        return tuple(sig)

    def writer_moved(self) -> bool:
        return self.read_only and self._known_files_signature() != self._files_seen

    def catch_up(self, reopen: bool = False) -> bool:
        """Catch up with the writer: a plain catch-up after WAL appends, a fresh
        secondary instance (~20 ms at 1M) after a flush or when `reopen` asks.
        False when a flush overlapped every attempt."""
        if not self.read_only:
            return True
        reopen = reopen or _flush_happened(self._files_seen, self._files_signature())
        seen = self._files_seen
        for _ in range(_MAX_REOPENS):
            seen = self._files_signature()  # before: a write during catch-up shows next time
            if reopen:
                old = self._families
                self._families = self._open_secondary()
                old.close()
            else:
                try:
                    self.db.try_catch_up_with_primary()
                except Exception as exc:
                    raise _translated(b"", exc) from None
            # A flush that began while we read may have left this view torn.
            reopen = _flush_happened(seen, self._files_signature())
            if not reopen:
                break
        self._files_seen = seen
        return not reopen


def _raw_items(items: Any) -> Iterator[tuple[bytes, bytes]]:
    """rocksdict's items in raw mode are (bytes, bytes); its stubs say any value."""
    return cast("Iterator[tuple[bytes, bytes]]", iter(items))


def _bounded(prefix: bytes) -> ReadOptions:
    """Read options that end a scan after `prefix`'s keys (the whole store for b""). The
    caller keeps them referenced until its iterator is used up (trap 5)."""
    ro = ReadOptions()
    if prefix:
        ro.set_iterate_upper_bound(prefix_end(prefix))
    return ro


def _scan_items(db: Rdict, prefix: bytes, start: bytes | None) -> Iterator[tuple[bytes, bytes]]:
    """`db`'s keys and values under `prefix`, from `start` (or the prefix's first key) on."""
    ro = _bounded(prefix)
    last = None
    try:
        for last, value in _raw_items(db.items(from_key=start or prefix, read_opt=ro)):
            yield last, value
    except Exception as exc:
        raise _translated(prefix, exc) from None
    _check_scan_end(db, start or prefix, last)


def _scan_items_backward(db: Rdict, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    try:
        items = db.items(backwards=True, from_key=prefix_end(prefix)) if prefix else db.items(backwards=True)
        for key, value in _raw_items(items):
            if not key.startswith(prefix):
                if key < prefix:
                    return
                continue  # from_key itself, when it exists, is past the prefix
            yield key, value
    except Exception as exc:
        raise _translated(prefix, exc) from None


def _check_scan_end(db: Rdict, prefix: bytes, last: bytes | None) -> None:
    """Raise if a scan that ended after `last` ended on an error, not at its bound.

    rocksdict's bulk iterators stop quietly when RocksDB finds a corrupt block;
    the iterator's status says so but is not exposed. So one raw iterator seeks
    to where the scan stopped and steps once: on a corrupt block its status is an
    error. (Finding a key there is not one: a write may have landed since.)
    """
    ro = _bounded(prefix)
    try:
        it = db.iter(ro)
        if last is None:
            it.seek(prefix)
        else:
            it.seek(last)
            if it.valid():
                it.next()
        it.status()
    except Exception as exc:
        raise _translated(last or prefix, exc) from None


def _gaps(runs: list[tuple[int, int, Any]], size: int) -> Iterator[tuple[int, int]]:
    """The stretches of `range(size)` that no run in `runs` (sorted) covers."""
    at = 0
    for lo, hi, _ in runs:
        if lo > at:
            yield at, lo
        at = max(at, hi)
    if at < size:
        yield at, size


def _flush_happened(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    """Whether the writer flushed between two file signatures: WAL files came or went,
    or the MANIFEST changed (plain writes only grow the current WAL)."""
    if {name for name, *_ in before} != {name for name, *_ in after}:
        return True
    return [e for e in before if not e[0].endswith(".log")] != [e for e in after if not e[0].endswith(".log")]


def _translated(key: bytes, exc: Exception) -> Exception:
    """A RocksDB failure as a cortex error: `CorruptRecord` (naming the key or prefix
    being read) when RocksDB found corruption (a checksum mismatch), else `StoreError`."""
    text = str(exc)
    if text.startswith("Corruption") or "checksum" in text.lower():
        return CorruptRecord(key, f"RocksDB reports corruption: {text[:300]}")
    return StoreError(f"RocksDB failed at {key!r}: {text[:300]}")
