"""An encoder id names one model: every frozen feature set of an id holds the same weights (METHODS.md §2).

The `encoders` row and every per-encoder score (CRS and the rest) pool an id's feature sets over
datasets, so sets of one id made with two weights files would average two models under one name.
Before any extraction work, a run is checked against the sets the id already holds (in the store
it writes, and in the warehouse's catalog): other weights are refused in one line naming both
hashes, the dataset whose set holds the other hash, and the two ways out -- register the new
weights under a new encoder id, or rerun with `--force` naming every dataset that holds a set of
the id, so the run re-extracts them all with the new weights.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from crsbench.core import FROZEN, CrsbenchError
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import FeatureStore
from crsbench.features.weights import download_policy, fingerprint, planned_weights

SHORT = 16  # hex digits of a hash shown in messages (as features.extraction.check_same_weights)


@dataclasses.dataclass(frozen=True)
class HeldSet:
    """One existing feature set of an encoder id and the weights it was made with."""

    dataset: str
    weights_hash: str
    store_url: str
    weights_source: Any = None  # the files' fingerprint, when the store records it


def held_in_store(store: FeatureStore, encoder_id: str) -> list[HeldSet]:
    """The frozen feature sets of `encoder_id` in `store` that record a weights hash."""
    held = []
    for ref in store.feature_sets():
        if ref.encoder_id != encoder_id or ref.regime != FROZEN:
            continue
        attrs = store.attrs(ref)
        if attrs.get("weights_hash"):
            held.append(HeldSet(ref.dataset, str(attrs["weights_hash"]), store.url, attrs.get("weights_source")))
    return held


def source_fingerprint(entry: EncoderEntry, weights: Path | None) -> list[list[Any]] | None:
    """The fingerprint of the files building `entry` would read now (None: none, or not local)."""
    try:
        with download_policy(False):
            return fingerprint(planned_weights(entry, weights))
    except CrsbenchError:
        return None


def local_weights_hash(entry: EncoderEntry, options: ExtractOptions) -> str | None:
    """The `state_dict_hash` of the model this machine would extract with; None when its
    weights are not here and may not be downloaded (such a run extracts nothing new)."""
    weights = Path(options.weights) if options.weights is not None else None
    try:
        with download_policy(False):
            planned_weights(entry, weights)
    except CrsbenchError:
        if weights is None and not options.allow_download:
            return None
    built = build_model(entry, weights, allow_download=options.allow_download, trust_pickle=options.trust_pickle)
    return state_dict_hash(built)


def check_one_model(
    entry: EncoderEntry,
    held: Sequence[HeldSet],
    options: ExtractOptions,
    datasets: Collection[str],
    store_url: str,
    weights_hash: Callable[[], str | None],
) -> None:
    """Return if extracting `entry` on `datasets` into `store_url` keeps one weights hash over
    every set of the id; else a CrsbenchError (one line) naming both hashes and the ways out.

    With `force`, the sets on `datasets` in `store_url` are replaced by the run, so only the
    others must hold the new weights. `weights_hash()` is called only when the fingerprint of
    the weights files differs from the one the held sets recorded."""
    if not held:
        return
    hashes = {h.weights_hash for h in held}
    now = source_fingerprint(entry, Path(options.weights) if options.weights is not None else None)
    if len(hashes) == 1 and now is not None and any(h.weights_source == now for h in held):
        return  # the very files the sets were made with
    new = weights_hash()
    if new is None:
        return  # the weights are not here: nothing new can be extracted
    replaced = {d for d in datasets} if options.force else set()
    others = [h for h in held if h.weights_hash != new and not (h.store_url == store_url and h.dataset in replaced)]
    if not others:
        return
    raise CrsbenchError(_refusal(entry, held, others[0], new, options, store_url))


def _refusal(
    entry: EncoderEntry, held: Sequence[HeldSet], other: HeldSet, new: str, options: ExtractOptions, store_url: str
) -> str:
    given = f" ({options.weights})" if options.weights is not None else " (the entry's own)"
    where = "" if other.store_url == store_url else f" in store {other.store_url}"
    here = sorted({h.dataset for h in held if h.store_url == store_url})
    elsewhere = sorted({f"{h.dataset} in store {h.store_url}" for h in held if h.store_url != store_url})
    force = (
        f"or rerun with --force naming every dataset that holds a set of it "
        f"({' '.join(f'-d {d}' for d in here)}, or -d all) to re-extract them all with these weights "
        f"(the probe fits trained on the old sets are retired)"
        if not elsewhere
        else f"or re-extract its sets elsewhere ({', '.join(elsewhere)}) with these weights first"
    )
    return (
        f"encoder id {entry.id!r} names one model: its feature set on {other.dataset}{where} holds weights "
        f"{other.weights_hash[:SHORT]}, but the weights given now{given} hash {new[:SHORT]}; register the new "
        f"weights under a new encoder id (an [encoder.<id>] table with weights = ...), {force}"
    )
