"""Commands that compute nothing start fast: no torch, timm, transformers, scipy or matplotlib.

Each light command runs in its own interpreter (`python -c`, outside the repository) on a small
warehouse; the child reports what it imported, its CPU time and its peak RSS. Loading torch alone
takes seconds of CPU and ~0.5 GB, so the bounds below separate the two cases on a loaded runner
too (measured on 2 busy cores: <= 1.7 s CPU and <= 230 MB of whole peak RSS for every command here).
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.runs_factory import PROFILES, encoder_runs, frame

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

HEAVY = ("torch", "timm", "transformers", "open_clip", "peft", "scipy", "matplotlib", "sklearn", "dask", "zarr")
# The bounds: < 2 s and < 300 MB. "2 s" is read as the child's own CPU time (wall time is the
# neighbours' on a shared runner): 0.1-1.3 s here, panel freeze ~1.3 s once its read-write open no
# longer re-creates the shipped SQL (4.4-6.9 s when these commands imported torch). "300 MB" is the
# whole peak RSS (VmHWM), mapped library files included: the imports (pandas, pyarrow, duckdb:
# ~150 MB, of which ~85 MB file-backed) plus DuckDB evaluating the score views. Lean opens (one DuckDB
# thread, freed memory returned at once) and the sandbox evaluating the score inputs first keep
# that at 200-230 MB on the demo warehouse (240-300 MB before); torch alone is ~750 MB.
CPU_LIMIT_S = 2.0
WALL_LIMIT_S = 15.0
PEAK_LIMIT_MB = 300

# The child runs one command through the real entry point and reports on itself.
CHILD = """
import json, resource, sys
from crsbench.cli import main
code = main(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_SELF)
# Peak RSS of this program: VmHWM belongs to the memory map exec made (ru_maxrss would also count
# the pytest process this child was forked from). It counts the file-backed pages of the mapped
# libraries too (RssFile, reported beside it): how much of a library they count depends on the file
# system (83 MB under a long-lived venv, 129 MB under one just installed, same imports).
def kb(status, key):
    return int(status.split(key + ":")[1].split()[0])
try:
    status = open("/proc/self/status").read()
    peak_mb = kb(status, "VmHWM") / 1024
    file_mb = kb(status, "RssFile") / 1024
except OSError:
    peak_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    file_mb = float("nan")
report = {
    "code": code,
    "heavy": sorted(m for m in HEAVY if m in sys.modules),
    "cpu_s": usage.ru_utime + usage.ru_stime,
    "file_mb": file_mb,
    "peak_rss_mb": peak_mb,
}
print("LIGHT-REPORT " + json.dumps(report), file=sys.stderr)
"""


def compile_package() -> None:
    """Byte-compile crsbench's sources, as installing a wheel does: the bounds are the command's
    cost, not that of compiling ~200 modules on every start (an editable checkout run under
    PYTHONDONTWRITEBYTECODE would otherwise compile them in every child, +40 MB of peak RSS)."""
    for package in ("crsbench", "crsbench.features", "crsbench.ingest", "crsbench.probes", "crsbench.warehouse"):
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        for location in spec.submodule_search_locations:
            compileall.compile_dir(location, quiet=1)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compile_package()
    path = tmp_path_factory.mktemp("light") / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in PROFILES for r in encoder_runs(e)]))
        freeze_panel(wh, "p", ["e1", "e2", "e3", "e4"])
    return path


def run_light(
    argv: list[str], cwd: Path, watched: tuple[str, ...] = HEAVY
) -> tuple[dict, subprocess.CompletedProcess[str], float]:
    """Run `argv`; the report's "heavy" lists the `watched` modules the command imported."""
    code = f"HEAVY = {watched!r}\n{CHILD}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRSBENCH_")}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )
    wall = time.perf_counter() - started
    lines = [line for line in proc.stderr.splitlines() if line.startswith("LIGHT-REPORT ")]
    assert lines, proc.stderr[-2000:]
    return json.loads(lines[-1].removeprefix("LIGHT-REPORT ")), proc, wall


