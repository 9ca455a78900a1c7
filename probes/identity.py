"""What makes a probe fit's id (METHODS.md §3): its data digest, the weights hash of the feature
set it reads, that set's repairs at the depth read, and for a zero-shot fit its prompt set.

`identify` fills these into planned fits, so a changed dataset, shift target, weights file,
repaired chunk or prompt template gives new fit ids and the old fits are never reused;
`read_depth` is the stored depth a fit reads (a zero-shot fit of a set with a projected
embedding reads `proj`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from crsbench.core import CrsbenchError
from crsbench.features.store import PROJ, Depth, FeatureSetRef, FeatureStore, depth_key
from crsbench.ingest.types import Dataset
from crsbench.probes.records import FitKey, fit_data_digest
from crsbench.probes.registry import get_probe
from crsbench.probes.zeroshot import PROMPTS_MARK


def read_depth(fit: FitKey, store: FeatureStore, cache: dict[FeatureSetRef, bool] | None = None) -> Depth:
    """The stored depth a fit reads: its own, except that a zero-shot fit of a feature set that
    stores the projected image embedding (`proj`, BioViL) reads that (METHODS.md §3.5)."""
    if not get_probe(fit.probe).zero_shot:
        return fit.depth
    cache = {} if cache is None else cache
    ref = fit.feature_set
    if ref not in cache:
        try:
            cache[ref] = store.has_proj(ref)
        except CrsbenchError:
            cache[ref] = False  # a missing feature set is reported by the input checks
    return PROJ if cache[ref] else fit.depth


def identify(
    fits: Iterable[FitKey],
    datasets: Mapping[str, Dataset],
    shift_targets: Mapping[str, Sequence[str]],
    store: FeatureStore,
) -> list[FitKey]:
    """The fits with their data digest and weights hash filled in (what makes fit ids change
    when a dataset, a shift target or an encoder's weights change)."""
    data: dict[str, str] = {}
    weights: dict[FeatureSetRef, str] = {}
    repairs: dict[FeatureSetRef, dict[str, int]] = {}
    projected: dict[FeatureSetRef, bool] = {}
    out = []
    for fit in fits:
        if fit.dataset_id not in data:
            targets = {t: datasets[t].data_digest() for t in shift_targets.get(fit.dataset_id, ()) if t in datasets}
            data[fit.dataset_id] = fit_data_digest(datasets[fit.dataset_id].data_digest(), targets)
        ref = fit.feature_set
        if ref not in weights:
            try:
                weights[ref] = str(store.attrs(ref).get("weights_hash") or "")
            except CrsbenchError:
                weights[ref] = ""  # a missing feature set is reported by the input checks
        # A repaired (set, depth) gives its fits new ids: the fits that read the damage were retired.
        read = [ref, *(FeatureSetRef(t, ref.encoder_id, ref.regime) for t in shift_targets.get(fit.dataset_id, ()))]
        depth = depth_key(read_depth(fit, store, projected))
        generations = [_repairs(store, r, repairs).get(depth, 0) for r in read]
        suffix = f"+repairs{generations}" if any(generations) else ""
        if get_probe(fit.probe).zero_shot:
            # A zero-shot fit is also its prompt set: a changed template gives new fit ids.
            suffix += PROMPTS_MARK + _active_prompts(store, ref)
        out.append(dataclasses.replace(fit, data_digest=data[fit.dataset_id], weights_hash=weights[ref] + suffix))
    return sorted(out)


def _active_prompts(store: FeatureStore, ref: FeatureSetRef) -> str:
    try:
        return str(store.attrs(ref).get("zeroshot_active") or "")
    except CrsbenchError:
        return ""


def _repairs(store: FeatureStore, ref: FeatureSetRef, cache: dict[FeatureSetRef, dict[str, int]]) -> dict[str, int]:
    """{depth key: times repaired} of a feature set (`extract --repair`; empty for most)."""
    if ref not in cache:
        try:
            cache[ref] = {str(k): int(v) for k, v in dict(store.attrs(ref).get("repairs") or {}).items()}
        except CrsbenchError:
            cache[ref] = {}
    return cache[ref]
