"""Results that travel between sites (docs/METHODS.md §22): a results bundle exported from one
warehouse (metrics, cells, bootstrap replicates, the panel and the protocol; never image ids,
paths, predictions or embeddings unless asked), signed with Ed25519, validated and imported into
another, where they stay apart from its own results. Floor: above the analyses (an export draws
bootstrap replicates), below the read models."""
