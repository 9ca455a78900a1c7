"""scripts/docs_transcripts.py --check (run by `make demo-check` in CI): a changed digit in the docs
is found and named by its line, while wall times, rates and ETAs, which change from run to run of
the same demo, are not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("docs_transcripts", ROOT / "scripts" / "docs_transcripts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN_A = """done 1/6 generate the embedded suite and ingest it (1014/1014) in 4 s
  tiny-vit x isic2019: extracted in 2.9 s
done 2/6 extract features (16230/16230) in 1:15
│ 1    │ =1   │ tiny-resnet18     │ 3/3      │ 0.6536 │ [0.0816, 1.0000] │
  3/6 probe grid                                                 125.6 s
demo finished in 293 s. Query it with: crsbench sql"""


def test_timings_are_masked_and_every_other_digit_is_kept():
    script = _script()
    run_b = (
        RUN_A.replace("in 4 s", "in 5 s")
        .replace("2.9 s", "3.1 s")
        .replace("1:15", "1:21")
        .replace("125.6 s", "131.0 s")
        .replace("293 s", "301 s")
    )
    assert script.without_timing(RUN_A) == script.without_timing(run_b)
    assert "1014/1014" in script.without_timing(RUN_A) and "0.6536" in script.without_timing(RUN_A)


def test_a_changed_digit_is_named_by_file_and_line(tmp_path, monkeypatch):
    script = _script()
    monkeypatch.setattr(script, "ROOT", tmp_path)
    doc = tmp_path / "GUIDE.md"
    doc.write_text("intro\n" + RUN_A + "\n", encoding="utf-8")
    assert script.first_drift(doc, "intro\n" + RUN_A.replace("in 4 s", "in 9 s") + "\n") is None
    drift = script.first_drift(doc, "intro\n" + RUN_A.replace("0.6536", "0.6511") + "\n")
    assert drift is not None and drift.startswith("GUIDE.md:5:") and "0.6511" in drift and "0.6536" in drift
    assert "lines in the docs" in str(script.first_drift(doc, "intro\n" + RUN_A + "\nmore\n"))
