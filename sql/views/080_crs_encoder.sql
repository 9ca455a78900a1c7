-- One row per (frozen panel, encoder, regime): the aggregate CRS (aggregate axes, 'global'
-- anchors, Pareto term over the whole panel minus the encoder) next to the aggregate AUROC, with
-- ranks against the panel; docs/METHODS.md §8.4 (aggregate CRS) and §8.5 (ranks).
-- fn_crs_scored over axes_encoder, ranks from fn_panel_ranks, so they too stay fixed when
-- encoders are added. The leaderboard: order by crs desc.
-- Coverage: the panel's datasets are the scopes it was frozen with (reference_anchors); an
-- encoder whose complete cells (axes_cell) miss one of them is 'partial': still scored, but its
-- aggregate crs_rank and auroc_rank are NULL (its mean is over fewer datasets than the members');
-- the place it would take is in crs_rank_partial / auroc_rank_partial, and missing_datasets
-- names what it lacks.
-- axes_cell is read once (cells): the aggregates are axes_encoder's own fn_axes_aggregate call
-- over it, so the cells and their grid checks are evaluated once per query, not once per use.
-- Degenerate features: an encoder with an unconfirmed degenerate feature set (fn_flagged_sets) is
-- 'flagged' and gets no rank at all, partial or not, until the set is confirmed (§2.7).
-- The rows are fn_crs_encoder('axes_cell')'s (sql/macros/350_fn_crs_encoder.sql), which holds the query, so
-- that leaderboard --exclude-overlap re-ranks by the same definition.
create or replace view crs_encoder as
select * from fn_crs_encoder('axes_cell');

comment on view crs_encoder is 'One row per (frozen panel, encoder, regime): the aggregate Clinical Reliability Score and aggregate AUROC with their ranks against the panel; the leaderboard (order by crs desc). docs/METHODS.md §8.4, §8.5.';
comment on column crs_encoder.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column crs_encoder.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column crs_encoder.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column crs_encoder.dominance is 'Pareto term: share of the other reference members in this scope whose normalised axes this encoder dominates (>= on all four, > on one); [0, 1], higher is better; NULL when no other member. docs/METHODS.md §8.3.';
comment on column crs_encoder.ideal is 'Ideal-point term 1 - sqrt(sum over the four axes a of w_a (1 - x~_a)^2), where x~_a = clip((x_a - lo_a) / (hi_a - lo_a), 0, 1) is the encoder''s aggregate axis a normalised with the panel''s global anchors lo_a (members'' minimum) and hi_a (maximum), and w_a = 0.25 is the axis weight; [0, 1], 1 = the ideal point, higher is better. docs/METHODS.md §8.3.';
comment on column crs_encoder.worst is 'Worst-axis term: the smallest of the four normalised axes; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_encoder.crs is 'Clinical Reliability Score = 0.60 dominance + 0.25 ideal + 0.15 worst; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_encoder.auroc is 'Aggregate AUROC = the aggregate discrimination axis (exact mean of the complete cells'' clean full-label AUROC); [0, 1], higher is better. docs/METHODS.md §7.';
comment on column crs_encoder.crs_rank is 'CRS rank against the reference: 1 + the number of other members with a higher CRS (1 = best; ''min'' rank for members, the place a non-member would take); NULL when crs is NULL, coverage is partial or the row is flagged. docs/METHODS.md §8.5.';
comment on column crs_encoder.auroc_rank is 'AUROC rank against the reference: 1 + the number of other members with a higher aggregate AUROC (1 = best); NULL when auroc is NULL, coverage is partial or the row is flagged. docs/METHODS.md §8.5.';
comment on column crs_encoder.in_panel is 'True when this row is a member of the reference (frozen regime and in the panel; in cohort mode every frozen-regime encoder). docs/METHODS.md §8.1.';
comment on column crs_encoder.n_datasets is 'Number of complete cells behind the aggregate axes; count. docs/METHODS.md §7.';
comment on column crs_encoder.coverage is 'full when the encoder has a complete cell on every dataset the panel was frozen with, else partial: a partial encoder''s aggregate is a mean over fewer datasets than the members'', so it gets no aggregate rank (crs_rank, auroc_rank NULL; see crs_rank_partial). docs/METHODS.md §8.5.';
comment on column crs_encoder.n_panel_datasets is 'Number of datasets the panel was frozen with (its per-dataset anchor scopes); compare with n_datasets. docs/METHODS.md §8.1.';
comment on column crs_encoder.missing_datasets is 'Panel datasets on which this encoder has no complete cell (empty for full coverage); probe them to rank it. docs/METHODS.md §8.5.';
comment on column crs_encoder.crs_rank_partial is 'For a partial-coverage encoder only: the CRS rank it would take among the panel members (1 + members with a higher CRS), shown by leaderboard --allow-partial with a marker; NULL for full coverage. docs/METHODS.md §8.5.';
comment on column crs_encoder.auroc_rank_partial is 'For a partial-coverage encoder only: the aggregate-AUROC rank it would take among the panel members; NULL for full coverage. docs/METHODS.md §8.5.';
comment on column crs_encoder.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
comment on column crs_encoder.flagged is 'True when the encoder has a degenerate feature set (constant features, or a numerical rank far below the width) that no user has confirmed: it gets no rank (crs_rank, auroc_rank and their _partial NULL) until crsbench feature-sets --confirm accepts the set. docs/METHODS.md §2.7.';
