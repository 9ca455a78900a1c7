-- One row: AUROC ranking vs CRS ranking in cohort mode (crs_cohort_encoder, frozen regime), for
-- comparison with rank_agreement; same crs_rank_agreement macro.
create or replace view rank_agreement_cohort as
with cohort_scores as (
    select 'cohort' as grp, encoder_id, crs, auroc from crs_cohort_encoder where regime = 'frozen'
)
select * exclude (grp) from crs_rank_agreement('cohort_scores');
