"""What `crsbench demo` runs: the encoders, the embedded suite's datasets and shift pair, and the
number of conditions each feature set holds. A plan of names only (`Bench.demo_plan`), so the
demo command reaches the registries through the facade like every other command."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from crsbench.features.conditions import registered_conditions
from crsbench.features.lookup import get_encoder, tiny_encoder_ids, tiny_image_text_ids
from crsbench.pipeline.ingest import SUITE_DATASETS, SUITE_SHIFT


@dataclasses.dataclass(frozen=True)
class DemoPlan:
    encoders: tuple[str, ...]  # the image encoders probed and frozen into the panel
    image_text: tuple[str, ...]  # those classified zero-shot (outside the panel)
    datasets: tuple[str, ...]  # the embedded suite's dataset names
    shift: tuple[str, str]  # source -> target of the suite's shift pair
    n_conditions: int  # clean + every registered perturbation x severity (16 in the protocol)


def demo_plan(encoders: Sequence[str] = ()) -> DemoPlan:
    """The tiny random-init encoders by default; with `encoders` given, those, and of them the ones
    with a text tower for zero-shot."""
    chosen = tuple(encoders) or tiny_encoder_ids()
    image_text = (
        tuple(e for e in encoders if get_encoder(e).text_tower is not None) if encoders else tiny_image_text_ids()
    )
    return DemoPlan(
        encoders=tuple(chosen),
        image_text=tuple(image_text),
        datasets=tuple(name for _, name in SUITE_DATASETS),
        shift=(SUITE_SHIFT[0], SUITE_SHIFT[1]),
        n_conditions=len(registered_conditions()),
    )
