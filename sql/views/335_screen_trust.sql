-- One row per (dataset, estimator, depth, target, panel): how far the pre-screen's ranking agrees with
-- the full grid's where both exist; docs/METHODS.md §21.5 (Measured trust).
-- target 'auroc': the grid's full-label logreg AUROC on the clean test split at the same depth (seed
-- means; panel NULL) as screen_replicates holds it: replicate 0 (every test image once, equal to
-- metrics_seed's auroc_mean) for the point, replicates 1.. (one image-level draw each) for the 95 %
-- intervals; the estimator's scores, computed on the train split, stay fixed. target 'crs': the
-- per-dataset CRS of each frozen panel (crs_cell, depth 1.0; frozen-regime encoders, whose key is their
-- id) for the point, and for the intervals the same panel's per-dataset CRS in replicates 1.. of its
-- last `crsbench analyze bootstrap` (view dataset_crs_replicates). Replicates keep only the encoders
-- of the point comparison, and one counts towards an interval only when it holds every one of them
-- (so an encoder outside the bootstrapped panel leaves the CRS intervals NULL). Over the encoders with both a score and a grid value:
-- * tau: Kendall tau-b, (C - D) / sqrt(pairs untied in score * pairs untied in grid), as scipy.stats.kendalltau;
-- * weighted_tau: the same with each pair weighted 1/(r_a + 1) + 1/(r_b + 1), r the 0-based position in
--   the grid's ranking (ties by encoder_id), so disagreements at the top count most: equal to
--   scipy.stats.weightedtau(score, grid, rank=r) (hyperbolic weigher, additive);
-- * top_k_recall: |the pre-screen's top k and the grid's top k| / min(k, n), ties by encoder_id, k = keep;
-- * regret: the best grid value minus the best among the pre-screen's top k (the AUROC or CRS lost
--   by keeping only those); 0 when the grid's best is kept.
create or replace view screen_trust as
with est as (
    select dataset_id, encoder_id, depth, estimator, score, keep
    from screen_scores
),
targets as (
    select 'auroc' as target, cast(null as varchar) as panel, dataset_id, depth, replicate, encoder_id,
           auroc as value
    from screen_replicates
    where auroc is not null
    union all
    select 'crs', panel, dataset_id, 1.0, 0, encoder_id, crs
    from crs_cell
    where crs is not null and regime = 'frozen'  -- a frozen encoder's key is its id
    union all
    select 'crs', panel, dataset_id, 1.0, replicate, encoder_id, crs
    from dataset_crs_replicates
    where replicate > 0 and crs is not null
),
compared as (
    -- replicates keep only the encoders of the point comparison (replicate 0)
    select t.* from targets t
    where t.replicate = 0 or exists (
        select 1 from targets p
        where p.replicate = 0 and p.target = t.target and p.panel is not distinct from t.panel
          and p.dataset_id = t.dataset_id and p.depth = t.depth and p.encoder_id = t.encoder_id)
),
ranked as (
    select t.target, t.panel, e.dataset_id, e.estimator, e.depth, t.replicate, e.encoder_id, e.keep,
           e.score as x, t.value as y,
           row_number() over w_grid - 1 as grid_pos,
           row_number() over w_est as est_pos
    from est e
    join compared t on t.dataset_id = e.dataset_id and t.encoder_id = e.encoder_id and t.depth = e.depth
    window w_grid as (partition by t.target, t.panel, e.dataset_id, e.estimator, e.depth, t.replicate
                      order by t.value desc, e.encoder_id),
           w_est as (partition by t.target, t.panel, e.dataset_id, e.estimator, e.depth, t.replicate
                     order by e.score desc, e.encoder_id)
),
pairs as (
    select a.target, a.panel, a.dataset_id, a.estimator, a.depth, a.replicate,
           sign(a.x - b.x) * sign(a.y - b.y) as s,
           (a.x <> b.x)::int as dx,
           (a.y <> b.y)::int as dy,
           1.0 / (a.grid_pos + 1) + 1.0 / (b.grid_pos + 1) as w
    from ranked a
    join ranked b on a.target = b.target and a.panel is not distinct from b.panel and a.dataset_id = b.dataset_id
         and a.estimator = b.estimator and a.depth = b.depth and a.replicate = b.replicate
         and a.encoder_id < b.encoder_id
),
taus as (
    select target, panel, dataset_id, estimator, depth, replicate,
           sum(s) / nullif(sqrt(sum(dx) * sum(dy)), 0) as tau,
           fn_exact_sum(w * s) / nullif(sqrt(fn_exact_sum(w * dx) * fn_exact_sum(w * dy)), 0) as weighted_tau
    from pairs
    group by all
),
tops as (
    select target, panel, dataset_id, estimator, depth, count(*) as n_encoders, max(keep) as keep,
           count(*) filter (where est_pos <= keep and grid_pos < keep) / least(max(keep), count(*)) as top_k_recall,
           max(y) - max(y) filter (where est_pos <= keep) as regret
    from ranked
    where replicate = 0
    group by all
),
coverage as (
    select target, panel, dataset_id, estimator, depth, replicate, count(*) as n
    from ranked
    where replicate > 0
    group by all
),
spread as (
    select t.target, t.panel, t.dataset_id, t.estimator, t.depth, count(*) as n_replicates,
           quantile_cont(t.tau, 0.025) as tau_lo, quantile_cont(t.tau, 0.975) as tau_hi,
           quantile_cont(t.weighted_tau, 0.025) as weighted_tau_lo,
           quantile_cont(t.weighted_tau, 0.975) as weighted_tau_hi
    from taus t
    join coverage c on c.target = t.target and c.panel is not distinct from t.panel
         and c.dataset_id = t.dataset_id and c.estimator = t.estimator and c.depth = t.depth
         and c.replicate = t.replicate
    join tops o on o.target = t.target and o.panel is not distinct from t.panel and o.dataset_id = t.dataset_id
         and o.estimator = t.estimator and o.depth = t.depth
    where c.n = o.n_encoders  -- every encoder of the point comparison is in the replicate
    group by all
)
select o.dataset_id, o.estimator, o.depth, o.target, o.panel, o.n_encoders,
       t.tau, s.tau_lo, s.tau_hi, t.weighted_tau, s.weighted_tau_lo, s.weighted_tau_hi,
       o.keep, o.top_k_recall, o.regret, coalesce(s.n_replicates, 0) as n_replicates
