-- One row per (scope, encoder): the pre-screen's ranking of the encoders, per dataset (scope = the
-- dataset) and over every screened dataset (scope = 'all'); docs/METHODS.md §21.1.
-- From screen_scores' ranked-by estimator (crsbench screen --rank-by). Per dataset, an encoder is
-- taken at its best depth (the highest score; ties: the deeper) and ranked by that score (rank =
-- 1 + encoders strictly higher). Overall, encoders are ranked by their mean per-dataset rank (lower
-- first) over the datasets they were screened on; only encoders screened on every such dataset are
-- ranked (the others keep a NULL rank: a mean over other datasets would not compare). `kept`: rank <= keep.
create or replace view screen_ranking as
with best as (
    select dataset_id, encoder_id, depth, estimator, score, keep
    from screen_scores
    where ranked_by
    qualify row_number() over (partition by dataset_id, encoder_id order by score desc, depth desc) = 1
),
per_dataset as (
    select dataset_id as scope, encoder_id, depth as best_depth, estimator as rank_by, score,
           rank() over (partition by dataset_id order by score desc) as screen_rank, keep
    from best
),
coverage as (
    select encoder_id, count(*) as n_datasets, avg(screen_rank) as mean_rank,
           any_value(rank_by) as rank_by, max(keep) as keep
    from per_dataset
    group by encoder_id
),
covered as (
    select *, n_datasets = (select max(n_datasets) from coverage) as on_every_dataset
    from coverage
),
overall as (
    select 'all' as scope, encoder_id, cast(null as double) as best_depth, rank_by,
           cast(null as double) as score, mean_rank, n_datasets,
           case when on_every_dataset then rank() over (partition by on_every_dataset order by mean_rank) end
               as screen_rank,
           keep
    from covered
)
select scope, encoder_id, best_depth, rank_by, score, cast(screen_rank as double) as mean_rank,
       1::bigint as n_datasets, screen_rank::bigint as screen_rank, screen_rank <= keep as kept, keep::bigint as keep
from per_dataset
union all
select scope, encoder_id, best_depth, rank_by, score, mean_rank, n_datasets::bigint, screen_rank::bigint,
       coalesce(screen_rank <= keep, false), keep::bigint
from overall;

comment on view screen_ranking is 'One row per (scope, encoder): the pre-screen''s rank of the encoder on one dataset (scope = the dataset) or over every screened dataset (scope = all), by the ranked-by estimator at the encoder''s best depth. docs/METHODS.md §21.1.';
comment on column screen_ranking.scope is 'A dataset id, or ''all'' for the ranking over every screened dataset. docs/METHODS.md §21.1.';
comment on column screen_ranking.encoder_id is 'Encoder key: the encoder id, or id@regime for an adapted variant. docs/METHODS.md §2.';
comment on column screen_ranking.best_depth is 'Depth at which the ranked-by estimator scores the encoder highest on the dataset (ties: the deeper); NULL for scope all. docs/METHODS.md §21.1.';
comment on column screen_ranking.rank_by is 'The estimator the ranking follows (crsbench screen --rank-by). docs/METHODS.md §21.2.';
comment on column screen_ranking.score is 'The ranked-by estimator''s score at the best depth; higher is better; NULL for scope all. docs/METHODS.md §21.2.';
comment on column screen_ranking.mean_rank is 'Scope all: the mean of the encoder''s per-dataset ranks (lower is better); per dataset: its rank there. docs/METHODS.md §21.1.';
comment on column screen_ranking.n_datasets is 'Datasets the encoder was screened on; count (1 per dataset row). docs/METHODS.md §21.1.';
comment on column screen_ranking.screen_rank is 'Pre-screen rank: 1 + encoders with a strictly better score (per dataset) or mean rank (scope all); NULL in scope all for an encoder not screened on every screened dataset. docs/METHODS.md §21.1.';
comment on column screen_ranking.kept is 'True when screen_rank <= keep: the pre-screen keeps the encoder for the full grid. docs/METHODS.md §21.1.';
comment on column screen_ranking.keep is 'The keep-top-k asked of crsbench screen (--keep). docs/METHODS.md §21.1.';
