-- One row per run key a declared zero-shot cell (image-text encoder, dataset; table zeroshot_grid,
-- written by `crsbench zeroshot`) must hold: probe 'zeroshot' at depth 1.0, label fraction 0 and
-- seed 0, on every condition of the dataset's declared grid (dataset_grid; 'shift' stands for each
-- declared shift target), regime frozen, with the prompt set the cell declares. Zero-shot keys are
-- per encoder (only image-text encoders have them), so they live here rather than in grid_declared;
-- runs_grid, grid_missing and cell_completeness read both. No seed mean, axis or CRS reads
-- probe 'zeroshot' (the CRS reads logreg). docs/METHODS.md §3.5.
create or replace view grid_declared_zeroshot as
with conditions as (
    select distinct dataset_id, condition from dataset_grid
)
select z.encoder_id, z.dataset_id, 'frozen' as regime, 'zeroshot' as probe, 1.0::double as depth,
       0.0::double as label_fraction, 0 as seed, c.condition, z.dataset_id as eval_dataset_id,
       z.prompt_hash
from zeroshot_grid z
join conditions c on c.dataset_id = z.dataset_id and c.condition <> 'shift'
union all
select z.encoder_id, z.dataset_id, 'frozen' as regime, 'zeroshot' as probe, 1.0::double as depth,
       0.0::double as label_fraction, 0 as seed, c.condition, s.target_id as eval_dataset_id,
       z.prompt_hash
from zeroshot_grid z
join conditions c on c.dataset_id = z.dataset_id and c.condition = 'shift'
join shift_pairs s on s.source_id = z.dataset_id;

comment on view grid_declared_zeroshot is 'One row per run key a declared zero-shot cell (table zeroshot_grid: image-text encoder x dataset) must hold: probe zeroshot, depth 1.0, label fraction 0, seed 0, regime frozen, on every condition of the dataset''s declared grid, with the declared prompt set. docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.encoder_id is 'Image-text encoder of the zero-shot cell (zeroshot_grid.encoder_id). docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.dataset_id is 'Dataset the zero-shot cell classifies (its test split, conditions, calib and shift targets). docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.regime is 'Always frozen: zero-shot reads the frozen encoder''s features. docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.probe is 'Always zeroshot. docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.depth is 'Always 1.0 (the full-depth projected image embedding; BioViL''s stored depth proj). docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.label_fraction is 'Always 0: zero-shot uses no training label. docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.seed is 'Always 0: zero-shot is deterministic. docs/METHODS.md §3.5.';
comment on column grid_declared_zeroshot.condition is 'Evaluation condition: clean, <perturbation>-s<severity 1..3>, calib or shift, as the dataset''s declared grid has them. docs/METHODS.md §3.';
comment on column grid_declared_zeroshot.eval_dataset_id is 'Dataset the run evaluates on: the dataset itself, or the shift target for condition shift. docs/METHODS.md §3.';
comment on column grid_declared_zeroshot.prompt_hash is 'The declared prompt set (zeroshot_grid.prompt_hash); only runs of fits with this set (zeroshot_prompts) fill the key. docs/METHODS.md §3.5.';
