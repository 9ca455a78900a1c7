"""Looking an encoder up: the registry's entries plus those a user adds (METHODS.md §2).

`get_encoder` and `list_encoders` see every origin `features.registry` describes: the built-in
entries (registered on the registry's first lookup), the TOML files and `crsbench.encoders`
plugins (`features.user`, re-read when a file changes) and library ids (`features.by_id`,
resolved on demand). The registry itself holds data only and imports none of them; they import
it, and this module sits above all three. No torch is imported until a library id is resolved.
"""

from __future__ import annotations

import difflib

from crsbench.core import CrsbenchError
from crsbench.features.registry import ENCODERS, EncoderEntry
from crsbench.features.user import load_user_encoders

_ORIGIN_ORDER = {"built-in": 0, "id": 1}


def _ensure_loaded() -> None:
    ENCODERS.load()
    load_user_encoders()


def get_encoder(id: str) -> EncoderEntry:
    """The entry registered under `id`, or one resolved from a `timm:`/`hf:`/`open_clip:` id."""
    _ensure_loaded()
    if id in ENCODERS:
        return ENCODERS.get(id)
    from crsbench.features.by_id import ID_SOURCES, entry_from_id

    if id.partition(":")[0] in ID_SOURCES and ":" in id:
        return entry_from_id(id)
    close = difflib.get_close_matches(id, ENCODERS.names(), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"known encoders: {', '.join(ENCODERS.names())}"
    raise CrsbenchError(
        f"unknown encoder {id!r}; {hint} (or name a library model: {', '.join(f'{s}:<name>' for s in ID_SOURCES)})"
    )


def list_encoders(*, pretrained: bool | None = None) -> list[EncoderEntry]:
    """Registered entries: built-ins (pretrained first), then TOML and plugin entries, by id."""
    _ensure_loaded()
    entries = [e for _, e in ENCODERS.items() if pretrained is None or e.pretrained == pretrained]
    return sorted(entries, key=lambda e: (_ORIGIN_ORDER.get(e.origin, 2), not e.pretrained, e.origin))


def tiny_encoder_ids() -> list[str]:
    """The random-initialised built-in image encoders used by tests and the demo (`all-tiny`); the
    tiny image-text entries (`tiny_image_text_ids`) are run beside them, outside the CRS panel."""
    return [e.id for e in list_encoders(pretrained=False) if e.origin == "built-in" and e.text_tower is None]


def tiny_image_text_ids() -> list[str]:
    """The random-initialised built-in entries with a text tower (zero-shot in tests and the demo)."""
    return [e.id for e in list_encoders(pretrained=False) if e.origin == "built-in" and e.text_tower is not None]
