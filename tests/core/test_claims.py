"""File claims (crsbench.core.claims): one holder per name, and a released claim stays released
even when the heartbeat refreshes it at the same moment on an object store (where a refresh
reads the claim and writes it back)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest

from crsbench.core.claims import FileClaims


@pytest.fixture
def root() -> Iterator[str]:
    url = f"memory://claims-{time.monotonic_ns()}"
    yield url
    fsspec.filesystem("memory").rm(url.removeprefix("memory://"), recursive=True)


def test_a_name_has_one_holder_until_it_is_released(root: str) -> None:
    with FileClaims(root) as first, FileClaims(root) as second:
        assert first.acquire(["a", "b"]) == {"a", "b"}
        assert second.acquire(["a", "b", "c"]) == {"c"}
        first.release(["a"])
        assert second.acquire(["a", "b"]) == {"a"}


def test_a_claim_released_during_its_refresh_is_not_re_created(root: str, monkeypatch: Any) -> None:
    claims = FileClaims(root, lease_s=0.2)  # beats every 0.05 s
    assert claims.acquire(["set-open"]) == {"set-open"}
    path = claims._path("set-open")
    releaser: list[threading.Thread] = []
    real_open = claims.fs.open

    def open_and_release_between_read_and_write(p: str, mode: str = "rb", **kw: Any) -> Any:
        if p.endswith("set-open") and mode == "wb" and not releaser:
            # The refresh has read the claim; the owner releases it now, before the write-back.
            thread = threading.Thread(target=claims.release, args=(["set-open"],))
            thread.start()
            releaser.append(thread)  # after start: the test joins it as soon as it is listed
            time.sleep(0.3)  # ample time for an unguarded release to remove the file
        return real_open(p, mode, **kw)

    monkeypatch.setattr(claims.fs, "open", open_and_release_between_read_and_write)
    deadline = time.monotonic() + 10
    while not releaser and time.monotonic() < deadline:
        time.sleep(0.01)
    assert releaser, "the heartbeat never refreshed the claim"
    releaser[0].join(timeout=10)
    time.sleep(0.2)  # let any further beats run
    monkeypatch.undo()
    claims.close()
    assert not claims.fs.exists(path)
