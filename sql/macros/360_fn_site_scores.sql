-- Table macro fn_site_scores(cells) returns one row per (grp, encoder) of a site's cells: the
-- encoder's aggregate axes at that site and its CRS against the frozen panel's global anchors
-- of THIS warehouse (table reference_anchors), so every site is scored on one scale;
-- docs/METHODS.md §22.4.
--   cells  name of a relation shaped like site_cells plus grp (any key: a bundle, or a bundle and
--          a bootstrap replicate) and panel: (grp, panel, site, encoder_id, dataset_id, regime,
--          discrimination, calibration, label_efficiency, robustness, aulc, complete, pretrained).
-- The aggregate is fn_axes_aggregate (complete cells, never imputed) and the CRS fn_crs_scores,
-- the definitions every other score uses; the Pareto term counts the panel's members present at
-- the site. Returns (grp, panel, site, encoder_id, in_panel, n_datasets, the four axes,
-- dominance, ideal, worst, crs); crs is NULL where the panel has no global anchors here.
create or replace macro fn_site_scores(cells) as table
with site_cells_in as materialized (
    select * from query_table(cells) where regime = 'frozen'
),
site_keys as (
    select distinct grp, panel, site from site_cells_in
),
site_axes as materialized (
    select a.grp, 'global' as scope, a.encoder_id, m.encoder_id is not null as in_panel,
           a.discrimination, a.calibration, a.label_efficiency, a.robustness, a.n_datasets
    from fn_axes_aggregate('site_cells_in') a
    join site_keys k on k.grp = a.grp
    left join reference_panels m on m.panel = k.panel and m.encoder_id = a.encoder_id
),
site_anchors as (
    select k.grp, r.scope, r.axis, r.lo, r.hi
    from site_keys k
    join reference_anchors r on r.panel = k.panel and r.scope = 'global'
)
select a.grp, k.panel, k.site, a.encoder_id, a.in_panel, a.n_datasets, a.discrimination,
       a.calibration, a.label_efficiency, a.robustness, s.dominance, s.ideal, s.worst, s.crs
from site_axes a
join site_keys k on k.grp = a.grp
left join fn_crs_scores('site_axes', 'site_anchors') s
       on s.grp = a.grp and s.scope = a.scope and s.encoder_id = a.encoder_id;

comment on macro table fn_site_scores is 'Table macro fn_site_scores(cells): per (grp, encoder) of imported site cells, the aggregate axes (fn_axes_aggregate) and the CRS (fn_crs_scores) against this warehouse''s frozen global anchors of the named panel, so every site is scored on one scale. docs/METHODS.md §22.4.';
