-- One row per run key a cell (encoder, dataset, regime) must hold to be complete: the dataset's
-- declared grid (table dataset_grid; its condition 'shift' stands for every declared shift
-- target of the dataset), repeated for every regime with runs on the dataset. The grid is stored
-- when the dataset is ingested and widened only by `crsbench grid extend`; a run outside it is an
-- extra (runs_grid.in_grid = false) and never makes a cell incomplete. A dataset with runs but no
-- declared grid (runs loaded without ingest) falls back to an inferred one: every key any encoder
-- has there, plus each label fraction x seed of the primary probe (logreg, full depth, clean).
-- docs/METHODS.md §3 (the probe grid).
-- `runs` is read once (run_keys: its distinct run keys) for both the regimes and the inferred grid.
create or replace view grid_declared as
with run_keys as materialized (
    select distinct dataset_id, regime, probe, depth, label_fraction, seed, condition,
           eval_dataset_id
    from runs
),
regimes as materialized (
    select distinct dataset_id, regime from run_keys
),
declared as (
    select dataset_id, probe, depth, label_fraction, seed, condition, dataset_id as eval_dataset_id
    from dataset_grid
    where condition <> 'shift'
    union all
    select g.dataset_id, g.probe, g.depth, g.label_fraction, g.seed, g.condition,
           s.target_id as eval_dataset_id
    from dataset_grid g
    join shift_pairs s on s.source_id = g.dataset_id
    where g.condition = 'shift'
),
inferred as (
    select distinct dataset_id, regime, probe, depth, label_fraction, seed, condition,
           eval_dataset_id
    from run_keys
    where dataset_id not in (select dataset_id from dataset_grid)
      and probe <> 'zeroshot'  -- per encoder: grid_declared_zeroshot
    union
    select distinct f.dataset_id, r.regime, 'logreg' as probe, 1.0::double as depth,
           f.fraction as label_fraction, f.seed, 'clean' as condition,
           f.dataset_id as eval_dataset_id
    from label_fractions f
    join regimes r on r.dataset_id = f.dataset_id
    where f.dataset_id not in (select dataset_id from dataset_grid)
)
select d.dataset_id, r.regime, d.probe, d.depth, d.label_fraction, d.seed, d.condition,
       d.eval_dataset_id, true as declared
from declared d
join regimes r on r.dataset_id = d.dataset_id
union all
select dataset_id, regime, probe, depth, label_fraction, seed, condition, eval_dataset_id,
       false as declared
from inferred;

comment on view grid_declared is 'One row per (dataset, regime, probe, depth, label fraction, seed, condition, eval dataset) run key that every encoder''s cell on the dataset must hold to count as complete: the grid declared at ingest (tables dataset_grid and shift_pairs), or, for a dataset with runs but no declared grid, the keys its runs have. docs/METHODS.md §3.';
comment on column grid_declared.dataset_id is 'Dataset the probes are fitted on (the grid''s owner). docs/METHODS.md §3.';
comment on column grid_declared.regime is 'Encoder regime the key applies to: frozen, or an adapted variant such as lora-s0 (one copy of the grid per regime with runs on the dataset). docs/METHODS.md §3.';
comment on column grid_declared.probe is 'Probe estimator the run uses: logreg (primary), mlp or knn. docs/METHODS.md §3.';
comment on column grid_declared.depth is 'Relative encoder depth of the features: 0.25, 0.5, 0.75 or 1.0 (last block). docs/METHODS.md §3.';
comment on column grid_declared.label_fraction is 'Share of the training split the probe is fitted on, 0.01 to 1.0. docs/METHODS.md §3.';
comment on column grid_declared.seed is 'Seed of the label-fraction subset family (0-4 in the protocol). docs/METHODS.md §3.';
comment on column grid_declared.condition is 'Evaluation condition: clean, <perturbation>-s<severity 1..3>, calib (clean calibration split) or shift (a shift target''s clean test split). docs/METHODS.md §3.';
comment on column grid_declared.eval_dataset_id is 'Dataset the run evaluates on: the dataset itself, or the shift target for condition shift. docs/METHODS.md §3.';
comment on column grid_declared.declared is 'True when the key comes from the grid declared at ingest; false when inferred from the runs of a dataset that has no declared grid. docs/METHODS.md §3.';
