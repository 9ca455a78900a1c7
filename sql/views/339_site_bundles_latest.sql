-- One row per (site, frozen panel) of the imported results bundles: the bundle that stands for the
-- site, its latest export (ties broken by digest). Views site_scores and site_replicate_scores read
-- the site's rows from it, so a site that exports again replaces its earlier results there.
-- docs/METHODS.md §22.4.
create or replace view site_bundles_latest as
select bundle_digest, site, panel
from (
    select bundle_digest, site, panel,
           row_number() over (partition by site, panel order by exported_at desc, bundle_digest) as k
    from site_bundles
)
where k = 1;

comment on view site_bundles_latest is 'One row per (site, frozen panel) of imported results bundles: the latest export, which stands for the site in site_scores and site_replicate_scores. docs/METHODS.md §22.4.';
comment on column site_bundles_latest.bundle_digest is 'SHA-256 of the manifest of the bundle that stands for the site (site_bundles.bundle_digest). docs/METHODS.md §22.1.';
comment on column site_bundles_latest.site is 'Site that exported the bundle (its --site name). docs/METHODS.md §22.';
comment on column site_bundles_latest.panel is 'Frozen panel the bundle was exported for. docs/METHODS.md §22.4.';
