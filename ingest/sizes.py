"""Images of mixed sizes or aspect ratios: accepted, but said once at ingest.

Every encoder resizes the whole image to its square input without cropping (docs/ADDING_AN_ENCODER.md,
"How features are read"), so an image of another aspect ratio is stretched, and a small one
upsampled; a dataset mixing them is worth knowing about before its numbers are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from math import gcd

SHOWN = 3


def _ratio(size: tuple[int, int]) -> tuple[int, int]:
    w, h = size
    d = gcd(w, h) or 1
    return w // d, h // d


def mixed_sizes_note(sizes: Mapping[str, tuple[int, int]]) -> str | None:
    """One line describing the image sizes when they differ (None when all are one size):
    the counts of the commonest sizes, the number of aspect ratios, and one example file."""
    counts = Counter(sizes.values())
    if len(counts) < 2:
        return None
    common = counts.most_common()
    shown = ", ".join(f"{w}x{h}: {n}" for (w, h), n in common[:SHOWN])
    if len(common) > SHOWN:
        shown += f", {len(common) - SHOWN} more sizes"
    ratios = {_ratio(s) for s in counts}
    usual = common[0][0]
    example = next(p for p, s in sorted(sizes.items()) if s != usual)
    aspect = (
        f"{len(ratios)} aspect ratios, so every encoder's square input stretches some of them"
        if len(ratios) > 1
        else "one aspect ratio"
    )
    ew, eh = sizes[example]
    return (
        f"images differ in size: {len(counts)} sizes among {len(sizes)} images (width x height px: {shown}), "
        f"{aspect}; e.g. {example} is {ew}x{eh}, most are {usual[0]}x{usual[1]}. "
        f"Each image is resized whole to the encoder's input; resize or pad them first if that matters"
    )
