"""Any DuckDB client: the compacted warehouse file, copied alone into a fresh directory and opened
from another working directory by the DuckDB 1.5.6 shell (`pip install duckdb-cli==1.5.6`), answers
every view and gives the same `crs_encoder` rows as crsbench.

The shell is installed once into a throwaway virtual environment cached under the temporary
directory, keyed by its version, so the test costs a few seconds after the first run. It skips, and
says so loudly, only when the package index cannot be reached.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from support.runs_factory import PROFILES, encoder_runs, frame

import crsbench
from crsbench.warehouse.panels import freeze_panel

CLI_VERSION = "1.5.6"
_OFFLINE_HINTS = (
    "connection",
    "network",
    "temporary failure",
    "name resolution",
    "no matching distribution",
    "could not find a version",
    "timed out",
    "proxy",
)


def _duckdb_shell() -> Path:
    venv = Path(tempfile.gettempdir()) / f"crsbench-duckdb-cli-{CLI_VERSION}"
    # the wheel's native binary (its bin/ wrapper script names the interpreter by absolute path)
    found = sorted(venv.glob("lib/python*/site-packages/duckdb_cli/duckdb"))
    if found:
        return found[0]
    staging = venv.with_name(f"{venv.name}.{uuid.uuid4().hex}")
    subprocess.run([sys.executable, "-m", "venv", str(staging)], check=True, timeout=300)
    proc = subprocess.run(
        [
            str(staging / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"duckdb-cli=={CLI_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        message = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["pip failed"]
        if any(hint in (proc.stderr + proc.stdout).lower() for hint in _OFFLINE_HINTS):
            pytest.skip(
                f"SKIPPED LOUDLY: cannot install duckdb-cli=={CLI_VERSION} from the package index "
                f"({message[0]}); the DuckDB 1.5 compatibility of the warehouse is NOT tested"
            )
        raise AssertionError(f"pip install duckdb-cli=={CLI_VERSION} failed: {message[0]}")
    try:
        os.rename(staging, venv)  # atomic: a concurrent run either wins or finds it in place
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(venv.glob("lib/python*/site-packages/duckdb_cli/duckdb"))[0]


@pytest.fixture(scope="module")
def compacted(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("made") / "crsbench.duckdb"
    with crsbench.Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in PROFILES for r in encoder_runs(e)]))
        freeze_panel(wh, "p", ["e1", "e2", "e3", "e4"])
        wh.compact_parts()
    return path


def _shell(shell: Path, db: Path, sql: str, cwd: Path) -> list[dict]:
    proc = subprocess.run(
        [str(shell), "-readonly", "-json", str(db), sql], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else []


def test_the_duckdb_1_5_shell_reads_the_compacted_file_alone(compacted, tmp_path):
    shell = _duckdb_shell()
    version = subprocess.run([str(shell), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert version.startswith(f"v{CLI_VERSION}")
    alone = tmp_path / "fresh" / "copy.duckdb"
    alone.parent.mkdir()
    shutil.copyfile(compacted, alone)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    relative = os.path.relpath(alone, elsewhere)

    views = [
        r["view_name"]
        for r in _shell(
            shell, relative, "select view_name from duckdb_views() where not internal order by 1", elsewhere
        )
    ]
    with crsbench.Warehouse.open(compacted, read_only=True) as wh:
        mine = set(wh.sql("select view_name from duckdb_views() where not internal and schema_name = 'main'").view_name)
        want = wh.sql("select * from crs_encoder order by panel, encoder_id").to_dict("records")
        counts = {v: int(wh.sql(f"select count(*) n from {v}").n[0]) for v in sorted(mine)}
    assert mine == set(views)
    # every view binds and counts the same rows in the 1.5 shell
    union = " union all ".join(f"select '{v}' as view, count(*) as n from {v}" for v in sorted(mine))
    theirs = {r["view"]: r["n"] for r in _shell(shell, relative, union, elsewhere)}
    assert theirs == counts
    got = _shell(shell, relative, "select * from crs_encoder order by panel, encoder_id", elsewhere)
    assert len(got) == len(want) > 0
    for row_got, row_want in zip(got, want, strict=True):
        assert set(row_got) == set(row_want)
        for key, value in row_want.items():
            if isinstance(value, float) and not math.isnan(value):
                assert row_got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
            elif isinstance(value, (str, bool, int)):
                assert row_got[key] == value, key
