"""A registered transformers entry stands for one published architecture.

transformers builds whatever a folder's config.json describes, so without a check a
DINOv2-small folder given to `dinov2` would load and yield 384-d features under the id of
DINOv2-B. An entry's `architecture` (registry.EncoderEntry) lists the config fields of the
publisher's model (hidden size, layers, patch size, image size); a folder whose config
differs is refused in one line, before its weights are read, as timm and open_clip entries
refuse weights of another size. `hf:` ids and TOML entries declare none and stay free.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crsbench.core import CrsbenchError
from crsbench.features.registry import EncoderEntry

CONFIG = "config.json"


def _resolved(folder: Path) -> dict[str, Any] | None:
    """The image part of the folder's config with transformers' defaults filled in (the
    `vision_config` of an image-text model); None when transformers cannot read it."""
    import transformers

    try:  # never the folder's own code (auto_map)
        config = transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    except Exception:  # unknown model type, failed validation, ...: config.json is read as written
        return None
    vision = getattr(config, "vision_config", None)
    part = vision if vision is not None else config
    return dict(part.to_dict())


def _raw(folder: Path) -> tuple[dict[str, Any], str] | None:
    """The image part of config.json as written (when transformers cannot read it), and where."""
    try:
        data = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    vision = data.get("vision_config")
    return (vision, "vision_config of ") if isinstance(vision, dict) else (data, "")


def check_architecture(entry: EncoderEntry, folder: Path) -> None:
    """Return if `folder`'s config is the architecture `entry` declares (or it declares none);
    else a CrsbenchError naming the field, the expected and the found value, and the folder."""
    if not entry.architecture or not Path(folder).is_dir():
        return
    raw = _raw(Path(folder))
    if raw is None:
        return  # no readable config.json: the loader names what is missing
    part, where = raw
    resolved = _resolved(Path(folder))
    found_in = resolved if resolved is not None else part
    for field, expected in entry.architecture.items():
        found = found_in.get(field)
        if found != expected:
            shown = "no value" if found is None else f"{field} {found}"
            raise CrsbenchError(
                f"weights {folder} do not fit encoder {entry.id!r} ({entry.family}): the {where}{CONFIG} "
                f"has {shown}, the published {entry.family} has {field} {expected}; load another "
                f"architecture as hf:{folder} (its own id), or register it under a new encoder id"
            )
