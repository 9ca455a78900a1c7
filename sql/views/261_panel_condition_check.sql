-- One row per (panel, complete cell) whose perturbed conditions differ from those the panel's
-- members had on that dataset when it was frozen (table panel_conditions); docs/METHODS.md §8.1.
-- The panel's robustness anchors were taken over its set, so such a cell's robustness and CRS are
-- not comparable with the members': `crsbench leaderboard` warns, naming the encoder, the dataset
-- and the conditions it lacks or adds. Panels frozen before schema v13 recorded no set (no rows).
create or replace view panel_condition_check as
select p.panel, c.encoder_id, c.regime, c.dataset_id,
       list_filter(p.conditions, lambda x: not list_contains(c.conditions, x)) as missing,
       list_filter(c.conditions, lambda x: not list_contains(p.conditions, x)) as extra
from panel_conditions p
join cell_conditions c on c.dataset_id = p.scope
join axes_cell a on a.encoder_id = c.encoder_id and a.dataset_id = c.dataset_id and a.regime = c.regime
where a.complete and list_sort(p.conditions) <> c.conditions;

comment on view panel_condition_check is 'One row per (panel, complete cell) whose perturbed conditions (cell_conditions) differ from the set the panel''s members had on that dataset at freeze (panel_conditions): its robustness and CRS are not comparable with the members''. docs/METHODS.md §8.1.';
comment on column panel_condition_check.panel is 'Reference panel name. docs/METHODS.md §8.1.';
comment on column panel_condition_check.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column panel_condition_check.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column panel_condition_check.dataset_id is 'Dataset id of the cell (the panel''s scope). docs/METHODS.md §1.';
comment on column panel_condition_check.missing is 'Conditions of the panel''s set the cell''s robustness lacks. docs/METHODS.md §2.3.';
comment on column panel_condition_check.extra is 'Conditions behind the cell''s robustness that the panel''s set lacks. docs/METHODS.md §2.3.';
