"""Reading a published checkpoint, converting its keys by the entry's declared rules, loading strictly.

A partial load never passes: a model key the checkpoint lacks, a checkpoint key the model
has no place for (after the entry's declared conversion) or a shape mismatch is a
`CrsbenchError` naming the first few keys. Pickled checkpoints load with `weights_only=True`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from crsbench.features.registry import KeyConversion
from crsbench.features.weights import WEIGHT_SUFFIXES
from crsbench.ingest.types import CrsbenchError

SHOWN = 4


def read_state_dict(path: Path) -> dict[str, Any]:
    """The raw dict stored in a weight file (or the first weight file of a folder)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.name.endswith(WEIGHT_SUFFIXES))
        if not files:
            raise CrsbenchError(f"no weight file ({', '.join(WEIGHT_SUFFIXES)}) in {path}")
        path = files[0]
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return dict(load_file(str(path)))
        except Exception as exc:
            raise CrsbenchError(f"cannot read weights {path}: {str(exc).splitlines()[0]}") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise CrsbenchError(f"cannot read weights {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(state, dict):
        raise CrsbenchError(f"weights {path} do not hold a state dict")
    return state


def convert(state: dict[str, Any], rules: KeyConversion) -> dict[str, torch.Tensor]:
    """Apply the entry's declared key conversion (see `KeyConversion`)."""
    if rules.state_key is not None and isinstance(state.get(rules.state_key), dict):
        state = state[rules.state_key]
    if rules.keep_prefix and any(k.startswith(rules.keep_prefix) for k in state):
        n = len(rules.keep_prefix)
        state = {k[n:]: v for k, v in state.items() if k.startswith(rules.keep_prefix)}
    out: dict[str, torch.Tensor] = {}
    for name, value in state.items():
        for prefix in rules.strip_prefixes:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        if rules.drop_prefixes and name.startswith(rules.drop_prefixes):
            continue
        for old, new in rules.rename.items():
            name = name.replace(old, new)
        if not isinstance(value, torch.Tensor):
            raise CrsbenchError(f"checkpoint entry {name!r} is not a tensor ({type(value).__name__})")
        out[name] = value
    return _merge_qv_bias(out) if rules.merge_qv_bias else out


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


def _show(keys: list[str]) -> str:
    return ", ".join(keys[:SHOWN]) + (", ..." if len(keys) > SHOWN else "")


def mismatch_message(missing: list[str], unexpected: list[str], shapes: list[str]) -> str:
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing keys ({_show(missing)})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected keys ({_show(unexpected)})")
    if shapes:
        parts.append(f"{len(shapes)} shape mismatches ({_show(shapes)})")
    return "; ".join(parts)


def load_strict(
    model: nn.Module, state: dict[str, torch.Tensor], source: str, encoder_id: str, allow_missing: tuple[str, ...] = ()
) -> None:
    """Load `state` into `model`; every key must match in name and shape."""
    expected = model.state_dict()
    missing = [k for k in expected if k not in state and not k.startswith(allow_missing or ("\0",))]
    unexpected = [k for k in state if k not in expected]
    shapes = [
        f"{k} {tuple(v.shape)} vs model {tuple(expected[k].shape)}"
        for k, v in state.items()
        if k in expected and tuple(v.shape) != tuple(expected[k].shape)
    ]
    if missing or unexpected or shapes:
        raise CrsbenchError(
            f"weights {source} do not fit encoder {encoder_id!r} "
            f"({type(model).__name__}): {mismatch_message(missing, unexpected, shapes)}"
        )
    model.load_state_dict(state, strict=False)


def load_checkpoint(model: nn.Module, path: Path, rules: KeyConversion, encoder_id: str) -> None:
    load_strict(model, convert(read_state_dict(path), rules), str(path), encoder_id, rules.allow_missing)
