-- Table macro fn_axes_cell(seed_means) returns one row per (grp, encoder, dataset, regime) with a
-- full-label clean AUROC: the four reliability axes of that cell; docs/METHODS.md §6 (Axes).
-- THE one definition of the axes. The axes_cell view calls it on metrics_seed; the validation
-- analyses call it on resampled or substituted seed means (bootstrap multisets, other
-- calibration estimators, no shift rows), so every axis in crsbench comes from this text.
--   seed_means  name of a relation with one row per (grp, encoder_id, dataset_id, eval_dataset_id,
--               regime, probe, depth, label_fraction, condition) and columns auroc_mean, ece_mean
--               (seed means, e.g. fn_exact_mean over seeds) and pretrained. grp is any key (the
--               view uses one constant; the bootstrap a seed-multiset id).
-- Returns (grp, encoder_id, dataset_id, regime, discrimination, calibration, label_efficiency,
--          robustness, aulc, n_perturbed, n_shift, complete, pretrained)
-- From the primary probe (logreg) at full depth (1.0); ratios and drops are taken between the
-- given seed means; means use fn_exact_mean and the AULC sum a fraction-ordered list, so every
-- value is reproducible bit for bit.
--   discrimination   = AUROC_clean(100 %)
--   calibration      = 1 - ECE_clean(100 %)   (ece_mean may carry another miscalibration estimate)
--   label_efficiency = mean over the observed fractions f < 1 of AUROC_clean(f) / AUROC_clean(100 %)
--   robustness       = 1 - (0.5 mean(delta) + 0.5 max(delta)), delta = max(0, AUROC_clean(100 %) -
--                      AUROC_condition(100 %)) over every observed perturbed condition ('<name>-s<k>')
--                      and every shift target (condition 'shift', eval_dataset_id = the target);
--                      leave the shift rows out of seed_means for corruption-only robustness
--   aulc             = area under the clean label-efficiency curve, AUROC against log10(fraction),
--                      trapezoid rule over the observed fractions, divided by the log10 span of those
--                      fractions (= 2 for the 1 %..100 % grid): a mean AUROC in [0, 1], not an axis.
-- 'calib' rows are ignored. An axis with no rows is NULL; `complete` says all four are observed.
create or replace macro fn_axes_cell(seed_means) as table
with primary_runs as (
    select * from query_table(seed_means) where probe = 'logreg' and depth = 1.0
),
full_clean as (
    select grp, encoder_id, dataset_id, regime, auroc_mean as auroc_full, ece_mean as ece_full,
           pretrained
    from primary_runs
    where condition = 'clean' and eval_dataset_id = dataset_id and label_fraction = 1.0
      and auroc_mean is not null
),
curve as (
    select grp, encoder_id, dataset_id, regime, label_fraction, auroc_mean as auroc,
           log10(label_fraction) as x,
           lag(log10(label_fraction)) over w as x_prev,
           lag(auroc_mean) over w as auroc_prev
    from primary_runs
    where condition = 'clean' and eval_dataset_id = dataset_id and auroc_mean is not null
      and label_fraction > 0 and label_fraction <= 1.0
    window w as (partition by grp, encoder_id, dataset_id, regime order by label_fraction)
),
efficiency as (
    select c.grp, c.encoder_id, c.dataset_id, c.regime,
           fn_exact_mean(case when c.label_fraction < 1.0 then c.auroc / f.auroc_full end)
               as label_efficiency,
           list_sum(list((c.x - c.x_prev) * (c.auroc + c.auroc_prev) / 2 order by c.label_fraction)
                    filter (where c.x_prev is not null))
               / nullif(max(c.x) - min(c.x), 0) as aulc
    from curve c
    join full_clean f using (grp, encoder_id, dataset_id, regime)
    group by c.grp, c.encoder_id, c.dataset_id, c.regime
),
deltas as (
    select p.grp, p.encoder_id, p.dataset_id, p.regime, p.condition, p.eval_dataset_id,
           greatest(0.0, f.auroc_full - p.auroc_mean) as delta
    from primary_runs p
    join full_clean f using (grp, encoder_id, dataset_id, regime)
    where p.label_fraction = 1.0 and p.auroc_mean is not null
      and ((p.condition = 'shift' and p.eval_dataset_id <> p.dataset_id)
           or (regexp_full_match(p.condition, '[a-z0-9_]+-s[0-9]+') and p.eval_dataset_id = p.dataset_id))
),
robust as (
    select grp, encoder_id, dataset_id, regime,
           1 - (0.5 * fn_exact_mean(delta) + 0.5 * max(delta)) as robustness,
           count(*) filter (where condition <> 'shift') as n_perturbed,
           count(*) filter (where condition = 'shift') as n_shift
    from deltas
    group by grp, encoder_id, dataset_id, regime
)
select f.grp, f.encoder_id, f.dataset_id, f.regime,
       f.auroc_full as discrimination,
       1 - f.ece_full as calibration,
       e.label_efficiency,
       r.robustness,
       e.aulc,
       coalesce(r.n_perturbed, 0) as n_perturbed,
       coalesce(r.n_shift, 0) as n_shift,
       (f.ece_full is not null and e.label_efficiency is not null and r.robustness is not null)
           as complete,
       f.pretrained
from full_clean f
left join efficiency e using (grp, encoder_id, dataset_id, regime)
left join robust r using (grp, encoder_id, dataset_id, regime);

comment on macro table fn_axes_cell is 'Table macro fn_axes_cell(seed_means): the one definition of the four reliability axes (discrimination, calibration, label_efficiency, robustness) plus AULC of each (grp, encoder, dataset, regime), from seed-mean rows of the logreg probe at depth 1.0. Returns grp, encoder_id, dataset_id, regime, the axes, aulc, n_perturbed, n_shift, complete, pretrained. docs/METHODS.md §6.';
