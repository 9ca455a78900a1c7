"""An analysis from a module outside the source tree (an installed plugin: a dist-info with a
`crsbench.analyses` entry point) comes with its stored table, its `crsbench analyze` option, its
report section and its data-dictionary entry, and no file of crsbench is edited for any of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PLUGIN = '''
    """A toy analysis: runs per encoder, with a report section of its own."""
    from crsbench.analyses import AnalysisResult, Param, register_analysis
    from crsbench.report.html import esc
    from crsbench.report.sections import section


    @register_analysis(
        "toy_count",
        params={"minimum": Param(0, "Fewest runs an encoder needs to be listed.")},
        outputs={"counts": ("encoder_id", "n_runs"), "summary": ("encoder_id", "n_runs")},
        columns={"n_runs": "Run records of the encoder in the warehouse (toy plugin)."},
        description="Runs per encoder (a toy plugin).",
    )
    def toy_count(wh, params):
        frame = wh.sql(
            "select encoder_id, count(*) as n_runs from runs group by encoder_id having count(*) >= ? "
            "order by encoder_id",
            [params["minimum"]],
        )
        return AnalysisResult({"counts": frame}, frame)


    @section("toy-count", "Runs per encoder (toy plugin)", order=995)
    def toy_section(data, sink):
        frame = data.analysis("toy_count", "counts", "encoder_id", "n_runs")
        if frame is None:
            return "<p>not run</p>"
        return "".join(f"<p class='toy'>{esc(r.encoder_id)}={r.n_runs}</p>" for r in frame.itertuples())
'''

SCRIPT = """
import contextlib, io, json, sys
from pathlib import Path
from support.criterion_support import build, scenario_runs
from crsbench import Bench
from crsbench.cli import main

db = Path(sys.argv[1])
build(db, scenario_runs(), ["e1", "e2", "e3", "e4"])
codes, out = {}, {}
for key, argv in {
    "help": ["analyze", "--help"],
    "run": ["analyze", "toy_count", "--minimum", "1", "--db", str(db)],
    "describe": ["--json", "describe", "analysis_toy_count_counts", "--db", str(db)],
    "report": ["report", "--db", str(db), "--out", str(db.with_name("report.html"))],
}.items():
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        codes[key] = main(argv)
    out[key] = buffer.getvalue()
counts = Bench(db).sql("select encoder_id, n_runs from analysis_toy_count_counts order by encoder_id")
expected = Bench(db).sql("select encoder_id, count(*) as n from runs group by 1 order by 1")
print(json.dumps({"codes": codes, "out": out, "counts": counts.values.tolist(), "expected": expected.values.tolist()}))
"""


def _install(site: Path) -> None:
    dist = site / "crsbench_toy_analysis-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crsbench-toy-analysis\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[crsbench.analyses]\ntoy_count = crsbench_toy_analysis\n")
    (site / "crsbench_toy_analysis.py").write_text(textwrap.dedent(PLUGIN))


def test_a_plugin_analysis_has_its_table_option_section_and_dictionary_entry(tmp_path):
    site = tmp_path / "site"
    _install(site)
    tests = Path(__file__).resolve().parents[1]
    path = os.pathsep.join([str(site), str(tests), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "w.duckdb")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["codes"] == {"help": 0, "run": 0, "describe": 0, "report": 0}, done.stderr[-3000:]
    # the option, with the help text the plugin declared and the analysis that takes it
    help_text = " ".join(got["out"]["help"].split())
    assert "--minimum" in help_text and "Fewest runs an encoder needs to be listed (toy_count)." in help_text
    # the table: runs per encoder, against a count straight from the runs table
    assert got["counts"] == got["expected"] and len(got["counts"]) >= 4
    # the data dictionary: the column comment the plugin declared
    entries = json.loads(got["out"]["describe"])
    entry = entries[0] if isinstance(entries, list) else entries
    text = json.dumps(entry)
    assert "analysis_toy_count_counts" in text and "Run records of the encoder in the warehouse (toy plugin)." in text
    # the report: the plugin's section, with its numbers, last on the page (order 995)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    shown = [f"{encoder}={n}" for encoder, n in got["expected"]]
    assert all(f"<p class='toy'>{s}</p>" in html for s in shown)
    assert html.index('id="toy-count"') > html.index('id="leaderboard"')
