-- Table macro fn_candidates(scoped, cohort := false) returns one row per (panel, scope, encoder,
-- regime) of `scoped`: the raw axes of every encoder as a candidate scored against a reference;
-- docs/METHODS.md §8.1 (panels) and §8.6 (cohort mode).
-- `scoped` names a relation shaped like axes_scoped (scope, encoder_id, regime, discrimination,
-- calibration, label_efficiency, robustness, n_datasets, pretrained).
--   cohort = false: every encoder is a candidate against every frozen panel; `in_panel` marks the
--                   panel's members (regime 'frozen').
--   cohort = true:  one pseudo-panel 'cohort' whose members are every frozen-regime encoder
--                   present now but those with an unconfirmed degenerate feature set
--                   (fn_flagged_sets) (the comparison mode whose scores move when encoders are added);
--                   'cohort' is a reserved panel name, so it never meets a frozen panel.
-- `candidate` is the key handed to fn_crs_scores: the encoder id for the frozen regime and
-- '<encoder>@<regime>' for adapted variants (the feature store's encoder key), so a variant is
-- scored against the reference, its own frozen base included.
-- Returns (panel, scope, encoder_id, regime, candidate, in_panel, discrimination, calibration,
-- label_efficiency, robustness, n_datasets, pretrained).
create or replace macro fn_candidates(scoped, cohort := false) as table
with reference as (
    select panel from panels where not cohort
    union all
    select 'cohort' as panel where cohort
)
select p.panel, s.scope, s.encoder_id, s.regime,
       fn_encoder_key(s.encoder_id, s.regime)
           as candidate,
       (s.regime = 'frozen' and ((cohort and f.encoder_id is null) or m.encoder_id is not null))
           as in_panel,
       s.discrimination, s.calibration, s.label_efficiency, s.robustness, s.n_datasets,
       s.pretrained
from reference p
cross join query_table(scoped) s
left join reference_panels m on m.panel = p.panel and m.encoder_id = s.encoder_id
left join (select distinct encoder_id from fn_flagged_sets() where regime = 'frozen') f
    on f.encoder_id = s.encoder_id;

comment on macro table fn_candidates is 'Table macro fn_candidates(scoped, cohort := false): every (panel, scope, encoder, regime) of scoped as a candidate, with candidate key (encoder or encoder@regime) and in_panel; cohort := true uses one pseudo-panel ''cohort'' of every frozen-regime encoder without an unconfirmed degenerate feature set. docs/METHODS.md §8.1, §8.6.';
