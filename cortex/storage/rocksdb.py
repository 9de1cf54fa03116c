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
  becomes `StoreLocked`. RocksDB's lock is an fcntl lock, which a process never
  conflicts with itself on, and RocksDB remembers the files it locked by the path as
  spelled: "store", "./store", a trailing "/" or a symlink opened a second writer in
  the same process, and two writers' compactions deleted each other's files. So a
  writer also claims the folder's identity (device and inode) in a per-process
  registry, `_Writers`, before RocksDB opens it.
* Followers (`mode="r"`) are secondary instances in a private folder. A secondary
  follows plain WAL appends with `try_catch_up_with_primary()`, but one that opens or
  catches up while the writer flushes, compacts or starts a new MANIFEST can keep a
  torn view (keys written long before missing from it), so when the writer's WAL set,
  MANIFEST or CURRENT changed meanwhile the instance is replaced by a fresh one.

Length: over the ~600 lines a module keeps to, on purpose: everything that knows
rocksdict or RocksDB is here by design, so each trap stays beside the code that works
around it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

from rocksdict import (
    AccessType,
    BlockBasedOptions,
    BottommostLevelCompaction,
    Cache,
    CompactOptions,
    DBCompressionType,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)

from ..errors import CorruptRecord, NotAStore, NotFound, StoreError, StoreLocked
from ..records import prefix_end
from . import Batch, Reads

# Fresh secondary instances a catch-up tries while the writer keeps flushing.
_MAX_REOPENS = 5
# How long a follower's open keeps trying for a whole first view while the writer's
# flushes overlap every attempt (an attempt takes 11-18 ms at 10M memories; a writer
# loading in bulk flushes about every 1.5 s).
_OPEN_PATIENCE_S = 5.0

# The writer starts a new MANIFEST (the log of every flush and compaction, which a
# follower's open replays whole) once the current one passes this size. RocksDB's
# default (1 GB) let it grow with the writer's life: beside a writer that had flushed
# 1,200 times it held ~225 KB, a cold follower process at 10M memories took 331-362 ms
# and a reader's reopen after a flush 174 ms; at 32 KB, 176-198 ms and 11 ms
# (benchmarks/RESULTS.md, eleventh pass). A follower that opens while the writer
# switches files is told by its files' signature (inodes included: CURRENT is
# replaced by a rename) and opens again.
_MAX_MANIFEST_BYTES = 32 << 10

_SECONDARY_PREFIX = "cortex-secondary-"
_SECONDARY_RE = re.compile(rf"{_SECONDARY_PREFIX}(\d+)-")

# How long after the folder's time its entries must have been read for that time to
# vouch that no file came or went since (`RocksStorage._known_files_signature`).
_FOLDER_TIME_MARGIN_NS = 2_000_000_000

# Files a RocksDB directory always has; a folder holding one of them is a store.
_STORE_MARKER = "CURRENT"

# A follower's record of the writer's WAL files, MANIFEST and CURRENT: (name, size,
# time, inode) each, sorted by name.
_Files = tuple[tuple[str, int, int, int], ...]

# Level-0 files that start a compaction into the levels below (RocksDB's default: 4).
# Every flush writes one level-0 file spanning all key prefixes, so each such
# compaction rewrites the whole base level (~210 MB at 10M memories). Starting it at 8
# files halves how often that happens: a 10M build's compactions wrote 34.6 GB in
# 338 s instead of 46.7 GB in 421 s, a 1M build's 1.8 GB instead of 2.9 GB
# (benchmarks/RESULTS.md, ninth pass). Readers look through up to 7 level-0 files
# instead of 3, which neither a follower's cold start nor a reader beside a writer
# showed, but a store at rest keeps them; `compact()` (`optimize()`) merges them.
_LEVEL0_COMPACTION_TRIGGER = 8

# How often `compact()` looks whether RocksDB has merged level 0.
_COMPACTION_POLL_S = 0.02