from tops o
left join taus t on t.target = o.target and t.panel is not distinct from o.panel and t.dataset_id = o.dataset_id
     and t.estimator = o.estimator and t.depth = o.depth and t.replicate = 0
left join spread s on s.target = o.target and s.panel is not distinct from o.panel and s.dataset_id = o.dataset_id
     and s.estimator = o.estimator and s.depth = o.depth;

comment on view screen_trust is 'One row per (dataset, estimator, depth, target, panel): how far the pre-screen''s ranking agrees with the full grid''s AUROC (target auroc, with image-bootstrap intervals) or a frozen panel''s per-dataset CRS (target crs, depth 1.0, with intervals from the panel''s bootstrap replicates): Kendall tau, weighted tau, top-k recall and regret. docs/METHODS.md §21.5.';
comment on column screen_trust.dataset_id is 'Dataset whose train features the estimator scored and whose test split the grid was evaluated on. docs/METHODS.md §21.5.';
comment on column screen_trust.estimator is 'Transferability estimator whose ranking is compared (screen_scores.estimator). docs/METHODS.md §21.2.';
comment on column screen_trust.depth is 'Depth of both the estimator''s features and the grid''s probe (1.0 only for target crs). docs/METHODS.md §21.5.';
comment on column screen_trust.target is 'The full grid''s answer compared with: auroc (logreg, all labels, clean test, seed mean) or crs (crs_cell). docs/METHODS.md §21.5.';
comment on column screen_trust.panel is 'Frozen panel of the CRS compared with (target crs); NULL for target auroc. docs/METHODS.md §8.1.';
comment on column screen_trust.n_encoders is 'Encoders with both an estimator score and a grid value; count. docs/METHODS.md §21.5.';
comment on column screen_trust.tau is 'Kendall tau-b between the estimator''s scores and the grid''s values, ties corrected; [-1, 1], 1 = the same order; NULL with fewer than 2 untied encoders. docs/METHODS.md §21.5.';
comment on column screen_trust.tau_lo is '2.5th percentile of tau over the bootstrap replicates of the grid''s value (target auroc: screen_replicates; target crs: dataset_crs_replicates, replicates holding every compared encoder); NULL without such replicates. docs/METHODS.md §21.5.';
comment on column screen_trust.tau_hi is '97.5th percentile of tau over the same replicates. docs/METHODS.md §21.5.';
comment on column screen_trust.weighted_tau is 'Weighted Kendall tau: pairs weighted 1/(r_a + 1) + 1/(r_b + 1) by their 0-based positions r in the grid''s ranking, so the top counts most (scipy.stats.weightedtau with rank = those positions); [-1, 1]. docs/METHODS.md §21.5.';
comment on column screen_trust.weighted_tau_lo is '2.5th percentile of weighted_tau over the same replicates as tau_lo; NULL without them. docs/METHODS.md §21.5.';
comment on column screen_trust.weighted_tau_hi is '97.5th percentile of weighted_tau over the same replicates. docs/METHODS.md §21.5.';
comment on column screen_trust.keep is 'k of the keep-top-k (crsbench screen --keep). docs/METHODS.md §21.5.';
comment on column screen_trust.top_k_recall is '|the pre-screen''s top k and the grid''s top k| / min(k, n_encoders), ties by encoder_id; [0, 1], 1 = the same top k. docs/METHODS.md §21.5.';
comment on column screen_trust.regret is 'The best grid value minus the best among the pre-screen''s top k: the AUROC or CRS lost by keeping only those; >= 0, 0 = the grid''s best is kept. docs/METHODS.md §21.5.';
comment on column screen_trust.n_replicates is 'Bootstrap replicates behind the intervals; count (0: none; for target crs, run crsbench analyze bootstrap on a panel holding every compared encoder). docs/METHODS.md §21.5.';
