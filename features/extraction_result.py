"""What an extraction returns: the feature set's stored attributes, typed, and what the call did.

`StoredAttrs.from_attrs` reads a set's group attributes (as the store keeps them, e.g.
`FeatureStore.attrs`) into the fields the catalog and the pipeline use; `raw` keeps every
attribute as stored (a read-only view), so nothing about the stored format changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from crsbench.core import DEPTHS, CrsbenchError
from crsbench.features.conditions import stored_conditions
from crsbench.features.integrity import Damage
from crsbench.features.store import SCREENED_ATTR, depth_key

# The attributes without which a set's catalog row cannot be written.
REQUIRED = ("image_digest", "dim", "n_images")


@dataclasses.dataclass(frozen=True)
class StoredAttrs:
    """A feature set's group attributes, typed where a reader uses them (METHODS.md §2)."""

    image_digest: str
    dim: int
    n_images: int
    depths: tuple[str, ...]  # depth keys; a set written before they were recorded holds the protocol's four
    conditions: tuple[str, ...]
    dtype: str
    complete: bool
    screened: bool  # the clean condition of every row is written: screened (extract --screen) or complete
    pretrained: bool
    checkpoint: str | None
    weights_hash: str | None
    code_version: str | None
    provenance: str | None
    degenerate: str | None  # why the set is degenerate; None when it is not
    degenerate_confirmed_at: str | None  # an ISO timestamp as stored; None when unconfirmed
    encoder: Mapping[str, Any] | None  # the entry's spec (EncoderEntry.to_dict()) when the set records it
    weights_loaded: tuple[Mapping[str, str], ...]  # which part of which file the weights came from
    repairs: Mapping[str, int]  # depth key -> how many times its data were repaired
    cost: Mapping[str, Any] | None  # features.cost; None for a set made before cost was measured
    raw: Mapping[str, Any]  # every attribute, as stored

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any], where: str) -> StoredAttrs:
        """Read group attributes; `where` names the set (e.g. 'feature set <path> in <store>') in
        the error raised when attributes every crsbench set has are missing."""
        missing = [k for k in REQUIRED if k not in attrs]
        if missing:
            raise CrsbenchError(f"{where} lacks attributes {missing}; it was not written by crsbench extract")
        encoder, repairs = attrs.get("encoder"), attrs.get("repairs")
        confirmed = attrs.get("degenerate_confirmed_at")
        return cls(
            image_digest=attrs["image_digest"],
            dim=int(attrs["dim"]),
            n_images=int(attrs["n_images"]),
            depths=tuple(attrs.get("depths", [depth_key(d) for d in DEPTHS])),
            conditions=stored_conditions(attrs),
            dtype=attrs.get("dtype", "float16"),
            complete=bool(attrs.get("complete", False)),
            screened=bool(attrs.get("complete", False) or attrs.get(SCREENED_ATTR, False)),
            pretrained=bool(attrs.get("pretrained", True)),
            checkpoint=attrs.get("checkpoint"),
            weights_hash=attrs.get("weights_hash"),
            code_version=attrs.get("code_version"),
            provenance=attrs.get("provenance"),
            degenerate=attrs.get("degenerate") or None,
            degenerate_confirmed_at=str(confirmed) if confirmed else None,
            encoder=MappingProxyType(dict(encoder)) if isinstance(encoder, dict) else None,
            weights_loaded=tuple(attrs.get("weights_loaded") or ()),
            repairs=MappingProxyType({str(k): int(v) for k, v in dict(repairs or {}).items()}),
            cost=MappingProxyType(dict(cost)) if isinstance(cost := attrs.get("cost"), dict) else None,
            raw=MappingProxyType(dict(attrs)),
        )

    def to_attrs(self) -> dict[str, Any]:
        """The attributes as stored (a copy)."""
        return dict(self.raw)


@dataclasses.dataclass(frozen=True)
class ExtractionResult:
    """One extraction of one feature set: the set's attributes after it, and what this call did."""

    stored: StoredAttrs
    skipped: bool  # the set was complete (or had nothing to repair): nothing was extracted
    seconds: float = 0.0  # extraction time (0 when skipped)
    # A repair (ExtractOptions.repair): the row chunks re-extracted, the damage found, and the
    # depth keys whose data changed; all None when the call was no repair.
    repaired: tuple[int, ...] | None = None
    damage: tuple[Damage, ...] | None = None
    repaired_depths: tuple[str, ...] | None = None
    # Over a cluster (features.extraction_cluster): the chunks this client computed, of the set's.
    chunks_here: int | None = None
    n_chunks: int | None = None
