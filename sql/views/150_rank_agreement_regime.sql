-- One row per (frozen panel, adapted regime, metric): does the frozen ranking survive
-- adaptation? docs/METHODS.md §9.2 (Regime agreement) and §13 (Adaptation regime).
-- The frozen ranking of the encoders that have an adapted variant vs the ranking of those
-- variants, both scored against the same frozen panel (crs_encoder), via the fn_rank_agreement
-- macro: kendall_tau, top3_overlap (Top-3), mean_abs_displacement (the mean rank shift),
-- spearman_rho, reversals. metric 'crs' ranks by CRS, 'auroc' by aggregate AUROC. regime is each
-- adapted regime ('lora-s0', ...) and, per regime family, the seed mean ('lora' = fn_exact_mean
-- over lora-s<k>; NULL for an encoder unless every seed is scored).
create or replace view rank_agreement_regime as
with adapted_seed as (
    select panel, encoder_id, regime, crs, auroc
    from crs_encoder
    where regime <> 'frozen'
),
adapted_family as (
    select panel, encoder_id, regexp_replace(regime, '-s[0-9]+$', '') as regime,
           case when count(crs) = count(*) then fn_exact_mean(crs)::double end as crs,
           case when count(auroc) = count(*) then fn_exact_mean(auroc)::double end as auroc
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
from fn_rank_agreement('scores');

comment on view rank_agreement_regime is 'One row per (frozen panel, adapted regime, metric): agreement between the frozen ranking of the encoders that have an adapted variant and the ranking of those variants, both scored against the frozen panel. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column rank_agreement_regime.regime is 'Adapted regime compared with frozen: one seed (''lora-s0'', ...) or the seed mean of a family (''lora''). docs/METHODS.md §9.2, §13.';
comment on column rank_agreement_regime.metric is 'Score ranked: ''crs'' (aggregate CRS) or ''auroc'' (aggregate AUROC). docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.n is 'Number of encoders ranked (both scores non-NULL); count. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.kendall_tau is 'Kendall tau-b between the two rankings, ties corrected (as scipy.stats.kendalltau); [-1, 1], 1 = identical order. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.spearman_rho is 'Spearman rho: Pearson correlation of the average ranks; [-1, 1], 1 = identical order. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.reversals is 'Discordant pairs: ordered one way by the frozen score and the adapted score way by the adapted score; count out of pairs, 0 = no reversal. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.pairs is 'Number of encoder pairs n(n-1)/2; count. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.mean_abs_displacement is 'Mean over encoders of |rank by the frozen score - rank by the adapted score| (average ranks for ties); ranks, 0 = identical order. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.top3_overlap is '|top-3 by the frozen score and top-3 by the adapted score| / min(3, n), ties at the cut broken by encoder_id; [0, 1], 1 = same top 3. docs/METHODS.md §9.2.';
comment on column rank_agreement_regime.top5_overlap is '|top-5 by the frozen score and top-5 by the adapted score| / min(5, n), ties at the cut broken by encoder_id; [0, 1], 1 = same top 5. docs/METHODS.md §9.2.';
