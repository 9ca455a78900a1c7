-- One row per (frozen panel, adapted regime, metric): does the frozen ranking survive adaptation
-- (SPEC 8)? The frozen ranking of the encoders that have an adapted variant vs the ranking of
-- those variants, both scored against the same frozen panel (crs_encoder), via the
-- crs_rank_agreement macro: kendall_tau, top3_overlap (Top-3), mean_abs_displacement (the mean
-- rank shift), spearman_rho, reversals. metric 'crs' ranks by CRS, 'auroc' by aggregate AUROC.
-- regime is each adapted regime ('lora-s0', ...) and, per regime family, the seed mean
-- ('lora' = exact_mean over lora-s<k>; NULL for an encoder unless every seed is scored).
create or replace view rank_agreement_regime as
with adapted_seed as (
    select panel, encoder_id, regime, crs, auroc
    from crs_encoder
    where regime <> 'frozen'
),
adapted_family as (
    select panel, encoder_id, regexp_replace(regime, '-s[0-9]+$', '') as regime,
           case when count(crs) = count(*) then exact_mean(crs)::double end as crs,
           case when count(auroc) = count(*) then exact_mean(auroc)::double end as auroc
    from adapted_seed
    where regexp_matches(regime, '-s[0-9]+$')
    group by all
),
adapted as (
    select * from adapted_seed
    union all
    select * from adapted_family
),
scores as (
    select {'panel': f.panel, 'regime': a.regime, 'metric': 'crs'} as grp, f.encoder_id,
           f.crs as crs, a.crs as auroc  -- the macro's two columns: frozen score, adapted score
    from crs_encoder f
    join adapted a on a.panel = f.panel and a.encoder_id = f.encoder_id
    where f.regime = 'frozen'
    union all
    select {'panel': f.panel, 'regime': a.regime, 'metric': 'auroc'} as grp, f.encoder_id,
           f.auroc as crs, a.auroc as auroc
    from crs_encoder f
    join adapted a on a.panel = f.panel and a.encoder_id = f.encoder_id
    where f.regime = 'frozen'
)
select grp.panel as panel, grp.regime as regime, grp.metric as metric, * exclude (grp)
from crs_rank_agreement('scores');
