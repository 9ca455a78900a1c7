-- One row per probe batch or feature set: the software and machine that computed it;
-- docs/METHODS.md §4.1 (Provenance). kind is
-- 'probe batch' (id = the batch's part name) or 'feature set' (id = dataset/encoder/regime).
-- Versions are those of the installed distributions; cpu_capability is the instruction set torch
-- dispatched to (torch.backends.cpu.get_cpu_capability()); threads is torch's thread count while
-- computing; numerics is 'canonical' when the numerics modes of docs/METHODS.md §4.3 were in
-- force; device is where it ran. Rows recorded before provenance existed show nulls.
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
       p ->> 'numerics' as numerics,
       cast(p ->> 'threads' as integer) as threads,
       p ->> 'device' as device
from recorded;

comment on view provenance is 'One row per probe batch or feature set: the crsbench version and commit, library versions, CPU instruction set, threads and device that computed it. Recorded at write time; nulls for rows written before provenance existed. docs/METHODS.md §4.1.';
comment on column provenance.kind is '''probe batch'' (one appended batch of run records) or ''feature set'' (one extracted dataset x encoder x regime). docs/METHODS.md §4.1.';
comment on column provenance.id is 'The batch''s part name (part-<write time ns>-<random>.parquet), or dataset_id/encoder_id/regime of the feature set. docs/METHODS.md §4.1.';
comment on column provenance.created_at is 'When the batch was written or the feature set catalogued; UTC timestamp. docs/METHODS.md §4.1.';
comment on column provenance.crsbench_version is 'crsbench package version that computed it. docs/METHODS.md §4.1.';
comment on column provenance.git_commit is 'Git commit (40 hex digits) of the crsbench checkout that computed it; null outside a git checkout. docs/METHODS.md §4.1.';
comment on column provenance.torch is 'Installed torch version. docs/METHODS.md §4.1.';
comment on column provenance.timm is 'Installed timm version. docs/METHODS.md §4.1.';
comment on column provenance.transformers is 'Installed transformers version. docs/METHODS.md §4.1.';
comment on column provenance.duckdb is 'Installed duckdb (Python package) version. docs/METHODS.md §4.1.';
comment on column provenance.numpy is 'Installed numpy version. docs/METHODS.md §4.1.';
comment on column provenance.scikit_learn is 'Installed scikit-learn version. docs/METHODS.md §4.1.';
comment on column provenance.cpu_capability is 'CPU instruction set torch dispatched to (torch.backends.cpu.get_cpu_capability(), e.g. AVX2, AVX512, DEFAULT); results can differ in the last bits between sets. docs/METHODS.md §4.1.';
comment on column provenance.numerics is '''canonical'' when the canonical numerics modes were in force (torch, oneDNN and MKL capped at AVX2: the same bits on every AVX2 CPU), ''native'' under CRSBENCH_NATIVE_NUMERICS=1 or when torch was loaded before crsbench; null before this was recorded. docs/METHODS.md §4.3.';
comment on column provenance.threads is 'torch intra-op thread count while computing; count >= 1. docs/METHODS.md §4.1.';
comment on column provenance.device is 'Where it ran: cpu, cuda, cuda:0, mps (probes run on cpu). docs/METHODS.md §4.1.';
