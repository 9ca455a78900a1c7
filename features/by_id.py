"""Any library model by id, with no registry entry: `timm:<name>`, `hf:<repo or folder>`, `open_clip:<arch>`.

Everything comes from the library's own configuration:
* input size, mean and std: timm's `resolve_data_config`, the folder's
  `preprocessor_config.json` (the crop size where the processor crops), open_clip's
  model config (OpenAI CLIP statistics unless it names others);
* hooked blocks: timm's `feature_info` (stem entries at stride 2 left out), the longest block
  list of a transformers model, open_clip's transformer or timm trunk blocks;
* the 100 % feature is the model's own pooled output (`pooling="projection"`): for timm that
  is `create_model(name, num_classes=0)(x)`.
Images get the project's transform (whole image resized, no crop). The resolved entry is
stored with the features and in the warehouse like a built-in one.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from torch import nn

from crsbench.core import CrsbenchError
from crsbench.features.registry import EncoderEntry, KeyConversion

ID_SOURCES = ("timm", "hf", "open_clip")
_FINAL_NORMS = ("post_layernorm", "layernorm", "norm", "final_layernorm", "ln_post")
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def entry_from_id(encoder_id: str, **fields: Any) -> EncoderEntry:
    """The entry of a `<source>:<name>` id; `fields` (TOML tables) override what was resolved."""
    source, _, name = encoder_id.partition(":")
    if source not in ID_SOURCES or not name:
        raise CrsbenchError(f"encoder id {encoder_id!r} is not <source>:<name> with source in {ID_SOURCES}")
    from crsbench.features.hub import library_calls

    with library_calls():  # offline unless downloads are allowed; the libraries' output captured
        base = _RESOLVERS[source](name)
    key = store_id(source, name)
    return EncoderEntry(**{**base, "id": key, "family": key, "origin": "id", **fields})


def store_id(source: str, name: str) -> str:
    """The id features are stored and probed under: one path segment, so `hf:org/repo` becomes
    `hf:org--repo` (the Hugging Face cache's spelling) and a local folder its folder name."""
    if source == "hf" and Path(name).expanduser().is_dir():
        return f"hf:{Path(name).expanduser().resolve().name}"
    return f"{source}:{name.replace('/', '--')}"


def _common(loader: str, checkpoint: str, constructor: Any) -> dict[str, Any]:
    return {
        "scope": "general",
        "domain": "none",
        "loader": loader,
        "checkpoint": checkpoint,
        "pooling": "projection",
        "constructor": constructor,
    }


# -- timm ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _timm(name: str) -> dict[str, Any]:
    import timm
    from timm.data.config import resolve_data_config

    from crsbench.features.loaders import seeded

    _timm_config_here(name)
    try:
        with seeded():
            model = timm.create_model(name, pretrained=False, num_classes=0)
    except OSError as exc:  # a hub fetch that failed although downloads are allowed
        raise CrsbenchError(f"cannot fetch timm model {name!r}: {str(exc).strip().splitlines()[0]}") from None
    except RuntimeError as exc:
        close = timm.list_models(f"*{name.split('.')[0][:6]}*")[:5]
        raise CrsbenchError(f"timm has no model {name!r}" + (f"; close: {', '.join(close)}" if close else "")) from exc
    cfg = resolve_data_config({}, model=model)
    info = [(f["module"], f["reduction"]) for f in getattr(model, "feature_info", [])]
    # A stride-2 stem is not a depth of the network's representation; the stages after it are.
    stages = [m for m, r in info if r >= 4] if sum(r >= 4 for _, r in info) >= 4 else [m for m, _ in info]
    if not stages:
        raise CrsbenchError(
            f"timm model {name!r} reports no feature_info; declare depth_blocks in an [encoder.<id>] TOML table"
        )
    norm = getattr(model, "norm", None)
    pretrained_cfg: dict[str, Any] = getattr(model, "pretrained_cfg", None) or {}
    hub = pretrained_cfg.get("hf_hub_id") or f"timm/{name}"
    return {
        **_common("timm", name, _build_timm),
        "input_size": int(cfg["input_size"][-1]),
        "mean": tuple(cfg["mean"]),
        "std": tuple(cfg["std"]),
        "depth_blocks": tuple(stages),
        "final_norm": "norm" if isinstance(norm, nn.LayerNorm) else None,
        "token_pool": "cls" if getattr(model, "global_pool", None) == "token" else "mean",
        "model_kwargs": {"hub_repo": hub},
    }


def _timm_config_here(name: str) -> None:
    """timm reads the config.json of an `hf-hub:<repo>` name from the Hugging Face Hub (and of a
    `local-dir:<folder>` name from the folder): refuse in one line when it is not on this machine
    and downloads are not allowed, before timm asks the hub."""
    source, _, model_id = name.partition(":")
    if source == "local-dir" and not (Path(model_id).expanduser() / "config.json").is_file():
        raise CrsbenchError(f"timm model {name!r}: no config.json in the folder {model_id}")
    if source not in ("hf-hub", "hf_hub"):
        return
    from huggingface_hub import try_to_load_from_cache

    from crsbench.features.weights import downloads_allowed

    # A hub name's revision follows '@' (org/name@v1): not an encoder key, so not core.keys' split.
    repo, revision = re.fullmatch(r"([^@]*)@?(.*)", model_id).groups()  # type: ignore[union-attr]
    try:
        cached = try_to_load_from_cache(repo, "config.json", revision=revision or None)
    except ValueError:  # not a valid repo id: never cached
        cached = None
    if isinstance(cached, str) or downloads_allowed():
        return
    raise CrsbenchError(
        f"timm model {name!r} is not on this machine: timm reads its config.json and weights from the "
        f"Hugging Face repo {repo}, which is not in the Hugging Face cache; fetch it once with "
        f"--allow-download (CRSBENCH_ALLOW_DOWNLOAD=1), or name the architecture (timm:<model>) and pass "
        f"local weights with --weights PATH; crsbench never downloads unless asked"
    )


def _build_timm(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    from crsbench.features.loaders import timm_model

    return timm_model(entry, weights)


# -- transformers ---------------------------------------------------------------------------------


def _local_or_cached(entry_like: str) -> Path | None:
    path = Path(entry_like).expanduser()
    if path.is_dir():
        return path.resolve()
    from huggingface_hub import snapshot_download

    from crsbench.features.weights import downloads_allowed

    repo = entry_like.replace("--", "/")
    try:
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:  # LocalEntryNotFoundError and friends: simply not cached
        pass
    if not downloads_allowed():
        return None
    try:
        return Path(snapshot_download(repo))
    except Exception as exc:  # the hub's many error types: one line naming the repo
        text = str(exc).strip()
        raise CrsbenchError(f"cannot fetch hf model {repo!r}: {text.splitlines()[0] if text else exc!r}") from None


def _hf_preprocessing(folder: Path) -> dict[str, Any]:
    file = folder / "preprocessor_config.json"
    if not file.is_file():
        raise CrsbenchError(
            f"hf model {folder} has no preprocessor_config.json; declare "
            f"input_size, mean and std in an [encoder.<id>] TOML table"
        )
    cfg = json.loads(file.read_text(encoding="utf-8"))
    size = cfg.get("crop_size") if cfg.get("do_center_crop") and cfg.get("crop_size") else cfg.get("size")
    if isinstance(size, dict):
        size = size.get("height") or size.get("shortest_edge")
    return {
        "input_size": int(size),
        "mean": tuple(cfg.get("image_mean", OPENAI_MEAN)),
        "std": tuple(cfg.get("image_std", OPENAI_STD)),
    }


def _vision_part(model: nn.Module) -> nn.Module:
    inner = getattr(model, "vision_model", None)
    return inner if isinstance(inner, nn.Module) else model


def _longest_block_list(root: nn.Module) -> str:
    lists: list[tuple[int, str]] = [(len(m), name) for name, m in root.named_modules() if isinstance(m, nn.ModuleList)]
    if not lists:
        raise CrsbenchError(f"{type(root).__name__} has no block list; declare depth_blocks")
    return max(lists, key=lambda t: (t[0], -len(t[1])))[1]


@functools.lru_cache(maxsize=32)
def _hf(name: str) -> dict[str, Any]:
    import torch
    import transformers
    from huggingface_hub.errors import StrictDataclassError  # transformers' config validation

    folder = _local_or_cached(name)
    if folder is None:
        raise CrsbenchError(
            f"hf model {name!r} is neither a local folder nor in the Hugging Face "
            f"cache; pass a folder, or fetch it once with --allow-download"
        )
    try:  # never the folder's own code (auto_map), and so never transformers' y/N prompt
        config = transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
        with torch.device("meta"):
            model = transformers.AutoModel.from_config(config, trust_remote_code=False)
    except (OSError, ValueError, KeyError, StrictDataclassError) as exc:
        custom = _auto_map(folder)
        if custom:
            raise CrsbenchError(
                f"hf model {folder} needs its own Python code ({custom} in the auto_map of its "
                f"config.json); crsbench never runs a checkpoint's code"
            ) from None
        text = " ".join(str(exc).split()) if isinstance(exc, StrictDataclassError) else str(exc).strip()
        raise CrsbenchError(f"cannot read hf model {folder}: {text.splitlines()[0] if text else exc!r}") from None
    root = _vision_part(model)
    norms = [n for n in _FINAL_NORMS if isinstance(getattr(root, n, None), nn.LayerNorm)]
    emb = getattr(root, "embeddings", None)
    has_cls = any(hasattr(emb, a) for a in ("class_embedding", "cls_token"))
    checkpoint = str(folder) if Path(name).expanduser().is_dir() else name.replace("--", "/")
    return {
        **_common("transformers", checkpoint, _build_hf),
        **_hf_preprocessing(folder),
        "depth_blocks": _longest_block_list(root),
        "final_norm": norms[0] if norms else None,
        "token_pool": "cls" if has_cls else "mean",
        "prefix_tokens": None if has_cls else 0,
    }


def _auto_map(folder: Path) -> str:
    """The custom classes a transformers config.json names in its auto_map ('' if none)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    auto_map = config.get("auto_map") if isinstance(config, dict) else None
    return ", ".join(str(v) for v in auto_map.values()) if isinstance(auto_map, dict) else ""


def _build_hf(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    from crsbench.features.loaders import HFVision, hf_vision_model

    local = Path(entry.checkpoint)
    wrapped = hf_vision_model(entry, weights if weights is not None or not local.is_dir() else local)
    assert isinstance(wrapped, HFVision)
    inner = wrapped.model
    if hasattr(inner, "text_model") and hasattr(inner, "vision_model"):
        tower = inner.vision_model
        assert isinstance(tower, nn.Module)
        return HFVision(tower)  # a dual encoder: its image tower alone
    return wrapped


# -- open_clip ------------------------------------------------------------------------------------


def _open_clip_hub_config(arch: str) -> dict[str, Any]:
    """The model_cfg of an `hf-hub:<repo>` open_clip model, from the Hugging Face cache (fetched
    only when downloads are allowed; open_clip itself would ask the hub every time)."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    from crsbench.features.weights import FOLDER_LAYOUTS, downloads_allowed

    repo = arch[len("hf-hub:") :]
    name = FOLDER_LAYOUTS["open_clip"][0]
    hit = try_to_load_from_cache(repo, name)
    if not isinstance(hit, str) and downloads_allowed():
        hit = hf_hub_download(repo, name)
    if not isinstance(hit, str):
        raise CrsbenchError(
            f"open_clip model {arch!r} is not in the Hugging Face cache (it needs {name}); fetch it once "
            f"with --allow-download (CRSBENCH_ALLOW_DOWNLOAD=1); crsbench never downloads unless asked"
        )
    config = json.loads(Path(hit).read_text(encoding="utf-8"))
    return dict(config.get("model_cfg", config))


@functools.lru_cache(maxsize=32)
def _open_clip(arch: str) -> dict[str, Any]:
    import open_clip

    hub = arch.startswith("hf-hub:")
    cfg = _open_clip_hub_config(arch) if hub else open_clip.get_model_config(arch)
    if cfg is None:
        import difflib

        close = difflib.get_close_matches(arch, open_clip.list_models(), n=3)
        raise CrsbenchError(
            f"open_clip has no architecture {arch!r}" + (f"; close: {', '.join(close)}" if close else "")
        )
    vision = cfg["vision_cfg"]
    pre = cfg.get("preprocess_cfg", {})
    timm_trunk = "timm_model_name" in vision
    size = vision.get("image_size", 224)
    return {
        **_common("open_clip", arch, _build_open_clip),
        "input_size": int(size[0] if isinstance(size, (list, tuple)) else size),
        "mean": tuple(pre.get("mean", OPENAI_MEAN)),
        "std": tuple(pre.get("std", OPENAI_STD)),
        "depth_blocks": "trunk.blocks" if timm_trunk else "transformer.resblocks",
        "final_norm": "trunk.norm" if timm_trunk else "ln_post",
        "token_pool": "cls",
        "convert": KeyConversion(keep_prefix="visual."),
        "model_kwargs": {} if hub else {"arch": arch},
        "text_tower": "open_clip",  # every open_clip model has one (zero-shot, `features.text`)
    }


def _build_open_clip(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    from crsbench.features.loaders import open_clip_model

    return open_clip_model(entry, weights)


_RESOLVERS = {"timm": _timm, "hf": _hf, "open_clip": _open_clip}
