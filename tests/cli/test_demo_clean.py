"""A fresh demo ends clean (issue 42): `status` and `leaderboard --panel demo` right after it print
no incomplete cell, no stale result and no warning but one anchor-noise line for the panel; the
zero-shot encoder, outside every panel and probed in part on purpose, gets one line that does not
say "incomplete", and the report written at the end shows its zero-shot results.

The demo is the real one: `make demo-check` (run by CI after the tests) runs a fresh
`crsbench demo` and then this file with CRSBENCH_DEMO_OUT naming its folder. Without it the tests
are skipped (a demo is ~5 minutes, more than the whole suite may spend on one file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.fault_support import env

pytestmark = pytest.mark.demo

ANCHOR_NOISE = "min-max normalisation amplifies noise"
TABLE_EDGES = tuple("┏┃┡│└")


def cli(*args: str, timeout: float = 900) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "crsbench.cli", *args],
        env={**env(), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def demo() -> Path:
    """The folder of a demo that just finished (`make demo-check` sets CRSBENCH_DEMO_OUT)."""
    out = Path(os.environ["CRSBENCH_DEMO_OUT"])
    assert (out / "crsbench.duckdb").is_file() and (out / "report.html").is_file(), f"{out} holds no finished demo"
    return out


def unclean(text: str) -> list[str]:
    """The lines a clean warehouse must not print (tables aside: a column may be called incomplete)."""
    return [
        line
        for line in text.splitlines()
        if not line.lstrip().startswith(TABLE_EDGES)
        and (
            ("incomplete" in line.lower() and "0 incomplete" not in line)
            or "stale" in line.lower()
            or ("warning" in line.lower() and ANCHOR_NOISE not in line)
        )
    ]


def test_status_after_a_fresh_demo_is_clean(demo: Path) -> None:
    text = cli("status", "--db", str(demo / "crsbench.duckdb"))
    assert unclean(text) == []
    outside = [line.strip() for line in text.splitlines() if line.strip().startswith("tiny-clip")]
    assert outside == ["tiny-clip: zero-shot plus 2 of 30 probe settings; outside every panel"]
    state = json.loads(cli("--json", "status", "--db", str(demo / "crsbench.duckdb")))
    assert state["incomplete_cells"] == [] and state["stale"] == []
    assert state["counts"]["feature_sets_incomplete"] == 0


def test_leaderboard_after_a_fresh_demo_has_one_anchor_noise_line(demo: Path) -> None:
    text = cli("leaderboard", "--db", str(demo / "crsbench.duckdb"), "--panel", "demo")
    assert unclean(text) == []
    assert sum(ANCHOR_NOISE in line for line in text.splitlines()) <= 1
    assert [line for line in text.splitlines() if "outside every panel" in line] == [
        "note: tiny-clip: zero-shot plus 2 of 30 probe settings; outside every panel"
    ]
    board = json.loads(cli("--json", "leaderboard", "--db", str(demo / "crsbench.duckdb"), "--panel", "demo"))
    assert board["incomplete"] == [] and board["stale"] == []
    noisy = {(r["scope"], r["axis"]) for r in board["anchor_noise"]}  # the detail the one line folds
    for scope, axis in noisy:
        assert scope in board["warnings"][0] and (axis in board["warnings"][0] or "every axis" in board["warnings"][0])


def test_the_demo_report_shows_zero_shot_and_no_incomplete_cell(demo: Path) -> None:
    html = (demo / "report.html").read_text()
    zero_shot = html[html.find("<h2>Zero-shot, prompting and probing") :]
    assert "No image-text encoder has been run zero-shot" not in html
    assert "tiny-clip" in zero_shot[: zero_shot.find("</table>")]
    assert "Incomplete (left out of the CRS)" not in html
    assert html.count(ANCHOR_NOISE) <= 1


def test_the_demo_report_answers_whether_the_pre_screen_can_be_trusted(demo: Path) -> None:
    html = (demo / "report.html").read_text()
    section = html[html.index('id="screen"') :]
    section = section[: section.index("</section>")]
    assert 'data-missing="false"' in section[:200]
    assert "knn_loo ranks" in section and "against the full grid" in section
