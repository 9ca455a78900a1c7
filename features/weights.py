"""Where an encoder's weights come from: offline by default, the library caches on request.

Weights resolve, in order, from: the `weights` argument (a file or a saved model folder),
`$CRSBENCH_WEIGHTS/<encoder id>` (file or folder), then the local Hugging Face cache. Nothing
is downloaded unless asked (`allow_download=True`, `--allow-download` or
`CRSBENCH_ALLOW_DOWNLOAD=1`); then hub ids are fetched into the Hugging Face cache, the cache
every library here reads. A missing checkpoint is one `CrsbenchError` line naming every file
needed and where to put it. `--check-weights` runs exactly this resolution, so it and
extraction agree.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from crsbench.core import CrsbenchError
from crsbench.features.registry import EncoderEntry

WEIGHTS_ENV = "CRSBENCH_WEIGHTS"
ALLOW_ENV = "CRSBENCH_ALLOW_DOWNLOAD"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".pth.tar", ".ckpt")
# A saved model folder: its config file, and any one of the weight files (or a shard index).
FOLDER_LAYOUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "transformers": (
        "config.json",
        ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json"),
    ),
    "open_clip": ("open_clip_config.json", ("open_clip_pytorch_model.bin", "open_clip_model.safetensors")),
}
_ALLOW: ContextVar[bool | None] = ContextVar("crsbench_allow_download", default=None)
_TRUST_PICKLE: ContextVar[bool] = ContextVar("crsbench_trust_pickle", default=False)
_LOADS: ContextVar[list[dict[str, str]] | None] = ContextVar("crsbench_loads", default=None)


def downloads_allowed() -> bool:
    explicit = _ALLOW.get()
    if explicit is not None:
        return explicit
    return os.environ.get(ALLOW_ENV, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def download_policy(allow: bool | None) -> Iterator[None]:
    """Within the block, hub downloads are allowed (True), refused (False) or per the env (None)."""
    token = _ALLOW.set(allow)
    try:
        yield
    finally:
        _ALLOW.reset(token)


def pickles_trusted() -> bool:
    """Whether checkpoints holding pickled Python objects may be unpickled (`--trust-pickle`)."""
    return _TRUST_PICKLE.get()


@contextmanager
def pickle_policy(trust: bool) -> Iterator[None]:
    """Within the block, checkpoints with pickled Python objects load (True) or are refused (False)."""
    token = _TRUST_PICKLE.set(trust)
    try:
        yield
    finally:
        _TRUST_PICKLE.reset(token)


@contextmanager
def recording_loads() -> Iterator[list[dict[str, str]]]:
    """Collect, for the block, which file and which part of it every weights load took."""
    loads: list[dict[str, str]] = []
    token = _LOADS.set(loads)
    try:
        yield loads
    finally:
        _LOADS.reset(token)


def note_load(file: str, state: str) -> None:
    """Record one load (`state`: the part of the file taken, e.g. 'model', 'top-level')."""
    loads = _LOADS.get()
    if loads is not None:
        loads.append({"file": file, "state": state})


def hub_repo(entry: EncoderEntry) -> str | None:
    """The Hugging Face repo holding the entry's weights, or None if it is not on the hub."""
    override = entry.model_kwargs.get("hub_repo")
    if override:
        return str(override)
    ckpt = entry.checkpoint
    if ckpt.startswith("hf-hub:"):
        return ckpt[len("hf-hub:") :]
    if not ckpt or ":" in ckpt or Path(ckpt).is_absolute():  # "gdrive:x.pth": not on the hub
        return None
    if entry.loader == "timm" and "/" not in ckpt:
        return f"timm/{ckpt}"
    return ckpt if "/" in ckpt else None


def is_folder_entry(entry: EncoderEntry) -> bool:
    """Whether the weights are a saved model folder (config + weights) rather than one file."""
    if entry.weights_file:
        return False
    return entry.loader == "transformers" or (
        entry.loader == "open_clip" and (entry.checkpoint.startswith("hf-hub:") or Path(entry.checkpoint).is_dir())
    )


def needed_files(entry: EncoderEntry) -> list[str]:
    """The file names the entry needs, as a user would have to provide them."""
    if is_folder_entry(entry):
        config, weights = FOLDER_LAYOUTS[entry.loader]
        return [config, weights[0]]
    if entry.weights_file or hub_repo(entry):
        return [entry.weights_file or "model.safetensors"]
    return ["one weight file (" + ", ".join(WEIGHT_SUFFIXES) + ")"]


