-- One row per (panel, resample, scope, axis): the anchor range of the axis (hi - lo over the
-- panel members, reference_anchors) beside its bootstrap noise (the median over the members of
-- their 95 % interval width in bootstrap_intervals). An axis's intervals depend on the encoder's
-- runs and the draws, not on the panel, so a member's rows from any bootstrap count (a cohort
-- bootstrap run before freezing informs the freeze). amplifies_noise when range < 2 x noise:
-- min-max normalisation over that panel then turns noise into CRS gaps.
-- docs/METHODS.md §8.1 (anchors) and §10 (Uncertainty).
create or replace view panel_anchor_noise as
with ranges as (
    select panel, scope, axis, hi - lo as anchor_range from reference_anchors
),
widths as (
    select m.panel, b.resample, coalesce(b.dataset_id, 'global') as scope, b.metric as axis,
           median(b.hi - b.lo) as noise, count(distinct b.encoder_id) as n_members
    from reference_panels m
    join bootstrap_intervals b on b.encoder_id = m.encoder_id
    where b.metric in ('discrimination', 'calibration', 'label_efficiency', 'robustness')
    group by m.panel, b.resample, coalesce(b.dataset_id, 'global'), b.metric
)
select r.panel, w.resample, r.scope, r.axis, r.anchor_range, w.noise, w.n_members,
       r.anchor_range / nullif(w.noise, 0) as range_over_noise,
       r.anchor_range < 2 * w.noise as amplifies_noise
from ranges r
join widths w on w.panel = r.panel and w.scope = r.scope and w.axis = r.axis;

comment on view panel_anchor_noise is 'One row per (panel, resample, scope, axis): anchor range beside the bootstrap noise of the axis; amplifies_noise when range < 2 x noise. docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.panel is 'Frozen reference panel whose anchors are checked against the bootstrap noise (table panels). docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.resample is 'The bootstrap resampling the noise comes from. docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.scope is 'A dataset, or global for the aggregate anchors. docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.axis is 'discrimination, calibration, label_efficiency or robustness. docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.anchor_range is 'hi - lo of the frozen anchors (max - min over the members). docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.noise is 'Median over the members of the 95 % bootstrap interval width of the axis. docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.n_members is 'Members with bootstrap intervals for the axis. docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.range_over_noise is 'Ratio anchor_range / noise: how many noise widths the anchor range spans; below 2 the min-max normalisation amplifies noise. docs/METHODS.md §8.1 and §10.';
comment on column panel_anchor_noise.amplifies_noise is 'True when anchor_range < 2 x noise: min-max normalisation amplifies noise on this axis. docs/METHODS.md §8.1 and §10.';
