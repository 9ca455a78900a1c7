-- One row per (encoder, dataset, regime) with a full-label clean AUROC: the four reliability axes
-- and the AULC of that cell; docs/METHODS.md §6 (Axes per cell).
-- From the fn_axes_cell macro over the seed means of metrics_seed; see that macro for the
-- formulas. The CRS views use regime 'frozen' for the panel. An axis with no runs yet is NULL;
-- `complete` says all four are observed AND the cell holds every run of its grid
-- (cell_completeness: every fraction x seed x condition x probe), and only complete cells reach
-- axes_encoder and CRS (nothing is imputed, no mean is taken over a partial seed set).
-- A corruption suite's conditions ('<suite>.<corruption>-s<k>', §25) are the suite's view's alone
-- (suite_robustness): a run of theirs still owed never makes the paper's cell incomplete.
-- A cell here has runs of its grid, so it is complete exactly when grid_missing has no row for it
-- (cell_completeness.complete), which is asked of grid_missing directly: the declared grid is then
-- joined once for the seed means and once for the gaps, not a third time for the counts.
create or replace view axes_cell as
with seed_means as (
    select 'all' as grp, encoder_id, dataset_id, eval_dataset_id, regime, probe, depth,
           label_fraction, condition, auroc_mean, ece_mean, pretrained
    from metrics_seed
)
select a.encoder_id, a.dataset_id, a.regime, a.discrimination, a.calibration,
       a.label_efficiency, a.robustness, a.aulc, a.n_perturbed, a.n_shift,
       a.complete and a.encoder_id is not null
           and not exists (
               select 1 from grid_missing g
               where g.encoder_id = a.encoder_id and g.dataset_id = a.dataset_id
                 and g.regime = a.regime and not contains(g.condition, '.')
           ) as complete,
       a.pretrained
from fn_axes_cell('seed_means') a;

comment on view axes_cell is 'One row per (encoder, dataset, regime): the four reliability axes (discrimination, calibration, label_efficiency, robustness) and AULC of the cell, logreg probe at depth 1.0, seed means. docs/METHODS.md §6.';
comment on column axes_cell.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column axes_cell.dataset_id is 'Dataset id (the probe''s training dataset). docs/METHODS.md §1.';
comment on column axes_cell.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column axes_cell.discrimination is 'Discrimination axis D = clean full-label AUROC (seed mean) of the logreg probe at depth 1.0; [0, 1], higher is better. docs/METHODS.md §6.';
comment on column axes_cell.calibration is 'Calibration axis C = 1 - clean full-label ECE (seed mean); [0, 1], higher is better. docs/METHODS.md §6.';
comment on column axes_cell.label_efficiency is 'Label-efficiency axis LE = mean over label fractions f < 1 of AUROC_clean(f) / AUROC_clean(100 %); a ratio, usually in [0, 1] (may exceed 1), higher is better. docs/METHODS.md §6.';
comment on column axes_cell.robustness is 'Robustness axis R = 1 - (0.5 mean + 0.5 max) of the AUROC drops max(0, clean - condition) over the perturbed conditions and shift targets; at most 1, higher is better. docs/METHODS.md §6.';
comment on column axes_cell.aulc is 'Area under the clean label-efficiency curve (AUROC against log10 fraction, trapezoids, divided by the log10 span): a mean AUROC in [0, 1], higher is better; reported, not a CRS axis. docs/METHODS.md §6.';
comment on column axes_cell.n_perturbed is 'Number of perturbed conditions observed at full label fraction behind robustness (15 in the protocol; one per registered perturbation x severity in the dataset''s grid, view cell_conditions); count. docs/METHODS.md §6.';
comment on column axes_cell.n_shift is 'Number of shift targets observed behind robustness (1 for CheXpert -> MIMIC-CXR, else 0); count. docs/METHODS.md §6.';
comment on column axes_cell.complete is 'True when all four axes are observed and the cell holds every run of its grid (cell_completeness) other than a corruption suite''s (§25); only complete cells reach axes_encoder and CRS (nothing is imputed). docs/METHODS.md §6.';
comment on column axes_cell.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
