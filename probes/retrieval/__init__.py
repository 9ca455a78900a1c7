"""Similar-case retrieval (METHODS.md §24): which gallery cases count as relevant to a query
(`relevance`), the exact ranking of a gallery by distance (`ranking`) and the per-query metrics
(`metrics`)."""
