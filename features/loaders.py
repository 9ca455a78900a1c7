"""Building encoders: the timm / transformers / open_clip / python loaders.

Every loader resolves weights through `features.weights` (offline unless downloads are
allowed) and loads them strictly (`features.checkpoints`, or transformers' own loading report
checked the same way). Random-initialised entries are built from a fixed seed so the same
entry gives the same weights in every process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
import operator
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from crsbench.core import CrsbenchError
from crsbench.features.architecture import check_architecture
from crsbench.features.checkpoints import load_checkpoint, mismatch_message
from crsbench.features.hub import library_calls, say
from crsbench.features.registry import EncoderEntry
from crsbench.features.weights import (  # noqa: F401
    FOLDER_LAYOUTS,
    WEIGHTS_ENV,
    check_config_kind,
    download_policy,
    note_load,
    pickle_policy,
    resolve_weights,
    weights_status,
)

INIT_SEED = 0


def build_model(
    entry: EncoderEntry,
    weights: Path | str | None = None,
    *,
    allow_download: bool | None = None,
    trust_pickle: bool = False,
) -> nn.Module:
    """Construct the entry's model in eval mode; weights resolve offline unless downloads are allowed
    (`allow_download`, else `$CRSBENCH_ALLOW_DOWNLOAD`; see `features.weights`), and pickled
    checkpoints load only with `trust_pickle` (or the entry's flag). The libraries' own output
    is captured (`features.hub`)."""
    if entry.constructor is None:
        raise CrsbenchError(f"encoder {entry.id!r} has no constructor")
    with download_policy(allow_download), pickle_policy(trust_pickle or entry.trust_pickle), library_calls():
        model = entry.constructor(entry, Path(weights) if weights is not None else None)
    return model.eval()


def state_dict_hash(model: nn.Module) -> str:
    """SHA-256 over every parameter and buffer (name, dtype, shape, bytes): what actually ran."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


@contextmanager
def seeded(seed: int = INIT_SEED) -> Iterator[None]:
    """Deterministic random init that leaves the caller's RNG state untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def submodule(root: nn.Module, path: str) -> nn.Module:
    try:
        return operator.attrgetter(path)(root) if path else root
    except AttributeError:
        raise CrsbenchError(f"model {type(root).__name__} has no submodule {path!r}") from None


def _options(entry: EncoderEntry, **kwargs: Any) -> dict[str, Any]:
    return {**{k: v for k, v in entry.model_kwargs.items() if k not in ("hub_repo", "arch", "model_cfg")}, **kwargs}


# -- timm ---------------------------------------------------------------------------------------


def timm_model(entry: EncoderEntry, weights: Path | None, arch: str | None = None, **kwargs: Any) -> nn.Module:
    """A timm backbone without its classifier; random-init from a fixed seed if not pretrained."""
    import timm

    arch = arch or entry.checkpoint
    options = _options(entry, num_classes=0, **kwargs)
    try:
        with seeded():
            model = timm.create_model(arch, pretrained=False, **options)
        if _needs_dynamic_size(entry, arch, model, options):
            with seeded():  # the same parameters and init; only the patch grid follows the input
                model = timm.create_model(arch, pretrained=False, **options, dynamic_img_size=True)
    except RuntimeError as exc:  # timm: "Unknown model (...)"
        raise CrsbenchError(f"encoder {entry.id!r}: {str(exc).splitlines()[0]}") from None
    if entry.pretrained or weights is not None or entry.weights_path:
        # timm's published files keep the classifier timm names in pretrained_cfg; crsbench
        # builds the model without it (num_classes=0), as timm itself does.
        pretrained_cfg: dict[str, Any] = getattr(model, "pretrained_cfg", None) or {}
        head = pretrained_cfg.get("classifier")
        heads = (head,) if isinstance(head, str) else tuple(head or ())
        rules = dataclasses.replace(
            entry.convert, drop_prefixes=entry.convert.drop_prefixes + tuple(f"{h}." for h in heads)
        )
        load_checkpoint(model, resolve_weights(entry, weights), rules, entry.id)
    return model


def _needs_dynamic_size(entry: EncoderEntry, arch: str, model: nn.Module, options: dict[str, Any]) -> bool:
    """Whether a ViT-like timm model built for a fixed image size must run at the entry's other
    `input_size`. timm's `dynamic_img_size` resamples the position embedding to the patch grid of
    each input (as timm does for a checkpoint loaded at another `img_size`), so a checkpoint
    trained at the model's size loads unchanged. A model without that option is refused here,
    not by an assertion inside its forward."""
    patch_embed = getattr(model, "patch_embed", None)
    fixed = getattr(patch_embed, "img_size", None)
    if not getattr(patch_embed, "strict_img_size", False) or fixed is None:
        return False
    fixed = tuple(fixed) if isinstance(fixed, (tuple, list)) else (fixed, fixed)
    size = entry.input_size
    if fixed == (size, size) or "img_size" in options or "dynamic_img_size" in options:
        return False
    if "dynamic_img_size" in inspect.signature(type(model).__init__).parameters:
        return True
    raise CrsbenchError(
        f"encoder {entry.id!r}: timm model {arch!r} takes {fixed[0]}x{fixed[1]} px input only, not input_size "
        f"{size}; drop the input_size override, or build it for {size} px with model_kwargs "
        f"{{ img_size = {size} }} (its weights must then fit that size)"
    )


# -- transformers -------------------------------------------------------------------------------


class HFVision(nn.Module):
    """A transformers vision model whose forward returns its pooled/projected embedding.

    Hooks are placed relative to the model's `vision_model` where it has that wrapper
    (`CLIPVisionModelWithProjection`) and to the model itself otherwise (`SiglipVisionModel`,
    `CLIPVisionModel`, `Dinov2Model` under transformers 5), so entries name blocks the same way.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    @property
    def hook_root(self) -> nn.Module:
        inner = getattr(self.model, "vision_model", None)
        return inner if isinstance(inner, nn.Module) else self.model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        out = self.model(pixel_values=pixel_values)
        for name in ("image_embeds", "pooler_output"):
            value: torch.Tensor | None = getattr(out, name, None)
            if value is not None:
                return value
        cls: torch.Tensor = out.last_hidden_state[:, 0]
        return cls


def check_loading_report(entry: EncoderEntry, info: dict[str, Any], source: str, model: nn.Module) -> None:
    """Apply the strict-loading rule to transformers' report (declared drops/allowances honoured)."""
    rules = entry.convert
    missing = sorted(
        k for k in info.get("missing_keys", ()) if not (rules.allow_missing and k.startswith(rules.allow_missing))
    )
    unexpected = sorted(
        k for k in info.get("unexpected_keys", ()) if not (rules.drop_prefixes and k.startswith(rules.drop_prefixes))
    )
    shapes = sorted(
        f"{k[0]} {tuple(k[1])} vs model {tuple(k[2])}" if isinstance(k, tuple) else str(k)
        for k in info.get("mismatched_keys", ())
    )
    if missing or unexpected or shapes:
        raise CrsbenchError(
            f"weights {source} do not fit encoder {entry.id!r} "
            f"({type(model).__name__}): {mismatch_message(missing, unexpected, shapes)}"
        )


def pickled_folder_error(folder: Path, message: str) -> CrsbenchError:
    """The one-line refusal of a model folder whose torch weights file holds pickled Python objects
    (transformers loads it with weights_only=True whatever it is asked, so --trust-pickle cannot help)."""
    import re

    files = sorted(p.name for p in Path(folder).glob("pytorch_model*.bin")) or ["pytorch_model.bin"]
    found = re.search(r"GLOBAL ([\w.]+)", message)
    what = f" ({found.group(1)})" if found else ""
    weights = Path(folder) / files[0]
    return CrsbenchError(
        f"weights {weights} hold pickled Python objects{what}, which run code as they load; if you trust "
        f"the file, convert it once to tensors only: crsbench weights convert --trust-pickle {weights} "
        f"{Path(folder) / 'model.safetensors'} (then move {files[0]} away)"
    )


def hf_vision_model(
    entry: EncoderEntry, weights: Path | None, model_class: str = "AutoModel", vision_submodule: tuple[str, ...] = ()
) -> nn.Module:
    """A transformers model read from a local folder or the HF cache, loaded strictly."""
    import transformers
    from huggingface_hub.errors import StrictDataclassError  # transformers' config validation

    path = resolve_weights(entry, weights)
    check_architecture(entry, path)  # before any weights are read
    cls = getattr(transformers, model_class)
    # A vision tower's config is a sub-config (`base_config_key`): a folder of another kind (the
    # LLaVA-Med language model for its CLIP tower) would be forced into it and fail validation.
    kind = getattr(cls, "config_class", None)  # None for the Auto classes
    if kind is not None and kind.base_config_key and path.is_dir():
        check_config_kind(entry, path, model_class, kind.model_type, kind.base_config_key)
    try:
        model, info = cls.from_pretrained(
            str(path),
            local_files_only=True,
            dtype=torch.float32,
            trust_remote_code=bool(entry.trust_remote_code),
            output_loading_info=True,
            ignore_mismatched_sizes=True,
            **_options(entry),
        )
    except (OSError, ValueError, RuntimeError, pickle.UnpicklingError, StrictDataclassError) as exc:
        if "weights only load failed" in str(exc).lower():
            raise pickled_folder_error(path, str(exc)) from None
        text = " ".join(str(exc).split()) if isinstance(exc, StrictDataclassError) else str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise CrsbenchError(f"cannot load encoder {entry.id!r} from {path}: {first}") from None
    check_loading_report(entry, info, str(path), model)
    note_load(str(path), "saved model folder")
    for candidate in vision_submodule:
        try:
            model = operator.attrgetter(candidate)(model)
            break
        except AttributeError:
            continue
    return HFVision(model)


# -- open_clip ----------------------------------------------------------------------------------


class OpenClipVision(nn.Module):
    """An open_clip image tower; its forward is the tower's projected embedding (`encode_image`)."""

    def __init__(self, visual: nn.Module) -> None:
        super().__init__()
        self.visual = visual

    @property
    def hook_root(self) -> nn.Module:
        return self.visual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled: torch.Tensor = self.visual(x)
        return pooled


def open_clip_config(entry: EncoderEntry, path: Path, arch: str | None) -> tuple[dict[str, Any], Path]:
    """(model_cfg, weight file): from a hub folder's open_clip_config.json, or a built-in arch."""
    import open_clip

    if arch is None:
        config_name, weight_names = FOLDER_LAYOUTS["open_clip"]
        with open(path / config_name, encoding="utf-8") as f:
            cfg = json.load(f)["model_cfg"]
        weight = next(path / w for w in weight_names if (path / w).is_file())
        return cfg, weight
    cfg = open_clip.get_model_config(arch)
    if cfg is None:
        raise CrsbenchError(f"encoder {entry.id!r}: open_clip has no architecture {arch!r}")
    return cfg, path


def build_open_clip(cfg: dict[str, Any]) -> Any:
    """The whole open_clip model of a config, random-init from crsbench's fixed seed (the image
    tower is built first, as open_clip does, so its weights equal `open_clip_model`'s)."""
    from open_clip.model import CLIP, CustomTextCLIP

    vision = {**cfg["vision_cfg"], "timm_model_pretrained": False}
    text = {**cfg["text_cfg"], "hf_model_pretrained": False}
    cls = CustomTextCLIP if "hf_model_name" in text else CLIP
    options = {k: v for k, v in cfg.items() if k in ("quick_gelu", "init_logit_scale", "init_logit_bias")}
    with seeded():
        return cls(embed_dim=cfg["embed_dim"], vision_cfg=vision, text_cfg=text, **options).eval()


def open_clip_model(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    """Only the image tower of an open_clip model: the text tower (and any second repo its
    config names, such as BiomedCLIP's PubMedBERT) is never built, since crsbench reads images.
    The architecture is `model_kwargs["model_cfg"]` (an inline open_clip config, as the tiny
    random-init image-text entry has), `model_kwargs["arch"]` (a built-in open_clip config) or,
    without either, the open_clip_config.json of the weights folder (hub layout)."""
    from open_clip.model import _build_vision_tower

    inline = entry.model_kwargs.get("model_cfg")
    if inline is not None and not entry.pretrained and weights is None and not entry.weights_path:
        # Random init: the image tower exactly as the whole model's (`features.text`) has it.
        return OpenClipVision(build_open_clip(dict(inline)).visual)
    path = resolve_weights(entry, weights)
    if inline is not None:
        cfg, weight_file = dict(inline), path
    else:
        cfg, weight_file = open_clip_config(entry, path, entry.model_kwargs.get("arch"))
    vision_cfg = {**cfg["vision_cfg"], "timm_model_pretrained": False}
    with seeded():
        visual = _build_vision_tower(cfg["embed_dim"], vision_cfg, quick_gelu=bool(cfg.get("quick_gelu", False)))
    load_checkpoint(visual, weight_file, entry.convert, entry.id)
    return OpenClipVision(visual)


# -- python ---------------------------------------------------------------------------------------


def check_arguments(entry: EncoderEntry, fn: Any, options: dict[str, Any]) -> None:
    """Refuse, before any call, a callable whose signature does not take `options` (model_kwargs)."""
    if not callable(fn):
        raise CrsbenchError(f"encoder {entry.id!r}: {entry.checkpoint} is a {type(fn).__name__}, not a callable")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise CrsbenchError(
            f"encoder {entry.id!r}: {entry.checkpoint} has no signature crsbench can check its "
            "model_kwargs against; wrap it in a Python function"
        ) from None
    try:
        signature.bind(**options)
    except TypeError as exc:
        raise CrsbenchError(
            f"encoder {entry.id!r}: model_kwargs {sorted(options)} do not fit {entry.checkpoint}{signature} "
            f"({exc}); nothing was called"
        ) from None


def python_model(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    """`module:function` returning an nn.Module; weights (if any) are loaded strictly afterwards.

    Such an entry comes only from a file given with --allow-code or from an installed plugin
    (`features.user`). One line on stderr names the module and the callable before the import;
    the callable is called only once `model_kwargs` bind to its signature.
    """
    module_name, _, attr = entry.checkpoint.partition(":")
    say(  # to the terminal even while the libraries' output is captured
        f"crsbench: encoder {entry.id!r} ({entry.origin}) runs Python code: "
        f"importing module {module_name!r}, then calling {attr!r}"
    )
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CrsbenchError(f"encoder {entry.id!r}: cannot import {entry.checkpoint!r} ({exc})") from None
    options = _options(entry)
    check_arguments(entry, fn, options)
    with seeded():
        model = fn(**options)
    if not isinstance(model, nn.Module):
        raise CrsbenchError(
            f"encoder {entry.id!r}: {entry.checkpoint} returned {type(model).__name__}, not a torch nn.Module"
        )
    if weights is not None or entry.weights_path or (entry.pretrained and entry.weights_file):
        load_checkpoint(model, resolve_weights(entry, weights), entry.convert, entry.id)
    return model
