-- One row per (encoder, regime): the aggregate axes = the exact mean of the encoder's complete
-- cells in axes_cell (missing datasets are never imputed); docs/METHODS.md §7 (Aggregate axes).
-- Via the fn_axes_aggregate macro. Its aggregate AUROC, used for the AUROC ranking, is its
-- aggregate discrimination.
create or replace view axes_encoder as
with cells as (
    select 'all' as grp, * from axes_cell
)
select * exclude (grp) from fn_axes_aggregate('cells');

comment on view axes_encoder is 'One row per (encoder, regime): the aggregate axes = exact mean of the encoder''s complete cells (never imputed); aggregate discrimination is the aggregate AUROC. docs/METHODS.md §7.';
comment on column axes_encoder.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column axes_encoder.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column axes_encoder.discrimination is 'Discrimination axis, aggregate: exact mean over the encoder''s complete cells of D = clean full-label AUROC (seed mean) of the logreg probe at depth 1.0; [0, 1], higher is better. docs/METHODS.md §6, §7.';
comment on column axes_encoder.calibration is 'Calibration axis, aggregate: exact mean over complete cells of C = 1 - clean full-label ECE (seed mean); [0, 1], higher is better. docs/METHODS.md §6, §7.';
comment on column axes_encoder.label_efficiency is 'Label-efficiency axis, aggregate: exact mean over complete cells of LE = mean over label fractions f < 1 of AUROC_clean(f) / AUROC_clean(100 %); a ratio, usually in [0, 1] (may exceed 1), higher is better. docs/METHODS.md §6, §7.';
comment on column axes_encoder.robustness is 'Robustness axis, aggregate: exact mean over complete cells of R = 1 - (0.5 mean + 0.5 max) of the AUROC drops max(0, clean - condition) over the perturbed conditions and shift targets; at most 1, higher is better. docs/METHODS.md §6, §7.';
comment on column axes_encoder.aulc is 'Aggregate AULC: exact mean over the encoder''s complete cells of the per-cell AULC; [0, 1], higher is better; not a CRS axis. docs/METHODS.md §6, §7.';
comment on column axes_encoder.n_datasets is 'Number of complete cells (datasets) averaged; count. docs/METHODS.md §7.';
comment on column axes_encoder.datasets is 'The datasets of those cells, sorted. docs/METHODS.md §7.';
comment on column axes_encoder.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
