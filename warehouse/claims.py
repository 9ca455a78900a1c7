"""Fit claims: exactly one writer per probe fit, however many sweeps run at once.

A sweep claims each fit just before computing it by creating `<parts>/claims/<fit_id>`
with an exclusive create (`open(..., "xb")`: O_CREAT|O_EXCL on a POSIX file system, a
conditional `If-None-Match: *` PUT through s3fs), then checks the run parts for that fit
once more (another sweep may have finished it since this one planned), and deletes the
claim after its batch of run records has landed. A fit whose claim another live sweep
holds is left to that sweep, so concurrent `crsbench probe` processes (each with its own
dask workers, which never touch claims: the client claims, submits and writes) split
the grid instead of repeating it.

A claim is stale, and may be taken over, when its holder is a dead process on this host,
or when it has not been refreshed for `lease_s` seconds (holders refresh every
`lease_s / 4` from a background thread). Ages are measured against the storage's own
clock -- the modification time of a file this process has just written there -- so
clock skew between NFS clients or an object store does not matter. Taking over is
serialised by a second exclusive file (`<fit_id>.break`), so two sweeps that both see
a stale claim cannot both win.

Each sweep also keeps a marker `<parts>/claims/.sweep-<token>` for as long as it runs
(refreshed with its claims), so a command that finishes can tell whether another sweep is
still writing parts (`live_sweeps`) and leave the parts unfolded rather than fold under it.

Safe where exclusive create is atomic: local disks, NFSv3 and later (Linux implements
O_EXCL in the protocol), and S3 or S3-compatible stores with conditional writes (AWS
since 2024, MinIO, R2) through s3fs >= 2025.7. Not on NFSv2 or a FUSE mount of an object
store without conditional writes; put the warehouse elsewhere there.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import fsspec
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

DEFAULT_LEASE_S = 120.0
SWEEP_PREFIX = ".sweep-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


class FitClaims:
    """The claims of one sweep. `acquire` before computing, `release` after the batch lands.

    `parts_dir` is the warehouse's parts folder (a path or fsspec URL); its `runs/`
    parts are where finished fits are looked up. `compacted_done` returns the fit ids the
    warehouse file holds; it is asked when parts this sweep has seen disappear (a compaction
    folded them into the file meanwhile).
    """

    def __init__(
        self,
        parts_dir: Path | str,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        compacted_done: Callable[[], set[str]] | None = None,
    ) -> None:
        self.fs, root = fsspec.core.url_to_fs(str(parts_dir))
        self.root = root.rstrip("/")
        self.folder = f"{self.root}/claims"
        self.fs.makedirs(self.folder, exist_ok=True)
        self.lease_s = float(lease_s)
        self.compacted_done = compacted_done
        self.host = socket.gethostname()
        self.token = f"{self.host}:{os.getpid()}:{uuid.uuid4().hex}"
        self.held: set[str] = set()
        self.marker = f"{self.folder}/{SWEEP_PREFIX}{self.token.replace(':', '-')}"
        with self.fs.open(self.marker, "wb") as fh:
            fh.write(json.dumps({"owner": self.token, "host": self.host, "pid": os.getpid()}).encode())
        self._done: set[str] = set()
        self._seen_parts: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="fit-claims", daemon=True)
        self._beat.start()

    # -- public -------------------------------------------------------------------------

    def acquire(self, fit_ids: Sequence[str]) -> set[str]:
        """The fits of `fit_ids` this sweep now holds and that no run part holds yet."""
        got = {f for f in fit_ids if self._try_claim(f)}
        if got:
            self._refresh_done()
            finished = got & self._done
            self.release(finished)
            got -= finished
        return got

    def release(self, fit_ids: Iterable[str]) -> None:
        """Give back those of `fit_ids` this sweep holds (others' claims are left alone)."""
        for fit_id in list(fit_ids):
            with self._lock:
                if fit_id not in self.held:
                    continue
                self.held.discard(fit_id)
            self._remove(self._path(fit_id))

    def done(self, fit_ids: Iterable[str]) -> set[str]:
        """Those of `fit_ids` whose run records have landed (by any sweep)."""
        self._refresh_done()
        return set(fit_ids) & self._done

    def close(self) -> None:
        """Stop refreshing and give back every claim still held (e.g. after an error)."""
        self._stop.set()
        self._beat.join(timeout=5)
        self.release(list(self.held))
        self._remove(self.marker)

    def __enter__(self) -> FitClaims:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- claims -------------------------------------------------------------------------

    def _path(self, fit_id: str) -> str:
        return f"{self.folder}/{fit_id}"

    def _create(self, path: str) -> bool:
        body = json.dumps({"owner": self.token, "host": self.host, "pid": os.getpid()}).encode()
        try:
            with self.fs.open(path, "xb") as fh:
                fh.write(body)
        except FileExistsError:
            return False
        return True

    def _try_claim(self, fit_id: str) -> bool:
        path = self._path(fit_id)
        if self._create(path):
            with self._lock:
                self.held.add(fit_id)
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
                self.held.add(fit_id)
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
        if holder.get("host") == self.host and isinstance(holder.get("pid"), int) and not _pid_alive(holder["pid"]):
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
                held = [self._path(f) for f in self.held]
            for path in [self.marker, *held]:
                # A transient store error: the next beat retries within the lease.
                with contextlib.suppress(OSError):
                    self._touch(path)
        probe = f"{self.folder}/.clock-{self.token.replace(':', '-')}"
        self._remove(probe)

    def _touch(self, path: str) -> None:
        if isinstance(self.fs, LocalFileSystem):
            os.utime(path)
            return
        with self.fs.open(path, "rb") as fh:  # object stores: rewriting refreshes LastModified
            body = fh.read()
        with self.fs.open(path, "wb") as fh:
            fh.write(body)

    # -- finished fits ------------------------------------------------------------------

    def _refresh_done(self) -> None:
        # Parts are immutable once renamed into place, so each is read once; a part
        # compacted away between listing and reading reappears inside the merged part.
        for _ in range(5):
            try:  # a listing, not a glob: the warehouse path may hold '*' or '['
                listed = self.fs.ls(f"{self.root}/runs", detail=False)
            except FileNotFoundError:
                return
            names = [n for n in listed if n.rsplit("/", 1)[-1].startswith("part-") and n.endswith(".parquet")]
            vanished = False
            if self._seen_parts - set(names) and self.compacted_done is not None:
                self._done.update(self.compacted_done())  # folded into the file meanwhile
            self._seen_parts &= set(names)
            for name in sorted(set(names) - self._seen_parts):
                try:
                    with self.fs.open(name, "rb") as fh:
                        table = pq.read_table(fh, columns=["fit_id"])
                except FileNotFoundError:
                    vanished = True
                    continue
                self._done.update(v for v in table.column(0).to_pylist() if v is not None)
                self._seen_parts.add(name)
            if not vanished:
                return


def _mtime(info: dict[str, Any]) -> float:
    value: Any = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    return float(value) if value is not None else time.time()


def live_sweeps(parts_dir: Path, lease_s: float = DEFAULT_LEASE_S) -> list[str]:
    """The markers of the sweeps still running on the local warehouse whose parts are `parts_dir`.

    A marker is dead when its process on this host is gone, or when it has not been refreshed
    within `lease_s` (a running sweep refreshes it every `lease_s / 4`). Reads only: nothing is written or removed.
    """
    folder = Path(parts_dir) / "claims"
    if not folder.is_dir():
        return []
    live = []
    for marker in sorted(folder.glob(SWEEP_PREFIX + "*")):
        try:
            holder = json.loads(marker.read_bytes() or b"{}")
            age = time.time() - marker.stat().st_mtime
        except FileNotFoundError:
            continue
        except ValueError:  # killed while writing its marker
            holder, age = {}, time.time() - marker.stat().st_mtime
        here = holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int)
        if age <= lease_s and not (here and not _pid_alive(holder["pid"])):
            live.append(marker.name)
    return live
