-- One row: how the AUROC ranking and the CRS ranking agree in cohort mode (crs_cohort_encoder,
-- frozen regime), for comparison with rank_agreement; docs/METHODS.md §9.1 (Rank agreement) and
-- §8.6 (Cohort mode). Same fn_rank_agreement macro.
create or replace view rank_agreement_cohort as
with cohort_scores as (
    select 'cohort' as grp, encoder_id, crs, auroc from crs_cohort_encoder where regime = 'frozen'
)
select * exclude (grp) from fn_rank_agreement('cohort_scores');

comment on view rank_agreement_cohort is 'One row: agreement of the AUROC and CRS rankings of the frozen-regime encoders in cohort mode (crs_cohort_encoder). docs/METHODS.md §9.1, §8.6.';
comment on column rank_agreement_cohort.n is 'Number of encoders ranked (both scores non-NULL); count. docs/METHODS.md §9.1.';
comment on column rank_agreement_cohort.kendall_tau is 'Kendall tau-b between the two rankings, ties corrected (as scipy.stats.kendalltau); [-1, 1], 1 = identical order. docs/METHODS.md §9.1.';
comment on column rank_agreement_cohort.spearman_rho is 'Spearman rho: Pearson correlation of the average ranks; [-1, 1], 1 = identical order. docs/METHODS.md §9.1.';
comment on column rank_agreement_cohort.reversals is 'Discordant pairs: ordered one way by one score and the other way by the other; count out of pairs, 0 = no reversal. docs/METHODS.md §9.1.';
comment on column rank_agreement_cohort.pairs is 'Number of encoder pairs n(n-1)/2; count. docs/METHODS.md §9.1.';
comment on column rank_agreement_cohort.mean_abs_displacement is 'Mean over encoders of |rank by one score - rank by the other| (average ranks for ties); ranks, 0 = identical order. docs/METHODS.md §9.1.';
comment on column rank_agreement_cohort.top3_overlap is '|top-3 by one score and top-3 by the other| / min(3, n), ties at the cut broken by encoder_id; [0, 1], 1 = same top 3. docs/METHODS.md §9.1.';
comment on column rank_agreement_cohort.top5_overlap is '|top-5 by one score and top-5 by the other| / min(5, n), ties at the cut broken by encoder_id; [0, 1], 1 = same top 5. docs/METHODS.md §9.1.';
