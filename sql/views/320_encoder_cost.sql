-- One row per (encoder, regime, cost device, cost dtype): what the encoder costs to run (docs/METHODS.md §2.8), from the
-- cost measured once when each of its feature sets was created (crsbench.features.cost; table
-- feature_sets). Only complete sets count. The model-only fields (params, FLOPs, widths) are the
-- same for every set of an encoder; images/s is the median over its sets, peak memory the largest,
-- stored bytes per image the mean. Sets extracted before cost was measured form the row whose
-- cost_device is NULL: every cost field NULL, read "not measured", never zero.
-- A budget question filters here, or on crs_cost (joined to the CRS leaderboard).
create or replace view encoder_cost as
select
    encoder_id,
    regime,
    cost_device,
    cost_dtype,
    max(params) as params,
    max(flops_per_image) as flops_per_image,
    max(flops_per_image) / 1e9 as gflops_per_image,
    median(images_per_s) as images_per_s,
    max(peak_memory_bytes) as peak_memory_bytes,
    any_value(peak_memory_note) as peak_memory_note,
    fn_exact_mean(stored_bytes_per_image) as stored_bytes_per_image,
    any_value(widths) as widths,
    count(*) as n_sets
from feature_sets
where complete
group by encoder_id, regime, cost_device, cost_dtype;

comment on view encoder_cost is 'One row per (encoder, regime, cost device, cost dtype): parameters, FLOPs per image, measured images/s, peak memory, embedding widths and stored bytes per image, measured at extraction; every cost field NULL ("not measured", never zero) for sets extracted before cost was measured. crsbench.features.cost. docs/METHODS.md §2.8.';
comment on column encoder_cost.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column encoder_cost.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column encoder_cost.cost_device is 'Device the cost was measured on (cpu, cuda:0); NULL for the sets extracted before cost was measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.cost_dtype is 'Compute dtype the cost was measured in (float32, bfloat16, float16); NULL when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.params is 'Parameters of the model as extracted; count. NULL when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.flops_per_image is 'FLOPs of one forward of one image at the entry''s input size, counted by torch''s FlopCounterMode (a multiply-add is 2 FLOPs; biases, norms and activations not counted); FLOPs. NULL when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.gflops_per_image is 'flops_per_image / 1e9; GFLOPs. NULL when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.images_per_s is 'Median over the encoder''s sets of the images per second of the model''s forward alone (a batch of up to 8 zero images, median of 3 timed forwards after a warm-up; no decode, perturbation or IO) on cost_device in cost_dtype; higher is cheaper. NULL when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.peak_memory_bytes is 'Largest over the sets of the peak CUDA memory allocated during the timed forwards, weights included; bytes. NULL on a CPU (torch keeps no peak of host allocations) and when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.peak_memory_note is 'Why peak_memory_bytes is NULL on a measured row (''not measured on cpu''); NULL when it was measured or nothing was. docs/METHODS.md §2.8.';
comment on column encoder_cost.stored_bytes_per_image is 'Mean over the sets of the bytes of every feature array as stored (compressed, all depths and conditions) per image; bytes. NULL when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.widths is 'JSON: embedding width per depth key (d025, d050, d075, d100). NULL when not measured. docs/METHODS.md §2.8.';
comment on column encoder_cost.n_sets is 'Complete feature sets behind the row; count. docs/METHODS.md §2.8.';