class _Writers:
    """The store folders this process has open for writing, by device and inode.

    The identity of a folder is the same however its path is spelled, so a second
    writer in this process is refused like one in another process (RocksDB's own lock
    cannot see it: the module docstring says why). A claim is released when the writer
    closes or its open fails.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[int, int], str] = {}

    def claim(self, path: str) -> tuple[int, int]:
        st = os.stat(path)
        identity = (st.st_dev, st.st_ino)
        with self._lock:
            holder = self._held.get(identity)
            if holder is not None:
                raise StoreLocked(_locked_message(path, f"another handle of this process (opened as {holder!r})"))
            self._held[identity] = path
        return identity

    def release(self, identity: tuple[int, int]) -> None:
        with self._lock:
            self._held.pop(identity, None)


_WRITERS = _Writers()


def _locked_message(path: str, holder: str) -> str:
    return f'store {path!r} is open for writing by {holder}; open it with mode="r" to read beside the writer'


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


def _options(cache: Cache, create: bool) -> Options:
    """The options that paid off (ROCKSDB-NOTES): raw mode, LZ4, a bloom filter, a
    block cache sized to the working set, level-0 compactions of 8 files, a short
    MANIFEST.

    Index and filter blocks live in the block cache too, read when a read first needs
    them. Otherwise an open reads those blocks of every table file first: 265 ms of
    the 290 ms a follower took to open a 10M-memory store (163 files), against 17 ms.
    (Partitioned index and filters would make a file's first touch cheaper still,
    but cost warm calls: 1M mix p50 1.50-1.63 ms against 1.30-1.47 in the eighth
    pass; at 10M in the seventeenth, a cold process's first call 15.5 -> 5 ms, the
    warm pass's p99 2.9 -> 3.0-3.6 ms. Dropping the last level's bloom filters saved
    1% of the disk; ingest and reads moved within the noise: benchmarks/RESULTS.md.)
    """
    opts = Options(raw_mode=True)
    opts.create_if_missing(create)
    opts.set_compression_type(DBCompressionType.lz4())
    opts.set_level_zero_file_num_compaction_trigger(_LEVEL0_COMPACTION_TRIGGER)
    opts.set_max_manifest_file_size(_MAX_MANIFEST_BYTES)
    table = BlockBasedOptions()
    table.set_bloom_filter(10, False)
    table.set_block_cache(cache)
    table.set_cache_index_and_filter_blocks(True)
    opts.set_block_based_table_factory(table)
    return opts


def _open_db(path: str, cache: Cache, secondary: str | None) -> Rdict:
    opts = _options(cache, create=secondary is None)
    if secondary is not None:
        opts.set_max_open_files(-1)  # required by secondary instances
        # A secondary loads table files in the thread that opens or catches up. With
        # RocksDB's default of 16 loader threads, every catch-up started and joined
        # threads, new files or not: an idle catch-up took 0.65-0.75 ms instead of
        # 0.04-0.15 ms, and several ms while a writer kept both cores busy.
        opts.set_max_file_opening_threads(1)
        access = AccessType.secondary(secondary)
    else:
        access = AccessType.read_write()
    try:
        return Rdict(path, opts, column_families={"default": opts}, access_type=access)
    except Exception as exc:
        if secondary is not None and str(exc).startswith(_TRY_AGAIN):
            raise _WriterSwitched(f"cannot open store {path!r}: {exc}") from None
        if "lock" in str(exc).lower():
            raise StoreLocked(_locked_message(path, "another process")) from None
        raise StoreError(f"cannot open store {path!r}: {exc}") from None


# How RocksDB's TryAgain status reads: a secondary's open gets it when the writer
# switched to a new MANIFEST and deleted the one the open was replaying.
_TRY_AGAIN = "Operation failed. Try again."


class _WriterSwitched(StoreError):
    """A secondary's open overlapped the writer's switch to a new MANIFEST: like an
    open that a flush overlapped, it is made again (`_open_whole_secondary`,
    `catch_up`), and only a caller out of attempts sees it, as a `StoreError`."""


_CONFIG_FILE = "rocksdict-config.json"  # rocksdict's own, rewritten by every open


def _linked_view(store: str, folder: str) -> str:
    """`folder`/view: a link to each file of the store folder but rocksdict's config
    and RocksDB's LOCK (a secondary opens the view, writes the config there, and
    reads the store's files through the links)."""
    view = os.path.join(folder, "view")
    os.mkdir(view)
    for name in os.listdir(store):
        if name not in (_CONFIG_FILE, "LOCK"):
            os.symlink(os.path.join(os.path.abspath(store), name), os.path.join(view, name))
    return view


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
        # Whether secondaries open through a view of links (`_open_in`): the store
        # folder could not be written.
        self._through_view = False
        self._files_seen: _Files = ()
        self._folder_seen = (-1, 0)  # the folder's time and when its entries were read
        self._closed = False
        # One compact() at a time: each sets RocksDB's level-0 trigger back when it
        # ends, which would leave another still waiting under a trigger of 8.
        self._compacting = threading.Lock()
        self._claim: tuple[int, int] | None = None
        if read_only:
            _remove_stale_secondaries()
            self.db = self._open_whole_secondary()
        else:
            self.db = self._open_writer()
        self._write_opts = WriteOptions()
        self._write_opts.sync = sync
        self._multi_get_opts = ReadOptions()
        self._multi_get_opts.set_async_io(True)

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.db.close()
        finally:
            self._drop_secondary_folder()
            if self._claim is not None:
                _WRITERS.release(self._claim)
                self._claim = None

    def _open_writer(self) -> Rdict:
        """Claim the folder for this process (`_Writers`), then open it. The folder is
        made first so that it has an identity to claim; one this open made is removed
        again when the open fails, so a failed open leaves nothing behind."""
        made = not os.path.exists(self.location)
        if made:
            try:
                os.makedirs(self.location)
            except OSError as exc:  # a file where a parent folder should be, no permission, ...
                raise StoreError(f"cannot open store {self.location!r}: {exc.strerror or exc}") from None
        try:
            self._claim = _WRITERS.claim(self.location)
            try:
                return _open_db(self.location, self._cache, None)
            except BaseException:
                _WRITERS.release(self._claim)
                self._claim = None
                raise
        except BaseException:
            if made:
                with contextlib.suppress(OSError):
                    os.rmdir(self.location)
            raise

    def _open_whole_secondary(self) -> Rdict:
        """A follower's first view, opened again while the writer's flushes overlap
        the open (or its switch to a new MANIFEST makes RocksDB's open fail): the
        engine reads the store's identity from it at once, and a torn one could lack
        it. After `_OPEN_PATIENCE_S` of overlapped attempts, `StoreError`. A failed
        open leaves no secondary folder behind."""
        deadline = time.monotonic() + _OPEN_PATIENCE_S
        attempts = 0
        try:
            while True:
                seen = self._files_signature()
                attempts += 1
                try:
                    db: Rdict | None = self._open_secondary()
                except _WriterSwitched:
                    db = None  # overlapped as a flush does
                if db is not None:
                    if not _flush_happened(seen, self._files_signature()):
                        self._files_seen = seen
                        return db
                    db.close()
                if time.monotonic() > deadline:
                    raise StoreError(f"cannot open store {self.location!r} for reading: the writer flushed or compacted "
                                     f"during each of {attempts} attempts over {_OPEN_PATIENCE_S:.0f} s")
        except BaseException:
            self._drop_secondary_folder()
            raise

    def _open_secondary(self) -> Rdict:
        folder = tempfile.mkdtemp(prefix=f"{_SECONDARY_PREFIX}{os.getpid()}-")
        try:
            db = self._open_in(folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        self._drop_secondary_folder()
        self._secondary = folder
        return db

    def _open_in(self, folder: str) -> Rdict:
        """A secondary instance whose own files go to `folder`. rocksdict writes
        `rocksdict-config.json` into the folder it opens, every time; when the store
        folder is not this process's to write (a reader restricted by file
        permissions), the instance opens a view of it instead: a folder of links to
        the store's files, made afresh for each instance (`_linked_view`)."""
        if not self._through_view:
            try:
                return _open_db(self.location, self._cache, folder)
            except StoreError as exc:
                if "Permission denied" not in str(exc):
                    raise
                self._through_view = True
        view = _linked_view(self.location, folder)
        try:
            return _open_db(view, self._cache, folder)
        except _WriterSwitched:
            raise
        except StoreError as exc:
            if "No such file" in str(exc):  # the writer replaced a file after the links were made
                raise _WriterSwitched(str(exc)) from None
            raise

    def _drop_secondary_folder(self) -> None:
        if self._secondary:
            shutil.rmtree(self._secondary, ignore_errors=True)
            self._secondary = None

    # -- reads and writes --------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        try:
            return cast("bytes | None", self.db.get(key))
        except Exception as exc:
            raise _translated(key, exc) from None

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """With `async_io`, RocksDB reads the blocks of a batch that are not in its
        cache together: the ~44 heads a call returns took 2.4-4.6 ms instead of
        3.2-5.6 when none was in memory (four pairs), and the same ~80 µs when all
        were."""
        try:
            return cast("list[bytes | None]", self.db.get(list(keys), read_opt=self._multi_get_opts)) if keys else []
        except Exception as exc:
            raise _translated(keys[0], exc) from None

    def write(self, puts: Batch) -> None:
        """Write `puts` atomically, in key order: RocksDB inserts a batch into its
        memtable in the batch's order, and a follower replays it the same way, so in
        key order each insert starts beside the last. A 1,000-memory batch (8,800
        keys) wrote in 7.5 ms instead of 12.5, and a follower caught up on it in
        8.6 ms instead of 13; the sort costs under 2 ms."""
        batch = WriteBatch(raw_mode=True)
        for key in sorted(puts):
            value = puts[key]
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        try:
            self.db.write(batch, self._write_opts)
        except Exception as exc:
            raise _translated(next(iter(puts), b""), exc) from None

    def scan_values(self, prefix: bytes, key_of: Callable[[bytes], bytes] | None = None) -> list[bytes]:
        """Consumed in C (a Python generator here cost more than the scan itself);
        with `key_of` the scan reads values only, 30% faster than with the keys."""
        ro = ReadOptions()
        ro.set_iterate_upper_bound(prefix_end(prefix))
        try:
            if key_of is not None:
                values = cast("list[bytes]", list(self.db.values(from_key=prefix, read_opt=ro)))
                self._check_scan_end(prefix, key_of(values[-1]) if values else None)
                return values
            items = list(_raw_items(self.db.items(from_key=prefix, read_opt=ro)))
        except CorruptRecord:
            raise
        except Exception as exc:
            raise _translated(prefix, exc) from None
        self._check_scan_end(prefix, items[-1][0] if items else None)
        return [value for _, value in items]

    def scan_items(self, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        ro = ReadOptions()
        ro.set_iterate_upper_bound(prefix_end(prefix))
        last = None
        try:
            for last, value in _raw_items(self.db.items(from_key=start or prefix, read_opt=ro)):
                yield last, value
        except Exception as exc:
            raise _translated(prefix, exc) from None
        self._check_scan_end(start or prefix, last)

    def _check_scan_end(self, prefix: bytes, last: bytes | None) -> None:
        """Raise if a scan that ended after `last` ended on an error, not at its bound.

        rocksdict's bulk iterators stop quietly when RocksDB finds a corrupt block;
        the iterator's status says so but is not exposed. So one raw iterator seeks
        to where the scan stopped and steps once: on a corrupt block its status is an
        error. (Finding a key there is not one: a write may have landed since.)
        """
        ro = ReadOptions()
        ro.set_iterate_upper_bound(prefix_end(prefix))
        try:
            it = self.db.iter(ro)
            if last is None:
                it.seek(prefix)
            else:
                it.seek(last)
                if it.valid():
                    it.next()
            it.status()
        except Exception as exc:
            raise _translated(last or prefix, exc) from None

    def scan_items_backward(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        try:
            for key, value in _raw_items(self.db.items(backwards=True, from_key=prefix_end(prefix))):
                if not key.startswith(prefix):
                    if key < prefix:
                        return
                    continue  # from_key itself, when it exists, is past the prefix
                yield key, value
        except Exception as exc:
            raise _translated(prefix, exc) from None

    def last_key(self, prefix: bytes) -> bytes | None:
        return next((key for key, _ in self.scan_items_backward(prefix)), None)

    def view(self) -> AbstractContextManager[None]:
        # In-process writes are held off by the engine's readers-writer lock, and a
        # follower's view moves only in catch_up(): nothing to do here.
        return contextlib.nullcontext()

    def flush(self) -> None:
        """Flush the memtable to SST files (tests and tools that read the files)."""
        self.db.flush()

    def prefetch(self, reads: Reads) -> None:
        """Nothing: a local read costs microseconds, the same one by one."""

    def lag(self) -> float | None:
        return None  # a follower catches up when asked: it has no replay to report on

    def compact(self) -> int:
        """Flush the memtable and merge level 0 into the levels below; return how many
        files level 0 held. (A follower has nothing of its own to compact: 0.)

        Every flush writes a level-0 file spanning every key prefix, and the writer
        lets up to 7 gather (`_LEVEL0_COMPACTION_TRIGGER`), so each seek, one per
        scan, looks into all of them. A 1M-memory store that its bulk load and
        `optimize()` left with 6 took 25 µs for a backward scan of a small prefix
        against 6 with none, and 0.73 ms for a warm `context()` at the median
        against 0.55 (benchmarks/RESULTS.md, fourteenth pass).

        RocksDB's own level-0 compaction does the merge, started by a trigger of 1
        file for the duration: it rewrites level 0 and the base level only (4 s at
        1M), where a manual compaction of the whole key range would rewrite every
        level (11 s). Returns once no file that level 0 held at the call is left in
        it (what RocksDB then schedules below runs on in the background, and files a
        writer flushes meanwhile need not wait), or when the handle is closed
        meanwhile.
        """
        if self.read_only:
            return 0
        with self._compacting:
            return self._compact_level0()

    def purge(self) -> None:
        """Flush the memtable (the WAL that held the deleted values is then obsolete and
        removed) and compact the whole key range down to the last level, forced, so
        that no file keeps a deleted value or its tombstone's shadowed bytes."""
        if self.read_only:
            return
        with self._compacting:
            try:
                self.db.flush()
                options = CompactOptions()
                options.set_exclusive_manual_compaction(True)
                options.set_bottommost_level_compaction(BottommostLevelCompaction.force())
                self.db.compact_range(None, None, options)
                self.db.flush_wal(True)
            except Exception as exc:
                raise StoreError(f"cannot purge {self.location!r}: {exc}") from None

    def _compact_level0(self) -> int:
        try:
            self.db.flush()
            level0 = self._level0_files()
            if not level0:
                return 0
            errors = self.db.property_int_value("rocksdb.background-errors")
            self.db.set_options({"level0_file_num_compaction_trigger": "1"})
            try:
                while level0 & self._level0_files():
                    if self.db.property_int_value("rocksdb.background-errors") != errors:
                        raise StoreError(f"RocksDB failed to compact {self.location!r}; see its LOG file")
                    time.sleep(_COMPACTION_POLL_S)
            finally:
                if not self._closed:
                    self.db.set_options({"level0_file_num_compaction_trigger": str(_LEVEL0_COMPACTION_TRIGGER)})
        except StoreError:
            raise
        except Exception as exc:
            if self._closed:
                return 0  # closed by another thread meanwhile
            raise StoreError(f"cannot compact {self.location!r}: {exc}") from None
        return len(level0)

    def _level0_files(self) -> set[str]:
        return {file["name"] for file in self.db.live_files() if file["level"] == 0}

    def all_items(self) -> dict[bytes, bytes]:
        """Every key and value of the store (tests and tools; small stores)."""
        return dict(_raw_items(self.db.items()))

    # -- following the writer (mode "r") -----------------------------------------

    def _files_signature(self) -> _Files:
        """Names, sizes, times and inodes of the writer's WAL and MANIFEST files and
        of CURRENT: when they have not changed, the writer has committed nothing new.
        (CURRENT is replaced by a rename, and the new one can have the old one's size
        and, within a tick of the clock, its time; never its inode.) Reads the
        folder's entries (and notes its time, for `_known_files_signature`)."""
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
                    sig.append((e.name, st.st_size, st.st_mtime_ns, st.st_ino))
        return tuple(sorted(sig))

    def _known_files_signature(self) -> _Files:
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
        for name, *_ in self._files_seen:
            try:
                st = os.stat(os.path.join(self.location, name))
            except FileNotFoundError:
                return self._files_signature()
            sig.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
        return tuple(sig)

    def writer_moved(self) -> bool:
        return self.read_only and self._known_files_signature() != self._files_seen

    def catch_up(self, reopen: bool = False) -> bool:
        """Catch up with the writer: a plain catch-up after WAL appends, a fresh
        secondary instance (~20 ms at 1M) after a flush or when `reopen` asks.
        False when a flush overlapped every attempt, or the writer's switch to a new
        MANIFEST failed every reopen (the instance before them stays, and the next
        catch-up reopens)."""
        if not self.read_only:
            return True
        # Through a view, files the writer made since are not linked: a fresh instance.
        reopen = reopen or self._through_view or _flush_happened(self._files_seen, self._files_signature())
        seen = self._files_seen
        for _ in range(_MAX_REOPENS):
            signature = self._files_signature()  # before: a write during catch-up shows next time
            if reopen:
                try:
                    fresh = self._open_secondary()
                except _WriterSwitched:
                    continue  # the old instance stays, and so do `reopen` and the files it saw
                old, self.db = self.db, fresh
                old.close()
            else:
                try:
                    self.db.try_catch_up_with_primary()
                except Exception as exc:
                    if not str(exc).startswith(_TRY_AGAIN):
                        raise _translated(b"", exc) from None
                    reopen = True  # the writer switched MANIFESTs under it: a fresh instance next
                    continue
            seen = signature
            # A flush that began while we read may have left this view torn.
            reopen = _flush_happened(seen, self._files_signature())
            if not reopen:
                break
        self._files_seen = seen
        return not reopen


def _raw_items(items: Any) -> Iterator[tuple[bytes, bytes]]:
    """rocksdict's items in raw mode are (bytes, bytes); its stubs say any value."""
    return cast("Iterator[tuple[bytes, bytes]]", iter(items))


def _flush_happened(before: _Files, after: _Files) -> bool:
    """Whether the writer flushed or compacted between two file signatures: WAL files
    came or went, or the MANIFEST or CURRENT changed (plain writes only grow the
    current WAL)."""
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
