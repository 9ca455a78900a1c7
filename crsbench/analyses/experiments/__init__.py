"""The encoder experiments E1-E6 of the paper's protocol (METHODS.md §12)."""
