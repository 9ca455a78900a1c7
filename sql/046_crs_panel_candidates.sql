-- Table macro crs_panel_candidates(scoped): one row per (frozen panel, scope, encoder, regime)
-- of `scoped` (a relation shaped like axes_scoped): every encoder is a candidate against every
-- frozen panel. `candidate` is the key handed to crs_scores: the encoder id for the frozen regime
-- and '<encoder>@<regime>' for adapted variants (the feature store's encoder key), so a variant is
-- scored against the frozen panel, its own frozen base included. `in_panel` marks the panel's
-- members (regime 'frozen'). Returns (panel, scope, encoder_id, regime, candidate, in_panel,
-- discrimination, calibration, label_efficiency, robustness, n_datasets, pretrained).
create or replace macro crs_panel_candidates(scoped) as table
select p.panel, s.scope, s.encoder_id, s.regime,
       encoder_key(s.encoder_id, s.regime)
           as candidate,
       (s.regime = 'frozen' and m.encoder_id is not null) as in_panel,
       s.discrimination, s.calibration, s.label_efficiency, s.robustness, s.n_datasets,
       s.pretrained
from panels p
cross join query_table(scoped) s
left join reference_panels m on m.panel = p.panel and m.encoder_id = s.encoder_id;
