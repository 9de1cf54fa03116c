"""Helper processes that render and count forms for large `write_many` batches.

Rendering a memory's three forms and counting their tokens is about half of what a
write costs, and tiktoken holds the GIL for most of it, so threads do not help.
With `cortex.open(..., ingest_helper=True)` a `write_many` of at least `MIN_BATCH`
memories hands that work to a helper process while the writer's thread builds the
records of the chunks already done: the two overlap on two cores.

How the work is shared: the writer queues the batch for the helper in chunks, each
as soon as its data records exist (so the helper starts while the writer makes the
rest), and consumes the answers in order; when the chunk it needs is not back yet,
it takes the last chunk that the helper has not received and does it itself
instead of waiting, so a slow or busy helper never makes a batch much slower than
working inline. The forms are the same either way: both run `cortex.forms.render_texts`
and `count_forms`, the helper on the data rebuilt from its record (as every read
rebuilds it).

A helper is a plain subprocess of `sys.executable` running `serve()` (not `multiprocessing`, whose
"spawn" children import the caller's `__main__` script again, and whose "fork" is
unsafe beside RocksDB's threads). It reads length-prefixed msgpack frames on stdin
and answers each on stdout, in order. The writer talks to it from its own thread,
with a non-blocking stdin and `select`, only between chunks (a second thread would
fight the writer for the GIL on every pipe read); so the writer never blocks on a
full pipe, and the helper at worst waits for the writer to read. A helper starts on
the first large batch, in the background: until it has said hello, batches are
done inline. If it dies, hangs or answers garbage, the handle works inline from
then on. A helper never touches the store, and exits when its stdin closes (the
handle closed, or the writer died).
"""

from __future__ import annotations

import collections
import os
import select
import struct
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

import msgpack

from .forms import Forms, Tokenizer, count_forms, render_texts
from .model import DATA_CLASSES, MemoryData, MemoryType

# What a chunk holds per memory: its data, `data.to_record()`, and the caller's forms.
_Item = tuple[MemoryData, list[Any], 'dict[str, str] | None']

# A batch smaller than this is counted inline: the hand-off would cost more than it saves.
MIN_BATCH = 256
# Chunks are small, so that a helper starts early, a chunk the writer takes back
# costs little, and the writer pumps the pipes often (after each chunk); three in
# flight keep a helper busy between two pumps without leaving the writer to wait
# long at the end of a batch (measured at 60k memories on two cores: chunks of 16
# with 3 in flight gave 20-21k memories/s, 32 with 6 19-20k, 128 with 2 17-18k).
CHUNK = 16
IN_FLIGHT = 3
# Pipes this large hold several chunks each way, so neither side waits for the
# other to come back to the pipe (Linux only; elsewhere the default).
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, named there from Python 3.10 on Linux only
# A helper that answers nothing for this long is taken for hung: killed, and the
# batch counted inline.
STALL_SECONDS = 30.0

_LENGTH = struct.Struct(">I")
_HELLO = "ready"


def _frame(value: Any) -> bytes:
    body: bytes = msgpack.packb(value, use_bin_type=True)
    return _LENGTH.pack(len(body)) + body


# ---------------------------------------------------------------------------
# The wire form of a chunk, and of its answer


def _request(seq: int, chunk: list[_Item]) -> bytes:
    """A chunk as plain values: each memory's type code, data record and own forms."""
    rows = [[int(data.TYPE), record, (own or {}).get("short"), (own or {}).get("medium")] for data, record, own in chunk]
    return _frame([seq, rows])


def _counted_rows(encoding: str, rows: list[list[Any]]) -> list[list[Any]]:
    """A helper's answer: each memory's stored short and medium text and its three
    token counts. The data is rebuilt from its record (as every read does), which
    renders to the same text as the data it was made from."""
    texts = []
    for code, record, own_short, own_medium in rows:
        data = DATA_CLASSES[MemoryType(code)].from_record(record, validate=False)
        override = None
        if own_short is not None or own_medium is not None:
            override = {k: v for k, v in (("short", own_short), ("medium", own_medium)) if v is not None}
        texts.append(render_texts(data, override))
    return [[f.short, f.medium, f.short_tokens, f.medium_tokens, f.full_tokens] for f in count_forms(encoding, texts)]


def _forms_of(answer: list[list[Any]], size: int) -> list[Forms]:
    if len(answer) != size:
        raise ValueError("helper answered a chunk with the wrong number of forms")
    return [Forms._make(row) for row in answer]


