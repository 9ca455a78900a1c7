"""CLI: `crsbench make-suite`, `crsbench ingest`, `crsbench shift` (owned by the ingest stage)."""
