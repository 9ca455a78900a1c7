"""Reading a published checkpoint, finding its state dict, converting its keys by the entry's
declared rules, loading strictly.

* The file is read by what it holds, not its name: safetensors, or a torch checkpoint (zip or
  legacy). Anything else, a truncated header or tensors on the `meta` device is one
  `CrsbenchError`. Torch checkpoints load with `weights_only=True`; one holding pickled Python
  objects (a training checkpoint's argparse Namespace) loads only under `--trust-pickle`
  (`features.weights.pickle_policy`), after a one-line warning naming the file; otherwise the
  refusal gives the command that converts it once to tensors only (`convert_to_safetensors`).
* Publishers nest their state dict: the candidates are the file itself and its `model`,
  `state_dict`, `module`, `model_ema` and `state_dict_ema` entries (in that order), each without a
  DataParallel `module.` prefix; the first that fits the architecture exactly is loaded and
  recorded (`features.weights.note_load`). An entry declaring `state_key` takes only that entry.
* A declared conversion is required, not optional: a file without the declared `state_key`, with
  no key under `keep_prefix`, no key a `rename` applies to, or no `q_bias` to merge is not in
  the entry's layout, and is refused naming what was expected and the keys seen.
* A partial load never passes: a model key the checkpoint lacks, a checkpoint key the model has
  no place for (after the conversion) or a shape mismatch names the first few keys.
"""

from __future__ import annotations

import os
import pickle
import re
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from crsbench.core import CrsbenchError
from crsbench.features.hub import CrsbenchWarning
from crsbench.features.registry import KeyConversion
from crsbench.features.weights import WEIGHT_SUFFIXES, note_load, pickles_trusted

SHOWN = 4
STATE_KEYS = ("model", "state_dict", "module", "model_ema", "state_dict_ema")
DATA_PARALLEL = "module."
# safetensors metadata of `convert_to_safetensors`: keys "<entry>/<name>" are a nested dict's.
NESTED_META = "crsbench.nested"
NESTED_SEP = "/"


def _show(keys: list[str]) -> str:
    return ", ".join(keys[:SHOWN]) + (", ..." if len(keys) > SHOWN else "")


def _seen(keys: list[str]) -> str:
    return f"keys seen: {_show(keys)} ({len(keys)} keys)" if keys else "the file holds no keys"


# -- reading ------------------------------------------------------------------------------------


def weight_file(path: Path) -> Path:
    """`path` itself, or the one weight file of a folder (two candidates are an error naming both)."""
    if not path.is_dir():
        return path
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if not files:
        raise CrsbenchError(f"no weight file ({', '.join(WEIGHT_SUFFIXES)}) in {path}")
    if len(files) > 1:
        raise CrsbenchError(
            f"{path} holds {len(files)} candidate weight files ({', '.join(p.name for p in files)}); "
            f"pass the one to use with --weights {path}/<file>"
        )
    return files[0]


def file_format(path: Path) -> str:
    """'safetensors', 'torch' or a CrsbenchError: read from the file's first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError as exc:
        raise CrsbenchError(f"cannot read weights {path}: {exc.strerror or exc}") from None
    if head[:6] == b"\x93NUMPY" or (head[:4] == b"PK\x03\x04" and _numpy_archive(path)):
        raise CrsbenchError(_numpy_refusal(path))
    if head[:4] == b"PK\x03\x04" or head[:1] == b"\x80":  # torch zip archive / legacy pickle format
        return "torch"
    if len(head) == 9 and head[8:9] == b"{":  # 8-byte header length, then the JSON header
        return "safetensors"
    raise CrsbenchError(
        f"weights {path} are neither a safetensors file nor a torch checkpoint "
        f"({'empty' if not head else 'first bytes ' + head.hex()})"
    )


def _numpy_archive(path: Path) -> bool:
    """Whether a zip file is NumPy's .npz (every member an .npy array), not a torch archive."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
    return bool(names) and all(name.endswith(".npy") for name in names)


