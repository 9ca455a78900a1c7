"""Warehouses copied and moved into hostile folder names keep claiming, probing and counting their
own runs, beside a decoy folder the hostile name would match as a glob (issue 17 item 8)."""

from __future__ import annotations

import json
import shutil

from support.fault_support import raw_runs, synthetic_warehouse

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.warehouse.connection import Warehouse

HOSTILE = "br[1] st*r \u00fc"
DECOY = "br1 stXr \u00fc"  # matched by HOSTILE read as a glob
ARGS = ["probe", "--probe", "logreg", "--depth", "1.0", "--fraction", "1.0"]


def _probe(db, *seeds: int) -> None:
    console.configure(json_mode=True)
    try:
        assert main(["--json", *ARGS, *[a for s in seeds for a in ("--seed", str(s))], "--db", str(db)]) == 0
    finally:
        console.configure()


def _count(db) -> int:
    with Warehouse.open(db, read_only=True) as wh:
        return int(wh.sql("select count(*) n from runs")["n"].item())


def test_copies_and_moves_into_hostile_folders_probe_and_count_their_own(tmp_path, capsys):
    (tmp_path / "template").mkdir()
    template = synthetic_warehouse(tmp_path / "template")
    _probe(template, 0)
    capsys.readouterr()
    per_seed = _count(template)
    hostile = tmp_path / HOSTILE / template.name
    decoy = tmp_path / DECOY / template.name
    shutil.copytree(template.parent, hostile.parent)
    shutil.copytree(template.parent, decoy.parent)
    _probe(decoy, 0, 1, 2)  # the decoy grows; the hostile copy must never count its runs
    assert _count(decoy) == 3 * per_seed
    assert _count(hostile) == per_seed

    capsys.readouterr()
    _probe(hostile, 0, 1)  # claims and the done check work under the hostile path
    report = json.loads(capsys.readouterr().out)
    assert report["fitted"] == 2 and report["skipped"] == 2
    raw = raw_runs(hostile)
    assert raw["run_id"].is_unique and len(raw) == 2 * per_seed == _count(hostile)
    assert not [
        p for p in (hostile.parent / (hostile.name + ".parts") / "claims").iterdir() if not p.name.startswith(".")
    ]

    moved = tmp_path / (HOSTILE + " moved") / template.name
    shutil.move(hostile.parent, moved.parent)
    assert _count(moved) == 2 * per_seed
    assert main(["--quiet", "warehouse", "compact", "--db", str(moved)]) == 0
    assert _count(moved) == 2 * per_seed and _count(decoy) == 3 * per_seed
