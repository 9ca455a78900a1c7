"""The reporting card: eight items a paper's reader needs, each with its number from this warehouse.

`reporting_card(wh, panel)` reads the tables and views the analyses fill (METHODS.md §19.2):

1. split: official or derived per dataset, groups crossing splits (0 = group-safe), the
   partition classifier's AUROC (view partition_shift);
2. training policy: the regimes probed, the frozen-to-LoRA rank agreement (rank_agreement_regime);
3. threshold policy and transfer gap (operating_points);
4. metrics: those recorded, the AUROC spread across encoders beside the balanced-accuracy spread
   across threshold rules;
5. calibration before and after recalibration (analysis_e2_cells);
6. uncertainty: the bootstrap's resampling unit and interval widths (bootstrap_intervals), and
   the split-level spread of repeated partitions (resplit_selection);
7. shortcut audit (shortcut_audit);
8. data provenance: what each dataset is, and the encoders pretrained on it, declared or
   measured, and for how many it is unknown (encoder_dataset_overlap).

An item (or part of one) whose analysis was not run says so and names the command. The report
renders the card (crsbench/report/sections_card.py); `Card.markdown()` is `crsbench report
--card-only`. Every number is a plain aggregate of one relation, so a test can recompute it in SQL.
"""

from __future__ import annotations

from crsbench.reads.card_items import ITEMS, present_relations
from crsbench.reads.card_model import Card
from crsbench.warehouse.connection import Warehouse


def reporting_card(wh: Warehouse, panel: str | None) -> Card:
    """The eight items, read from `wh`; `panel` is the frozen panel whose scores the items use."""
    present = present_relations(wh)
    return Card(panel, tuple(item(wh, present, panel) for item in ITEMS))


def card_for(wh: Warehouse, panel: str | None = None) -> Card:
    """The card for `panel`, or, as the report, for the latest frozen panel (an unknown one is an error)."""
    from crsbench.reads.panel import relations, resolve_panel

    chosen, _ = resolve_panel(wh, relations(wh), panel)
    return reporting_card(wh, chosen)
