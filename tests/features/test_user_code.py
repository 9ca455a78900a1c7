"""Data folders configure, never execute: a crsbench.toml beside a warehouse may not run Python
code under any command; code entries load only from a file named with --allow-code, and their
callable is called only once its declared arguments fit its signature."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from support.user_encoders_support import cli, isolate_registry, stored_features

from crsbench.core import CrsbenchError
from crsbench.features import user

TESTS = Path(__file__).resolve().parents[1]
# Runs several CLI commands in one interpreter (one start-up), each framed on stderr with its exit code.
DRIVER = textwrap.dedent("""
    import json, sys
    from crsbench.cli import main
    for argv in json.loads(sys.argv[1]):
        print("@@@ " + " ".join(argv), file=sys.stderr, flush=True)
        print(f"@@@ rc={main(argv)}", file=sys.stderr, flush=True)
""")
CODE_TABLE = """
[encoder.{id}]
source = "python"
model = "{model}"
[encoder.{id}.overrides]
input_size = 32
mean = [0.5, 0.5, 0.5]
std = [0.25, 0.25, 0.25]
depth_blocks = "stages"
[encoder.{id}.model_kwargs]
{kwargs}
"""


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    yield from isolate_registry(monkeypatch, tmp_path)


def _framed(stderr: str) -> list[tuple[str, int, list[str]]]:
    """(command, exit code, its stderr lines) for each command the driver ran."""
    out, command, lines = [], "", []
    for line in stderr.splitlines():
        if line.startswith("@@@ rc="):
            out.append((command, int(line[7:]), lines))
        elif line.startswith("@@@ "):
            command, lines = line[4:], []
        else:
            lines.append(line)
    return out


def test_a_planted_crsbench_toml_runs_nothing_under_any_command(ingested_db, tmp_path):
    folder = ingested_db.parent  # the warehouse "received from a colleague", with its crsbench.toml
    marker = tmp_path / "PWNED"
    planted = folder / "crsbench.toml"
    planted.write_text(CODE_TABLE.format(id="derm-helper", model="os:system", kwargs=f'command = "touch {marker}"'))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRSBENCH_")}
    db = ingested_db.name
    first = subprocess.run(
        [str(Path(sys.executable).parent / "crsbench"), "extract", "-e", "derm-helper", "-d", "isic2019", "--db", db],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert first.returncode == 1 and not marker.exists()
    refusal = first.stderr.strip()
    assert len(refusal.splitlines()) == 1
    assert f"{planted}: [encoder.derm-helper] source = 'python' (model 'os:system')" in refusal
    assert f"--encoders {planted} --allow-code" in refusal
    commands = [
        ["extract", "-e", "all-tiny", "-d", "all", "--db", db],
        # an opt-in never reaches a file crsbench found on its own
        ["extract", "-e", "derm-helper", "-d", "isic2019", "--db", db, "--allow-code"],
        ["encoders", "--db", db],
        ["encoders", "--db", db, "--allow-code"],
        ["status", "--db", db],
    ]
    rest = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)],
        cwd=folder,
        env={**env, "CRSBENCH_ALLOW_CODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rest.returncode == 0, rest.stderr[-2000:]
    ran = _framed(rest.stderr)
    assert [c for c, _, _ in ran] == [" ".join(c) for c in commands]
    for command, rc, lines in ran:
        if command.startswith("status"):
            assert rc == 0, lines  # status reads no encoder file
        else:
            assert (rc, [line.removeprefix("error: ") for line in lines]) == (1, [refusal.removeprefix("error: ")])
    assert not marker.exists()
    assert not (folder / (db + ".features.zarr")).exists()  # nothing extracted either


def _code_file(tmp_path: Path, kwargs: str, model: str = "code_encoder_support:build") -> Path:
    toml = tmp_path / "mine.toml"
    toml.write_text(CODE_TABLE.format(id="my-cnn", model=model, kwargs=kwargs))
    return toml


def test_an_explicit_file_runs_its_callable_only_with_allow_code(ingested_db, tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(TESTS / "support"))
    toml = _code_file(tmp_path, "width = 6")
    args = ["extract", "--db", str(ingested_db), "--encoders", str(toml), "-e", "my-cnn", "-d", "aptos2019"]
    assert cli(*args) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{toml}: [encoder.my-cnn] source = 'python'" in err
    assert "--allow-code" in err and "CRSBENCH_ALLOW_CODE=1" in err
    assert not Path(str(ingested_db) + ".features.zarr").exists()

    assert cli(*args, "--allow-code") == 0
    notice = capsys.readouterr().err
    assert "importing module 'code_encoder_support', then calling 'build'" in notice
    assert len([line for line in notice.splitlines() if "runs Python code" in line]) == 1
    feats = stored_features(ingested_db, "aptos2019", "my-cnn")
    assert feats.shape[1] == 6 and np.isfinite(feats).all()  # model_kwargs reached the callable


def test_the_environment_route_needs_the_opt_in_too(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(TESTS / "support"))
    toml = _code_file(tmp_path, "width = 6")
    monkeypatch.setenv("CRSBENCH_ENCODERS", str(toml))
    db = str(tmp_path / "w.duckdb")
    assert cli("encoders", "--db", db) == 1
    assert "CRSBENCH_ALLOW_CODE=1" in capsys.readouterr().err
    monkeypatch.setenv("CRSBENCH_ALLOW_CODE", "1")
    assert cli("encoders", "--db", db) == 0
    listed = {r["id"]: (r["origin"], r["loader"]) for r in json.loads(capsys.readouterr().out)["encoders"]}
    assert listed["my-cnn"] == (f"toml:{toml}", "python")


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        ('marker = "{marker}"\ncolour = "red"', "got an unexpected keyword argument 'colour'"),
        ("width = 4", "missing a required argument: 'marker'"),
    ],
)
def test_arguments_that_do_not_fit_the_signature_call_nothing(
    ingested_db, tmp_path, monkeypatch, capsys, kwargs, expected
):
    monkeypatch.syspath_prepend(str(TESTS / "support"))
    marker = tmp_path / "called"
    toml = _code_file(tmp_path, kwargs.format(marker=marker), model="code_encoder_support:build_and_mark")
    args = ["extract", "--db", str(ingested_db), "--encoders", str(toml), "-e", "my-cnn", "-d", "aptos2019"]
    assert cli(*args, "--allow-code") == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 2 and "runs Python code" in err[0]  # the notice, then the one-line error
    assert (
        expected in err[1]
        and "nothing was called" in err[1]
        and "code_encoder_support:build_and_mark(marker:" in err[1]
    )
    assert not marker.exists()


def test_the_same_factory_with_fitting_arguments_is_called(ingested_db, tmp_path, monkeypatch):
    # The check above is what stopped the call: with arguments that fit, the marker appears.
    monkeypatch.syspath_prepend(str(TESTS / "support"))
    marker = tmp_path / "called"
    toml = _code_file(tmp_path, f'marker = "{marker}"\nwidth = 4', model="code_encoder_support:build_and_mark")
    assert cli("encoders", "--db", str(ingested_db), "--encoders", str(toml), "--allow-code") == 0
    assert not marker.exists()  # listing imports nothing
    args = ["extract", "--db", str(ingested_db), "--encoders", str(toml), "-e", "my-cnn", "-d", "aptos2019"]
    assert cli(*args, "--allow-code") == 0
    assert marker.read_text() == "called\n"


@pytest.mark.parametrize(
    "extra,field",
    [
        ("[encoder.x.overrides]\ntrust_remote_code = true\n", "overrides.trust_remote_code = True"),
        ("[encoder.x.model_kwargs]\ntrust_remote_code = true\n", "model_kwargs.trust_remote_code = True"),
        ('[encoder.x.model_kwargs]\ncode_revision = "main"\n', "model_kwargs.code_revision = 'main'"),
        ("[encoder.x.overrides]\ntrust_pickle = true\n", "overrides.trust_pickle = True"),
    ],
)
def test_trust_remote_code_only_from_an_explicit_file_with_allow_code(tmp_path, extra, field):
    file = tmp_path / "crsbench.toml"
    file.write_text('[encoder.x]\nsource = "timm"\nmodel = "resnet18"\npretrained = false\n' + extra)
    hints = {user.FOUND: f"name the file yourself: --encoders {file} --allow-code", user.GIVEN: "add --allow-code"}
    for trust, hint in hints.items():
        with pytest.raises(CrsbenchError) as err:
            user.read_encoder_file(file, trust)
        assert f"[encoder.x] {field} would run Python code" in str(err.value) and hint in str(err.value)
    (entry,) = user.read_encoder_file(file, user.CODE) if "code_revision" not in field else (None,)
    if "trust_remote_code" in field:
        assert entry.trust_remote_code and "trust_remote_code" not in entry.model_kwargs
    if "trust_pickle" in field:
        assert entry.trust_pickle


def test_a_found_file_with_library_models_still_loads(tmp_path, capsys):
    # The rule refuses code, not data: weights, preprocessing and conversions stay declarable.
    (tmp_path / "crsbench.toml").write_text(
        textwrap.dedent("""
        [encoder.beside]
        source = "timm"
        model = "resnet18"
        weights = "w.safetensors"
        [encoder.beside.overrides]
        input_size = 48
        trust_remote_code = false
        [encoder.beside.convert]
        strip_prefixes = ["module."]
    """)
    )
    assert cli("encoders", "--db", str(tmp_path / "w.duckdb")) == 0
    listed = {r["id"]: r for r in json.loads(capsys.readouterr().out)["encoders"]}
    assert listed["beside"]["input_size"] == 48 and listed["beside"]["loader"] == "timm"
