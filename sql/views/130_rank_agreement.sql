-- One row per (frozen panel, population): how the AUROC ranking (aggregate discrimination) and the
-- CRS ranking of crs_encoder agree; docs/METHODS.md §9.1 (Rank agreement).
-- Via the fn_rank_agreement macro (tau-b, Spearman, reversals, ...). population 'panel' = the
-- panel's members (fixed once frozen, the paper's comparison); population 'all' = every
-- frozen-regime encoder scored against the panel with full coverage (the ranked leaderboard; a
-- partial-coverage encoder's aggregate is over fewer datasets and takes no part).
-- crs_encoder is evaluated once (scores) for both populations.
create or replace view rank_agreement as
with scores as materialized (
    select panel, encoder_id, regime, in_panel, coverage, crs, auroc from crs_encoder
),
panel_scores as (
    select panel as grp, encoder_id, crs, auroc from scores where in_panel
),
all_scores as (
    select panel as grp, encoder_id, crs, auroc from scores
    where regime = 'frozen' and coverage = 'full'
)
select grp as panel, 'panel' as population, * exclude (grp)
from fn_rank_agreement('panel_scores')
union all
select grp as panel, 'all' as population, * exclude (grp)
from fn_rank_agreement('all_scores');

comment on view rank_agreement is 'One row per (frozen panel, population): agreement of the AUROC ranking and the CRS ranking of crs_encoder (tau-b, Spearman, reversals, displacement, top-k overlap). docs/METHODS.md §9.1.';
comment on column rank_agreement.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column rank_agreement.population is 'Encoders ranked: ''panel'' = the panel''s members; ''all'' = every frozen-regime encoder scored against the panel with full coverage (crs_encoder.coverage). docs/METHODS.md §9.1.';
comment on column rank_agreement.n is 'Number of encoders ranked (both scores non-NULL); count. docs/METHODS.md §9.1.';
comment on column rank_agreement.kendall_tau is 'Kendall tau-b between the two rankings, ties corrected (as scipy.stats.kendalltau); [-1, 1], 1 = identical order. docs/METHODS.md §9.1.';
comment on column rank_agreement.spearman_rho is 'Spearman rho: Pearson correlation of the average ranks; [-1, 1], 1 = identical order. docs/METHODS.md §9.1.';
comment on column rank_agreement.reversals is 'Discordant pairs: ordered one way by one score and the other way by the other; count out of pairs, 0 = no reversal. docs/METHODS.md §9.1.';
comment on column rank_agreement.pairs is 'Number of encoder pairs n(n-1)/2; count. docs/METHODS.md §9.1.';
comment on column rank_agreement.mean_abs_displacement is 'Mean over encoders of |rank by one score - rank by the other| (average ranks for ties); ranks, 0 = identical order. docs/METHODS.md §9.1.';
comment on column rank_agreement.top3_overlap is '|top-3 by one score and top-3 by the other| / min(3, n), ties at the cut broken by encoder_id; [0, 1], 1 = same top 3. docs/METHODS.md §9.1.';
comment on column rank_agreement.top5_overlap is '|top-5 by one score and top-5 by the other| / min(5, n), ties at the cut broken by encoder_id; [0, 1], 1 = same top 5. docs/METHODS.md §9.1.';
