-- One row per (corruption suite, encoder, dataset, regime) cell on a dataset whose grid declares the
-- suite: the suite's robustness ("robustness (MedMNIST-C, derm)"), beside the paper's robustness
-- axis, which never reads the suite's conditions; docs/METHODS.md §25.
-- The formula is fn_axes_cell's, the one definition: it is given the cell's clean seed means and the
-- suite's condition seed means with the suite's prefix taken off ('<corruption>-s<k>'), and no shift
-- rows, so robustness = 1 - (0.5 mean + 0.5 max) of the AUROC drops max(0, clean - condition) of the
-- logreg probe at depth 1.0, full labels, over the suite's conditions. A cell is complete when it
-- holds every suite condition its grid declares there; rank orders the complete cells of a
-- (suite, dataset, regime), 1 = most robust.
create or replace view suite_robustness as
with declared as (
    select dataset_id, split_part(condition, '.', 1) as suite, count(distinct condition) as n_declared
    from grid_declared
    where contains(condition, '.') and probe = 'logreg' and depth = 1.0 and label_fraction = 1.0
      and eval_dataset_id = dataset_id
    group by all
),
seed_means as (
    select d.suite as grp, m.encoder_id, m.dataset_id, m.eval_dataset_id, m.regime, m.probe, m.depth,
           m.label_fraction,
           case when m.condition = 'clean' then 'clean'
                else substr(m.condition, length(d.suite) + 2) end as condition,
           m.auroc_mean, m.ece_mean, m.pretrained
    from metrics_seed m
    join declared d on d.dataset_id = m.dataset_id
    where m.eval_dataset_id = m.dataset_id
      and (m.condition = 'clean' or starts_with(m.condition, d.suite || '.'))
),
scored as (
    select a.grp as suite, a.encoder_id, a.dataset_id, a.regime, a.robustness,
           a.n_perturbed as n_conditions, d.n_declared, a.n_perturbed = d.n_declared as complete,
           a.pretrained
    from fn_axes_cell('seed_means') a
    join declared d on d.suite = a.grp and d.dataset_id = a.dataset_id
)
select s.suite, s.encoder_id, s.dataset_id, s.regime, s.robustness,
       p.robustness as paper_robustness, s.n_conditions, s.n_declared, s.complete,
       case when s.complete then rank() over (
           partition by s.suite, s.dataset_id, s.regime, s.complete order by s.robustness desc
       ) end as rank,
       s.pretrained
from scored s
left join axes_cell p using (encoder_id, dataset_id, regime);

comment on view suite_robustness is 'One row per (corruption suite, encoder, dataset, regime) cell on a dataset whose grid declares the suite (crsbench grid extend --suite): the suite''s robustness by the paper''s formula over its conditions alone, beside the paper''s robustness axis, which never reads them. docs/METHODS.md §25.';
comment on column suite_robustness.suite is 'Corruption suite (features.suites registry), e.g. medmnistc-derm: its conditions are <suite>.<corruption>-s<severity>. docs/METHODS.md §25.';
comment on column suite_robustness.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column suite_robustness.dataset_id is 'Dataset id (the probe''s training and evaluation dataset). docs/METHODS.md §1.';
comment on column suite_robustness.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column suite_robustness.robustness is 'The suite''s robustness: 1 - (0.5 mean + 0.5 max) of the AUROC drops max(0, clean - condition) of the logreg probe at depth 1.0, full labels (seed means), over the suite''s conditions; at most 1, higher is better. docs/METHODS.md §25, §6.';
comment on column suite_robustness.paper_robustness is 'The cell''s robustness axis of the paper (axes_cell.robustness: the protocol''s perturbations and shift targets), for comparison; NULL until it is observed. docs/METHODS.md §6.';
comment on column suite_robustness.n_conditions is 'Suite conditions behind robustness (observed at logreg, depth 1.0, full labels); count. docs/METHODS.md §25.';
comment on column suite_robustness.n_declared is 'Suite conditions the dataset''s grid declares at logreg, depth 1.0, full labels; count. docs/METHODS.md §25.';
comment on column suite_robustness.complete is 'True when n_conditions = n_declared: the cell holds every declared suite condition; only complete cells are ranked. docs/METHODS.md §25.';
comment on column suite_robustness.rank is 'Rank of the complete cell among the complete cells of its (suite, dataset, regime) by robustness, 1 = most robust (ties share a rank); NULL when incomplete. docs/METHODS.md §25.';
comment on column suite_robustness.pretrained is 'False when the encoder''s weights are random-init (a test or demo model): its numbers say nothing about the pretrained model. docs/METHODS.md §2.';
