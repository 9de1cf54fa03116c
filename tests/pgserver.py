"""A throwaway PostgreSQL server for the tests: `start()` it, use its `dsn`, `stop()` it.

The server lives in a temporary folder: `initdb` makes a cluster there, `pg_ctl`
starts it on a free loopback port (127.0.0.1, its Unix socket in the same folder,
fsync off: nothing in it needs to survive a power cut), and `stop()` shuts it down
fast and removes the folder. Nothing outside the folder is touched, except that
PostgreSQL refuses to run as root: when the tests run as root (CI does), the server
runs as the system user `cortexpg`, created with `useradd` when missing.

The binaries are Debian's (`apt-get install postgresql`): the highest version under
`/usr/lib/postgresql/*/bin`. `find_bindir()` returns None when there are none, and
the pytest fixture (`tests/pgfixture.py`) decides what that means.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

SERVER_USER = "cortexpg"  # the system user that runs the server when we are root
SUPERUSER = "cortex"  # the database role initdb creates
DATABASE = "cortex"
_START_ATTEMPTS = 3  # a free port can be taken between finding it and binding it


def find_bindir() -> Path | None:
    """The `bin` folder of the highest PostgreSQL version installed, or None."""
    found = []
    for initdb in glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        version = Path(initdb).parent.parent.name
        key = tuple(int(part) for part in version.split(".") if part.isdigit())
        found.append((key, Path(initdb).parent))
    return max(found)[1] if found else None


@dataclass
class PgServer:
    """A running throwaway server. `dsn` reaches its database `cortex` as superuser."""

    dsn: str
    port: int
    folder: Path
    bindir: Path
    run_as: str | None  # the system user the server runs as, None for ourselves

    def stop(self) -> None:
        """Shut the server down (fast mode) and remove its folder. Idempotent."""
        if not self.folder.exists():
            return
        _run(self.run_as, [str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"),
                           "-m", "fast", "-w", "stop"], cwd=self.folder, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def start(bindir: Path | None = None) -> PgServer:
    """Start a server in a new temporary folder and create its database."""
    bindir = bindir or find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
    run_as = _server_user() if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="cortex-pg-", dir=_temp_root(run_as)))
    try:
        if run_as is not None:
            user = pwd.getpwnam(run_as)
            os.chown(folder, user.pw_uid, user.pw_gid)
        _run(run_as, [str(bindir / "initdb"), "-D", str(folder / "data"), "-U", SUPERUSER,
                      "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"], cwd=folder)
        port = _start_server(bindir, folder, run_as)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    server = PgServer(f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}", port, folder, bindir, run_as)
    atexit.register(server.stop)  # a test run killed before its teardown leaves no server behind
    try:
        with psycopg.connect(f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
    except BaseException:
        server.stop()
        raise
    return server


def _start_server(bindir: Path, folder: Path, run_as: str | None) -> int:
    """`pg_ctl start` on a free loopback port, waiting until the server accepts
    connections; returns the port."""
    log = folder / "server.log"
    for attempt in range(_START_ATTEMPTS):
        port = _free_port()
        settings = (f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off")
        done = _run(run_as, [str(bindir / "pg_ctl"), "-D", str(folder / "data"), "-l", str(log),
                             "-o", settings, "-w", "-t", "60", "start"], cwd=folder, check=False)
        if done.returncode == 0:
            return port
        if attempt == _START_ATTEMPTS - 1:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({done.returncode}): {done.stderr.strip()}\n{tail}")
    raise AssertionError("unreachable")


def _temp_root(run_as: str | None) -> str:
    """Where to make the server's folder: the usual temporary folder, unless another
    user cannot reach it (a TMPDIR under /root, say); then /tmp."""
    root = tempfile.gettempdir()
    if run_as is None:
        return root
    path = Path(root).resolve()
    reachable = all(os.stat(p).st_mode & 0o001 for p in (path, *path.parents))
    return root if reachable else "/tmp"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _server_user() -> str:
    """The unprivileged system user to run the server as (created when missing)."""
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        SERVER_USER], check=True, capture_output=True, text=True)
    return SERVER_USER


def _run(run_as: str | None, argv: list[str], *, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    if run_as is not None:
        argv = ["runuser", "-u", run_as, "--", *argv]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done
