-- One row per (regime, level, axis pair): Spearman rho (Pearson correlation of average ranks)
-- between two axes; docs/METHODS.md §9.3 (Axis correlations).
-- level 'encoder' correlates the aggregate axes of axes_encoder; level 'cell' the complete cells
-- of axes_cell. The axes are the four CRS axes plus aulc, so (label_efficiency, discrimination)
-- next to (aulc, discrimination) shows how relative retention and the area under the
-- label-efficiency curve each relate to full-label AUROC. Pairs use the units where both values
-- are present; n counts them.
create or replace view axis_correlations as
with units as (
    select regime, 'cell' as level, encoder_id || ' / ' || dataset_id as unit,
           discrimination, calibration, label_efficiency, robustness, aulc
    from axes_cell
    where complete
    union all
    select regime, 'encoder' as level, encoder_id as unit,
           discrimination, calibration, label_efficiency, robustness, aulc
    from axes_encoder
),
long as (
    unpivot units on discrimination, calibration, label_efficiency, robustness, aulc
    into name axis value value
),
axis_order as (
    select * from (values ('discrimination', 1), ('calibration', 2), ('label_efficiency', 3),
                          ('robustness', 4), ('aulc', 5)) t(axis, position)
),
pairs as (
    select a.regime, a.level, a.unit, a.axis as axis_a, b.axis as axis_b,
           a.value as value_a, b.value as value_b, oa.position as pos_a, ob.position as pos_b
    from long a
    join long b on a.regime = b.regime and a.level = b.level and a.unit = b.unit
    join axis_order oa on oa.axis = a.axis
    join axis_order ob on ob.axis = b.axis
    where oa.position < ob.position
),
ranked as (
    select *,
           rank() over (partition by regime, level, axis_a, axis_b order by value_a)
               + (count(*) over (partition by regime, level, axis_a, axis_b, value_a) - 1) / 2.0
               as rank_a,
           rank() over (partition by regime, level, axis_a, axis_b order by value_b)
               + (count(*) over (partition by regime, level, axis_a, axis_b, value_b) - 1) / 2.0
               as rank_b
    from pairs
)
select regime, level, axis_a, axis_b, fn_rank_correlation(rank_a, rank_b) as spearman_rho, count(*) as n
from ranked
group by regime, level, axis_a, axis_b, pos_a, pos_b
order by regime, level, pos_a, pos_b;

comment on view axis_correlations is 'One row per (regime, level, axis pair): Spearman rho between two axes over encoders (level encoder) or complete cells (level cell). docs/METHODS.md §9.3.';
comment on column axis_correlations.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column axis_correlations.level is 'Unit correlated: ''encoder'' (aggregate axes of axes_encoder) or ''cell'' (complete cells of axes_cell). docs/METHODS.md §9.3.';
comment on column axis_correlations.axis_a is 'First axis: discrimination, calibration, label_efficiency, robustness or aulc (earlier in that order). docs/METHODS.md §9.3.';
comment on column axis_correlations.axis_b is 'Second axis (later in the same order). docs/METHODS.md §9.3.';
comment on column axis_correlations.spearman_rho is 'Spearman rank correlation between axis_a and axis_b over the units; [-1, 1], sign = direction of association (neither way is better). docs/METHODS.md §9.3.';
comment on column axis_correlations.n is 'Number of units with both values present; count. docs/METHODS.md §9.3.';
