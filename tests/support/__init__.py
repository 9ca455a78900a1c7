"""Helpers shared by the tests and benchmarks/ (importable as `support.*` with tests/ on sys.path)."""
