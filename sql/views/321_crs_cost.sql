-- One row per (frozen panel, encoder, regime, cost device, cost dtype): the CRS leaderboard (docs/METHODS.md §8.4)
-- (crs_encoder) beside what the encoder costs (encoder_cost's measured rows). An encoder whose
-- sets were all extracted before cost was measured keeps its row with every cost field NULL
-- ("not measured"). The budget question: filter on gflops_per_image or images_per_s, order by crs desc.
create or replace view crs_cost as
select
    c.panel,
    c.encoder_id,
    c.regime,
    c.crs,
    c.crs_rank,
    c.coverage,
    c.in_panel,
    k.cost_device,
    k.cost_dtype,
    k.params,
    k.flops_per_image,
    k.gflops_per_image,
    k.images_per_s,
    k.peak_memory_bytes,
    k.peak_memory_note,
    k.stored_bytes_per_image
from crs_encoder as c
left join (select * from encoder_cost where cost_device is not null) as k
    on k.encoder_id = c.encoder_id and k.regime = c.regime;

comment on view crs_cost is 'One row per (frozen panel, encoder, regime, cost device, cost dtype): the aggregate CRS with the encoder''s measured cost; cost fields NULL ("not measured") for an encoder whose sets predate cost measurement. The view a budget question filters on. docs/ANALYST_GUIDE.md. docs/METHODS.md §2.8.';
comment on column crs_cost.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column crs_cost.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column crs_cost.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column crs_cost.crs is 'Clinical Reliability Score (crs_encoder.crs); [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_cost.crs_rank is 'CRS rank against the reference (crs_encoder.crs_rank); 1 = best; NULL for partial coverage or a flagged encoder. docs/METHODS.md §8.5.';
comment on column crs_cost.coverage is 'full or partial (crs_encoder.coverage). docs/METHODS.md §8.5.';
comment on column crs_cost.in_panel is 'True when the encoder is a member of the panel (crs_encoder.in_panel). docs/METHODS.md §8.1.';
comment on column crs_cost.cost_device is 'Device the cost was measured on (cpu, cuda:0); NULL when not measured. docs/METHODS.md §2.8.';
comment on column crs_cost.cost_dtype is 'Compute dtype the cost was measured in; NULL when not measured. docs/METHODS.md §2.8.';
comment on column crs_cost.params is 'Parameters of the model as extracted; count. NULL when not measured. docs/METHODS.md §2.8.';
comment on column crs_cost.flops_per_image is 'FLOPs per image at the entry''s input size (torch FlopCounterMode, a multiply-add is 2); FLOPs. NULL when not measured. docs/METHODS.md §2.8.';
comment on column crs_cost.gflops_per_image is 'flops_per_image / 1e9; GFLOPs. NULL when not measured. docs/METHODS.md §2.8.';
comment on column crs_cost.images_per_s is 'Measured images per second of the model''s forward alone on cost_device in cost_dtype (encoder_cost.images_per_s); higher is cheaper. NULL when not measured. docs/METHODS.md §2.8.';
comment on column crs_cost.peak_memory_bytes is 'Peak CUDA memory of the timed forwards; bytes. NULL on a CPU and when not measured. docs/METHODS.md §2.8.';
comment on column crs_cost.peak_memory_note is 'Why peak_memory_bytes is NULL on a measured row (''not measured on cpu''); NULL otherwise. docs/METHODS.md §2.8.';
comment on column crs_cost.stored_bytes_per_image is 'Stored feature bytes per image (compressed, all depths and conditions); bytes. NULL when not measured. docs/METHODS.md §2.8.';