def serve(encoding: str) -> None:
    """A helper's loop: a request frame in, its answer out, until stdin closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    Tokenizer(encoding).encode(_HELLO)  # load the tokenizer before saying hello
    stdout.write(_frame(_HELLO))
    stdout.flush()
    while True:
        head = stdin.read(_LENGTH.size)
        if len(head) != _LENGTH.size:
            return
        seq, rows = msgpack.unpackb(stdin.read(_LENGTH.unpack(head)[0]), raw=False)
        stdout.write(_frame([seq, _counted_rows(encoding, rows)]))
        stdout.flush()


# ---------------------------------------------------------------------------
# The writer's side


class _Helper:
    """One helper process, driven from the writer's thread without blocking writes."""

    def __init__(self, encoding: str) -> None:
        import subprocess  # here, not with the module: ~5 ms of every cold process

        self.encoding = encoding
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from cortex.workers import serve; serve(sys.argv[1])", encoding],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd, self.rfd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        for fd in (self.wfd, self.rfd):
            try:
                import fcntl

                fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)
            except (ImportError, OSError):
                pass
        os.set_blocking(self.wfd, False)
        self.ready = False
        self.dead = False
        self.unsent: collections.deque[tuple[int, bytes]] = collections.deque()  # (seq, frame)
        self.writing = b""  # the rest of the frame being written
        self.received = bytearray()
        self.answers: dict[int, list[list[int]]] = {}
        self.wanted: set[int] = set()  # sent chunks whose answers are still to be used
        self.seq = 0
        self.answered = 0  # memories the helper has done (for tests and curious users)

    def pump(self, wait: float | None = 0.0) -> None:
        """Write what the pipe takes and read what has arrived; `wait`: seconds to
        block for the helper (None: until something happens)."""
        if self.dead:
            return
        try:
            writable = [self.wfd] if (self.writing or (self.unsent and len(self.wanted) < IN_FLIGHT)) else []
            readable, can_write, _ = select.select([self.rfd], writable, [], wait)
            if can_write:
                self._write()
            if readable:
                data = os.read(self.rfd, 1 << 20)
                if not data:
                    raise EOFError("helper exited")
                self.received += data
                self._parse()
        except (OSError, EOFError, ValueError):
            self.kill()

    def _write(self) -> None:
        while True:
            if not self.writing:
                if not self.unsent or len(self.wanted) >= IN_FLIGHT:
                    return
                seq, self.writing = self.unsent.popleft()
                self.wanted.add(seq)
            try:
                written = os.write(self.wfd, self.writing)
            except BlockingIOError:
                return
            self.writing = self.writing[written:]

    def _parse(self) -> None:
        while len(self.received) >= _LENGTH.size:
            size = _LENGTH.unpack_from(self.received)[0]
            if len(self.received) < _LENGTH.size + size:
                return
            value = msgpack.unpackb(bytes(self.received[_LENGTH.size : _LENGTH.size + size]), raw=False)
            del self.received[: _LENGTH.size + size]
            if value == _HELLO:
                self.ready = True
                continue
            seq, answer = value
            if seq in self.wanted:
                self.wanted.discard(seq)
                self.answers[seq] = answer
                self.answered += len(answer)

    def usable(self) -> bool:
        if not self.ready:
            self.pump()
        return self.ready and not self.dead

    def queue(self, chunk: list[_Item]) -> int:
        self.seq += 1
        self.unsent.append((self.seq, _request(self.seq, chunk)))
        self.pump()
        return self.seq

    def take_back_last(self) -> int | None:
        """The seq of the last chunk the helper has not received, now withdrawn."""
        return self.unsent.pop()[0] if self.unsent else None

    def forget(self) -> None:
        """Drop what a batch left behind: unsent chunks, and answers still to come."""
        self.unsent.clear()
        self.wanted.clear()
        self.answers.clear()

    def kill(self) -> None:
        self.dead = True
        self.forget()
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self) -> None:
        """Close stdin (the helper exits on EOF) and reap it."""
        self.forget()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        import subprocess

        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class FormsPool:
    """A helper process counting forms in the encoding `encoding` for one handle."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._helper: _Helper | None = None
        if os.name != "posix":
            return  # select() on pipes is POSIX only: count inline
        try:
            self._helper = _Helper(encoding)
        except Exception:  # cannot start a process here (no sys.executable, no fork): work inline
            self._helper = None

    def count(self, items: Iterable[_Item]) -> Iterator[list[Forms]]:
        """The forms of `items`, a chunk at a time, in order (see the module doc).

        Takes every item now, queueing each chunk as soon as it is complete, so the
        helper starts on the first chunk while `items` (a generator, say) still makes
        the rest; collects the answers as the caller iterates."""
        helper = self._helper
        if helper is None or not helper.usable():
            return iter([_count_here(self.encoding, list(items))])
        chunks: list[tuple[int, list[_Item]]] = []
        chunk: list[_Item] = []
        try:
            for item in items:
                chunk.append(item)
                if len(chunk) == CHUNK:
                    chunks.append((helper.queue(chunk), chunk))
                    chunk = []
        except BaseException:  # `items` failed: the chunks queued so far are nobody's
            helper.forget()
            raise
        if chunk:
            chunks.append((helper.queue(chunk), chunk))
        return self._collect(helper, chunks)

    def _collect(self, helper: _Helper, chunks: list[tuple[int, list[_Item]]]) -> Iterator[list[Forms]]:
        counted_here: dict[int, list[Forms]] = {}
        by_seq = dict(chunks)
        try:
            for seq, chunk in chunks:
                since = time.monotonic()
                while seq not in counted_here and seq not in helper.answers and not helper.dead:
                    helper.pump()
                    if seq in helper.answers:
                        break
                    last = helper.take_back_last()
                    if last is not None:
                        counted_here[last] = _count_here(self.encoding, by_seq[last])
                    elif time.monotonic() - since > STALL_SECONDS:
                        helper.kill()
                    else:
                        helper.pump(wait=1.0)  # everything left is with the helper: wait for it
                forms = counted_here.pop(seq, None)
                if forms is None and seq in helper.answers:
                    try:
                        forms = _forms_of(helper.answers.pop(seq), len(chunk))
                    except (TypeError, ValueError):  # a garbled answer: trust the helper no more
                        helper.kill()
                yield forms if forms is not None else _count_here(self.encoding, chunk)
                helper.pump()  # keep the helper fed while the caller works
        finally:
            helper.forget()
            if helper.dead:
                self._helper = None
                helper.close()

    def close(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close()


def _count_here(encoding: str, items: list[_Item]) -> list[Forms]:
    return count_forms(encoding, [render_texts(data, own) for data, _, own in items])
