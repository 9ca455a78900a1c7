-- Table macro fn_crs_encoder(cells, overlap := 'encoder_dataset_overlap', exclude_overlap := false)
-- returns the rows of view crs_encoder: one per (frozen panel, encoder, regime), the aggregate CRS
-- and AUROC with their ranks against the panel; docs/METHODS.md §8.4, §8.5. The view is
-- fn_crs_encoder('axes_cell'); see its file for the rules. `cells` names a relation shaped like
-- axes_cell, `overlap` one shaped like encoder_dataset_overlap (relation names, not tables, so
-- that the views they name may be created after this macro).
-- exclude_overlap = true leaves out the cells of view encoder_dataset_overlap marked overlap (the
-- encoder was pretrained on the dataset, declared or measured; docs/METHODS.md §20), as if they
-- were incomplete: the encoder's aggregate is over its other cells and the partial-coverage rules
-- apply (no aggregate rank; crs_rank_partial is the place it would take). A read-time re-ranking:
-- the panel's frozen anchors and members are read, never changed.
create or replace macro fn_crs_encoder(cells, overlap := 'encoder_dataset_overlap', exclude_overlap := false) as table
with left_out as (
    select encoder_id, dataset_id from query_table(overlap) o where exclude_overlap and o.overlap
),
scored_cells as materialized (
    select 'all' as grp, a.* replace (a.complete and o.encoder_id is null as complete)
    from query_table(cells) a
    left join left_out o on o.encoder_id = a.encoder_id and o.dataset_id = a.dataset_id
),
aggregates as (
    select 'global' as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
           robustness, n_datasets, pretrained
    from fn_axes_aggregate('scored_cells')
),
scored as materialized (
    select *, discrimination as auroc from fn_crs_scored('aggregates')
),
ranks as (
    select * from fn_panel_ranks('scored')
),
panel_datasets as (
    select panel, list(distinct scope order by scope) as datasets
    from reference_anchors
    where scope <> 'global'
    group by panel
),
covered as (
    select encoder_id, regime, list(dataset_id order by dataset_id) as datasets
    from scored_cells
    where complete
    group by encoder_id, regime
),
coverage as (
    select s.panel, s.candidate, len(p.datasets) as n_panel_datasets,
           [d for d in p.datasets if not list_contains(coalesce(c.datasets, []::varchar[]), d)]
               as missing_datasets
    from scored s
    join panel_datasets p on p.panel = s.panel
    left join covered c on c.encoder_id = s.encoder_id and c.regime = s.regime
),
flagged as (
    select distinct encoder_id, regime from fn_flagged_sets()
)
select s.panel, s.encoder_id, s.regime, s.dominance, s.ideal, s.worst, s.crs, s.auroc,
       case when len(v.missing_datasets) = 0 and f.encoder_id is null then r.crs_rank end as crs_rank,
       case when len(v.missing_datasets) = 0 and f.encoder_id is null then r.auroc_rank end as auroc_rank,
       s.in_panel, s.n_datasets, s.pretrained,
       case when len(v.missing_datasets) = 0 then 'full' else 'partial' end as coverage,
       v.n_panel_datasets, v.missing_datasets,
       case when len(v.missing_datasets) > 0 and f.encoder_id is null then r.crs_rank end as crs_rank_partial,
       case when len(v.missing_datasets) > 0 and f.encoder_id is null then r.auroc_rank end
           as auroc_rank_partial,
       f.encoder_id is not null as flagged
from scored s
join ranks r on r.panel = s.panel and r.candidate = s.candidate
join coverage v on v.panel = s.panel and v.candidate = s.candidate
left join flagged f on f.encoder_id = s.encoder_id and f.regime = s.regime;

comment on macro table fn_crs_encoder is 'Table macro fn_crs_encoder(cells, overlap := ''encoder_dataset_overlap'', exclude_overlap := false): the rows of view crs_encoder over the cells of relation cells; with exclude_overlap, the cells marked overlap in encoder_dataset_overlap are left out as incomplete (partial-coverage rules), at read time. docs/METHODS.md §8.4, §8.5, §20.';
