"""How sure is the ranking? The bootstrap of test images and seeds, its intervals and the metrics re-
scored under its draws (METHODS.md §10).
"""
