"""docs/API.md's demo script runs as written, on a smaller suite and grid, and its scores are the CLI's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "API.md"
SETTINGS = re.compile(r"^OUT, SCALE, ENCODERS, GRID, REPLICATES = .*$", re.M)


def _script() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "docs/API.md holds exactly one runnable script"
    return blocks[0]


def test_the_script_is_about_twenty_lines():
    code = [line for line in _script().splitlines() if line.strip() and not line.startswith(("#", "import", "from"))]
    assert len(code) <= 20 and len(SETTINGS.findall(_script())) == 1


@pytest.mark.slow
def test_the_documented_demo_chain_runs(tmp_path, capsys):
    small = (
        'OUT, SCALE, ENCODERS, GRID, REPLICATES = (Path(OUT_DIR), 0.5, ["tiny-vit", "tiny-convnext"], '
        'ProbeConfig(probes=("logreg",), depths=(0.5, 1.0)), 100)'
    )
    script = SETTINGS.sub(small, _script())
    # A smaller grid is declared before probing: cells count complete against their declared grid.
    probe_line = "print(bench.probe(ENCODERS, config=GRID))"
    assert probe_line in script
    script = script.replace(probe_line, "bench.restrict_grid(GRID); " + probe_line)
    freeze_line = 'bench.freeze_panel("demo", ENCODERS)'  # two encoders here: a small panel on purpose
    assert freeze_line in script
    script = script.replace(freeze_line, 'bench.freeze_panel("demo", ENCODERS, allow_small=True)')
    namespace = {"OUT_DIR": str(tmp_path / "out"), "__name__": "__main__"}
    exec(compile(script, str(DOC), "exec"), namespace)  # the repository's own documented script

    bench = namespace["bench"]
    board = bench.leaderboard("demo").board
    assert sorted(board.encoder_id) == ["tiny-convnext", "tiny-vit"]
    assert board.crs.between(0, 1).all() and (tmp_path / "out" / "report.html").stat().st_size > 10_000
    # The script's grid: 2 encoders x 3 source datasets (mimic-cxr is only a shift target)
    # x 2 depths x 5 fractions x 5 seeds (only cells with the whole declared grid reach CRS),
    # each fit recorded once.
    fits = bench.sql("select count(distinct fit_id) as n from runs").n.iloc[0]
    assert fits == 2 * 3 * 2 * 5 * 5
    stored = set(bench.sql("select analysis from analyses").analysis)
    assert stored == {"bootstrap", "e1", "e2", "e3", "e4", "e6"}
    # The CLI's leaderboard reads the same warehouse and prints the same scores.
    from crsbench.cli import main

    assert main(["--json", "leaderboard", "--panel", "demo", "--db", str(bench.db)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    cli_board = {r["encoder_id"]: r["crs"] for r in json.loads(printed)["leaderboard"]}
    assert cli_board == pytest.approx(dict(zip(board.encoder_id, board.crs, strict=True)))
