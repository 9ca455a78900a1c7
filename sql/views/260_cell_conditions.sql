-- One row per cell (encoder, dataset, regime) with a perturbed seed mean: the perturbed conditions
-- behind its robustness axis; docs/METHODS.md §6 (Axes per cell), §2.3 (conditions).
-- The same rows fn_axes_cell takes its drops from: logreg at depth 1.0, full label fraction,
-- evaluated on the dataset itself, condition '<perturbation>-s<severity>', AUROC observed, in the
-- declared grid (metrics_seed reads runs_grid where in_grid). The protocol gives 15; a registered
-- plugin perturbation in the grid adds its severities. Robustness and CRS compare encoders only
-- over one set: complete cells of a dataset share the grid's, and panel_condition_check flags a
-- cell scored against a panel frozen over another.
create or replace view cell_conditions as
select encoder_id, dataset_id, regime,
       list(condition order by condition) as conditions,
       count(*) as n_conditions
from metrics_seed
where probe = 'logreg' and depth = 1.0 and label_fraction = 1.0 and eval_dataset_id = dataset_id
  and auroc_mean is not null and regexp_full_match(condition, '[a-z0-9_]+-s[0-9]+')
group by encoder_id, dataset_id, regime;

comment on view cell_conditions is 'One row per (encoder, dataset, regime) cell: the perturbed conditions its robustness axis averages over (logreg, depth 1.0, full labels, in-grid seed means); robustness and CRS compare encoders only over one such set. docs/METHODS.md §6.';
comment on column cell_conditions.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column cell_conditions.dataset_id is 'Dataset id (the probe''s training and evaluation dataset). docs/METHODS.md §1.';
comment on column cell_conditions.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column cell_conditions.conditions is 'Perturbed conditions <perturbation>-s<severity> behind the cell''s robustness, sorted: the protocol''s 15, plus any registered plugin perturbation''s in the dataset''s grid. docs/METHODS.md §2.3.';
comment on column cell_conditions.n_conditions is 'Number of perturbed conditions in conditions (axes_cell.n_perturbed); count. docs/METHODS.md §6.';
