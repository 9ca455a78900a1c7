-- One row per (frozen panel, encoder, regime, dataset): the per-dataset CRS with that dataset's
-- frozen anchors; docs/METHODS.md §8.4 (Per-dataset and aggregate CRS).
-- fn_crs_scored over the complete cells of axes_cell. The Pareto term counts only panel members
-- observed on the dataset, excluding the encoder itself. Rows of existing encoders never change
-- when another encoder is added (fixed reference, §8.5). `flagged`: the cell's feature set is
-- degenerate and unconfirmed (fn_flagged_sets, §2.7).
create or replace view crs_cell as
with cells as (
    select dataset_id as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
           robustness, 1::bigint as n_datasets, pretrained
    from axes_cell
    where complete
)
select s.panel, s.encoder_id, s.regime, s.scope as dataset_id, s.dominance, s.ideal, s.worst, s.crs,
       s.in_panel, s.pretrained, f.degenerate is not null as flagged
from fn_crs_scored('cells') s
left join fn_flagged_sets() f
    on f.dataset_id = s.scope and f.encoder_id = s.encoder_id and f.regime = s.regime;

comment on view crs_cell is 'One row per (frozen panel, encoder, regime, dataset): the per-dataset Clinical Reliability Score against the panel''s anchors for that dataset. docs/METHODS.md §8.4.';
comment on column crs_cell.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column crs_cell.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column crs_cell.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column crs_cell.dataset_id is 'Dataset of the cell (the scope of its anchors and Pareto term). docs/METHODS.md §8.4.';
comment on column crs_cell.dominance is 'Pareto term: share of the other reference members in this scope whose normalised axes this encoder dominates (>= on all four, > on one); [0, 1], higher is better; NULL when no other member. docs/METHODS.md §8.3.';
comment on column crs_cell.ideal is 'Ideal-point term 1 - sqrt(sum over the four axes a of w_a (1 - x~_a)^2), where x~_a = clip((x_a - lo_a) / (hi_a - lo_a), 0, 1) is the raw axis a normalised with this dataset''s anchors lo_a (the panel members'' minimum on the dataset) and hi_a (maximum), and w_a = 0.25 is the axis weight; [0, 1], 1 = the ideal point, higher is better. docs/METHODS.md §8.3.';
comment on column crs_cell.worst is 'Worst-axis term: the smallest of the four normalised axes; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_cell.crs is 'Clinical Reliability Score = 0.60 dominance + 0.25 ideal + 0.15 worst; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_cell.in_panel is 'True when this row is a member of the reference (frozen regime and in the panel; in cohort mode every frozen-regime encoder). docs/METHODS.md §8.1.';
comment on column crs_cell.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
comment on column crs_cell.flagged is 'True when the cell''s feature set is degenerate (constant features, or a numerical rank far below the width) and no user has confirmed it (crsbench feature-sets --confirm). docs/METHODS.md §2.7.';
