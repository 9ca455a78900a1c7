-- One row per (encoder, regime): the aggregate axes of SPEC 5.1 = the mean of the encoder's
-- complete cells in axes_cell (missing datasets are never imputed), via the crs_axes_aggregate
-- macro. Its aggregate AUROC, used for the AUROC ranking, is its aggregate discrimination.
create or replace view axes_encoder as
with cells as (
    select 'all' as grp, * from axes_cell
)
select * exclude (grp) from crs_axes_aggregate('cells');
