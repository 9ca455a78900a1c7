-- Scalar macro fn_rank_correlation(x, y) returns, over a group, the Pearson correlation of two
-- columns of ranks: Spearman's rho when x and y are average ranks (as scipy.stats.spearmanr);
-- docs/METHODS.md §9.1 (Rank agreement).
-- Ranks are multiples of 1/2 (an average rank of tied values), so 2x and 2y are integers and the
-- five sums the correlation needs, n, S(2x), S(2y), S(2x 2y), S((2x)^2), S((2y)^2), are exact in
-- HUGEINT: r = (n S(XY) - S(X) S(Y)) / sqrt((n S(X^2) - S(X)^2) (n S(Y^2) - S(Y)^2)), rounded once
-- per factor. DuckDB's corr() updates a running mean row by row, so its last bits depend on the
-- order threads feed it rows (measured: a bootstrap's spearman_rho intervals moved between runs of
-- the same query); this cannot. NULL when either ranking is constant. x and y must be non-NULL
-- multiples of 1/2 (other values are rounded to one).
create or replace macro fn_rank_correlation(x, y) as
    (count(x) * sum((2 * x)::hugeint * (2 * y)::hugeint) - sum((2 * x)::hugeint) * sum((2 * y)::hugeint))::double
    / nullif(sqrt(
        (count(x) * sum((2 * x)::hugeint * (2 * x)::hugeint) - sum((2 * x)::hugeint) * sum((2 * x)::hugeint))::double
        * (count(x) * sum((2 * y)::hugeint * (2 * y)::hugeint) - sum((2 * y)::hugeint) * sum((2 * y)::hugeint))::double
    ), 0);

comment on macro fn_rank_correlation is 'Aggregate: Pearson correlation of two rank columns (Spearman rho for average ranks, multiples of 1/2), from exact HUGEINT sums so the result is bit-for-bit independent of row order; NULL when a ranking is constant. docs/METHODS.md §9.1.';
