"""Who is served worse? Per-subgroup metrics and operating points (METHODS.md §16)."""
