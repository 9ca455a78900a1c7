"""Building encoders offline: weight resolution and the timm / transformers / open_clip loaders.

Weights resolve, in order, from: the `weights` argument (a file or a saved model folder),
`$CRSBENCH_WEIGHTS/<encoder id>` (file or folder), then the local Hugging Face cache. Nothing
is ever downloaded: the hub is only read with `local_files_only=True`, and a missing
checkpoint is a `CrsbenchError` saying where to put it. Random-initialised entries are
built from a fixed seed so the same entry gives the same weights in every process.
"""

from __future__ import annotations

import hashlib
import operator
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from crsbench.features.registry import EncoderEntry
from crsbench.ingest.types import CrsbenchError

WEIGHTS_ENV = "CRSBENCH_WEIGHTS"
INIT_SEED = 0
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".pth.tar", ".ckpt")


def hub_repo(entry: EncoderEntry) -> str | None:
    """The Hugging Face repo holding the entry's weights, or None if it is not on the hub."""
    override = entry.model_kwargs.get("hub_repo")
    if override:
        return str(override)
    ckpt = entry.checkpoint
    if ckpt.startswith("hf-hub:"):
        return ckpt[len("hf-hub:"):]
    if not ckpt or ":" in ckpt:  # e.g. "gdrive:file.pth": published outside the hub
        return None
    if entry.loader == "timm" and "/" not in ckpt:
        return f"timm/{ckpt}"
    return ckpt


def _where_to_put(entry: EncoderEntry) -> str:
    name = entry.weights_file or ("model.safetensors" if entry.loader == "timm" else "<model folder>")
    where = f"${WEIGHTS_ENV}/{entry.id}" + ("" if entry.loader == "transformers" else f"/{name}")
    repo = hub_repo(entry)
    fetch = (f"the Hugging Face cache (e.g. 'hf download {repo}' on a connected machine)" if repo
             else f"{entry.source or 'the publisher'}")
    return (f"encoder {entry.id!r} ({entry.checkpoint}) has no local weights; put them at {where}, "
            f"pass --weights PATH, or fill {fetch}. crsbench never downloads weights.")


def resolve_weights(entry: EncoderEntry, weights: Path | None = None) -> Path:
    """A local file or folder with the entry's weights (offline only) or a CrsbenchError."""
    if weights is not None:
        if not Path(weights).exists():
            raise CrsbenchError(f"weights for encoder {entry.id!r} not found at {weights}")
        return Path(weights)
    env = os.environ.get(WEIGHTS_ENV)
    if env:
        base = Path(env) / entry.id
        if base.is_dir() and entry.weights_file and (base / entry.weights_file).exists():
            return base / entry.weights_file
        if base.is_dir() and entry.loader == "timm":
            files = sorted(p for p in base.iterdir() if p.name.endswith(_WEIGHT_SUFFIXES))
            if files:
                return files[0]
        if base.exists():
            return base
    repo = hub_repo(entry)
    if repo is not None:
        found = _from_hf_cache(repo, entry.weights_file or (
            "model.safetensors" if entry.loader == "timm" else None))
        if found is not None:
            return found
    raise CrsbenchError(_where_to_put(entry))


def _from_hf_cache(repo: str, filename: str | None) -> Path | None:
    from huggingface_hub import snapshot_download, try_to_load_from_cache

    if filename is not None:
        hit = try_to_load_from_cache(repo, filename)
        return Path(hit) if isinstance(hit, str) else None
    try:
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:  # LocalEntryNotFoundError and friends: simply not cached
        return None


def weights_status(entry: EncoderEntry) -> str:
    """'random-init', 'local' or 'missing' without building anything (for `crsbench encoders`)."""
    if not entry.pretrained:
        return "random-init"
    try:
        resolve_weights(entry)
    except CrsbenchError:
        return "missing"
    return "local"


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


# -- state dicts ------------------------------------------------------------------------------

