-- One row per encoder with frozen-regime runs or gaps: a digest of every run of its declared grid
-- (runs_grid.in_grid: run id, AUROC and ECE) and of every run its cells lack (grid_missing). A
-- stored result that read an encoder's runs records this digest; when it differs now, the runs
-- changed (added, deleted, recomputed, or the grid widened) and the stored result is stale.
-- Extra runs outside the grid do not enter it. docs/METHODS.md §10 (Uncertainty).
create or replace view encoder_run_digest as
with keys as (
    select encoder_id,
           'r:' || run_id || ':' || coalesce(auroc::varchar, '') || ':' || coalesce(ece::varchar, '') as k
    from runs_grid
    where in_grid and regime = 'frozen'
    union all
    select encoder_id,
           'm:' || dataset_id || ':' || probe || ':' || depth::varchar || ':' || label_fraction::varchar
           || ':' || seed::varchar || ':' || condition || ':' || eval_dataset_id as k
    from grid_missing
    where regime = 'frozen'
)
select encoder_id,
       count(*) filter (where k like 'r:%') as n_runs,
       count(*) filter (where k like 'm:%') as n_missing,
       md5(string_agg(k, ',' order by k)) as digest
from keys
group by encoder_id;

comment on view encoder_run_digest is 'One row per encoder: an MD5 digest of its frozen-regime runs in the declared grid (run id, AUROC, ECE) and of the runs its cells lack; a stored bootstrap or analysis records the digest of what it read and is stale once this differs. docs/METHODS.md §10.';
comment on column encoder_run_digest.encoder_id is 'Encoder whose runs the digest covers (registry name). docs/METHODS.md §2.';
comment on column encoder_run_digest.n_runs is 'Frozen-regime run records of the declared grid behind the digest; count. docs/METHODS.md §3.';
comment on column encoder_run_digest.n_missing is 'Runs of the declared grid the encoder''s frozen cells lack (rows of grid_missing); count. docs/METHODS.md §3.';
comment on column encoder_run_digest.digest is 'MD5 hex digest of the sorted run keys (r:<run_id>:<auroc>:<ece>) and missing keys (m:<dataset>:<probe>:...); equal digests = the same runs. docs/METHODS.md §10.';