def folder_gaps(entry: EncoderEntry, folder: Path) -> list[str]:
    """Files a saved-model folder lacks (empty when it is complete)."""
    config, weights = FOLDER_LAYOUTS[entry.loader]
    gaps = [] if (folder / config).is_file() else [config]
    if not any((folder / w).is_file() for w in weights):
        gaps.append(" or ".join(weights[:2]))
    return gaps


def check_config_kind(entry: EncoderEntry, folder: Path, model_class: str, model_type: str, sub_key: str) -> None:
    """Refuse, before transformers reads it, a folder whose config.json is another kind of model:
    neither `model_type` nor holding such a config under `sub_key` (a CLIP folder holds the
    vision config of `CLIPVisionModel`). A config crsbench cannot read is left to transformers."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    found = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(found, str) or found == model_type or (sub_key and isinstance(config.get(sub_key), dict)):
        return
    archs = config.get("architectures")
    what = f"model_type {found!r}" + (f" ({', '.join(map(str, archs))})" if isinstance(archs, list) and archs else "")
    holding = f", or one holding a {sub_key}" if sub_key else ""
    repo = hub_repo(entry)
    raise CrsbenchError(
        f"encoder {entry.id!r} reads a {model_class} folder (config.json of model_type {model_type!r}{holding})"
        f"{f', such as {repo}' if repo else ''}; {folder / 'config.json'} is {what}: pass the folder of "
        f"{repo or 'that model'} instead"
    )


def _weight_file_in(folder: Path, entry: EncoderEntry) -> Path | None:
    """The entry's `weights_file` in the folder, else its one weight file (several: an error)."""
    if entry.weights_file and (folder / entry.weights_file).is_file():
        return folder / entry.weights_file
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if len(files) > 1:
        raise CrsbenchError(
            f"weights for encoder {entry.id!r}: {folder} holds {len(files)} candidate weight files "
            f"({', '.join(p.name for p in files)}); pass the one to use with --weights {folder}/<file>"
        )
    return files[0] if files else None


def _local(entry: EncoderEntry, base: Path) -> tuple[Path | None, list[str]]:
    """(usable path, files missing) for a user-given file or folder."""
    if base.is_file() and is_folder_entry(entry):
        raise CrsbenchError(folder_expected(entry, base))
    if base.is_file():
        return base, []
    if not base.is_dir():
        return None, needed_files(entry)
    if is_folder_entry(entry):
        gaps = folder_gaps(entry, base)
        return (None, gaps) if gaps else (base, [])
    found = _weight_file_in(base, entry)
    return (found, []) if found else (None, needed_files(entry))


def folder_expected(entry: EncoderEntry, given: Path) -> str:
    """The refusal of a single file where the entry reads a saved model folder (its config names
    the architecture; the weights file alone cannot)."""
    config, weights = FOLDER_LAYOUTS[entry.loader]
    kind = "a Hugging Face model folder" if entry.loader == "transformers" else "an open_clip hub folder"
    inside = f" (its folder {given.parent} holds {config}: pass that)" if (given.parent / config).is_file() else ""
    return (
        f"encoder {entry.id!r} expects {kind}, the folder holding {config} and the weights "
        f"({' or '.join(w for w in weights if not w.endswith('.index.json'))}), not the file {given}{inside}"
    )


def resolve_weights(entry: EncoderEntry, weights: Path | None = None) -> Path:
    """A local file or folder with the entry's weights, or a one-line CrsbenchError.

    The entry's `extra_repos` must be in the Hugging Face cache as well (fetched when
    downloads are allowed), so this and `--check-weights` agree."""
    found = _resolve_main(entry, weights)
    missing = extra_repo_gaps(entry)
    if missing and downloads_allowed():
        from huggingface_hub import snapshot_download

        for repo in missing:
            snapshot_download(repo)
        missing = extra_repo_gaps(entry)
    if missing:
        raise CrsbenchError(
            f"encoder {entry.id!r} also needs the hub repo(s) {', '.join(missing)} in "
            f"the Hugging Face cache; fetch them on a connected machine or rerun with "
            f"--allow-download"
        )
    return found


