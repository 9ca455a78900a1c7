-- Scalar macro exact_mean(x): the aggregate every crsbench view averages metric values with
-- (over seeds, label fractions, conditions, datasets). Values are summed as DECIMAL(38, 18),
-- which is exact, so the result does not depend on the order parallel threads add rows in.
-- A plain avg() over doubles does (measured: 5 distinct results in 20 identical queries over 20
-- Parquet parts), and fixed-reference invariance is promised bit for bit. The rounding to 1e-18
-- is below double precision at metric magnitudes (|x| < 1e20). Non-finite values (NaN, inf)
-- count as missing. Use inside a grouped query: exact_mean(auroc).
create or replace macro exact_mean(x) as avg(case when isfinite(x) then x::decimal(38, 18) end);
