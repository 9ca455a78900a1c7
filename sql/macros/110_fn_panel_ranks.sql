-- Table macro fn_panel_ranks(scored) returns one row per (panel, candidate) of `scored`: its CRS
-- and AUROC ranks taken against the panel's members; docs/METHODS.md §8.5 (Fixed reference and
-- ranks).
-- `scored` names a relation (panel, candidate, in_panel, crs, auroc). crs_rank = 1 + the number
-- of panel members (other than the candidate) with a higher CRS, and likewise auroc_rank. For
-- members this is their 'min' rank within the panel; for any other candidate it is the place it
-- would take among the panel, so ranks too stay fixed when encoders are added. NULL score ->
-- NULL rank. Returns (panel, candidate, crs_rank, auroc_rank).
create or replace macro fn_panel_ranks(scored) as table
with x as materialized (select * from query_table(scored))
select a.panel, a.candidate,
       case when a.crs is not null then 1 + count(*) filter (where b.crs > a.crs) end as crs_rank,
       case when a.auroc is not null then 1 + count(*) filter (where b.auroc > a.auroc) end
           as auroc_rank
from x a
left join x b on b.panel = a.panel and b.in_panel and b.candidate <> a.candidate
group by a.panel, a.candidate, a.crs, a.auroc;

comment on macro table fn_panel_ranks is 'Table macro fn_panel_ranks(scored): crs_rank and auroc_rank of each (panel, candidate) = 1 + the number of other panel members scoring higher (rank 1 = best; fixed when encoders are added). docs/METHODS.md §8.5.';
