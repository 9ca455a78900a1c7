-- One row per (frozen panel, scope, encoder, regime): the raw axes every encoder is scored with
-- against every frozen panel, scope = dataset id or 'global' (crs_panel_candidates over
-- axes_scoped). Feeds axes_normalised and pareto_pairs; crs_cell / crs_encoder call the macro on
-- their own scope only, which plans and runs faster.
create or replace view crs_candidates as
select * from crs_panel_candidates('axes_scoped');
