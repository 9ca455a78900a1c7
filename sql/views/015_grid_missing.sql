-- One row per run a cell lacks: (encoder_id, dataset_id, regime) x (probe, depth, label_fraction,
-- seed, condition, eval_dataset_id) that the grid defines for the cell's dataset and regime but
-- `runs` does not hold. The grid of a (dataset, regime) is every such key any encoder has a run
-- for there (a sweep plans the same fits for every encoder), plus every (fraction, seed) the
-- dataset's label_fractions declare for the primary probe (logreg, full depth, clean), so a seed
-- no encoder has run yet is missing too. A cell is an (encoder, dataset, regime) with any run.
-- docs/METHODS.md §3 (the probe grid).
create or replace view grid_missing as
with cells as (
    select distinct encoder_id, dataset_id, regime from runs
),
observed as (
    select distinct dataset_id, regime, probe, depth, label_fraction, seed, condition,
           eval_dataset_id
    from runs
),
declared as (
    select distinct f.dataset_id, c.regime, 'logreg' as probe, 1.0::double as depth,
           f.fraction as label_fraction, f.seed, 'clean' as condition,
           f.dataset_id as eval_dataset_id
    from label_fractions f
    join (select distinct dataset_id, regime from runs) c on c.dataset_id = f.dataset_id
),
expected as (
    select * from observed
    union
    select * from declared
)
select c.encoder_id, e.dataset_id, e.regime, e.probe, e.depth, e.label_fraction, e.seed,
       e.condition, e.eval_dataset_id
from cells c
join expected e on e.dataset_id = c.dataset_id and e.regime = c.regime
where not exists (
    select 1 from runs r
    where r.encoder_id = c.encoder_id and r.dataset_id = e.dataset_id and r.regime = e.regime
      and r.probe = e.probe and r.depth = e.depth and r.label_fraction = e.label_fraction
      and r.seed = e.seed and r.condition = e.condition and r.eval_dataset_id = e.eval_dataset_id
);

comment on view grid_missing is 'One row per run a cell (encoder, dataset, regime) lacks: a (probe, depth, label_fraction, seed, condition, eval_dataset_id) key of its dataset''s grid (keys any encoder has there, plus the declared label fractions x seeds of the primary probe) with no run. docs/METHODS.md §3.';
comment on column grid_missing.encoder_id is 'Encoder of the incomplete cell. docs/METHODS.md §3.';
comment on column grid_missing.dataset_id is 'Dataset the probe was fitted on. docs/METHODS.md §3.';
comment on column grid_missing.regime is 'frozen, or the adaptation regime of the feature set. docs/METHODS.md §3.';
comment on column grid_missing.probe is 'Probe of the missing run (logreg, mlp, knn). docs/METHODS.md §3.';
comment on column grid_missing.depth is 'Relative depth of the features of the missing run. docs/METHODS.md §3.';
comment on column grid_missing.label_fraction is 'Label fraction of the missing run. docs/METHODS.md §3.';
comment on column grid_missing.seed is 'Label-fraction seed of the missing run. docs/METHODS.md §3.';
comment on column grid_missing.condition is 'Evaluation condition of the missing run (clean, <perturbation>-s<k>, calib, shift). docs/METHODS.md §3.';
comment on column grid_missing.eval_dataset_id is 'Dataset the missing run evaluates on (the shift target for condition shift). docs/METHODS.md §3.';