def read_state_dict(path: Path, key: str | None = None,
                    strip_prefixes: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.name.endswith(_WEIGHT_SUFFIXES))
        if not files:
            raise CrsbenchError(f"no weight file ({', '.join(_WEIGHT_SUFFIXES)}) in {path}")
        path = files[0]
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state: Any = load_file(str(path))
    else:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:
            raise CrsbenchError(f"cannot read weights {path}: {exc}") from exc
    if key is not None and isinstance(state, dict) and key in state:
        state = state[key]
    if not isinstance(state, dict):
        raise CrsbenchError(f"weights {path} do not hold a state dict")
    out: dict[str, torch.Tensor] = {}
    for name, value in state.items():
        for prefix in strip_prefixes:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        out[name] = value
    return out


def load_into(model: nn.Module, state: dict[str, torch.Tensor], source: str,
              ignore_missing: tuple[str, ...] = ("head", "fc.", "classifier")) -> None:
    """Load a checkpoint; any missing backbone key is an error, never a silent random init."""
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # shape mismatches
        detail = str(exc).splitlines()[1].strip() if len(str(exc).splitlines()) > 1 else str(exc)
        raise CrsbenchError(f"weights {source} do not fit {type(model).__name__}: {detail}") from None
    missing = [k for k in result.missing_keys if not k.startswith(ignore_missing)]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise CrsbenchError(f"weights {source} do not fit {type(model).__name__}: "
                            f"{len(missing)} missing keys ({shown})")


# -- loaders ------------------------------------------------------------------------------------

def timm_model(entry: EncoderEntry, weights: Path | None, arch: str | None = None,
               state_key: str | None = None, strip_prefixes: tuple[str, ...] = (),
               **kwargs: Any) -> nn.Module:
    """A timm backbone without its classifier; random-init from a fixed seed if not pretrained."""
    import timm

    arch = arch or entry.checkpoint
    options = {"num_classes": 0, **{k: v for k, v in entry.model_kwargs.items() if k != "hub_repo"},
               **kwargs}
    with seeded():
        model = timm.create_model(arch, pretrained=False, **options)
    if entry.pretrained or weights is not None:
        path = resolve_weights(entry, weights)
        load_into(model, read_state_dict(path, state_key, strip_prefixes), str(path))
    return model


class HFVision(nn.Module):
    """A transformers vision model whose forward returns its pooled/projected embedding."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    @property
    def hook_root(self) -> nn.Module:
        return self.model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        out = self.model(pixel_values=pixel_values)
        for name in ("image_embeds", "pooler_output"):
            value = getattr(out, name, None)
            if value is not None:
                return value
        return out.last_hidden_state[:, 0]


def hf_vision_model(entry: EncoderEntry, weights: Path | None, model_class: str = "AutoModel",
                    vision_submodule: tuple[str, ...] = ()) -> nn.Module:
    """A transformers model read from a local folder or the HF cache (never the network)."""
    import transformers

    if not entry.pretrained and weights is None:
        raise CrsbenchError(f"encoder {entry.id!r}: random-init transformers entries need a config")
    path = resolve_weights(entry, weights)
    cls = getattr(transformers, model_class)
    try:
        model = cls.from_pretrained(str(path), local_files_only=True,
                                    trust_remote_code=entry.trust_remote_code)
    except OSError as exc:
        raise CrsbenchError(f"cannot load encoder {entry.id!r} from {path}: {exc}") from exc
    for candidate in vision_submodule:
        try:
            model = operator.attrgetter(candidate)(model)
            break
        except AttributeError:
            continue
    return HFVision(model)


class OpenClipVision(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    @property
    def hook_root(self) -> nn.Module:
        return self.model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.encode_image(x)


def open_clip_model(entry: EncoderEntry, weights: Path | None, arch: str | None = None) -> nn.Module:
    """An open_clip image tower (the package is optional and imported only here)."""
    try:
        import open_clip
    except ModuleNotFoundError:
        raise CrsbenchError(f"encoder {entry.id!r} needs the optional package open_clip "
                            f"('pip install open_clip_torch'); it is not installed") from None
    path = resolve_weights(entry, weights)
    if arch is None:  # a hub model folder carrying its own open_clip_config.json
        model = open_clip.create_model(f"local-dir:{path}")
    else:
        model = open_clip.create_model(arch, pretrained=str(path))
    return OpenClipVision(model)
