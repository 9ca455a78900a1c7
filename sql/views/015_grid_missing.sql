-- One row per run a cell lacks: (encoder_id, dataset_id, regime) x (probe, depth, label_fraction,
-- seed, condition, eval_dataset_id) that the cell's declared grid (grid_declared: stored at ingest,
-- widened only by `crsbench grid extend`) holds but `runs` does not. A cell is an (encoder,
-- dataset, regime) with any run; a run outside the grid (an extra) neither fills nor opens a gap.
-- A declared zero-shot cell (grid_declared_zeroshot) also lacks each of its keys with no run of
-- its declared prompt set.
-- docs/METHODS.md §3 (the probe grid).
-- `runs` is read once (run_keys) for both the cells and the runs they hold.
create or replace view grid_missing as
with run_keys as materialized (
    select distinct r.encoder_id, r.dataset_id, r.regime, r.probe, r.depth, r.label_fraction, r.seed,
           r.condition, r.eval_dataset_id, p.prompt_hash
    from runs r
    left join zeroshot_prompts p on r.probe = 'zeroshot' and p.fit_id = r.fit_id
),
cells as (
    select distinct encoder_id, dataset_id, regime from run_keys
)
select c.encoder_id, g.dataset_id, g.regime, g.probe, g.depth, g.label_fraction, g.seed,
       g.condition, g.eval_dataset_id
from cells c
join grid_declared g on g.dataset_id = c.dataset_id and g.regime = c.regime
where not exists (
    select 1 from run_keys r
    where r.encoder_id = c.encoder_id and r.dataset_id = g.dataset_id and r.regime = g.regime
      and r.probe = g.probe and r.depth = g.depth and r.label_fraction = g.label_fraction
      and r.seed = g.seed and r.condition = g.condition and r.eval_dataset_id = g.eval_dataset_id
)
union all
select z.encoder_id, z.dataset_id, z.regime, z.probe, z.depth, z.label_fraction, z.seed,
       z.condition, z.eval_dataset_id
from grid_declared_zeroshot z
join cells c on c.encoder_id = z.encoder_id and c.dataset_id = z.dataset_id and c.regime = z.regime
where not exists (
    select 1 from run_keys r
    where r.probe = 'zeroshot' and r.prompt_hash = z.prompt_hash and r.encoder_id = z.encoder_id
      and r.dataset_id = z.dataset_id and r.regime = z.regime and r.depth = z.depth
      and r.label_fraction = z.label_fraction and r.seed = z.seed and r.condition = z.condition
      and r.eval_dataset_id = z.eval_dataset_id
);

comment on view grid_missing is 'One row per run a cell (encoder, dataset, regime) lacks: a (probe, depth, label_fraction, seed, condition, eval_dataset_id) key of its dataset''s declared grid (grid_declared) with no run. Extra runs outside the grid never add a row. docs/METHODS.md §3.';
comment on column grid_missing.encoder_id is 'Encoder of the incomplete cell. docs/METHODS.md §3.';
comment on column grid_missing.dataset_id is 'Dataset the probe was fitted on. docs/METHODS.md §3.';
comment on column grid_missing.regime is 'frozen, or the adaptation regime of the feature set. docs/METHODS.md §3.';
comment on column grid_missing.probe is 'Probe of the missing run (logreg, mlp, knn). docs/METHODS.md §3.';
comment on column grid_missing.depth is 'Relative depth of the features of the missing run. docs/METHODS.md §3.';
comment on column grid_missing.label_fraction is 'Label fraction of the missing run. docs/METHODS.md §3.';
comment on column grid_missing.seed is 'Label-fraction seed of the missing run. docs/METHODS.md §3.';
comment on column grid_missing.condition is 'Evaluation condition of the missing run (clean, <perturbation>-s<k>, calib, shift). docs/METHODS.md §3.';
comment on column grid_missing.eval_dataset_id is 'Dataset the missing run evaluates on (the shift target for condition shift). docs/METHODS.md §3.';