def _resolve_main(entry: EncoderEntry, weights: Path | None) -> Path:
    if weights is None and entry.weights_path:
        weights = Path(entry.weights_path)
    if weights is None and local_checkpoint(entry):
        weights = Path(entry.checkpoint)  # `hf:<folder>`: the folder is the weights
    if weights is not None:
        found, gaps = _local(entry, Path(weights))
        if found is None:
            raise CrsbenchError(f"weights for encoder {entry.id!r} not usable at {weights}: missing {', '.join(gaps)}")
        return found
    env = os.environ.get(WEIGHTS_ENV)
    if env and (Path(env) / entry.id).exists():
        found, gaps = _local(entry, Path(env) / entry.id)
        if found is None:
            raise CrsbenchError(f"encoder {entry.id!r}: {Path(env) / entry.id} lacks {', '.join(gaps)}")
        return found
    repo = hub_repo(entry)
    if repo is not None:
        found = from_hf_cache(entry, repo, download=downloads_allowed())
        if found is not None:
            return found
    raise CrsbenchError(where_to_put(entry))


def local_checkpoint(entry: EncoderEntry) -> bool:
    """Whether the entry's checkpoint is a local folder (an `hf:<folder>` id)."""
    return Path(entry.checkpoint).is_absolute() and Path(entry.checkpoint).is_dir()


def planned_weights(entry: EncoderEntry, weights: Path | None = None) -> Path | None:
    """The file or folder building `entry` reads (None for a random-init entry given none)."""
    if weights is None and not entry.weights_path and not entry.pretrained and not local_checkpoint(entry):
        return None
    return resolve_weights(entry, weights)


def fingerprint(path: Path | None) -> list[list[Any]] | None:
    """[resolved path, bytes, mtime_ns] of the file, or of every file of the folder: a cheap
    "same files as before" check (the weights hash decides when it differs)."""
    if path is None:
        return None
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
    out: list[list[Any]] = []
    for file in files:
        stat = file.stat()
        out.append([str(file.resolve()), stat.st_size, stat.st_mtime_ns])
    return out


def from_hf_cache(entry: EncoderEntry, repo: str, *, download: bool = False) -> Path | None:
    """The entry's file or folder from the Hugging Face cache (fetched first if `download`)."""
    from huggingface_hub import hf_hub_download, snapshot_download, try_to_load_from_cache

    if not is_folder_entry(entry):
        name = needed_files(entry)[0]
        hit = try_to_load_from_cache(repo, name)
        if isinstance(hit, str):
            return Path(hit)
        return Path(hf_hub_download(repo, name)) if download else None
    try:
        folder = Path(snapshot_download(repo, local_files_only=True))
    except Exception:  # LocalEntryNotFoundError and friends: simply not cached
        folder = None
    if (folder is None or folder_gaps(entry, folder)) and download:
        folder = Path(snapshot_download(repo))
    return folder if folder is not None and not folder_gaps(entry, folder) else None


def where_to_put(entry: EncoderEntry) -> str:
    files = ", ".join(needed_files(entry))
    target = (
        f"${WEIGHTS_ENV}/{entry.id}/"
        if not os.environ.get(WEIGHTS_ENV)
        else f"{Path(os.environ[WEIGHTS_ENV]) / entry.id}/"
    )
    repo = hub_repo(entry)
    fetch = (
        f"or rerun with --allow-download (CRSBENCH_ALLOW_DOWNLOAD=1) to fetch {repo} into the Hugging Face cache"
        if repo
        else f"(published at {entry.source or 'the publisher'}, not on the Hugging Face Hub)"
    )
    return (
        f"encoder {entry.id!r} ({entry.checkpoint}) has no local weights: it needs {files}; "
        f"put them in {target}, pass --weights PATH, {fetch}; crsbench never downloads "
        f"weights unless asked"
    )


def extra_repo_gaps(entry: EncoderEntry) -> list[str]:
    """The entry's further hub repos that are not in the local cache."""
    from huggingface_hub import snapshot_download

    gaps = []
    for repo in entry.extra_repos:
        try:
            snapshot_download(repo, local_files_only=True)
        except Exception:
            gaps.append(repo)
    return gaps


def weights_status(entry: EncoderEntry) -> str:
    """'random-init', 'local' or 'missing: ...' without building anything (`--check-weights`)."""
    if not entry.pretrained:
        return "random-init"
    with download_policy(False):
        try:
            resolve_weights(entry)
        except CrsbenchError:
            return "missing"
    return "local"