def light_commands(db: Path, out: Path) -> dict[str, list[str]]:
    d = ["--db", str(db)]
    return {
        "--version": ["--version"],
        "encoders": ["--json", "encoders"],
        "status": ["status", *d],
        "leaderboard": ["leaderboard", *d],
        "sql": ["sql", "select encoder_id, crs from crs_encoder order by encoder_id", *d],
        "describe": ["describe", *d],
        "export": ["export", "crs_encoder", "--out", str(out / "board.csv"), *d],
        "panel freeze": ["panel", "freeze", "light", "--encoders", "e1,e2,e3", "--allow-small", *d],
        "panel list": ["panel", "list", *d],
    }


@pytest.mark.parametrize(
    "name",
    ["--version", "encoders", "status", "leaderboard", "sql", "describe", "export", "panel freeze", "panel list"],
)
def test_light_command_imports_no_heavy_library_and_starts_fast(db: Path, tmp_path: Path, name: str) -> None:
    argv = light_commands(db, tmp_path)[name]
    report, proc, wall = run_light(argv, cwd=tmp_path)
    assert report["code"] == 0, proc.stderr[-2000:]
    assert report["heavy"] == [], f"{name} imported {report['heavy']}"
    assert report["cpu_s"] < CPU_LIMIT_S, report
    assert report["peak_rss_mb"] < PEAK_LIMIT_MB, report
    assert wall < WALL_LIMIT_S, wall
    # The command did its job (and the same output as before the imports were cut).
    if name == "--version":
        assert proc.stdout.startswith("crsbench ")
    elif name == "encoders":  # the registry's own list, input sizes and all (no timm asked)
        from crsbench.features.lookup import list_encoders

        listed = {row["id"]: row["input_size"] for row in json.loads(proc.stdout)["encoders"]}
        assert listed == {e.id: e.input_size for e in list_encoders()}
        assert listed["resnet50"] == listed["vit-b16"] == listed["mae"] == 224
    elif name == "sql":
        assert "e1" in proc.stdout and "e4" in proc.stdout
    elif name == "export":
        assert (tmp_path / "board.csv").read_text().startswith("panel,")
    elif name == "panel freeze":
        with Warehouse.open(db, read_only=True) as wh:
            members = wh.sql("select encoder_id from reference_panels where panel = 'light' order by 1")
        assert list(members.encoder_id) == ["e1", "e2", "e3"]


# What reading a warehouse needs; printing the help needs none of it.
WAREHOUSE_LIBRARIES = ("numpy", "pandas", "pyarrow", "duckdb", "fsspec", "PIL")


@pytest.mark.parametrize("argv", [["--help"], ["sql", "--help"], ["warehouse", "--help"]])
def test_help_imports_no_data_library(db: Path, tmp_path: Path, argv: list[str]) -> None:
    report, proc, _ = run_light(argv, cwd=tmp_path, watched=(*HEAVY, *WAREHOUSE_LIBRARIES))
    assert report["code"] == 0, proc.stderr[-2000:]
    assert report["heavy"] == [], f"{' '.join(argv)} imported {report['heavy']}"
    assert "Usage: crsbench" in proc.stdout


# `analyze`'s options are generated from every analysis's declared parameters, so its help (and every
# `analyze NAME`) imports each analysis module: those load their compute libraries when they run.
COMPUTE_LIBRARIES = ("torch", "timm", "transformers", "open_clip", "peft", "sklearn", "dask")


def test_analyze_help_lists_every_analysis_without_loading_a_compute_library(db: Path, tmp_path: Path) -> None:
    report, proc, _ = run_light(["analyze", "--help"], cwd=tmp_path, watched=COMPUTE_LIBRARIES)
    assert report["code"] == 0, proc.stderr[-2000:]
    assert report["heavy"] == [], f"analyze --help imported {report['heavy']}"
    # The options of the analyses whose modules loaded torch (agreement, retrieval, partition) or
    # scikit-learn (e2) at import are still declared.
    listed = " ".join(proc.stdout.split())
    for option, analysis in [
        ("--k", "agreement"),
        ("--cutoff", "retrieval"),
        ("--folds", "partition"),
        ("--methods", "e2"),
    ]:
        assert f"{option} <" in listed and f"({analysis}" in listed.split(f"{option} <", 1)[1], option
