"""Are the splits and labels sound? Partition checks, split-level uncertainty and file-property
shortcuts (METHODS.md §18, §19).
"""
