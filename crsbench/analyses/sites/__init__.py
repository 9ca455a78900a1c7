"""Analyses over results imported from other sites (docs/METHODS.md §22)."""
