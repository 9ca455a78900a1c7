"""Helpers of the one-model and architecture tests (tests/features/test_one_model.py,
test_architecture.py): the CLI in a subprocess, the one-line refusal, a digest of a warehouse."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from support.fault_support import env, one_line_user_error  # noqa: F401  (re-exported)

RUN_CLI = "import sys\nfrom crsbench.cli import main\nsys.exit(main())\n"


def cli(*args: str) -> tuple[int, str, str]:
    """Run `crsbench *args` in a subprocess: (exit code, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-c", RUN_CLI, *args],
        env={k: v for k, v in env().items() if k not in ("CRSBENCH_DEBUG", "CRSBENCH_WEIGHTS")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


def warehouse_digest(db: Path) -> dict[str, str]:
    """sha256 of every file of the warehouse's folder (the db, its parts, its feature store)."""
    return {
        str(p.relative_to(db.parent)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(db.parent.rglob("*"))
        if p.is_file()
    }
