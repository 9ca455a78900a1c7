-- Table macro fn_rank_agreement(scores) returns one row per grp: how the CRS ranking agrees with
-- the AUROC ranking; docs/METHODS.md §9.1 (Rank agreement).
-- `scores` names a relation (grp, encoder_id, crs, auroc); rows with a NULL crs or auroc are left
-- out. Both rankings are descending (rank 1 = best).
--   n                     encoders ranked
--   kendall_tau           Kendall tau-b with ties: (nc - nd) / sqrt((n0 - t_crs)(n0 - t_auroc)),
--                         n0 = n(n-1)/2, t_x = pairs tied on x (as scipy.stats.kendalltau)
--   spearman_rho          Pearson correlation of the average ranks (as scipy.stats.spearmanr)
--   reversals, pairs      discordant pairs (ordered one way by CRS, the other by AUROC) of n(n-1)/2
--   mean_abs_displacement mean |rank_crs - rank_auroc| over encoders, average ranks for ties
--   top3/top5_overlap     |top-k by CRS  and  top-k by AUROC| / min(k, n); ties at the cut are
--                         broken by encoder_id so each top-k holds exactly min(k, n) encoders
create or replace macro fn_rank_agreement(scores) as table
with s as (
    select grp, encoder_id, crs, auroc
    from query_table(scores)
    where crs is not null and auroc is not null
),
ranked as (
    select grp, encoder_id,
           rank() over (partition by grp order by crs desc)
               + (count(*) over (partition by grp, crs) - 1) / 2.0 as crs_rank,
           rank() over (partition by grp order by auroc desc)
               + (count(*) over (partition by grp, auroc) - 1) / 2.0 as auroc_rank,
           row_number() over (partition by grp order by crs desc, encoder_id) as crs_pos,
           row_number() over (partition by grp order by auroc desc, encoder_id) as auroc_pos
    from s
),
per_group as (
    select grp, count(*) as n,
           fn_rank_correlation(crs_rank, auroc_rank) as spearman_rho,
           avg(abs(crs_rank - auroc_rank)) as mean_abs_displacement,
           count(*) filter (where crs_pos <= 3 and auroc_pos <= 3)::double / least(3, count(*))
               as top3_overlap,
           count(*) filter (where crs_pos <= 5 and auroc_pos <= 5)::double / least(5, count(*))
               as top5_overlap
    from ranked
    group by grp
),
pair_counts as (
    select a.grp,
           count(*) filter (where sign(a.crs - b.crs) * sign(a.auroc - b.auroc) > 0) as concordant,
           count(*) filter (where sign(a.crs - b.crs) * sign(a.auroc - b.auroc) < 0) as discordant,
           count(*) filter (where a.crs = b.crs) as tied_crs,
           count(*) filter (where a.auroc = b.auroc) as tied_auroc,
           count(*) as pairs
    from s a
    join s b on a.grp = b.grp and a.encoder_id < b.encoder_id
    group by a.grp
)
select g.grp, g.n,
       (p.concordant - p.discordant)
           / nullif(sqrt((p.pairs - p.tied_crs)::double * (p.pairs - p.tied_auroc)), 0) as kendall_tau,
       g.spearman_rho,
       coalesce(p.discordant, 0) as reversals,
       coalesce(p.pairs, 0) as pairs,
       g.mean_abs_displacement, g.top3_overlap, g.top5_overlap
from per_group g
left join pair_counts p on p.grp = g.grp;

comment on macro table fn_rank_agreement is 'Table macro fn_rank_agreement(scores): per grp, agreement of the CRS and AUROC rankings (descending): n, kendall_tau (tau-b), spearman_rho, reversals of pairs, mean_abs_displacement, top3_overlap, top5_overlap. docs/METHODS.md §9.1.';
