"""The encoder registry (METHODS.md §2): one entry per encoder, data plus one constructor.

Entries come from four places, each recorded as the entry's `origin`:
* `built-in`: the paper's families (`features.encoders`) and the tiny random-init architectures
  (`features.encoders_tiny`);
* `id`: any library model named on the command line, `timm:<name>`, `hf:<repo or folder>`,
  `open_clip:<arch>` (`features.by_id`), resolved from the library's own configuration;
* `toml:<file>`: `[encoder.<id>]` tables of a user's TOML file (`features.user`);
* `plugin:<dist>`: the `crsbench.encoders` entry-point group of pip-installed packages.
Nothing else in the code names a particular encoder. This module is the entries' data and
imports nothing else from `crsbench.features` (those four sources import it): `features.lookup`
finds an entry across them, `features.loaders.build_model` builds one. It imports no torch, so
that listing the registry (`crsbench encoders`) stays instant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.core import CrsbenchError, Registry

if TYPE_CHECKING:
    from torch import nn

SCOPES: tuple[str, ...] = ("general", "broad_medical", "specialty")
DOMAINS: tuple[str, ...] = ("derm", "eye", "rad", "none")
LOADERS: tuple[str, ...] = ("timm", "transformers", "open_clip", "python")
POOLINGS: tuple[str, ...] = ("cls", "mean", "projection", "avgpool")
# Text-tower layouts of the image-text encoders (`features.text`; None: no text tower).
TEXT_TOWERS: tuple[str, ...] = ("clip", "siglip", "open_clip", "cxr-bert")

Constructor = Callable[["EncoderEntry", "Path | None"], "nn.Module"]


@dataclasses.dataclass(frozen=True)
class KeyConversion:
    """How a published checkpoint's keys map onto the library model: declared data, never code.

    Applied in this order: take `state_key` if the file nests its state dict under it; keep
    only the keys under `keep_prefix` (stripped) when the file has any; strip
    `strip_prefixes`; drop keys under `drop_prefixes` (parts of the published model crsbench
    does not run: decoders, text towers, classifier heads); replace substrings by `rename`;
    with `merge_qv_bias`, fold BEiT/CAE-style `attn.q_bias` + `attn.v_bias` into the
    `attn.qkv.bias` the library model has (the key bias is zero in those models). What is left
    must match the model exactly: `allow_missing` names model keys no checkpoint carries.
    """

    state_key: str | None = None
    keep_prefix: str | None = None
    strip_prefixes: tuple[str, ...] = ()
    drop_prefixes: tuple[str, ...] = ()
    rename: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)
    merge_qv_bias: bool = False
    allow_missing: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["rename"] = dict(self.rename)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


@dataclasses.dataclass(frozen=True)
class Pretraining:
    """What an encoder's weights were pretrained on, as declared (METHODS.md, pretraining overlap).

    `datasets` holds canonical dataset names (`crsbench.ingest` known datasets); None means
    unknown, which is a value in its own right and never read as "none of them". `source` is
    where the statement is made (a model card's URL, a paper), so a reader can check it.
    """

    datasets: tuple[str, ...] | None = None
    source: str | None = None

    @property
    def known(self) -> bool:
        return self.datasets is not None

    def describe(self) -> str:
        """A short line for listings: unknown is said as such, never shown as "none" (the
        source is long, so a listing shows it in a column of its own)."""
        if self.datasets is None:
            return "pretraining data: unknown"
        return f"pretrained on: {', '.join(self.datasets) if self.datasets else 'none'}"


UNKNOWN_PRETRAINING = Pretraining()


@dataclasses.dataclass(frozen=True)
class EncoderEntry:
    """Everything needed to build one encoder and read its features at four depths.

    `depth_blocks` names where the depth hooks go, relative to the model's `hook_root`:
    one dotted path to a block container (transformer blocks; the blocks at 25/50/75/100 %
    of its length are hooked) or a tuple of several module paths (CNN stages; the stage
    nearest each depth is hooked). `skip_last_blocks` leaves the container's last blocks out
    of the depth grid (LLaVA reads its vision tower's penultimate layer, so that is its 100 %).
    `final_norm` is applied to the tokens of every depth before pooling, so all depths are on
    the scale of the model's own output. With `pooling="projection"` the 100 % feature is the
    model's projected embedding (its forward output) and the shallower depths pool tokens by
    `token_pool`. Mean pooling skips `prefix_tokens` leading tokens (CLS, registers); None
    reads timm's `num_prefix_tokens` and otherwise assumes one CLS token. `weights_path` is a
    user's own weight file or folder (TOML entries). `extra_repos` are
    further hub repos the entry needs besides its own (checked by `--check-weights`).
    `text_tower` names the layout of the entry's text encoder (`features.text`), for zero-shot
    classification; None for image-only encoders.
    `trust_pickle` lets checkpoints holding pickled Python objects (training checkpoints with
    an argparse Namespace) load with `weights_only=False`, as `--trust-pickle` does.
    `architecture` fixes what a transformers entry builds: config fields (hidden_size,
    num_hidden_layers, patch_size, image_size) of the publisher's model the id stands for; a
    folder whose config differs is refused (`features.architecture`). Empty: any
    architecture the folder describes (`hf:` ids, TOML entries).
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
    trust_pickle: bool = False
    final_norm: str | None = None
    token_pool: str = "cls"
    prefix_tokens: int | None = None
    skip_last_blocks: int = 0
    lora_targets: tuple[str, ...] = ()
    weights_file: str | None = None
    weights_path: str | None = None
    extra_repos: tuple[str, ...] = ()
    text_tower: str | None = None
    convert: KeyConversion = KeyConversion()
    pretraining: Pretraining = UNKNOWN_PRETRAINING  # kept out of to_dict: a declaration, not how features are made
    source: str = ""
    origin: str = "built-in"
    model_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    architecture: Mapping[str, int] = dataclasses.field(default_factory=dict, hash=False)
    constructor: Constructor | None = dataclasses.field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        checks = (
            ("scope", self.scope, SCOPES),
            ("domain", self.domain, DOMAINS),
            ("loader", self.loader, LOADERS),
            ("pooling", self.pooling, POOLINGS),
            ("token_pool", self.token_pool, ("cls", "mean")),
        )
        for name, value, allowed in checks:
            if value not in allowed:
                raise CrsbenchError(f"encoder {self.id!r}: {name} {value!r} not in {allowed}")
        if self.text_tower is not None and self.text_tower not in TEXT_TOWERS:
            raise CrsbenchError(f"encoder {self.id!r}: text_tower {self.text_tower!r} not in {TEXT_TOWERS}")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise CrsbenchError(f"encoder {self.id!r}: mean/std need three values, std > 0")
        if self.input_size < 1:
            raise CrsbenchError(f"encoder {self.id!r}: input_size must be positive")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description (stored in the Zarr attrs and the warehouse)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _NOT_IN_SPEC}
        out["mean"], out["std"] = list(self.mean), list(self.std)
        out["depth_blocks"] = self.depth_blocks if isinstance(self.depth_blocks, str) else list(self.depth_blocks)
        out["lora_targets"] = list(self.lora_targets)
        out["extra_repos"] = list(self.extra_repos)
        out["convert"] = self.convert.to_dict()
        out["model_kwargs"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.model_kwargs.items()}
        out["architecture"] = dict(self.architecture)
        return out


# Fields that do not describe how features are made: stored specs stay as they were.
_NOT_IN_SPEC = ("constructor", "pretraining")


def library_defaults(fields: dict[str, Any]) -> dict[str, Any]:
    """Input size, mean and std a library publishes for an entry's checkpoint (timm's
    pretrained_cfg); empty when the entry declares them or the library has none. timm is
    imported only when an entry leaves one of them out (the built-in entries declare all three)."""
    if fields.get("loader") != "timm" or {"input_size", "mean", "std"} <= set(fields):
        return {}
    import timm

    cfg = timm.get_pretrained_cfg(str(fields.get("checkpoint")))
    if cfg is None:
        return {}
    return {"input_size": int(cfg.input_size[-1]), "mean": tuple(cfg.mean), "std": tuple(cfg.std)}


def _make_entry(name: str, fn: Constructor, **fields: Any) -> EncoderEntry:
    # Fields the library already publishes for the checkpoint (timm's input size, mean and
    # std) may be left out of an entry; it then carries the library's values.
    return EncoderEntry(id=name, constructor=fn, **{**library_defaults(fields), **fields})


ENCODERS: Registry[EncoderEntry] = Registry(
    "encoder", make=_make_entry, builtins=("crsbench.features.encoders", "crsbench.features.encoders_tiny")
)
# Decorator: `@register_encoder("id", **fields)` on `fn(entry, weights) -> nn.Module`.
register_encoder = ENCODERS.register


def add_entry(entry: EncoderEntry) -> EncoderEntry:
    """Register a complete entry (TOML files and plugins come through here)."""
    if ":" in entry.id:
        raise CrsbenchError(f"encoder id {entry.id!r} may not contain ':' (reserved for timm:/hf:/open_clip: ids)")
    if entry.id in ENCODERS:
        raise CrsbenchError(
            f"encoder {entry.id!r} is registered twice ({ENCODERS.get(entry.id).origin} and {entry.origin})"
        )
    return ENCODERS.add(entry.id, entry)


def remove_entries(origin: str) -> None:
    """Forget every entry of one origin (a TOML file re-read after a change)."""
    for name, entry in ENCODERS.items():
        if entry.origin == origin:
            ENCODERS.remove(name)
