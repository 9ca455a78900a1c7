"""Exit codes and --json output of the CLI commands, called in-process through `crsbench.cli.main`.

0 ok; 1 user error with a one-line message on stderr (and, with --json, a JSON document
`{"error", "exit_code"}` on stdout); 2 internal error.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer

from crsbench.cli import app, main
from crsbench.cli.lazy import load_all
from crsbench.report import SECTION_IDS
from tests.report.test_report import PROFILES, _run_rows, build_warehouse


def _leaf_commands() -> list[list[str]]:
    """Every runnable command path, e.g. ['panel', 'freeze'], from the app itself."""

    def walk(group, prefix: list[str]) -> list[list[str]]:
        out = []
        for name, command in sorted(group.commands.items()):
            out += walk(command, [*prefix, name]) if hasattr(command, "commands") else [[*prefix, name]]
        return out

    load_all()  # commands load lazily; every one is wanted here
    return walk(typer.main.get_command(app), [])


LEAVES = _leaf_commands()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_warehouse(tmp_path_factory.mktemp("cli") / "wh.duckdb")


def run(capsys: pytest.CaptureFixture, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_json(out: str) -> dict:
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"expected one JSON document, got: {out[:300]!r}"
    return json.loads(lines[0])


def test_the_commands_this_suite_covers_are_registered():
    for command in (
        ["warehouse", "init"],
        ["sql"],
        ["status"],
        ["report"],
        ["panel", "freeze"],
        ["panel", "list"],
        ["panel", "show"],
        ["leaderboard"],
        ["analyze"],
        ["ingest"],
        ["make-suite"],
        ["datasets"],
        ["adapters"],
    ):
        assert command in LEAVES


@pytest.mark.parametrize("command", LEAVES, ids=[" ".join(c) for c in LEAVES])
def test_help_exits_0_and_unknown_option_is_a_one_line_user_error(command, capsys):
    code, out, _ = run(capsys, [*command, "--help"])
    assert code == 0 and "Usage" in out
    code, out, err = run(capsys, [*command, "--no-such-option"])
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: No such option: --no-such-option")
    assert f"crsbench {' '.join(command)} --help" in err


def test_user_error_exit_1_and_json_error_document(tmp_path, capsys):
    missing = tmp_path / "absent.duckdb"
    code, out, err = run(capsys, ["status", "--db", str(missing)])
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "does not exist" in err and "crsbench warehouse init" in err
    code, out, err = run(capsys, ["--json", "status", "--db", str(missing)])
    assert code == 1 and err.count("\n") == 1
    assert one_json(out) == {"error": err.strip(), "exit_code": 1}
    assert not missing.exists()  # a reader never creates the file


def test_user_errors_of_each_family_exit_1(warehouse, tmp_path, capsys):
    cases = [
        ["sql", "select * from no_such_table", "--db", str(warehouse)],
        ["report", "--panel", "nope", "--db", str(warehouse), "--out", str(tmp_path / "r.html")],
        ["panel", "show", "nope", "--db", str(warehouse)],
        [
            "panel",
            "freeze",
            "main",
            "--encoders",
            "alpha,bravo",
            "--allow-small",
            "--db",
            str(warehouse),
        ],  # already frozen
        ["analyze", "no-such-analysis", "--db", str(warehouse)],
        ["ingest", "aptos2019", str(tmp_path / "nothing-here"), "--name", "x", "--db", str(tmp_path / "w.duckdb")],
    ]
    for argv in cases:
        code, out, err = run(capsys, argv)
        assert code == 1, argv
        assert out == "" and err.count("\n") == 1 and err.startswith("error: "), (argv, err)
    assert not (tmp_path / "r.html").exists()


def test_internal_error_exit_2_one_line_and_debug_reraises(warehouse, capsys, monkeypatch):
    import crsbench.reads.status as status_module

    def broken(wh):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(status_module, "warehouse_status", broken)
    code, out, err = run(capsys, ["status", "--db", str(warehouse)])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("internal error: RuntimeError: disk on fire")
    code, out, err = run(capsys, ["--json", "status", "--db", str(warehouse)])
    assert code == 2 and one_json(out)["exit_code"] == 2
    monkeypatch.setenv("CRSBENCH_DEBUG", "1")
    with pytest.raises(RuntimeError, match="disk on fire"):
        main(["status", "--db", str(warehouse)])


def test_json_output_of_the_warehouse_commands(warehouse, tmp_path, capsys):
    runs = _run_rows()
    doc = one_json(run(capsys, ["--json", "warehouse", "init", "--db", str(tmp_path / "new.duckdb")])[1])
    assert doc["schema_version"] >= 1 and doc["db"].endswith("new.duckdb")
    doc = one_json(run(capsys, ["--json", "sql", "select count(*) as n from runs", "--db", str(warehouse)])[1])
    assert doc == {"rows": [{"n": len(runs)}]}
    doc = one_json(run(capsys, ["--json", "status", "--db", str(warehouse)])[1])
    assert doc["counts"]["runs"] == len(runs)


def test_json_output_of_the_feature_commands(warehouse, capsys):
    doc = one_json(run(capsys, ["--json", "encoders"])[1])
    assert {"vit-b16", "resnet50"} <= {e["id"] for e in doc["encoders"]}
    doc = one_json(run(capsys, ["--json", "feature-sets", "--db", str(warehouse)])[1])
    assert doc == {"feature_sets": []}  # build_warehouse extracts nothing


def test_json_output_of_report(warehouse, tmp_path, capsys):
    out = tmp_path / "r.html"
    code, stdout, _ = run(
        capsys, ["--json", "report", "--db", str(warehouse), "--out", str(out), "--figures", str(tmp_path / "png")]
    )
    doc = one_json(stdout)
    assert code == 0 and out.exists()
    # build_warehouse extracts nothing: the cost section says which command would fill it
    assert doc["sections"] == {s: "ok" for s in SECTION_IDS if s != "cost"} | {"cost": doc["sections"]["cost"]}
    assert doc["sections"]["cost"].startswith("crsbench extract")
    assert doc["panel"] == "main" and doc["random_init"] == ["echo"]
    assert all(Path(p).is_file() for p in doc["figures"].values())
    # --quiet: the file is still written, nothing is printed
    code, stdout, stderr = run(capsys, ["--quiet", "report", "--db", str(warehouse), "--out", str(out), "--force"])
    assert (code, stdout, stderr) == (0, "", "")


def test_json_output_of_panel_leaderboard_and_analyze(warehouse, tmp_path, capsys):
    db = tmp_path / "copy.duckdb"
    shutil.copy(warehouse, db)
    shutil.copytree(warehouse.with_name(warehouse.name + ".parts"), db.with_name(db.name + ".parts"))
    doc = one_json(
        run(
            capsys,
            [
                "--json",
                "panel",
                "freeze",
                "second",
                "--encoders",
                "alpha,bravo,delta",
                "--allow-small",
                "--db",
                str(db),
            ],
        )[1]
    )
    assert doc["panel"] == "second" and doc["members"] == ["alpha", "bravo", "delta"]
    doc = one_json(run(capsys, ["--json", "panel", "list", "--db", str(db)])[1])
    assert sorted(p["panel"] for p in doc["panels"]) == ["main", "second"]
    doc = one_json(run(capsys, ["--json", "panel", "show", "main", "--db", str(db)])[1])
    assert doc["members"] == ["alpha", "bravo", "charlie", "delta"]
    doc = one_json(run(capsys, ["--json", "leaderboard", "--panel", "main", "--db", str(db)])[1])
    assert {r["encoder_id"] for r in doc["leaderboard"]} == set(PROFILES)
    doc = one_json(run(capsys, ["--json", "analyze", "list"])[1])
    assert {"e2", "e3", "e6"} <= {a["analysis"] for a in doc["analyses"]}
    doc = one_json(run(capsys, ["--json", "analyze", "e3", "--db", str(db)])[1])
    assert doc["analysis"] == "e3" and "analysis_e3_sweeps" in doc["tables"]


def test_json_output_of_the_ingest_commands(tmp_path, capsys):
    suite = tmp_path / "suite"
    doc = one_json(run(capsys, ["--json", "make-suite", str(suite), "--scale", "0.2", "--image-size", "32"])[1])
    assert set(doc["datasets"]) == {"isic2019", "aptos2019", "chexpert", "mimic-cxr"}
    db = str(tmp_path / "w.duckdb")
    doc = one_json(
        run(capsys, ["--json", "ingest", "aptos2019", doc["datasets"]["aptos2019"], "--name", "aptos", "--db", db])[1]
    )
    assert doc["dataset"] == "aptos" and doc["task"] == "ordinal"
    assert doc["n_images"] == sum(doc["splits"].values())
    doc = one_json(run(capsys, ["--json", "datasets", "--db", db])[1])
    assert "aptos" in json.dumps(doc)
    doc = one_json(run(capsys, ["--json", "adapters"])[1])
    assert "aptos2019" in json.dumps(doc)
