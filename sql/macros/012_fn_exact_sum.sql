-- Scalar macro fn_exact_sum(x) returns the sum of x over a group as DOUBLE, summed as
-- DECIMAL(38, 18); docs/METHODS.md §5 (Seed means).
-- A plain sum() over doubles depends on the order DuckDB's threads add rows in, so the same query
-- on the same data can differ in its last bits (as fn_exact_mean explains); the DECIMAL sum is
-- exact, so this one cannot. Each value is rounded to 1e-18 first, below double precision for
-- |x| >= 0.01; the values must be finite and |x| < 1e20 (a NaN or an infinity is an error). Use
-- inside a grouped query: fn_exact_sum(w * s).
create or replace macro fn_exact_sum(x) as sum(x::decimal(38, 18))::double;

comment on macro fn_exact_sum is 'Aggregate: the sum of x (finite, |x| < 1e20) as DOUBLE, summed as DECIMAL(38,18) so the result is bit-for-bit independent of row order. docs/METHODS.md §5.';
