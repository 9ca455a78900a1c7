"""Loopback services for the scale-out tests: a moto S3 server and a `dask` CLI cluster.

Both run as real separate processes on 127.0.0.1 (own session, so teardown kills exactly
the process group each helper started), are bounded in time, and are always stopped.
Credentials reach every process only through the standard AWS environment variables
(`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`), which botocore and
s3fs honour; nothing in crsbench is told about them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

BIN = Path(sys.executable).parent
BUCKET = "crsbench-test"
# Unique, greppable values: tests assert they never appear in the warehouse, outputs or logs.
SECRET_KEY_ID = "AKIACRSBENCHTESTKEY7"
SECRET = "crsbench-s3cr3t-9f3e1b7c5d"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen, grace: float = 5.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)  # the group this helper created for it
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)


def s3_env(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": SECRET_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }


def clear_s3fs_cache() -> None:
    # s3fs caches filesystems by constructor arguments, not by environment: an instance
    # built for an earlier server would otherwise keep its old endpoint.
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


@contextlib.contextmanager
def moto_server(log: Path, timeout: float = 30.0) -> Iterator[str]:
    """A moto S3 server process on a free loopback port; yields its endpoint URL."""
    for _ in range(3):  # the free port can be taken between probing and binding
        port = free_port()
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        if proc.poll() is None and time.monotonic() < deadline:
            try:
                yield endpoint
            finally:
                _stop(proc)
            return
        _stop(proc)
    raise RuntimeError(f"moto_server did not start; see {log}")


@contextlib.contextmanager
def s3_environment(endpoint: str) -> Iterator[None]:
    """Set the standard AWS variables for this process, create the bucket, restore after."""
    saved = {k: os.environ.get(k) for k in s3_env(endpoint)}
    os.environ.update(s3_env(endpoint))
    clear_s3fs_cache()
    try:
        import s3fs

        s3fs.S3FileSystem().mkdir(BUCKET)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        clear_s3fs_cache()


class DaskCluster:
    """`dask scheduler` + N `dask worker` processes (one worker process, one thread each)."""

    def __init__(
        self, root: Path, n_workers: int = 2, env: dict[str, str] | None = None, timeout: float = 60.0
    ) -> None:
        self.root, self.n_workers, self.timeout = root, n_workers, timeout
        self.env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **(env or {})}
        root.mkdir(parents=True, exist_ok=True)
        self.file = root / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.root / f"{name}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            self.procs.append(
                subprocess.Popen(
                    [str(BIN / "dask"), *args],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    cwd=self.root,
                    start_new_session=True,
                )
            )

    def __enter__(self) -> DaskCluster:
        try:
            self._spawn(
                "scheduler",
                [
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(self.file),
                ],
            )
            self.address = self._wait_for_scheduler()
            for i in range(self.n_workers):
                self._spawn(
                    f"worker{i}",
                    [
                        "worker",
                        self.address,
                        "--host",
                        "127.0.0.1",
                        "--nworkers",
                        "1",
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--name",
                        f"w{i}",
                        "--local-directory",
                        str(self.root / f"w{i}"),
                        "--death-timeout",
                        "60",
                    ],
                )
            self._wait_for_workers()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_for_scheduler(self) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.procs[0].poll() is not None:
                raise RuntimeError(f"dask scheduler exited; see {self.logs[0]}")
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                return str(json.loads(self.file.read_text())["address"])
            time.sleep(0.1)
        raise RuntimeError("dask scheduler did not start in time")

    def client(self):
        from distributed import Client

        return Client(self.address, set_as_default=False, timeout="20s")

    def _wait_for_workers(self) -> None:
        with self.client() as client:
            client.wait_for_workers(self.n_workers, timeout=self.timeout)

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.logs if p.exists())

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.procs):  # workers first, then the scheduler
            _stop(proc)
