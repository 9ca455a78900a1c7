"""The pre-screen (METHODS.md §21): transferability estimators over cached features, and how far
their ranking agrees with the full grid's on the user's own data."""
