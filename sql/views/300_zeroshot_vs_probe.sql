-- One row per (image-text encoder, dataset) with a zero-shot fit: zero-shot AUROC and ECE on the
-- clean test split (the latest prompt set, zeroshot_prompts) beside the logreg probe at depth 1.0
-- with 1 % and 100 % of the labels (seed means, metrics_seed), and the smallest label fraction
-- at which the probe's AUROC exceeds zero-shot's (NULL: never, or not probed). Zero-shot runs are
-- extras of the grid: they never enter the CRS. docs/METHODS.md §3.5.
create or replace view zeroshot_vs_probe as
with zs as (
    select r.encoder_id, r.dataset_id, r.regime, p.prompt_hash, r.auroc, r.ece
    from runs r
    join zeroshot_prompts p on p.fit_id = r.fit_id
    where r.probe = 'zeroshot' and r.condition = 'clean' and r.eval_dataset_id = r.dataset_id
    qualify row_number() over (partition by r.encoder_id, r.dataset_id, r.regime order by p.created_at desc) = 1
),
probe as (
    select encoder_id, dataset_id, regime, label_fraction, auroc_mean, ece_mean
    from metrics_seed
    where probe = 'logreg' and depth = 1.0 and condition = 'clean' and eval_dataset_id = dataset_id
)
select zs.encoder_id,
       zs.dataset_id,
       zs.prompt_hash,
       zs.auroc as zeroshot_auroc,
       zs.ece as zeroshot_ece,
       max(p.auroc_mean) filter (where abs(p.label_fraction - 0.01) < 1e-9) as logreg_auroc_1pct,
       max(p.ece_mean) filter (where abs(p.label_fraction - 0.01) < 1e-9) as logreg_ece_1pct,
       max(p.auroc_mean) filter (where abs(p.label_fraction - 1.0) < 1e-9) as logreg_auroc_100pct,
       max(p.ece_mean) filter (where abs(p.label_fraction - 1.0) < 1e-9) as logreg_ece_100pct,
       min(p.label_fraction) filter (where p.auroc_mean > zs.auroc) as probe_beats_zeroshot_at
from zs
left join probe p using (encoder_id, dataset_id, regime)
group by zs.encoder_id, zs.dataset_id, zs.prompt_hash, zs.auroc, zs.ece;

comment on view zeroshot_vs_probe is 'One row per (image-text encoder, dataset): zero-shot AUROC/ECE on the clean test split (latest prompt set) beside the logreg probe at depth 1.0 with 1 % and 100 % of the labels, and the smallest label fraction at which the probe beats zero-shot. docs/METHODS.md §3.5.';
comment on column zeroshot_vs_probe.encoder_id is 'Image-text encoder (registry name) with a text tower. docs/METHODS.md §2.';
comment on column zeroshot_vs_probe.dataset_id is 'Dataset evaluated (its clean test split). docs/METHODS.md §1.';
comment on column zeroshot_vs_probe.prompt_hash is 'Prompt set of the zero-shot run shown (zeroshot_prompts.prompt_hash, the latest recorded). docs/METHODS.md §3.5.';
comment on column zeroshot_vs_probe.zeroshot_auroc is 'Zero-shot macro-AUROC on the clean test split; [0, 1], higher is better. docs/METHODS.md §3.5.';
comment on column zeroshot_vs_probe.zeroshot_ece is 'Zero-shot ECE (15 equal-width bins) on the clean test split; [0, 1], lower is better. docs/METHODS.md §3.5.';
comment on column zeroshot_vs_probe.logreg_auroc_1pct is 'Logreg probe (depth 1.0) clean AUROC with 1 % of the training labels, seed mean; NULL if not probed. docs/METHODS.md §3.';
comment on column zeroshot_vs_probe.logreg_ece_1pct is 'Logreg probe (depth 1.0) clean ECE with 1 % of the training labels, seed mean. docs/METHODS.md §3.';
comment on column zeroshot_vs_probe.logreg_auroc_100pct is 'Logreg probe (depth 1.0) clean AUROC with all training labels, seed mean. docs/METHODS.md §3.';
comment on column zeroshot_vs_probe.logreg_ece_100pct is 'Logreg probe (depth 1.0) clean ECE with all training labels, seed mean. docs/METHODS.md §3.';
comment on column zeroshot_vs_probe.probe_beats_zeroshot_at is 'Smallest declared label fraction at which the logreg probe''s clean AUROC (seed mean) exceeds zero-shot''s; NULL if it never does or was not probed. docs/METHODS.md §3.5.';
