"""Similar-case retrieval from the stored embeddings (METHODS.md §24)."""
