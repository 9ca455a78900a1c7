-- One row per (encoder, dataset, regime): the four reliability axes of SPEC 5.1 (and the AULC),
-- from the crs_axes_cell macro over the seed means of metrics_seed; see that macro for the
-- formulas. The CRS views use regime 'frozen' for the panel. An axis with no runs yet is NULL;
-- `complete` says all four are observed, and only complete cells reach axes_encoder and CRS
-- (nothing is imputed).
create or replace view axes_cell as
with seed_means as (
    select 'all' as grp, encoder_id, dataset_id, eval_dataset_id, regime, probe, depth,
           label_fraction, condition, auroc_mean, ece_mean, pretrained
    from metrics_seed
)
select * exclude (grp) from crs_axes_cell('seed_means');
