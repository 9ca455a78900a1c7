-- One row per (frozen panel, scope, encoder, regime): the four axes normalised by the panel's
-- frozen anchors for that scope (dataset id or 'global'); docs/METHODS.md §8.2 (Normalisation).
-- x~ = clip((x - lo) / (hi - lo), 0, 1) via the fn_normalise macro. Scopes the panel has no
-- anchors for are absent. `candidate` is the key the CRS macros score (encoder id, or
-- encoder@regime for adapted variants).
create or replace view axes_normalised as
with candidates as materialized (
    select * from crs_candidates
),
candidate_axes as (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from candidates
),
panel_anchors as (
    select panel as grp, scope, axis, lo, hi from reference_anchors
),
normalised as (
    select * from fn_normalise('candidate_axes', 'panel_anchors')
)
select c.panel, c.scope, c.encoder_id, c.regime, c.candidate, c.in_panel,
       n.discrimination, n.calibration, n.label_efficiency, n.robustness
from candidates c
join normalised n on n.grp = c.panel and n.scope = c.scope and n.encoder_id = c.candidate;

comment on view axes_normalised is 'One row per (frozen panel, scope, encoder, regime): the four axes normalised by the panel''s frozen anchors for that scope, clip((x - lo) / (hi - lo), 0, 1). docs/METHODS.md §8.2.';
comment on column axes_normalised.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column axes_normalised.scope is 'Scope of the anchors and Pareto term: a dataset id (per-dataset) or ''global'' (aggregate axes). docs/METHODS.md §8.4.';
comment on column axes_normalised.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column axes_normalised.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column axes_normalised.candidate is 'Key the CRS macros score: the encoder id for the frozen regime, ''<encoder>@<regime>'' for an adapted variant. docs/METHODS.md §8.1.';
comment on column axes_normalised.in_panel is 'True when this row is a member of the reference (frozen regime and in the panel; in cohort mode every frozen-regime encoder). docs/METHODS.md §8.1.';
comment on column axes_normalised.discrimination is 'Normalised discrimination: clip((discrimination - lo) / (hi - lo), 0, 1) with the panel''s anchors for this scope; [0, 1], higher is better. docs/METHODS.md §8.2.';
comment on column axes_normalised.calibration is 'Normalised calibration: clip((calibration - lo) / (hi - lo), 0, 1) with the panel''s anchors for this scope; [0, 1], higher is better. docs/METHODS.md §8.2.';
comment on column axes_normalised.label_efficiency is 'Normalised label_efficiency: clip((label_efficiency - lo) / (hi - lo), 0, 1) with the panel''s anchors for this scope; [0, 1], higher is better. docs/METHODS.md §8.2.';
comment on column axes_normalised.robustness is 'Normalised robustness: clip((robustness - lo) / (hi - lo), 0, 1) with the panel''s anchors for this scope; [0, 1], higher is better. docs/METHODS.md §8.2.';
