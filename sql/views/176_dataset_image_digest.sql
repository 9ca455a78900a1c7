-- One row per dataset with images: a digest of what an analysis reading the image files rather
-- than runs sees of them (each image's id, path, SHA-256, group and split, and its labels). A
-- stored analysis that declares it reads images (the shortcut audit) records this digest, keyed
-- images:<dataset_id>; when it differs now, the dataset was re-ingested and the result is stale.
-- Runs never enter it, so probing more encoders leaves such a result fresh. docs/METHODS.md §10.
create or replace view dataset_image_digest as
with keys as (
    select dataset_id,
           'i:' || image_id || ':' || coalesce(rel_path, '') || ':' || coalesce(sha256, '') || ':'
           || coalesce(group_id, '') || ':' || coalesce(split, '') as k
    from images
    union all
    select dataset_id, 'l:' || image_id || ':' || label_idx::varchar || ':' || value::varchar as k
    from labels
)
select dataset_id,
       count(*) filter (where k like 'i:%') as n_images,
       md5(string_agg(k, ',' order by k)) as digest
from keys
group by dataset_id;

comment on view dataset_image_digest is 'One row per dataset: an MD5 digest of its images (id, path, SHA-256, group, split) and labels; a stored analysis that reads image files rather than runs (shortcuts) records it and is stale once this differs. docs/METHODS.md §10.';
comment on column dataset_image_digest.dataset_id is 'Dataset whose images the digest covers (datasets.dataset_id). docs/METHODS.md §1.';
comment on column dataset_image_digest.n_images is 'Images of the dataset behind the digest; count. docs/METHODS.md §1.';
comment on column dataset_image_digest.digest is 'MD5 hex digest of the sorted image keys (i:<image_id>:<path>:<sha256>:<group>:<split>) and label keys (l:<image_id>:<label_idx>:<value>); equal digests = the same images and labels. docs/METHODS.md §10.';
