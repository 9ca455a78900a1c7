"""Does the CRS measure what it claims? Construct, criterion, estimator, weight and reference validity (METHODS.md §9, §11)."""
