-- Scalar macro fn_exact_mean(x) returns the mean of the finite values of x in a group, as
-- DOUBLE, summed as DECIMAL(38, 18); docs/METHODS.md §5 (Seed means).
-- Every crsbench view averages metric values with it (over seeds, label fractions, conditions,
-- datasets). Values are summed as DECIMAL(38, 18), which is exact, so the result does not depend
-- on the order parallel threads add rows in. A plain avg() over doubles does (measured: 5
-- distinct results in 20 identical queries over 20 Parquet parts), and fixed-reference
-- invariance is promised bit for bit. The rounding to 1e-18 is below double precision at metric
-- magnitudes (|x| < 1e20). Non-finite values (NaN, inf) count as missing. Use inside a grouped
-- query: fn_exact_mean(auroc).
create or replace macro fn_exact_mean(x) as avg(case when isfinite(x) then x::decimal(38, 18) end);

comment on macro fn_exact_mean is 'Aggregate: exact mean of the finite values of x (NaN/inf count as missing), summed as DECIMAL(38,18) so the result is bit-for-bit independent of row order; returns DOUBLE. docs/METHODS.md §5.';