def _numpy_refusal(path: Path) -> str:
    return (
        f"weights {path} are a NumPy .npz/.npy file (a JAX/Flax checkpoint, as Google's original ViT "
        f"releases are), not a torch or safetensors file; crsbench reads those two only: convert it once "
        f"with timm (model = timm.create_model('<vit arch>', num_classes=0); model.load_pretrained('{path}'); "
        f"safetensors.torch.save_file(model.state_dict(), 'vit.safetensors')) and pass that file, or use "
        f"timm's own release of the model from the Hugging Face cache"
    )


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The dict stored in a weight file (or a folder's one weight file), tensors on the CPU."""
    path = weight_file(path)
    state = _read_safetensors(path) if file_format(path) == "safetensors" else _read_torch(path)
    if not isinstance(state, dict):
        raise CrsbenchError(f"weights {path} do not hold a dict of tensors but a {type(state).__name__}")
    meta = [name for name, t in _tensors(state) if t.is_meta]
    if meta:
        raise CrsbenchError(
            f"weights {path} hold {len(meta)} tensors on the meta device, without data ({_show(meta)}); "
            f"save the model after its weights are materialised"
        )
    return state


def _tensors(state: dict[str, Any], depth: int = 2) -> list[tuple[str, torch.Tensor]]:
    out = []
    for name, value in state.items():
        if isinstance(value, torch.Tensor):
            out.append((str(name), value))
        elif isinstance(value, dict) and depth > 1:
            out.extend((f"{name}.{k}", v) for k, v in _tensors(value, depth - 1))
    return out


def _read_safetensors(path: Path) -> dict[str, Any]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            nested = (f.metadata() or {}).get(NESTED_META) == NESTED_SEP
            flat = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open is not a dict
    except Exception as exc:  # safetensors raises its own error types (truncated or corrupt headers)
        raise CrsbenchError(f"cannot read weights {path}: {_first_line(exc)}") from None
    if not nested:
        return flat
    out: dict[str, Any] = {}
    for key, tensor in flat.items():
        outer, sep, inner = key.partition(NESTED_SEP)
        if sep:
            out.setdefault(outer, {})[inner] = tensor
        else:
            out[key] = tensor
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _pickled_globals(path: Path, exc: BaseException) -> str:
    """' (a.B, posix.system)': every global the pickle names outside torch's weights-only set, read
    from its opcodes without running them (the first one, from torch's refusal, for legacy files)."""
    try:
        from torch.serialization import get_unsafe_globals_in_checkpoint

        names = [str(n) for n in get_unsafe_globals_in_checkpoint(path)]
    except Exception:  # a legacy (non-zip) file, or a torch without it: torch's message names one
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        names = [found.group(1)] if found else []
    return f" ({_show(names)})" if names else ""


def _read_torch(path: Path, trust: bool | None = None, converting: bool = False) -> Any:
    """The object a torch checkpoint holds: weights-only, or unpickled in full when pickles are
    trusted (`trust`, else the `pickle_policy` in force), after a warning naming the file and its
    globals. `converting` words the refusal for `weights convert` itself."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "weights only" not in str(exc).lower():
            raise CrsbenchError(f"cannot read weights {path}: {_first_line(exc)}") from None
        what = _pickled_globals(path, exc)
        if not (pickles_trusted() if trust is None else trust):
            way_out = (
                "convert it only if you trust the file: rerun with --trust-pickle"
                if converting
                else "if you trust the file, rerun with --trust-pickle, or convert it once to tensors only: "
                f"crsbench weights convert --trust-pickle {path} {path.with_suffix('.safetensors')}"
            )
            raise CrsbenchError(
                f"weights {path} hold pickled Python objects{what}, which run code as they load; {way_out}"
            ) from None
        warnings.warn(
            f"loading {path} with weights_only=False (--trust-pickle): it holds pickled Python objects{what}",
            CrsbenchWarning,
            stacklevel=2,
        )
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except Exception as inner:  # whatever the pickle raises: one line naming the file
            raise CrsbenchError(f"cannot read weights {path}: {_first_line(inner)}") from None
    except Exception as exc:  # torch's zip and storage errors: one line naming the file
        raise CrsbenchError(f"cannot read weights {path}: {_first_line(exc)}") from None


# -- choosing and converting the state dict -----------------------------------------------------


def _is_state(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, torch.Tensor) for v in value.values())


def candidates(
    raw: dict[str, Any], rules: KeyConversion, source: str, encoder_id: str
) -> list[tuple[str, dict[str, Any]]]:
    """(label, state dict) pairs the file offers, in the order they are tried."""
    if rules.state_key is not None:
        if not isinstance(raw.get(rules.state_key), dict):
            raise CrsbenchError(
                f"weights {source} are not in the layout encoder {encoder_id!r} declares: no "
                f"{rules.state_key!r} entry (state_key); top-level {_seen([str(k) for k in raw])}"
            )
        found = [(repr(rules.state_key), raw[rules.state_key])]
    else:
        found = [("top-level", raw)] + [(repr(k), raw[k]) for k in STATE_KEYS if isinstance(raw.get(k), dict)]
    out = []
    for label, state in found:
        if not _is_state(state):
            continue
        if all(str(k).startswith(DATA_PARALLEL) for k in state):
            state = {k[len(DATA_PARALLEL) :]: v for k, v in state.items()}
            label += " without its DataParallel 'module.' prefix"
        out.append((label, state))
    if not out:
        raise CrsbenchError(
            f"weights {source} hold no state dict (a dict of tensors) at the top level or under "
            f"{', '.join(repr(k) for k in STATE_KEYS)}; top-level {_seen([str(k) for k in raw])}"
        )
    return out


def layout_gap(state: dict[str, torch.Tensor], rules: KeyConversion) -> str | None:
    """What of the declared conversion `state` does not match (None when it all applies)."""
    keys = list(state)
    if rules.keep_prefix and not any(k.startswith(rules.keep_prefix) for k in keys):
        return f"no key starts with {rules.keep_prefix!r} (keep_prefix)"
    if rules.keep_prefix:
        keys = [k for k in keys if k.startswith(rules.keep_prefix)]
    for old, new in rules.rename.items():
        if not any(old in k for k in keys):
            return f"no key contains {old!r} (rename to {new!r})"
    if rules.merge_qv_bias and not any(k.endswith(".q_bias") for k in keys):
        return "no attention q_bias / v_bias keys to merge (merge_qv_bias)"
    return None


def converted_name(name: str, rules: KeyConversion) -> str | None:
    """The model key a file key becomes under the declared conversion (None: the key is left out)."""
    if rules.keep_prefix:
        if not name.startswith(rules.keep_prefix):
            return None
        name = name[len(rules.keep_prefix) :]
    for prefix in rules.strip_prefixes:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    if rules.drop_prefixes and name.startswith(rules.drop_prefixes):
        return None
    for old, new in rules.rename.items():
        name = name.replace(old, new)
    return name


def convert(state: dict[str, torch.Tensor], rules: KeyConversion) -> dict[str, torch.Tensor]:
    """Apply the entry's declared key conversion (see `KeyConversion`) to one state dict."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        name = converted_name(key, rules)
        if name is not None:
            out[name] = value
    return _merge_qv_bias(out) if rules.merge_qv_bias else out


def file_names(state: dict[str, torch.Tensor], rules: KeyConversion) -> dict[str, str]:
    """Converted key -> the key as the file spells it, for messages: the user can only look up the
    latter (a merged qkv.bias is named by its q_bias)."""
    names: dict[str, str] = {}
    for key in state:
        name = converted_name(key, rules)
        if name is None:
            continue
        names[name] = key
        if rules.merge_qv_bias and name.endswith(".q_bias"):
            names[f"{name[: -len('q_bias')]}qkv.bias"] = key
    return names


def _model_key_in_file(key: str, rules: KeyConversion) -> str:
    """A model key the file lacks, as the file would spell it (exact when only keep_prefix applies)."""
    return f"{rules.keep_prefix}{key}" if rules.keep_prefix and not rules.strip_prefixes and not rules.rename else key


def in_file_terms(
    found: tuple[list[str], list[str], list[str]], names: dict[str, str], rules: KeyConversion
) -> tuple[list[str], list[str], list[str]]:
    """(missing, unexpected, shape mismatches) of `problems` with every key as the file spells it."""
    missing, unexpected, shapes = found
    return (
        [_model_key_in_file(k, rules) for k in missing],
        [names.get(k, k) for k in unexpected],
        [f"{names.get(k, k)} {rest}" for k, _, rest in (line.partition(" ") for line in shapes)],
    )


def _merge_qv_bias(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # BEiT/CAE attention: qkv = x W^T + cat(q_bias, 0, v_bias); the library ViT holds that as one bias.
    out = dict(state)
    for name in [k for k in state if k.endswith(".q_bias")]:
        stem = name[: -len("q_bias")]
        v_bias = out.pop(f"{stem}v_bias", None)
        if v_bias is None:
            raise CrsbenchError(f"checkpoint has {name} but no {stem}v_bias")
        q_bias = out.pop(name)
        out[f"{stem}qkv.bias"] = torch.cat([q_bias, torch.zeros_like(v_bias), v_bias])
    return out


# -- loading --------------------------------------------------------------------------------------


def mismatch_message(missing: list[str], unexpected: list[str], shapes: list[str]) -> str:
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing keys ({_show(missing)})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected keys ({_show(unexpected)})")
    if shapes:
        parts.append(f"{len(shapes)} shape mismatches ({_show(shapes)})")
    return "; ".join(parts)


def problems(
    expected: dict[str, tuple[int, ...]], state: dict[str, torch.Tensor], allow_missing: tuple[str, ...] = ()
) -> tuple[list[str], list[str], list[str]]:
    """(missing, unexpected, shape mismatches) of `state` against the model's key shapes."""
    missing = [k for k in expected if k not in state and not (allow_missing and k.startswith(allow_missing))]
    unexpected = [k for k in state if k not in expected]
    shapes = [
        f"{k} {tuple(v.shape)} vs model {expected[k]}"
        for k, v in state.items()
        if k in expected and tuple(v.shape) != expected[k]
    ]
    return missing, unexpected, shapes


def load_strict(
    model: nn.Module, state: dict[str, torch.Tensor], source: str, encoder_id: str, allow_missing: tuple[str, ...] = ()
) -> None:
    """Load `state` into `model`; every key must match in name and shape."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    found = problems(expected, state, allow_missing)
    if any(found):
        raise CrsbenchError(
            f"weights {source} do not fit encoder {encoder_id!r} ({type(model).__name__}): {mismatch_message(*found)}"
        )
    model.load_state_dict(state, strict=False)


def load_checkpoint(model: nn.Module, path: Path, rules: KeyConversion, encoder_id: str) -> str:
    """Load the first of the file's state dicts that fits `model` exactly; returns (and records) which."""
    path = weight_file(path)
    source = str(path)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    tried: list[tuple[int, str, tuple[list[str], list[str], list[str]]]] = []
    gaps: list[str] = []
    for label, state in candidates(read_checkpoint(path), rules, source, encoder_id):
        gap = layout_gap(state, rules)
        if gap is not None:
            gaps.append(f"{gap}; {_seen(list(state))}")
            continue
        converted = convert(state, rules)
        found = problems(expected, converted, rules.allow_missing)
        if not any(found):
            model.load_state_dict(converted, strict=False)
            note_load(source, label)
            return label
        tried.append((sum(len(p) for p in found), label, in_file_terms(found, file_names(state, rules), rules)))
    if not tried:
        raise CrsbenchError(f"weights {source} are not in the layout encoder {encoder_id!r} declares: {gaps[0]}")
    _, label, found = min(tried, key=lambda t: t[0])
    where = f" (closest: the {label} state dict)" if label != "top-level" or len(tried) > 1 else ""
    raise CrsbenchError(
        f"weights {source} do not fit encoder {encoder_id!r} ({type(model).__name__}){where}: {mismatch_message(*found)}"
    )


# -- `crsbench weights convert` ----------------------------------------------------------------------


def convert_to_safetensors(source: Path, out: Path, trust_pickle: bool = False) -> dict[str, int]:
    """Write the tensors of a checkpoint to `out` (safetensors), pickled objects left behind.

    The file is read by the same rule as extraction: a checkpoint holding pickled Python objects
    is refused, naming their globals, unless `trust_pickle` (then a warning naming them comes
    before it is unpickled). The caller checks `out` (`core.check_write_target`). Kept: top-level
    tensors and every top-level dict of tensors (`model`, `model_ema`, ...) under `<entry>/<key>`
    names that reading restores, so an entry's declared `state_key` applies to the converted file
    as to the original. Returns {part: tensors kept}."""
    from safetensors.torch import save_file

    path = weight_file(source)
    if file_format(path) == "safetensors":
        raw = _read_safetensors(path)
    else:
        raw = _read_torch(path, trust=trust_pickle, converting=True)
    if not isinstance(raw, dict):
        raise CrsbenchError(f"weights {path} do not hold a dict but a {type(raw).__name__}")
    flat: dict[str, torch.Tensor] = {}
    kept: dict[str, int] = {}
    for name, value in raw.items():
        if isinstance(value, torch.Tensor):
            flat[str(name)] = value
            kept["top-level"] = kept.get("top-level", 0) + 1
        elif _is_state(value):
            flat.update({f"{name}{NESTED_SEP}{k}": v for k, v in value.items()})
            kept[str(name)] = len(value)
    if not flat:
        raise CrsbenchError(f"weights {path} hold no tensors or state dicts to convert")
    if any(t.is_meta for t in flat.values()):
        raise CrsbenchError(f"weights {path} hold tensors on the meta device, without data")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial")
    save_file(
        {k: v.detach().to("cpu").contiguous().clone() for k, v in flat.items()}, str(tmp), {NESTED_META: NESTED_SEP}
    )
    os.replace(tmp, out)
    return kept
