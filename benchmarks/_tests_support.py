"""Puts tests/ on sys.path, so a benchmark imports the tests' generators (`support.synthetic`):
`import _tests_support` before `from support.synthetic import ...`."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
