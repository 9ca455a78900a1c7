-- One row per (frozen panel, site, encoder) of the imported results bundles: the encoder's AUROC,
-- four aggregate axes and CRS at that site, scored against THIS warehouse's frozen anchors of the
-- panel (fn_site_scores), with its ranks among the encoders the site holds. A site's latest bundle
-- for the panel (by export time) stands for it. Empty until `crsbench results import`.
-- docs/METHODS.md §22.4.
create or replace view site_scores as
with cells as (
    select l.bundle_digest as grp, l.panel, l.site, c.encoder_id, c.dataset_id, c.regime,
           c.discrimination, c.calibration, c.label_efficiency, c.robustness, c.aulc, c.complete,
           c.pretrained
    from site_cells c
    join site_bundles_latest l using (bundle_digest)
)
select panel, site, grp as bundle_digest, encoder_id, in_panel, n_datasets,
       discrimination as auroc, discrimination, calibration, label_efficiency, robustness, crs,
       rank() over (partition by panel, site order by crs desc nulls last) as crs_rank,
       rank() over (partition by panel, site order by discrimination desc) as auroc_rank
from fn_site_scores('cells');

comment on view site_scores is 'One row per (frozen panel, site, encoder) of imported results bundles: AUROC, the four aggregate axes and the CRS at the site against this warehouse''s frozen anchors of the panel, with ranks within the site; a site''s latest bundle per panel stands for it. docs/METHODS.md §22.4.';
comment on column site_scores.panel is 'Frozen panel the bundle was exported for; its anchors here score every site. docs/METHODS.md §22.4.';
comment on column site_scores.site is 'Site that exported the bundle (its --site name). docs/METHODS.md §22.';
comment on column site_scores.bundle_digest is 'SHA-256 of the bundle''s manifest (site_bundles.bundle_digest). docs/METHODS.md §22.1.';
comment on column site_scores.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column site_scores.in_panel is 'True when the encoder is a member of the panel. docs/METHODS.md §8.1.';
comment on column site_scores.n_datasets is 'Complete cells at the site behind the aggregate; count. docs/METHODS.md §7.';
comment on column site_scores.auroc is 'Aggregate AUROC at the site (= discrimination); [0, 1]. docs/METHODS.md §7.';
comment on column site_scores.discrimination is 'Aggregate discrimination at the site; [0, 1]. docs/METHODS.md §7.';
comment on column site_scores.calibration is 'Aggregate calibration (1 - ECE) at the site; [0, 1]. docs/METHODS.md §7.';
comment on column site_scores.label_efficiency is 'Aggregate label efficiency at the site. docs/METHODS.md §7.';
comment on column site_scores.robustness is 'Aggregate robustness at the site. docs/METHODS.md §7.';
comment on column site_scores.crs is 'CRS at the site against this warehouse''s frozen global anchors of the panel; [0, 1], higher is better. docs/METHODS.md §22.4.';
comment on column site_scores.crs_rank is 'Rank of the CRS among the site''s encoders for the panel; 1 = best, ties share. docs/METHODS.md §22.4.';
comment on column site_scores.auroc_rank is 'Rank of the AUROC among the site''s encoders for the panel; 1 = best, ties share. docs/METHODS.md §22.4.';
