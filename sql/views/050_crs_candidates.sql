-- One row per (frozen panel, scope, encoder, regime): the raw axes every encoder is scored with
-- against every frozen panel, scope = dataset id or 'global'; docs/METHODS.md §8.1 (Reference
-- panel and anchors).
-- fn_candidates over axes_scoped. Feeds axes_normalised and pareto_pairs; crs_cell / crs_encoder
-- call the macros on their own scope only, which plans and runs faster.
create or replace view crs_candidates as
select * from fn_candidates('axes_scoped');

comment on view crs_candidates is 'One row per (frozen panel, scope, encoder, regime): every encoder''s raw axes as a candidate against every frozen panel. docs/METHODS.md §8.1.';
comment on column crs_candidates.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column crs_candidates.scope is 'Scope of the anchors and Pareto term: a dataset id (per-dataset) or ''global'' (aggregate axes). docs/METHODS.md §8.4.';
comment on column crs_candidates.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column crs_candidates.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column crs_candidates.candidate is 'Key the CRS macros score: the encoder id for the frozen regime, ''<encoder>@<regime>'' for an adapted variant. docs/METHODS.md §8.1.';
comment on column crs_candidates.in_panel is 'True when this row is a member of the reference (frozen regime and in the panel; in cohort mode every frozen-regime encoder). docs/METHODS.md §8.1.';
comment on column crs_candidates.discrimination is 'Discrimination axis D = clean full-label AUROC (seed mean) of the logreg probe at depth 1.0; [0, 1], higher is better. docs/METHODS.md §6 Raw (not normalised).';
comment on column crs_candidates.calibration is 'Calibration axis C = 1 - clean full-label ECE (seed mean); [0, 1], higher is better. docs/METHODS.md §6 Raw (not normalised).';
comment on column crs_candidates.label_efficiency is 'Label-efficiency axis LE = mean over label fractions f < 1 of AUROC_clean(f) / AUROC_clean(100 %); a ratio, usually in [0, 1] (may exceed 1), higher is better. docs/METHODS.md §6 Raw (not normalised).';
comment on column crs_candidates.robustness is 'Robustness axis R = 1 - (0.5 mean + 0.5 max) of the AUROC drops max(0, clean - condition) over the perturbed conditions and shift targets; at most 1, higher is better. docs/METHODS.md §6 Raw (not normalised).';
comment on column crs_candidates.n_datasets is 'Number of complete cells (datasets) behind the row; count (1 for a per-dataset row). docs/METHODS.md §7.';
comment on column crs_candidates.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
