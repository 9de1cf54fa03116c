"""A loopback TCP proxy in front of the test server that can break connections.

The storage under test connects through it (`dsn_via(dsn, proxy.port)`); the test
then makes the network fail the way a real one does:

* `drop_all()`: every open connection is cut (a server restart, a dead link).
* `cut_at_commit("before")`: the next `COMMIT` a client sends is never delivered; the
  connection is cut. The server sees its client vanish and rolls back.
* `cut_at_commit("after")`: the next `COMMIT` is delivered and the server commits,
  but its answer is dropped and the connection cut: the client cannot know.
* `cut_at_commit("late")`: the client's connection is cut when it sends the next
  `COMMIT`, and the `COMMIT` reaches the server a moment later all the same (a
  retransmission after the client gave up): it commits after the client saw it fail.

Only loopback addresses; every thread ends when its sockets close.
"""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit, urlunsplit

_COMMIT = b"COMMIT"
LATE_SECONDS = 0.5  # how late a "late" COMMIT arrives


def dsn_via(dsn: str, port: int) -> str:
    """`dsn` (a URL on 127.0.0.1) pointed at another port."""
    parts = urlsplit(dsn)
    user = parts.netloc.rsplit("@", 1)[0]
    return urlunsplit((parts.scheme, f"{user}@127.0.0.1:{port}", parts.path, parts.query, parts.fragment))


class _Pair:
    """One client connection and its connection to the server."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.hold = False  # drop what the server sends, then cut

    def cut(self) -> None:
        for sock in (self.client, self.server):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class FaultProxy:
    def __init__(self, target_port: int) -> None:
        self._target = ("127.0.0.1", target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._pairs: list[_Pair] = []
        self._lock = threading.Lock()
        self._cut_mode: str | None = None
        self.commits_cut = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut_at_commit(self, mode: str) -> None:
        assert mode in ("before", "after", "late")
        self._cut_mode = mode

    def drop_all(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.cut()

    def close(self) -> None:
        self._listener.close()
        self.drop_all()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._target)
            pair = _Pair(client, server)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._client_to_server, args=(pair,), daemon=True).start()
            threading.Thread(target=self._server_to_client, args=(pair,), daemon=True).start()

    def _client_to_server(self, pair: _Pair) -> None:
        try:
            while data := pair.client.recv(65536):
                mode = self._cut_mode
                if mode is not None and _COMMIT in data:
                    self._cut_mode = None
                    self.commits_cut += 1
                    if mode == "before":
                        pair.cut()
                        return
                    pair.hold = True
                    if mode == "late":
                        pair.client.shutdown(socket.SHUT_RDWR)
                        time.sleep(LATE_SECONDS)
                pair.server.sendall(data)
        except OSError:
            pass
        pair.cut()

    def _server_to_client(self, pair: _Pair) -> None:
        try:
            while data := pair.server.recv(65536):
                if pair.hold:
                    break
                pair.client.sendall(data)
        except OSError:
            pass
        pair.cut()
