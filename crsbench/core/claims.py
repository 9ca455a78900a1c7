"""File claims: exactly one holder per named piece of work, however many processes run at once.

A holder claims a name just before doing its work by creating `<root>/claims/<name>` with an
exclusive create (`open(..., "xb")`: O_CREAT|O_EXCL on a POSIX file system, a conditional
`If-None-Match: *` PUT through s3fs), and deletes the claim when the work has landed. A name
whose claim another live holder has is left to that holder.

A claim is stale, and may be taken over, when its holder is a dead process on this host, or
when it has not been refreshed for `lease_s` seconds (holders refresh every `lease_s / 4`
from a background thread). Ages are measured against the storage's own clock -- the
modification time of a file this process has just written there -- so clock skew between
NFS clients or an object store does not matter. Taking over is serialised by a second
exclusive file (`<name>.break`), so two holders that both see a stale claim cannot both win.

Each holder also keeps a marker `<root>/claims/.sweep-<token>` for as long as it runs
(refreshed with its claims), so another process can tell whether a holder is still at work
(`live_holders`).

Safe where exclusive create is atomic: local disks, NFSv3 and later (Linux implements
O_EXCL in the protocol), and S3 or S3-compatible stores with conditional writes (AWS
since 2024, MinIO, R2) through s3fs >= 2025.7. Not on NFSv2 or a FUSE mount of an object
store without conditional writes.

Users: the probe sweeps' fit claims (crsbench.warehouse.claims) and distributed extraction's
chunk claims (crsbench.features.extraction_cluster).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

DEFAULT_LEASE_S = 120.0
# Named for the probe sweeps, the first holders; kept so the markers of running holders read the same.
MARKER_PREFIX = ".sweep-"


def pid_alive(pid: int) -> bool:
    """Whether process `pid` of this host is running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


class FileClaims:
    """The claims of one holder under `root` (a path or fsspec URL): `acquire` before the work,
    `release` after it lands, `close` (or the `with` block's end) gives back the rest."""

    def __init__(self, root: Path | str, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.fs, path = fsspec.core.url_to_fs(str(root))
        self.root = path.rstrip("/")
        self.folder = f"{self.root}/claims"
        self.fs.makedirs(self.folder, exist_ok=True)
        self.lease_s = float(lease_s)
        self.host = socket.gethostname()
        self.token = f"{self.host}:{os.getpid()}:{uuid.uuid4().hex}"
        self.held: set[str] = set()
        self.marker = f"{self.folder}/{MARKER_PREFIX}{self.token.replace(':', '-')}"
        with self.fs.open(self.marker, "wb") as fh:
            fh.write(json.dumps({"owner": self.token, "host": self.host, "pid": os.getpid()}).encode())
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="file-claims", daemon=True)
        self._beat.start()

    # -- public -------------------------------------------------------------------------

    def acquire(self, names: Sequence[str]) -> set[str]:
        """The names of `names` this holder now holds."""
        return {name for name in names if self._try_claim(name)}

    def release(self, names: Iterable[str]) -> None:
        """Give back those of `names` this holder holds (others' claims are left alone)."""
        for name in list(names):
            # Under the lock: the heartbeat's refresh of an object-store claim reads then rewrites
            # it, and a removal between the two would leave a re-created claim behind.
            with self._lock:
                if name not in self.held:
                    continue
                self.held.discard(name)
                self._remove(self._path(name))

    def close(self) -> None:
        """Stop refreshing and give back every claim still held (e.g. after an error)."""
        self._stop.set()
        self._beat.join(timeout=5)
        self.release(list(self.held))
        self._remove(self.marker)

    def __enter__(self) -> FileClaims:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- claims -------------------------------------------------------------------------

    def _path(self, name: str) -> str:
        return f"{self.folder}/{name}"

    def _create(self, path: str) -> bool:
        body = json.dumps({"owner": self.token, "host": self.host, "pid": os.getpid()}).encode()
        try:
            with self.fs.open(path, "xb") as fh:
                fh.write(body)
        except FileExistsError:
            return False
        return True

    def _try_claim(self, name: str) -> bool:
        path = self._path(name)
        if self._create(path):
            with self._lock:
                self.held.add(name)
            return True
        if not self._stale(path):
            return False
        breaker = path + ".break"
        if not self._create(breaker):
            if self._stale(breaker):  # a breaker died mid-takeover
                self._remove(breaker)
            return False
        try:
            # Re-judged under the break lock: the claim may have been released and re-made.
            if self._stale(path):
                self._remove(path)
            won = self._create(path)
        finally:
            self._remove(breaker)
        if won:
            with self._lock:
                self.held.add(name)
        return won

    def _stale(self, path: str) -> bool:
        try:
            info = self.fs.info(path)
            with self.fs.open(path, "rb") as fh:
                holder = json.loads(fh.read() or b"{}")
        except FileNotFoundError:
            return True
        except ValueError:  # a holder killed while writing its claim
            holder = {}
        if holder.get("owner") == self.token:
            return False
        if holder.get("host") == self.host and isinstance(holder.get("pid"), int) and not pid_alive(holder["pid"]):
            return True
        return self._storage_now() - _mtime(info) > self.lease_s

    def _storage_now(self) -> float:
        probe = f"{self.folder}/.clock-{self.token.replace(':', '-')}"
        with self.fs.open(probe, "wb") as fh:
            fh.write(b"")
        return _mtime(self.fs.info(probe))

    def _remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(path)  # never `rm`: it expands glob characters in the path

    def _heartbeat(self) -> None:
        interval = max(0.05, self.lease_s / 4)
        while not self._stop.wait(interval):
            with self._lock:
                held = list(self.held)
            self._refresh(self.marker)
            for name in held:
                with self._lock:
                    if name in self.held:  # not released since the list was taken
                        self._refresh(self._path(name))
        probe = f"{self.folder}/.clock-{self.token.replace(':', '-')}"
        self._remove(probe)

    def _refresh(self, path: str) -> None:
        # A transient store error: the next beat retries within the lease.
        with contextlib.suppress(OSError):
            self._touch(path)

    def _touch(self, path: str) -> None:
        if isinstance(self.fs, LocalFileSystem):
            os.utime(path)
            return
        with self.fs.open(path, "rb") as fh:  # object stores: rewriting refreshes LastModified
            body = fh.read()
        with self.fs.open(path, "wb") as fh:
            fh.write(body)


def _mtime(info: dict[str, Any]) -> float:
    value: Any = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    return float(value) if value is not None else time.time()


def live_holders(folder: Path, lease_s: float = DEFAULT_LEASE_S) -> list[str]:
    """The markers of the holders still running with claims in the local `folder` (`<root>/claims`).

    A marker is dead when its process on this host is gone, or when it has not been refreshed
    within `lease_s` (a running holder refreshes it every `lease_s / 4`). Reads only: nothing is written or removed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    live = []
    for marker in sorted(folder.glob(MARKER_PREFIX + "*")):
        try:
            holder = json.loads(marker.read_bytes() or b"{}")
            age = time.time() - marker.stat().st_mtime
        except FileNotFoundError:
            continue
        except ValueError:  # killed while writing its marker
            holder, age = {}, time.time() - marker.stat().st_mtime
        here = holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int)
        if age <= lease_s and not (here and not pid_alive(holder["pid"])):
            live.append(marker.name)
    return live
