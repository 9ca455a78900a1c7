"""The encoder registry (METHODS.md §2): one entry per encoder family, data plus one constructor.

Adding an encoder is adding an entry (see `crsbench.features.encoders`); nothing else in
the code names a particular encoder. This module imports no torch so that listing the
registry (`crsbench encoders`) stays instant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.ingest.types import CrsbenchError

if TYPE_CHECKING:
    from torch import nn

SCOPES: tuple[str, ...] = ("general", "broad_medical", "specialty")
DOMAINS: tuple[str, ...] = ("derm", "eye", "rad", "none")
LOADERS: tuple[str, ...] = ("timm", "transformers", "open_clip")
POOLINGS: tuple[str, ...] = ("cls", "mean", "projection", "avgpool")

Constructor = Callable[["EncoderEntry", "Path | None"], "nn.Module"]


@dataclasses.dataclass(frozen=True)
class EncoderEntry:
    """Everything needed to build one encoder and read its features at four depths.

    `depth_blocks` names where the depth hooks go, relative to the model's `hook_root`:
    one dotted path to a block container (transformer blocks; the blocks at 25/50/75/100 %
    of its length are hooked) or a tuple of several module paths (CNN stages; the stage
    nearest each depth is hooked). `final_norm` is applied to the tokens of every depth
    before pooling, so all depths are on the scale of the model's own output. With
    `pooling="projection"` the 100 % feature is the model's projected embedding (its
    forward output) and the shallower depths pool tokens by `token_pool`. Mean pooling skips
    `prefix_tokens` leading tokens (CLS, registers); None reads timm's `num_prefix_tokens`
    and otherwise assumes one CLS token.
    """

    id: str
    family: str
    scope: str
    domain: str
    loader: str
    checkpoint: str
    input_size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    pooling: str
    depth_blocks: str | tuple[str, ...]
    pretrained: bool = True
    chest_only: bool = False
    trust_remote_code: bool = False
    final_norm: str | None = None
    token_pool: str = "cls"
    prefix_tokens: int | None = None
    lora_targets: tuple[str, ...] = ()
    weights_file: str | None = None
    source: str = ""
    model_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    constructor: Constructor | None = dataclasses.field(default=None, compare=False, hash=False,
                                                        repr=False)

    def __post_init__(self) -> None:
        checks = (("scope", self.scope, SCOPES), ("domain", self.domain, DOMAINS),
                  ("loader", self.loader, LOADERS), ("pooling", self.pooling, POOLINGS),
                  ("token_pool", self.token_pool, ("cls", "mean")))
        for name, value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"encoder {self.id!r}: {name} {value!r} not in {allowed}")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError(f"encoder {self.id!r}: mean/std need three values, std > 0")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description (stored in the Zarr attrs and the warehouse)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "constructor"}
        out["mean"], out["std"] = list(self.mean), list(self.std)
        out["depth_blocks"] = (self.depth_blocks if isinstance(self.depth_blocks, str)
                               else list(self.depth_blocks))
        out["lora_targets"] = list(self.lora_targets)
        out["model_kwargs"] = dict(self.model_kwargs)
        return out

    def build(self, weights: Path | str | None = None) -> "nn.Module":
        """Construct the model in eval mode; weights resolve offline (see `loaders`)."""
        if self.constructor is None:
            raise CrsbenchError(f"encoder {self.id!r} has no constructor")
        model = self.constructor(self, Path(weights) if weights is not None else None)
        return model.eval()


_REGISTRY: dict[str, EncoderEntry] = {}


def register_encoder(id: str, **fields: Any) -> Callable[[Constructor], Constructor]:
    """Decorator: register `fn(entry, weights) -> nn.Module` under `id` with the entry's fields."""

    def decorate(fn: Constructor) -> Constructor:
        if id in _REGISTRY:
            raise ValueError(f"encoder {id!r} is registered twice")
        _REGISTRY[id] = EncoderEntry(id=id, constructor=fn, **fields)
        return fn

    return decorate


def _ensure_loaded() -> None:
    from crsbench.features import encoders  # noqa: F401  (registers the entries)


def get_encoder(id: str) -> EncoderEntry:
    _ensure_loaded()
    try:
        return _REGISTRY[id]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise CrsbenchError(f"unknown encoder {id!r}; known encoders: {known}") from None


def list_encoders(*, pretrained: bool | None = None) -> list[EncoderEntry]:
    """Registered entries in registration order (optionally only pretrained / random-init)."""
    _ensure_loaded()
    return [e for e in _REGISTRY.values() if pretrained is None or e.pretrained == pretrained]


def tiny_encoder_ids() -> list[str]:
    """The random-initialised entries used by tests and the demo (`all-tiny` on the CLI)."""
    return [e.id for e in list_encoders(pretrained=False)]
