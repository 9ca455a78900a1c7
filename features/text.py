"""Text towers of the image-text encoders (zero-shot classification, METHODS.md §3.5).

An entry with `text_tower` set names its family's layout:
* `clip` / `siglip`: a transformers CLIPModel / SiglipModel folder (hub repo or local), loaded
  strictly with `trust_remote_code=False`, tokenizer from the same folder;
* `open_clip`: the open_clip CLIP (or CustomTextCLIP with a Hugging Face text encoder, as
  BiomedCLIP's PubMedBERT) of the entry's config; tokenizer open_clip's own BPE vocabulary
  (shipped with open_clip) or the Hugging Face tokenizer the config names (from the HF cache);
* `cxr-bert`: hi-ml-multimodal's CXR-BERT layout (a BertForMaskedLM under `bert.`/`cls.` plus
  `cls_projection_head.{dense_to_hidden,LayerNorm,dense_to_output}`), rebuilt on transformers'
  BertModel so no remote code runs; tokenizer: the folder's `vocab.txt`.

Weights resolve as the image tower's do (`features.weights`, offline unless downloads are
allowed) and the libraries' output is captured (`features.hub`). A tower is returned as a
`TextTower`: `encode(texts)` gives the projected (not yet normalised) text embeddings, and the
logit scale (already exponentiated) and bias are the model's own.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core import CrsbenchError, portable_products
from crsbench.features.registry import TEXT_TOWERS, EncoderEntry

__all__ = ["TEXT_TOWERS", "TextTower", "has_text_tower", "load_text_tower", "text_tower_status"]
# Files each family's text side needs besides the weights: any one group of alternatives.
TOKENIZER_FILES: dict[str, tuple[tuple[str, ...], ...]] = {
    "clip": (("tokenizer.json",), ("vocab.json", "merges.txt")),
    "siglip": (("tokenizer.json",), ("spiece.model",)),
    "cxr-bert": (("config.json", "vocab.txt"),),
    "open_clip_hf": (("config.json", "vocab.txt"), ("config.json", "tokenizer.json")),
}


@dataclasses.dataclass(frozen=True)
class TextTower:
    encode: Callable[[Sequence[str]], np.ndarray]
    logit_scale: float
    logit_bias: float
    source: str


def has_text_tower(entry: EncoderEntry) -> bool:
    return entry.text_tower is not None


def _gaps(folder: Path, kind: str) -> list[str]:
    groups = TOKENIZER_FILES[kind]
    if any(all((folder / f).is_file() for f in group) for group in groups):
        return []
    return [" + ".join(group) for group in groups]


def _missing_line(entry: EncoderEntry, where: str, kind: str) -> CrsbenchError:
    options = " or ".join(" + ".join(g) for g in TOKENIZER_FILES[kind])
    return CrsbenchError(
        f"encoder {entry.id!r}: its text tower needs the tokenizer files {options} in {where}; "
        f"copy them from the publisher's repo there (or rerun with --allow-download)"
    )


def load_text_tower(entry: EncoderEntry, weights: Path | str | None = None) -> TextTower:
    """The entry's text tower, offline unless downloads are allowed, output captured."""
    from crsbench.features.hub import library_calls
    from crsbench.features.weights import download_policy

    if entry.text_tower is None:
        raise CrsbenchError(f"encoder {entry.id!r} has no text tower")
    with download_policy(None), library_calls():
        path = Path(weights) if weights is not None else None
        if entry.text_tower in ("clip", "siglip"):
            return _hf_dual(entry, path)
        if entry.text_tower == "open_clip":
            return _open_clip(entry, path)
        return _cxr_bert(entry, path)


def text_tower_status(entry: EncoderEntry) -> str:
    """'-' (none), 'random-init', 'local' or 'missing' without building anything (`--check-weights`)."""
    from crsbench.features.weights import download_policy, resolve_weights

    if entry.text_tower is None:
        return "-"
    if not entry.pretrained:
        return "random-init"
    with download_policy(False):
        try:
            path = resolve_weights(entry)
            if entry.text_tower in ("clip", "siglip", "cxr-bert") and _gaps(path, entry.text_tower):
                return "missing tokenizer"
            if entry.text_tower == "open_clip":
                cfg, _ = _open_clip_cfg(entry, path)
                name = cfg.get("text_cfg", {}).get("hf_tokenizer_name")
                if name and _hf_cache_folder(name) is None:
                    return f"missing {name}"
        except CrsbenchError:
            return "missing"
    return "local"


