-- Every run record of `runs`, with in_grid: true when its key belongs to its dataset's grid
-- (grid_declared). Runs with in_grid false are extras (e.g. `crsbench probe -p knn --depth 0.5`
-- on one encoder): stored and queryable here, but no seed mean, axis, CRS, rank or bootstrap reads
-- them, and they never make a cell incomplete.
-- A zero-shot run is in the grid when its cell is a declared zero-shot cell
-- (grid_declared_zeroshot) and its fit used the cell's declared prompt set (zeroshot_prompts).
-- docs/METHODS.md §3 (the probe grid), §3.5 (zero-shot).
create or replace view runs_grid as
select r.*,
       exists (
           select 1 from grid_declared g
           where g.dataset_id = r.dataset_id and g.regime = r.regime and g.probe = r.probe
             and g.depth = r.depth and g.label_fraction = r.label_fraction and g.seed = r.seed
             and g.condition = r.condition and g.eval_dataset_id = r.eval_dataset_id
       )
       or (r.probe = 'zeroshot' and exists (
           select 1 from grid_declared_zeroshot g
           join zeroshot_prompts p on p.prompt_hash = g.prompt_hash
           where p.fit_id = r.fit_id and g.encoder_id = r.encoder_id and g.dataset_id = r.dataset_id
             and g.regime = r.regime and g.depth = r.depth and g.label_fraction = r.label_fraction
             and g.seed = r.seed and g.condition = r.condition and g.eval_dataset_id = r.eval_dataset_id
       )) as in_grid
from runs r;

comment on view runs_grid is 'One row per run record (every column of runs) plus in_grid: whether the run belongs to its dataset''s declared grid (grid_declared). Scores read only runs with in_grid true; the others are extras, kept for inspection. docs/METHODS.md §3.';
comment on column runs_grid.in_grid is 'True when the run''s (probe, depth, label fraction, seed, condition, eval dataset) is in the declared grid of its dataset and regime; false marks an extra run that enters no score and never makes a cell incomplete. docs/METHODS.md §3.';
