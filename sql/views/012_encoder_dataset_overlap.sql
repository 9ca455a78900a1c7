-- One row per (encoder, dataset): was the encoder pretrained on this dataset's data?
-- docs/METHODS.md §20 (Pretraining overlap). Declared from the encoder's registry entry
-- (encoder_pretraining) against what the dataset is (datasets.source), and measured where a hash
-- list was matched against its images (dataset_overlap).
-- Unknown is a value of its own, never read as "no overlap": declared is NULL when the encoder's
-- pretraining data or the dataset's source is unknown. status: 'measured' (a measured share > 0),
-- else 'declared' (declared true), else 'none' (declared false, or measured 0), else 'unknown'.
-- overlap marks the cells the leaderboard marks and `--exclude-overlap` leaves out (fn_crs_encoder).
create or replace view encoder_dataset_overlap as
with encoder_ids as (
    select encoder_id from encoders
    union
    select encoder_id from dataset_overlap
),
declared as (
    select e.encoder_id, d.dataset_id, d.source as dataset_source,
           min(p.source) as pretraining_source,
           case
               when d.source is null or not coalesce(bool_or(p.declared), false) then null
               else coalesce(bool_or(p.dataset = d.source), false)
           end as declared
    from encoder_ids e
    cross join datasets d
    left join encoder_pretraining p on p.encoder_id = e.encoder_id
    group by e.encoder_id, d.dataset_id, d.source
),
measured as (
    select encoder_id, dataset_id, sum(n_found) / sum(n_images) as measured_share
    from dataset_overlap
    group by encoder_id, dataset_id
)
select c.encoder_id, c.dataset_id, c.dataset_source, c.declared, c.pretraining_source, m.measured_share,
       case
           when m.measured_share > 0 then 'measured'
           when c.declared then 'declared'
           when c.declared = false or m.measured_share = 0 then 'none'
           else 'unknown'
       end as status,
       coalesce(m.measured_share > 0 or c.declared, false) as overlap
from declared c
left join measured m using (encoder_id, dataset_id);

comment on view encoder_dataset_overlap is 'One row per (encoder, dataset): whether the encoder was pretrained on the dataset''s data, declared (registry entry vs datasets.source) and measured (a hash list, crsbench overlap); unknown is never read as none. docs/METHODS.md §20.';
comment on column encoder_dataset_overlap.encoder_id is 'Encoder id (registry name); every encoder of table encoders or with a measured overlap. docs/METHODS.md §2.';
comment on column encoder_dataset_overlap.dataset_id is 'Dataset id, the name given at ingest. docs/METHODS.md §1.';
comment on column encoder_dataset_overlap.dataset_source is 'What the dataset is (datasets.source: the adapter''s dataset name or --source); NULL when unknown. docs/METHODS.md §20.';
comment on column encoder_dataset_overlap.declared is 'True when the encoder declares pretraining on dataset_source, false when it declares its pretraining data and that is not among it, NULL when either side is unknown. docs/METHODS.md §20.';
comment on column encoder_dataset_overlap.pretraining_source is 'Where the encoder''s declaration is made (a model card''s URL, a paper); NULL when nobody has said. docs/METHODS.md §20.';
comment on column encoder_dataset_overlap.measured_share is 'Share of the dataset''s images (all splits) whose SHA-256 is in the hash list measured for this encoder; [0, 1]; NULL when not measured (per split: table dataset_overlap). docs/METHODS.md §20.';
comment on column encoder_dataset_overlap.status is 'measured (measured share > 0), declared (declared true), none (declared false or measured 0) or unknown. docs/METHODS.md §20.';
comment on column encoder_dataset_overlap.overlap is 'True when status is measured or declared: the leaderboard marks the cell and leaderboard --exclude-overlap leaves it out of the encoder''s rank. docs/METHODS.md §20.';
