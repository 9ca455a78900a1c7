"""crsbench.core: the encoder key, the registry class, the SQL constants, and one home per name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import duckdb
import pytest

import crsbench.core.registry as registry_module
from crsbench.core import AXES, CRS_WEIGHTS, FROZEN, CrsbenchError, EncoderKey, InputError, Registry, crs_constants_sql

REPO = Path(__file__).resolve().parents[2]
# Every code tree the project ships or runs (pyproject's package-dir mapping, plus benchmarks).
CODE_DIRS = ("crsbench", "ingest", "features", "probes", "warehouse", "benchmarks")
CORE_DIR = REPO / "crsbench" / "core"
CORE_NAMES = {
    "AXES",
    "AXIS_WEIGHTS",
    "TERM_WEIGHTS",
    "CRS_WEIGHTS",
    "DEPTHS",
    "PERTURBATIONS",
    "SEVERITIES",
    "CLEAN",
    "CONDITIONS",
    "PERTURBED_CONDITIONS",
    "SHIFT",
    "FROZEN",
    "PRIMARY_PROBE",
}
CORE_CLASSES = {"CrsbenchError", "InputError", "ScreenInputError", "EncoderKey", "Registry"}


def _code_files() -> list[Path]:
    files = [p for d in CODE_DIRS for p in (REPO / d).rglob("*.py")]
    return [p for p in files if CORE_DIR not in p.parents]


# -- EncoderKey -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, encoder_id, regime",
    [
        ("vit_tiny", "vit_tiny", FROZEN),
        ("vit_tiny@lora-s0", "vit_tiny", "lora-s0"),
        ("timm:convnext_tiny@lora-s3", "timm:convnext_tiny", "lora-s3"),
    ],
)
def test_encoder_key_parses_and_prints_back(text, encoder_id, regime):
    key = EncoderKey.parse(text)
    assert (key.encoder_id, key.regime) == (encoder_id, regime)
    assert str(key) == text and EncoderKey.parse(str(key)) == key


@pytest.mark.parametrize("text", ["", "@lora-s0", "vit@", "a@b@c"])
def test_malformed_encoder_keys_are_user_errors(text):
    with pytest.raises(CrsbenchError):
        EncoderKey.parse(text)


def test_error_hierarchy_and_exit_codes():
    # Their one door is crsbench.core (tests/core/test_one_door.py); the old homes no longer re-export them.
    from crsbench.ingest import types as ingest_types

    assert not hasattr(ingest_types, "CrsbenchError") and not hasattr(ingest_types, "ProgressFn")
    assert issubclass(InputError, CrsbenchError) and InputError("x").exit_code == 1


# -- Registry ---------------------------------------------------------------------------------


def test_registry_decorator_lookup_listing_and_duplicates():
    reg: Registry[tuple[str, object, int]] = Registry("widget", make=lambda name, fn, size: (name, fn, size))

    @reg.register("round_peg", size=3)
    def peg() -> None: ...

    reg.register("square_hole", size=4)(len)
    assert peg.__name__ == "peg"  # the decorator hands back what it wrapped
    assert reg.get("round_peg") == ("round_peg", peg, 3)
    assert reg.names() == ["round_peg", "square_hole"] and "square_hole" in reg and len(reg) == 2
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("round_peg", size=1)(print)
    with pytest.raises(
        CrsbenchError,
        match=r"unknown widget 'round_pge'; did you mean 'round_peg'\? "
        r"\(expected one of: round_peg, square_hole\)",
    ):
        reg.get("round_pge")
    with pytest.raises(CrsbenchError, match=r"unknown widget 'zzz' \(expected one of"):
        reg.get("zzz")


def test_registry_loads_builtins_and_entry_point_plugins_once(monkeypatch, capsys):
    reg: Registry[str] = Registry("thing", builtins=("json",), entry_point_group="crsbench.things")
    loaded = []

    class Point:
        name, value = "extra", "thingpkg.plugin:register"

        def load(self) -> None:
            loaded.append(1)
            reg.add("plugin-thing", "from a plugin")

    calls = []
    monkeypatch.setattr(registry_module, "entry_points", lambda group: calls.append(group) or [Point()])
    assert reg.get("plugin-thing") == "from a plugin"
    assert reg.names() == ["plugin-thing"]
    assert calls == ["crsbench.things"] and loaded == [1]
    # the import of an installed plugin is named, once, before it happens
    assert capsys.readouterr().err.splitlines() == [
        "crsbench: thing plugin 'extra' of an installed package: importing thingpkg.plugin:register"
    ]


def test_a_thread_looking_up_while_another_loads_sees_every_entry_and_a_resolver_adds_on_demand(monkeypatch):
    import threading
    import time

    reg: Registry[str] = Registry("gadget", entry_point_group="crsbench.gadgets")
    started = threading.Event()

    class SlowPoint:
        name, value = "slow", "gadgets:register"

        def load(self) -> None:  # a plugin whose import takes a while, registering as it goes
            started.set()
            time.sleep(0.3)
            reg.add("late", "registered last")

    monkeypatch.setattr(registry_module, "entry_points", lambda group: [SlowPoint()])
    seen: list[str] = []
    loader = threading.Thread(target=reg.load)
    loader.start()
    started.wait(5)
    seen.append(reg.get("late"))  # without waiting for the load, this would be an unknown name
    loader.join()
    assert seen == ["registered last"]
    reg.set_resolver(lambda name: reg.add(name, f"made for {name}") if name.startswith("made.") else None)
    assert "made.x" in reg and reg.get("made.y") == "made for made.y"
    assert "other" not in reg and reg.names() == ["late", "made.x", "made.y"]


# -- SQL reads the constants -------------------------------------------------------------------


def test_crs_weight_macro_returns_core_weights_and_null_for_unknown_names():
    con = duckdb.connect()
    con.execute(crs_constants_sql())
    for name, value in CRS_WEIGHTS.items():
        assert con.execute("select fn_crs_weight(?)", [name]).fetchone()[0] == value
    assert con.execute("select fn_crs_weight('w_x')").fetchone()[0] is None
    keys = con.execute("select fn_encoder_key('vit', 'frozen'), fn_encoder_key('vit', 'lora-s1')").fetchone()
    assert keys == (str(EncoderKey("vit")), str(EncoderKey("vit", "lora-s1")))


def test_weights_sum_to_one_per_family():
    axis = sum(CRS_WEIGHTS[w] for w in ("w_d", "w_c", "w_le", "w_r"))
    terms = sum(CRS_WEIGHTS[w] for w in ("w_dom", "w_ideal", "w_worst"))
    assert axis == pytest.approx(1.0) and terms == pytest.approx(1.0) and len(AXES) == 4


# -- one home per name -------------------------------------------------------------------------


def _redefinitions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(REPO) if REPO in path.parents else path.name
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in CORE_NAMES:
                found.append(f"{where}:{node.lineno}: assigns {target.id}")
        if isinstance(node, ast.ClassDef) and node.name in CORE_CLASSES:
            found.append(f"{where}:{node.lineno}: defines class {node.name}")
        if isinstance(node, (ast.Tuple, ast.List)):
            strings = {e.value for e in node.elts if isinstance(e, ast.Constant)}
            if set(AXES) <= strings:
                found.append(f"{where}:{node.lineno}: spells out the axis names")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"partition", "split", "rpartition", "rsplit"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "@"
            and "netloc" not in ast.unparse(node.func.value)
        ):  # URL user@host parsing is not a key
            found.append(f"{where}:{node.lineno}: splits an encoder key by hand")
        if isinstance(node, ast.JoinedStr) and re.search(
            r"\{[^{}]*(encoder|entry)[^{}]*\}@\{[^{}]*regime", ast.unparse(node)
        ):
            found.append(f"{where}:{node.lineno}: formats an encoder key by hand")
    return found


def test_no_module_outside_core_redefines_a_core_name():
    found = [hit for path in _code_files() for hit in _redefinitions(path)]
    assert found == []


def test_the_grep_catches_a_redefinition(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        'FROZEN = "frozen"\nk = f"{encoder_id}@{regime}"\nx = key.partition("@")\nA = ["discrimination", '
        '"calibration", "label_efficiency", "robustness"]\nclass InputError(Exception): ...\n'
    )
    assert sorted(hit.split(": ", 1)[1] for hit in _redefinitions(bad)) == [
        "assigns FROZEN",
        "defines class InputError",
        "formats an encoder key by hand",
        "spells out the axis names",
        "splits an encoder key by hand",
    ]


def test_sql_spells_no_weight_or_key_format():
    sql_dir = REPO / "sql"
    code = "\n".join(
        line.split("--", 1)[0]
        for f in sorted(sql_dir.rglob("*.sql"))
        for line in f.read_text(encoding="utf-8").splitlines()
    )
    assert not re.search(r"w_(d|c|le|r|dom|ideal|worst)\s*:=\s*[0-9.]", code)
    assert "|| '@' ||" not in code


def test_core_imports_nothing_else_from_crsbench():
    for path in CORE_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("crsbench"):
                assert node.module.startswith("crsbench.core"), f"{path.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert all(
                    not a.name.startswith("crsbench") or a.name.startswith("crsbench.core") for a in node.names
                ), path.name
