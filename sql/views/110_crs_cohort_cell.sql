-- One row per (encoder, regime, dataset): cohort-mode per-dataset CRS, for comparison with the
-- fixed-reference crs_cell; docs/METHODS.md §8.6 (Cohort mode).
-- fn_crs_scored(..., cohort := true): the same CRS macro, but the reference is every
-- frozen-regime encoder with a complete cell on the dataset now and the anchors are recomputed
-- over them, so these rows move when encoders are added. A degenerate axis gives NULL scores.
create or replace view crs_cohort_cell as
with cells as (
    select dataset_id as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
           robustness, 1::bigint as n_datasets, pretrained
    from axes_cell
    where complete
)
select encoder_id, regime, scope as dataset_id, dominance, ideal, worst, crs, in_panel, pretrained
from fn_crs_scored('cells', cohort := true);

comment on view crs_cohort_cell is 'One row per (encoder, regime, dataset): per-dataset CRS in cohort mode: reference = every frozen-regime encoder present now; moves when encoders are added. For comparison with crs_cell. docs/METHODS.md §8.6.';
comment on column crs_cohort_cell.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column crs_cohort_cell.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column crs_cohort_cell.dataset_id is 'Dataset of the cell (scope of its cohort anchors and Pareto term). docs/METHODS.md §8.6.';
comment on column crs_cohort_cell.dominance is 'Pareto term: share of the other cohort members in this scope whose normalised axes this encoder dominates (>= on all four, > on one); [0, 1], higher is better; NULL when no other member. docs/METHODS.md §8.3.';
comment on column crs_cohort_cell.ideal is 'Ideal-point term 1 - sqrt(sum over the four axes a of w_a (1 - x~_a)^2), where x~_a = clip((x_a - lo_a) / (hi_a - lo_a), 0, 1) is the raw axis a normalised with this dataset''s cohort anchors lo_a (minimum over every frozen-regime encoder on the dataset) and hi_a (maximum), and w_a = 0.25 is the axis weight; [0, 1], 1 = the ideal point, higher is better. docs/METHODS.md §8.3.';
comment on column crs_cohort_cell.worst is 'Worst-axis term: the smallest of the four normalised axes; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_cohort_cell.crs is 'Clinical Reliability Score = 0.60 dominance + 0.25 ideal + 0.15 worst; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_cohort_cell.in_panel is 'True for frozen-regime rows (the cohort members). docs/METHODS.md §8.6.';
comment on column crs_cohort_cell.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
