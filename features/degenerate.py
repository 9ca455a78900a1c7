"""Degenerate feature sets: constant features, or a numerical rank far below the width (issue 34).

An encoder whose features do not vary (a broken checkpoint, a layer that outputs a constant)
gives probes nothing to learn, yet its axes look excellent: AUROC 0.5 with calibration near 1
and no drop under perturbation. Extraction therefore measures each depth's clean features on
the first `SAMPLE_ROWS` rows (the train split comes first): the numerical rank of the centred
matrix is the number of singular values above `RANK_TOL` times the largest (float16 storage
resolves about 1e-3). A depth whose rank is below `MIN_RANK_SHARE` of the attainable rank
min(rows - 1, width) is degenerate. Only the depth the CRS reads (`CRS_DEPTH`, the final block)
decides the verdict: stored in the set's attrs (`degenerate`, a one-line reason, absent when
sound), warned about, and carried into the catalog; the warehouse leaves the encoder out of ranks
until the set is confirmed (`confirm`). A degenerate intermediate depth feeds only the depth
profile (E3), so it is a warning naming the depth (kept in `degenerate_other_depths`) and the
encoder stays ranked.

The demo's tiny random-init encoders keep at least 42 % of their attainable rank at every depth
(the lowest: tiny-convnext at d025 on chexpert, 17 of 40), far above the threshold.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np
import zarr

from crsbench.core import CLEAN, CRS_DEPTH, DEPTHS
from crsbench.features.store import FeatureSetRef, depth_key

SAMPLE_ROWS = 2048
RANK_TOL = 1e-3
MIN_RANK_SHARE = 0.10
DEGENERATE = "degenerate"  # group attr: the reason, or absent
CONFIRMED = "degenerate_confirmed_at"  # group attr: when a user confirmed a flagged set
OTHER_DEPTHS = "degenerate_other_depths"  # group attr: the reasons at depths the CRS does not read


def numerical_rank(features: np.ndarray) -> int:
    """Singular values of the centred rows above RANK_TOL times the largest (0 for constant rows)."""
    x = np.asarray(features, dtype=np.float64)
    x = x[np.isfinite(x).all(axis=1)]
    if len(x) < 2:
        return 0
    x = x - x.mean(axis=0)
    s = np.linalg.svd(x, compute_uv=False)
    if s.size == 0 or s[0] <= 1e-12 * max(1.0, float(np.abs(x).max(initial=0.0))):
        return 0
    return int(np.sum(s > RANK_TOL * s[0]))


def degeneracy(features: np.ndarray, where: str) -> str | None:
    """A one-line reason when `features` (rows x width) are constant or of too low a rank, else None."""
    rows, width = features.shape
    rank = numerical_rank(features)
    attainable = min(rows - 1, width)
    if attainable < 1:
        return None
    if rank == 0:
        return f"constant features at {where} (every one of the {width} columns is the same on {rows} images)"
    if rank < MIN_RANK_SHARE * attainable:
        return (
            f"numerical rank {rank} at {where}, far below its width {width} "
            f"(under {MIN_RANK_SHARE:.0%} of the {attainable} attainable on {rows} images)"
        )
    return None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What extraction found: `reason` at the depth the CRS reads (it flags the set: no rank until
    confirmed), `other_depths` at the depths it does not read (a warning; the set stays ranked)."""

    reason: str | None
    other_depths: str | None

    def other_depths_warning(self, path: str) -> str:
        """The one-line warning for `other_depths` of the set at `path` (when there are any)."""
        return (
            f"feature set {path} is degenerate at a depth the CRS does not read: {self.other_depths}; "
            f"it stays ranked (the CRS reads {depth_key(CRS_DEPTH)} only), but probes at that depth "
            "learn little from it (the depth profile, E3)"
        )


def assess(group: zarr.Group) -> Verdict:
    """The verdict on a feature set's clean features, deepest depth first, stored in its attrs."""
    reason = None
    others = []
    for depth in sorted(DEPTHS, reverse=True):
        name = f"{depth_key(depth)}/{CLEAN}"
        if name not in group:
            continue
        array = group[name]
        assert isinstance(array, zarr.Array)
        found = degeneracy(np.asarray(array[: min(SAMPLE_ROWS, array.shape[0])]), depth_key(depth))
        if depth == CRS_DEPTH:
            reason = found
        elif found is not None:
            others.append(found)
    verdict = Verdict(reason, "; ".join(others) or None)
    group.attrs[DEGENERATE] = reason
    if verdict.other_depths is not None:
        group.attrs[OTHER_DEPTHS] = verdict.other_depths
    elif OTHER_DEPTHS in group.attrs:
        del group.attrs[OTHER_DEPTHS]
    return verdict


def confirm(group: zarr.Group, path: str) -> str:
    """Record that a user accepts the flagged set `group` as it is; returns the reason confirmed.
    A set that is not flagged is an error (there is nothing to confirm)."""
    from crsbench.core import CrsbenchError

    reason = group.attrs.get(DEGENERATE)
    if not reason:
        raise CrsbenchError(f"feature set {path} is not flagged as degenerate; there is nothing to confirm")
    group.attrs[CONFIRMED] = dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(timespec="seconds")
    return str(reason)


def confirm_in_store(store_url: str, ref: FeatureSetRef) -> dict[str, object]:
    """`confirm` the set `ref` of the store at `store_url`; returns its attrs after."""
    from crsbench.features.store import FeatureStore

    store = FeatureStore(store_url)
    store.attrs(ref)  # names the extract command when the set is missing
    node = store.root(writable=True)[ref.path]
    assert isinstance(node, zarr.Group)
    confirm(node, ref.path)
    return dict(node.attrs)
