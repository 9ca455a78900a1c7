"""`EncoderKey`: the one parser and printer of `encoder@regime` (METHODS §13).

The frozen regime is the bare encoder id (`vit_tiny`); an adapted variant appends its
regime (`vit_tiny@lora-s0`). Feature-store groups, CLI arguments and views all use it.
"""

from __future__ import annotations

import dataclasses

from crsbench.core.constants import FROZEN
from crsbench.core.errors import CrsbenchError

SEPARATOR = "@"


@dataclasses.dataclass(frozen=True, order=True)
class EncoderKey:
    encoder_id: str
    regime: str = FROZEN

    def __post_init__(self) -> None:
        if not self.encoder_id or SEPARATOR in self.encoder_id:
            raise CrsbenchError(f"bad encoder id {self.encoder_id!r}: must be non-empty, without '{SEPARATOR}'")
        if not self.regime or SEPARATOR in self.regime:
            raise CrsbenchError(f"bad regime {self.regime!r} for encoder {self.encoder_id!r}")

    @classmethod
    def parse(cls, text: str) -> EncoderKey:
        """'vit_tiny' -> (vit_tiny, frozen); 'vit_tiny@lora-s0' -> (vit_tiny, lora-s0)."""
        encoder_id, sep, regime = str(text).partition(SEPARATOR)
        if sep and not regime:
            raise CrsbenchError(f"bad encoder key {text!r}: nothing after '{SEPARATOR}'")
        return cls(encoder_id, regime or FROZEN)

    @property
    def frozen(self) -> bool:
        return self.regime == FROZEN

    def __str__(self) -> str:
        return self.encoder_id if self.frozen else f"{self.encoder_id}{SEPARATOR}{self.regime}"
