"""A real PostgreSQL server for the team-warehouse tests: the Debian package's `initdb`/`pg_ctl`, run as
an unprivileged user (`nobody` when the tests run as root: PostgreSQL refuses root), listening on a
Unix socket in a private folder only (no TCP port to collide with another worker or service).

`make test` (scripts/ensure-postgres.sh) installs the package when it is missing and sets
CRSBENCH_REQUIRE_POSTGRES=1, so there a missing server fails the tests instead of skipping them.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

USER = "crs"


def bin_dir() -> Path | None:
    """The newest installed PostgreSQL's bin folder, or one on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def require_postgres() -> Path:
    found = bin_dir()
    if found is None:
        if os.environ.get("CRSBENCH_REQUIRE_POSTGRES"):
            pytest.fail("PostgreSQL is not installed: run scripts/ensure-postgres.sh (make test does)")
        pytest.skip("PostgreSQL is not installed (scripts/ensure-postgres.sh installs it)")
    return found


class PostgresServer:
    """One server: `createdb` gives a new database's libpq connection string; `stop`/`start`."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="crsbench-pg-"))
        self.root.chmod(0o755)
        self.data = self.root / "data"
        self.socket = self.root / "socket"
        self.socket.mkdir()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL never runs as root
            self.as_user = ["runuser", "-u", "nobody", "--"]
            shutil.chown(self.root, "nobody")
            shutil.chown(self.socket, "nobody")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", USER, "--no-sync")
        self.start()

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*self.as_user, str(self.bindir / tool), *args], capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed: {proc.stderr[-2000:]}")
        return proc

    def start(self) -> None:
        options = f"-k {self.socket} -c listen_addresses='' -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def createdb(self, name: str) -> str:
        self._run("createdb", "-h", str(self.socket), "-U", USER, name)
        return f"dbname={name} host={self.socket} user={USER}"

    def close(self) -> None:
        with suppress(RuntimeError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer(require_postgres())
    try:
        yield server
    finally:
        server.close()


def lake_db(server: PostgresServer, name: str) -> str:
    """A new, empty database on `server` as a team-warehouse locator."""
    return "ducklake:postgres:" + server.createdb(name)


@contextmanager
def lake_data_path(kind: str, folder: Path) -> Iterator[str]:
    """A team warehouse's data path: a local folder ("local"), or a bucket on the moto S3 server the store
    tests use ("s3"), with the standard AWS environment set for this process and the CLI processes it starts."""
    if kind == "local":
        yield str(folder / "data")
        return
    from support.scale_support import BUCKET, moto_server, s3_environment

    with moto_server(folder / "moto.log") as endpoint, s3_environment(endpoint):
        yield f"s3://{BUCKET}/lake"
