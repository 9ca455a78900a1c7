-- One row per cell (encoder, dataset, regime) with any run: how many runs of its declared grid it
-- holds (runs_grid.in_grid) and lacks (grid_missing); `complete` only when it lacks none. Extra
-- runs outside the grid are counted apart (n_extra) and never make a cell incomplete.
-- docs/METHODS.md §3 (the probe grid).
create or replace view cell_completeness as
with cells as (
    select encoder_id, dataset_id, regime, count(*) filter (where in_grid) as n_runs,
           count(*) filter (where not in_grid) as n_extra
    from (select distinct encoder_id, dataset_id, regime, probe, depth, label_fraction, seed,
                 condition, eval_dataset_id, in_grid from runs_grid)
    group by all
),
gaps as (
    select encoder_id, dataset_id, regime, count(*) as n_missing from grid_missing group by all
)
select c.encoder_id, c.dataset_id, c.regime, c.n_runs, c.n_extra, coalesce(g.n_missing, 0) as n_missing,
       coalesce(g.n_missing, 0) = 0 as complete
from cells c
left join gaps g using (encoder_id, dataset_id, regime);

comment on view cell_completeness is 'One row per cell (encoder, dataset, regime) with any run: runs of its grid held and lacking; complete only when none is lacking. docs/METHODS.md §3.';
comment on column cell_completeness.encoder_id is 'Encoder whose probe runs on the dataset form the cell (registry name). docs/METHODS.md §3.';
comment on column cell_completeness.dataset_id is 'Dataset the cell''s probes are fitted on; its declared grid (grid_declared) says which runs the cell needs. docs/METHODS.md §3.';
comment on column cell_completeness.regime is 'frozen, or the adaptation regime. docs/METHODS.md §3.';
comment on column cell_completeness.n_runs is 'Distinct keys of the declared grid the cell has a run for; count. docs/METHODS.md §3.';
comment on column cell_completeness.n_extra is 'Distinct run keys the cell holds outside its declared grid (extras: stored, never scored, never making the cell incomplete); count. docs/METHODS.md §3.';
comment on column cell_completeness.n_missing is 'Grid keys the cell has no run for (rows of grid_missing). docs/METHODS.md §3.';
comment on column cell_completeness.complete is 'True when every fraction x seed x condition x probe x depth of the grid has a run. docs/METHODS.md §3.';
