-- One row per (frozen panel, population): AUROC ranking (aggregate discrimination) vs CRS
-- ranking of crs_encoder, via the crs_rank_agreement macro (tau-b, Spearman, reversals, ...).
-- population 'panel' = the panel's members (fixed once frozen, the paper's comparison);
-- population 'all' = every frozen-regime encoder scored against the panel (the leaderboard).
create or replace view rank_agreement as
with panel_scores as (
    select panel as grp, encoder_id, crs, auroc from crs_encoder where in_panel
),
all_scores as (
    select panel as grp, encoder_id, crs, auroc from crs_encoder where regime = 'frozen'
)
select grp as panel, 'panel' as population, * exclude (grp)
from crs_rank_agreement('panel_scores')
union all
select grp as panel, 'all' as population, * exclude (grp)
from crs_rank_agreement('all_scores');
