-- Table macro fn_flagged_sets() returns one row per (dataset, encoder, regime) whose feature set is
-- degenerate (constant features, or a numerical rank far below the width; checked at extraction)
-- and not confirmed by a user; docs/METHODS.md §2.7 (Degenerate feature sets).
-- Such an encoder's cells are flagged and it is left out of ranks (crs_encoder,
-- crs_cohort_encoder) and out of the cohort, until `crsbench feature-sets --confirm` accepts the set.
-- Returns (dataset_id, encoder_id, regime, degenerate).
create or replace macro fn_flagged_sets() as table
select dataset_id, encoder_id, regime, min(degenerate) as degenerate
from feature_sets
where degenerate is not null and degenerate_confirmed_at is null
group by dataset_id, encoder_id, regime;

comment on macro table fn_flagged_sets is 'Table macro fn_flagged_sets(): one row per (dataset, encoder, regime) whose feature set is degenerate and unconfirmed, with the reason; such encoders get no rank until confirmed. docs/METHODS.md §2.7.';
