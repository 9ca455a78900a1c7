-- One row per (frozen panel, site, bootstrap replicate, encoder) of the imported results bundles:
-- the encoder's AUROC and CRS at the site under one of the site's bootstrap draws (the shipped
-- per-cell axis replicates), scored against THIS warehouse's frozen anchors (fn_site_scores).
-- Replicate 0 is every seed and image once. The sites analysis forms its rank-correlation
-- intervals from these. docs/METHODS.md §22.4.
create or replace view site_replicate_scores as
with cells as (
    select l.bundle_digest || ':' || r.replicate::varchar as grp, l.panel, l.site, r.encoder_id,
           r.dataset_id, 'frozen' as regime, r.discrimination, r.calibration, r.label_efficiency,
           r.robustness, null::double as aulc, true as complete, null::boolean as pretrained
    from site_replicates r
    join site_bundles_latest l using (bundle_digest)
)
select panel, site, split_part(grp, ':', 1) as bundle_digest, split_part(grp, ':', 2)::integer as replicate,
       encoder_id, discrimination as auroc, crs
from fn_site_scores('cells');

comment on view site_replicate_scores is 'One row per (frozen panel, site, bootstrap replicate, encoder) of imported results bundles: AUROC and CRS at the site under one shipped bootstrap draw, against this warehouse''s frozen anchors; replicate 0 = the point estimate. docs/METHODS.md §22.4.';
comment on column site_replicate_scores.panel is 'Frozen panel the bundle was exported for. docs/METHODS.md §22.4.';
comment on column site_replicate_scores.site is 'Site that exported the bundle. docs/METHODS.md §22.';
comment on column site_replicate_scores.bundle_digest is 'SHA-256 of the bundle''s manifest. docs/METHODS.md §22.1.';
comment on column site_replicate_scores.replicate is 'Bootstrap replicate at the site; 0 = every seed and image once. docs/METHODS.md §10.';
comment on column site_replicate_scores.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column site_replicate_scores.auroc is 'Aggregate AUROC at the site in this replicate; [0, 1]. docs/METHODS.md §22.4.';
comment on column site_replicate_scores.crs is 'CRS at the site in this replicate against this warehouse''s frozen global anchors; [0, 1]. docs/METHODS.md §22.4.';
