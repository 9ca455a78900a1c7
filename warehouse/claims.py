"""Fit claims: exactly one writer per probe fit, however many sweeps run at once.

A sweep claims each fit just before computing it with the generic file claim
(crsbench.core.claims: `<parts>/claims/<fit_id>`, exclusive create, a lease refreshed by a
heartbeat, takeover of a dead or silent holder), then checks the run parts for that fit once
more (another sweep may have finished it since this one planned), and deletes the claim after
its batch of run records has landed. A fit whose claim another live sweep holds is left to
that sweep, so concurrent `crsbench probe` processes (each with its own dask workers, which
never touch claims: the client claims, submits and writes) split the grid instead of repeating it.

Each sweep's holder marker `<parts>/claims/.sweep-<token>` lets a command that finishes tell
whether another sweep is still writing parts (`live_sweeps`) and leave the parts unfolded
rather than fold under it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from crsbench.core.claims import DEFAULT_LEASE_S, FileClaims, live_holders


class FitClaims(FileClaims):
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
        self.compacted_done = compacted_done
        self._done: set[str] = set()
        self._seen_parts: set[str] = set()
        super().__init__(parts_dir, lease_s=lease_s)

    def acquire(self, fit_ids: Sequence[str]) -> set[str]:
        """The fits of `fit_ids` this sweep now holds and that no run part holds yet."""
        got = super().acquire(fit_ids)
        if got:
            self._refresh_done()
            finished = got & self._done
            self.release(finished)
            got -= finished
        return got

    def done(self, fit_ids: Iterable[str]) -> set[str]:
        """Those of `fit_ids` whose run records have landed (by any sweep)."""
        self._refresh_done()
        return set(fit_ids) & self._done

    def __enter__(self) -> FitClaims:
        return self

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


def live_sweeps(parts_dir: Path, lease_s: float = DEFAULT_LEASE_S) -> list[str]:
    """The markers of the sweeps still running on the local warehouse whose parts are `parts_dir`
    (crsbench.core.claims.live_holders). Reads only: nothing is written or removed."""
    return live_holders(Path(parts_dir) / "claims", lease_s)
