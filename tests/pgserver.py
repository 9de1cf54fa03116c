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

Every server is set up to be a replication primary (`wal_level = replica`,
`max_wal_senders`, a `replication` line in `pg_hba.conf` for loopback), which costs
nothing when no standby connects. `start_standby(primary)` makes a streaming hot
standby of it: `pg_basebackup -R` (which writes `standby.signal` and the
`primary_conninfo` pointing at the primary) into a folder of its own, started on its
own loopback port, read-only. `kill()` stops a server the way a crash does
(`pg_ctl stop -m immediate`: no shutdown checkpoint, crash recovery at the next
start) and `restart()` starts it again on the same port. `durable=True` keeps
`synchronous_commit` on, so that a commit is in the WAL before it is acknowledged
and a killed server loses none (fsync stays off: the operating system keeps what
the killed processes wrote).

Each log line names the client's `application_name` (`log_line_prefix`), so a test
can count the statements one client sent (`statements()`), with the DSN option
`-c log_statement=all` on its connections.
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
    durable: bool = False  # synchronous_commit on

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def stop(self) -> None:
        """Shut the server down (fast mode) and remove its folder. Idempotent."""
        if not self.folder.exists():
            return
        _run(self.run_as, [str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"),
                           "-m", "fast", "-w", "stop"], cwd=self.folder, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)

    def kill(self) -> None:
        """Stop the server as a crash would: every process quits at once, nothing is
        flushed or checkpointed."""
        _run(self.run_as, [str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"),
                           "-m", "immediate", "-w", "stop"], cwd=self.folder)

    def restart(self) -> None:
        """Start a stopped or killed server again on its port (crash recovery first)."""
        done = _pg_ctl_start(self.bindir, self.folder, self.run_as, self.port, self.durable)
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    def statements(self, application: str) -> list[str]:
        """The statements the server logged for clients named `application` (those
        that connected with `-c log_statement=all`), oldest first."""
        marker = f"] {application} LOG:  "
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            at = line.find(marker)
            if at >= 0:
                text = line[at + len(marker):]
                if text.startswith(("statement: ", "execute ")):
                    found.append(text)
        return found


def start(bindir: Path | None = None, *, durable: bool = False) -> PgServer:
    """Start a server in a new temporary folder and create its database."""
    bindir = bindir or find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
    run_as = _server_user() if os.geteuid() == 0 else None
    folder = _folder(run_as)
    try:
        _run(run_as, [str(bindir / "initdb"), "-D", str(folder / "data"), "-U", SUPERUSER,
                      "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"], cwd=folder)
        _configure(folder / "data", run_as)
        port = _start_server(bindir, folder, run_as, durable)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    server = PgServer(f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}", port, folder, bindir, run_as, durable)
    atexit.register(server.stop)  # a test run killed before its teardown leaves no server behind
    try:
        with psycopg.connect(f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
    except BaseException:
        server.stop()
        raise
    return server


def start_standby(primary: PgServer) -> PgServer:
    """A streaming hot standby of `primary`, in a new folder on its own port: a base
    backup taken with `pg_basebackup -R -X stream`, then started read-only."""
    folder = _folder(primary.run_as)
    try:
        _run(primary.run_as, [str(primary.bindir / "pg_basebackup"), "-D", str(folder / "data"),
                              "-h", "127.0.0.1", "-p", str(primary.port), "-U", SUPERUSER,
                              "-R", "-X", "stream", "--no-sync", "-c", "fast"], cwd=folder)
        port = _start_server(primary.bindir, folder, primary.run_as, primary.durable)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    standby = PgServer(f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}", port, folder, primary.bindir,
                       primary.run_as, primary.durable)
    atexit.register(standby.stop)
    return standby


# Appended to a new cluster's configuration (a base backup copies them to a standby).
_CONFIG = """
log_line_prefix = '%m [%p] %a '
wal_level = replica
max_wal_senders = 8
hot_standby = on
"""
_HBA = "host replication all 127.0.0.1/32 trust\n"


def _configure(data: Path, run_as: str | None) -> None:
    """Make the cluster a replication primary and name clients in its log lines."""
    for name, text in (("postgresql.conf", _CONFIG), ("pg_hba.conf", _HBA)):
        with open(data / name, "a", encoding="utf-8") as conf:
            conf.write(text)
    del run_as  # appending keeps the files' owner


def _folder(run_as: str | None) -> Path:
    """A new temporary folder the server's user owns."""
    folder = Path(tempfile.mkdtemp(prefix="cortex-pg-", dir=_temp_root(run_as)))
    if run_as is not None:
        user = pwd.getpwnam(run_as)
        os.chown(folder, user.pw_uid, user.pw_gid)
    return folder


def _pg_ctl_start(bindir: Path, folder: Path, run_as: str | None, port: int,
                  durable: bool) -> subprocess.CompletedProcess[str]:
    settings = (f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                f"-c synchronous_commit={'on' if durable else 'off'} -c full_page_writes=off")
    return _run(run_as, [str(bindir / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "server.log"),
                         "-o", settings, "-w", "-t", "60", "start"], cwd=folder, check=False)


def _start_server(bindir: Path, folder: Path, run_as: str | None, durable: bool = False) -> int:
    """`pg_ctl start` on a free loopback port, waiting until the server accepts
    connections; returns the port."""
    log = folder / "server.log"
    for attempt in range(_START_ATTEMPTS):
        port = _free_port()
        done = _pg_ctl_start(bindir, folder, run_as, port, durable)
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
