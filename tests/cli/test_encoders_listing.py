"""`crsbench encoders --check-weights` on an 80-column terminal: every id whole (one types them),
and for missing weights where they go (issue 42 point 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from crsbench.features.lookup import list_encoders


def run_encoders(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRSBENCH_", "HF_"))}
    # An empty weights folder and Hugging Face cache: every pretrained encoder's weights are missing.
    env.update(COLUMNS="80", CRSBENCH_WEIGHTS=str(tmp_path / "weights"), HF_HUB_CACHE=str(tmp_path / "hf"))
    code = "import sys; from crsbench.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, *args, "encoders", "--check-weights", "--db", str(tmp_path / "w.duckdb")]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_every_id_is_whole_at_80_columns_and_missing_weights_say_where_to_go(tmp_path: Path) -> None:
    out = run_encoders(tmp_path).stdout
    lines = out.splitlines()
    rows = [line.split("│")[1:-1] for line in lines if line.startswith("│")]
    registered = {e.id: e.pretrained for e in list_encoders()}
    assert {cells[0].strip() for cells in rows} == set(registered)  # one row each, its id uncut
    table = [line for line in lines if not line.startswith("missing weights:")]
    assert max(len(line) for line in table) <= 80
    weights = {cells[0].strip(): cells[1].strip() for cells in rows}
    assert weights == {i: "missing" if pretrained else "random-init" for i, pretrained in registered.items()}
    hint = [line for line in lines if line.startswith("missing weights:")]
    assert len(hint) == 1
    assert f"put an encoder's files in {tmp_path / 'weights' / '<id>'}/" in hint[0]
    assert "extract --weights PATH" in hint[0] and "extract --allow-download (CRSBENCH_ALLOW_DOWNLOAD=1)" in hint[0]
    assert str(tmp_path / "hf") in hint[0]


def test_json_names_each_missing_encoders_files_and_folder(tmp_path: Path) -> None:
    listed = {r["id"]: r for r in json.loads(run_encoders(tmp_path, "--json").stdout)["encoders"]}
    needed = listed["resnet50"]["weights_needed"]
    assert needed.startswith("encoder 'resnet50' (resnet50.a1_in1k) has no local weights: it needs model.safetensors")
    assert f"put them in {tmp_path / 'weights' / 'resnet50'}/" in needed
    assert listed["tiny-vit"]["weights"] == "random-init" and listed["tiny-vit"]["weights_needed"] is None
