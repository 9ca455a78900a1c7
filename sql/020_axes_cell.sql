-- One row per (encoder, dataset, regime): the four reliability axes of SPEC 5.1 (and the AULC),
-- from the crs_axes_cell macro over the seed means of metrics_seed; see that macro for the
-- formulas. The CRS views use regime 'frozen' for the panel. An axis with no runs yet is NULL;
-- `complete` says all four are observed AND the cell holds every run of its grid
-- (cell_completeness: every fraction x seed x condition x probe), and only complete cells reach
-- axes_encoder and CRS (nothing is imputed, and no mean is taken over a partial seed set).
create or replace view axes_cell as
with seed_means as (
    select 'all' as grp, encoder_id, dataset_id, eval_dataset_id, regime, probe, depth,
           label_fraction, condition, auroc_mean, ece_mean, pretrained
    from metrics_seed
)
select a.encoder_id, a.dataset_id, a.regime, a.discrimination, a.calibration,
       a.label_efficiency, a.robustness, a.aulc, a.n_perturbed, a.n_shift,
       a.complete and coalesce(g.complete, false) as complete,
       a.pretrained
from crs_axes_cell('seed_means') a
left join cell_completeness g
       on g.encoder_id = a.encoder_id and g.dataset_id = a.dataset_id and g.regime = a.regime;