# -- transformers CLIP / SigLIP -----------------------------------------------------------------


def _hf_dual(entry: EncoderEntry, weights: Path | None) -> TextTower:
    import torch
    import transformers

    from crsbench.features.loaders import check_loading_report
    from crsbench.features.weights import resolve_weights

    path = resolve_weights(entry, weights)
    kind = str(entry.text_tower)
    if _gaps(path, kind):
        raise _missing_line(entry, str(path), kind)
    cls: Any = transformers.CLIPModel if kind == "clip" else transformers.SiglipModel
    try:
        model, info = cls.from_pretrained(
            str(path), local_files_only=True, dtype=torch.float32, trust_remote_code=False, output_loading_info=True
        )
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(path), local_files_only=True, trust_remote_code=False
        )
    except (OSError, ValueError, RuntimeError, ImportError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CrsbenchError(f"cannot load the text tower of {entry.id!r} from {path}: {first}") from None
    strict = dataclasses.replace(entry, convert=dataclasses.replace(entry.convert, drop_prefixes=()))
    check_loading_report(strict, info, str(path), model)
    model.eval()
    # SigLIP was trained on text padded to its full length (64 tokens); CLIP on the longest.
    padding: Any = "max_length" if kind == "siglip" else True

    def encode(texts: Sequence[str]) -> np.ndarray:
        tokens = tokenizer(list(texts), padding=padding, truncation=True, return_tensors="pt")
        if kind == "siglip":  # SigLIP's text tower attends to its padding, as trained (no mask)
            tokens = {"input_ids": tokens["input_ids"]}
        with torch.no_grad(), portable_products():
            out = model.get_text_features(**tokens)
        out = out if isinstance(out, torch.Tensor) else out.pooler_output
        return np.asarray(out.double().numpy())

    bias = getattr(model, "logit_bias", None)
    return TextTower(
        encode,
        float(model.logit_scale.exp()),
        float(bias) if bias is not None else 0.0,
        str(path),
    )


# -- open_clip ----------------------------------------------------------------------------------


def _open_clip_cfg(entry: EncoderEntry, path: Path | None) -> tuple[dict[str, Any], Path | None]:
    from crsbench.features.loaders import open_clip_config

    inline = entry.model_kwargs.get("model_cfg")
    if inline is not None:
        return dict(inline), path
    assert path is not None
    return open_clip_config(entry, path, entry.model_kwargs.get("arch"))


def _hf_cache_folder(repo: str) -> Path | None:
    from huggingface_hub import snapshot_download

    if os.path.isdir(repo):
        return Path(repo)
    try:
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:  # not cached
        return None


def _open_clip_tokenizer(entry: EncoderEntry, cfg: dict[str, Any]) -> Callable[[Sequence[str]], Any]:
    from open_clip.tokenizer import HFTokenizer, SimpleTokenizer

    text_cfg = cfg["text_cfg"]
    length = int(text_cfg.get("context_length", 77))
    name = text_cfg.get("hf_tokenizer_name")
    if not name:
        simple: Callable[[Sequence[str]], Any] = SimpleTokenizer(context_length=length)  # open_clip's own BPE (shipped)
        return simple
    folder = _hf_cache_folder(name)
    if folder is None or _gaps(folder, "open_clip_hf"):
        raise _missing_line(entry, f"the Hugging Face cache (repo {name})", "open_clip_hf")
    hf: Callable[[Sequence[str]], Any] = HFTokenizer(str(folder), context_length=length)
    return hf


def _open_clip(entry: EncoderEntry, weights: Path | None) -> TextTower:
    import torch

    from crsbench.features.checkpoints import load_checkpoint
    from crsbench.features.loaders import build_open_clip
    from crsbench.features.registry import KeyConversion
    from crsbench.features.weights import resolve_weights

    random_init = not entry.pretrained and weights is None
    path = None if random_init else resolve_weights(entry, weights)
    cfg, weight_file = _open_clip_cfg(entry, path)
    if "hf_model_name" in cfg["text_cfg"] and _hf_cache_folder(cfg["text_cfg"]["hf_model_name"]) is None:
        raise _missing_line(entry, f"the Hugging Face cache (repo {cfg['text_cfg']['hf_model_name']})", "open_clip_hf")
    tokenizer = _open_clip_tokenizer(entry, cfg)
    if "hf_model_name" in cfg["text_cfg"]:
        cfg = {
            **cfg,
            "text_cfg": {**cfg["text_cfg"], "hf_model_name": str(_hf_cache_folder(cfg["text_cfg"]["hf_model_name"]))},
        }
    model = build_open_clip(cfg)
    if weight_file is not None:
        load_checkpoint(model, weight_file, KeyConversion(), entry.id)

    def encode(texts: Sequence[str]) -> np.ndarray:
        with torch.no_grad(), portable_products():
            return np.asarray(model.encode_text(tokenizer(list(texts))).double().numpy())

    bias = getattr(model, "logit_bias", None)
    return TextTower(
        encode,
        float(model.logit_scale.exp()),
        float(bias) if bias is not None else 0.0,
        str(weight_file or "random-init"),
    )


# -- CXR-BERT (BioViL) --------------------------------------------------------------------------


def cxr_bert_module(config: Any) -> Any:
    """hi-ml-multimodal's CXRBertModel layout on transformers' BertModel: the state dict's
    `bert.*` is the encoder, `cls_projection_head.*` the projection of the [CLS] token."""
    import torch
    from torch import nn
    from transformers import BertModel

    size = int(getattr(config, "projection_size", 128))

    class ProjectionHead(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dense_to_hidden = nn.Linear(config.hidden_size, size)
            self.LayerNorm = nn.LayerNorm(size, eps=1e-12)
            self.dense_to_output = nn.Linear(size, size)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.dense_to_output(self.LayerNorm(nn.functional.gelu(self.dense_to_hidden(x))))
            return out

    class CxrBert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel(config, add_pooling_layer=False)
            self.cls_projection_head = ProjectionHead()

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            projected: torch.Tensor = self.cls_projection_head(hidden[:, 0, :])
            return projected

    return CxrBert()


def _cxr_bert(entry: EncoderEntry, weights: Path | None) -> TextTower:
    import torch
    from transformers import BertConfig, BertTokenizer

    from crsbench.features.checkpoints import load_checkpoint
    from crsbench.features.loaders import seeded
    from crsbench.features.registry import KeyConversion
    from crsbench.features.weights import resolve_weights

    folder = Path(entry.model_kwargs.get("text_folder") or resolve_weights(entry, weights))
    folder = folder if folder.is_dir() else folder.parent
    if _gaps(folder, "cxr-bert"):
        raise _missing_line(entry, str(folder), "cxr-bert")
    with open(folder / "config.json", encoding="utf-8") as f:
        raw = json.load(f)
    config = BertConfig(**{k: v for k, v in raw.items() if k not in ("model_type", "architectures", "auto_map")})
    with seeded():
        model = cxr_bert_module(config).eval()
    weight = next((folder / n for n in ("model.safetensors", "pytorch_model.bin") if (folder / n).is_file()), None)
    if weight is None:
        raise CrsbenchError(
            f"encoder {entry.id!r}: its text tower needs model.safetensors or pytorch_model.bin in {folder}"
        )
    # The masked-LM head (`cls.predictions.*`) is not part of the text embedding.
    load_checkpoint(model, weight, KeyConversion(drop_prefixes=("cls.predictions.", "bert.pooler.")), entry.id)
    tokenizer = BertTokenizer(str(folder / "vocab.txt"), do_lower_case=bool(raw.get("do_lower_case", True)))

    def encode(texts: Sequence[str]) -> np.ndarray:
        tokens = tokenizer(list(texts), padding="longest", return_tensors="pt")
        with torch.no_grad(), portable_products():
            out = model(tokens["input_ids"], tokens["attention_mask"])
        return np.asarray(out.double().numpy())

    # hi-ml scores image-text pairs by cosine similarity: no learnt temperature.
    return TextTower(encode, 1.0, 0.0, str(weight))
