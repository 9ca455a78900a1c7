-- One row per probe batch or feature set: the software and machine that computed it. kind is
-- 'probe batch' (id = the batch's part name) or 'feature set' (id = dataset/encoder/regime).
-- Versions are those of the installed distributions; cpu_capability is the instruction set torch
-- dispatched to (torch.backends.cpu.get_cpu_capability()); threads is torch's thread count while
-- computing; device is where it ran. Rows recorded before provenance existed show nulls.
create or replace view provenance as
with recorded as (
    select 'probe batch' as kind, batch as id, created_at, provenance::json as p
    from batches
    union all
    select 'feature set' as kind, dataset_id || '/' || encoder_id || '/' || regime as id,
           cast(updated_at as timestamptz) as created_at, provenance::json as p
    from feature_sets
)
select kind, id, created_at,
       p ->> 'crsbench_version' as crsbench_version,
       p ->> 'git_commit' as git_commit,
       p ->> 'torch' as torch,
       p ->> 'timm' as timm,
       p ->> 'transformers' as transformers,
       p ->> 'duckdb' as duckdb,
       p ->> 'numpy' as numpy,
       p ->> 'scikit_learn' as scikit_learn,
       p ->> 'cpu_capability' as cpu_capability,
       cast(p ->> 'threads' as integer) as threads,
       p ->> 'device' as device
from recorded;
