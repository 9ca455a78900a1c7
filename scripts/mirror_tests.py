"""Lay the tests out like the modules: tests/test_<stage>_<rest>.py -> tests/<stage>/test_<rest>.py.

    python scripts/mirror_tests.py            # move (git mv), then rewrite what names the moved files
    python scripts/mirror_tests.py --dry-run  # print the moves only

Idempotent: a second run finds nothing flat to move and changes nothing. What it does, in order:

* a flat test file whose name starts with a stage (`STAGES`) moves into that stage's folder
  (`test_core.py` -> `core/test_core.py`); one without a stage prefix (`test_layers.py`, checks
  of the project as a whole) stays in tests/;
* every other flat module but `conftest.py` (`*_support.py`, `runs_factory.py`, ...) is a test
  helper and moves into `tests/support/`, keeping its name;
* tests/ and each stage folder get an `__init__.py`, so the test modules are the packages
  `tests.<stage>.test_<rest>` (same basenames in two stages do not clash) and pytest puts the
  repository root on sys.path; pyproject's `pythonpath = ["tests"]` keeps `support.*` importable;
* imports follow: `from runs_factory import` -> `from support.runs_factory import` (tests/ and
  benchmarks/), `from test_report import` -> `from tests.report.test_report import`;
* a moved file's `Path(__file__)` arithmetic gains the level it moved down;
* text naming a moved file (Makefile, .ci/, scripts/, docs/, pyproject.toml, code comments) is
  rewritten, globs included (`tests/test_fault_*.py` -> `tests/fault/test_*.py`).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
SUPPORT = TESTS / "support"
STAGES = (
    "ingest",
    "features",
    "probes",
    "warehouse",
    "sql",
    "analyses",
    "report",
    "cli",
    "core",
    "fault",
    "scale",
    "zeroshot",
)
KEEP_FLAT = {"conftest.py", "__init__.py"}
# Files and folders whose text may name a test file (checked after the moves).
TEXT_ROOTS = (
    "Makefile",
    ".ci",
    "scripts",
    "docs",
    "benchmarks",
    "pyproject.toml",
    "tests",
    "crsbench",
    "ingest",
    "features",
    "probes",
    "warehouse",
    "sql",
)
TEXT_SUFFIXES = {".py", ".md", ".sh", ".toml", ".cfg", ".txt", ".sql", ""}
# One-off edits a move needs beyond the general rules, keyed by the file's old name.
SPECIAL: dict[str, list[tuple[str, str]]] = {
    # The child process imports this module by name: from the repository root, as a package.
    "test_features_perturb.py": [
        (
            "sys.path.insert(0, {!r}); from test_features_perturb import _digests; ",
            "sys.path.insert(0, {!r}); from tests.features.test_perturb import _digests; ",
        ),
        # (`deeper` then adds the level: parents[2], the repository root)
        ('str(__import__("pathlib").Path(__file__).parent)', 'str(__import__("pathlib").Path(__file__).parents[1])'),
    ],
    # The user-code encoder module is imported by its plain name from the helpers' folder.
    "test_features_user_code.py": [
        ("monkeypatch.syspath_prepend(str(TESTS))", 'monkeypatch.syspath_prepend(str(TESTS / "support"))')
    ],
    # The capability script imports `support.synthetic`: run it as a module from tests/.
    "test_probes_reproducible.py": [
        (
            'SCRIPT = Path(__file__).with_name("capability_grid.py")',
            "TESTS = Path(__file__).resolve().parent  # the script runs as `support.capability_grid` from tests/",
        ),
        (
            "[sys.executable, str(SCRIPT), str(tmp_path",
            '[sys.executable, "-m", "support.capability_grid", str(tmp_path',
        ),
        ("            env=env,\n", "            env=env,\n            cwd=TESTS,\n"),
    ],
}


def plan() -> tuple[dict[Path, Path], dict[str, str]]:
    """(old path -> new path, old test module name -> new dotted module name)."""
    moves: dict[Path, Path] = {}
    tests: dict[str, str] = {}
    for path in sorted(TESTS.glob("*.py")):
        name = path.name
        if name in KEEP_FLAT:
            continue
        if not name.startswith("test_"):
            moves[path] = SUPPORT / name
            continue
        stem = name[len("test_") : -len(".py")]
        stage = next((s for s in STAGES if stem == s or stem.startswith(s + "_")), None)
        if stage is None:
            continue
        rest = stem if stem == stage else stem[len(stage) + 1 :]
        moves[path] = TESTS / stage / f"test_{rest}.py"
        tests[path.stem] = f"tests.{stage}.test_{rest}"
    for stage in STAGES:  # moved before: a new flat file may still import them by their flat name
        for path in (TESTS / stage).glob("test_*.py"):
            rest = path.stem[len("test_") :]
            flat = f"test_{stage}" if rest == stage else f"test_{stage}_{rest}"
            tests.setdefault(flat, f"tests.{stage}.{path.stem}")
    return moves, tests


def tracked(path: Path) -> bool:
    return (
        subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], cwd=ROOT, capture_output=True).returncode == 0
    )


def move(old: Path, new: Path) -> None:
    new.parent.mkdir(parents=True, exist_ok=True)
    if new.exists():
        raise SystemExit(f"{new.relative_to(ROOT)} exists; refusing to overwrite it with {old.relative_to(ROOT)}")
    if tracked(old):
        subprocess.run(["git", "mv", str(old), str(new)], cwd=ROOT, check=True)
    else:
        old.rename(new)


def deeper(text: str) -> str:
    """`Path(__file__)` arithmetic for a file one folder further down."""
    text = re.sub(
        r"(Path\(__file__\)(?:\.resolve\(\))?)\.parents\[(\d)\]", lambda m: f"{m[1]}.parents[{int(m[2]) + 1}]", text
    )
    text = re.sub(r"(Path\(__file__\)(?:\.resolve\(\))?)\.parent\.parent(?!\.parent)", r"\1.parents[2]", text)
    text = re.sub(r"(Path\(__file__\)(?:\.resolve\(\))?)\.parent(?![\w.]*parent)\b", r"\1.parents[1]", text)
    return text


def rewrite_imports(text: str, helpers: set[str], tests: dict[str, str]) -> str:
    for mod in helpers:
        text = re.sub(rf"(^|\n)(\s*)from (?:tests\.)?{mod} import ", rf"\1\2from support.{mod} import ", text)
        text = re.sub(rf"(^|\n)(\s*)import {mod}(\s|$)", rf"\1\2import support.{mod} as {mod}\3", text)
    for old, new in tests.items():
        text = re.sub(rf"(^|\n)(\s*)from (?:tests\.)?{old} import ", rf"\1\2from {new} import ", text)
        text = re.sub(rf"(^|\n)(\s*)import (?:tests\.)?{old} as ", rf"\1\2import {new} as ", text)
    return text


def rewrite_paths(text: str, helpers: set[str]) -> str:
    stages = "|".join(STAGES)
    text = re.sub(rf"tests/test_({stages})_([\w*]+)\.py", r"tests/\1/test_\2.py", text)
    text = re.sub(rf"tests/test_({stages})\.py", r"tests/\1/test_\1.py", text)
    for mod in helpers:
        text = re.sub(rf"tests/{mod}\.py", f"tests/support/{mod}.py", text)
    return text


def text_files() -> list[Path]:
    out: list[Path] = []
    for name in TEXT_ROOTS:
        path = ROOT / name
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out += [
                p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts
            ]
    return [p for p in out if p.resolve() != Path(__file__).resolve()]


def ensure_packages() -> list[Path]:
    made = []
    for folder in [TESTS, *(TESTS / s for s in STAGES)]:
        init = folder / "__init__.py"
        if folder.is_dir() and not init.exists():
            init.write_text("")
            made.append(init)
    return made


def ensure_pythonpath() -> None:
    path = ROOT / "pyproject.toml"
    text = path.read_text()
    if re.search(r"^pythonpath\s*=", text, re.M):
        return
    marker = 'testpaths = ["tests"]\n'
    if marker not in text:
        raise SystemExit('pyproject.toml: no `testpaths = ["tests"]` line to add `pythonpath` beside')
    text = text.replace(
        marker,
        marker + '# tests/support/ is the package `support` (tests are `tests.<stage>.*`)\npythonpath = ["tests"]\n',
    )
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    moves, tests = plan()
    for old, new in moves.items():
        print(f"{old.relative_to(ROOT)} -> {new.relative_to(ROOT)}")
    if args.dry_run or not moves:
        return 0
    helpers = {old.stem for old, new in moves.items() if new.parent == SUPPORT}
    helpers |= {p.stem for p in SUPPORT.glob("*.py") if p.name != "__init__.py"} - {"synthetic"}
    for old, new in moves.items():
        move(old, new)
        text = new.read_text()
        for a, b in SPECIAL.get(old.name, []):
            if a not in text:
                raise SystemExit(f"{new.relative_to(ROOT)}: expected {a!r} (SPECIAL for {old.name})")
            text = text.replace(a, b)
        new.write_text(deeper(text))
    for path in text_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        new_text = rewrite_paths(text, helpers)
        if path.suffix == ".py" and (TESTS in path.parents or path.parent.name == "benchmarks"):
            new_text = rewrite_imports(new_text, helpers, tests)
        if new_text != text:
            path.write_text(new_text)
    made = ensure_packages()
    ensure_pythonpath()
    subprocess.run(["git", "add", *map(str, made), "pyproject.toml"], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
