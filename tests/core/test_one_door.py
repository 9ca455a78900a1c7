"""One door per concept: the names `crsbench.core` exports (errors, protocol constants, keys,
`ProgressFn`, the registry class) are imported from `crsbench.core` itself, everywhere.

Not from a submodule of core (`crsbench.core.errors`), not from a module that happens to hold them
(`crsbench.ingest.types`, `crsbench.features.store`): such a second door keeps working after the
name moves or changes, so two spellings of one concept drift apart unnoticed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import crsbench.core

REPO = Path(__file__).resolve().parents[2]
CORE = "crsbench.core"
NAMES = frozenset(crsbench.core.__all__)
# Everything that imports crsbench: the package's folders, the tests, benchmarks and scripts.
ROOTS = ("crsbench", "ingest", "features", "probes", "warehouse", "sql", "tests", "benchmarks", "scripts")
# Re-exports kept on purpose, each with its reason.
KEPT = {("crsbench/__init__.py", "__version__"): "`crsbench.__version__` is where Python tools look for it"}
_FENCE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _in_core(path: Path) -> bool:
    return path.resolve().is_relative_to(REPO / "crsbench" / "core")


def second_doors(source: str, where: str) -> list[str]:
    """`where:line: name from module` for every import of a core name from a crsbench module other
    than crsbench.core, at any depth of the module (functions, TYPE_CHECKING blocks included)."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        module = node.module if isinstance(node, ast.ImportFrom) and node.level == 0 else None
        if module and module != CORE and (module == "crsbench" or module.startswith("crsbench.")):
            bad += [f"{where}:{node.lineno}: {a.name} from {module}" for a in node.names if a.name in NAMES]
    return bad


def _python_files() -> list[Path]:
    return sorted(p for root in ROOTS for p in (REPO / root).rglob("*.py") if not _in_core(p))


def test_core_exports_every_protocol_concept():
    for name in ("CrsbenchError", "InputError", "DEPTHS", "CONDITIONS", "LABEL_FRACTIONS", "FRACTION_SEEDS"):
        assert name in NAMES
    for name in ("SPLITS", "CALIB", "ProgressFn", "no_progress", "EncoderKey", "default_db_path"):
        assert name in NAMES
    assert crsbench.core.SPLITS == ("train", "calib", "test") and crsbench.core.CALIB == "calib"


def test_no_module_imports_a_core_name_from_another_module():
    bad = [
        line for path in _python_files() for line in second_doors(path.read_text("utf-8"), str(path.relative_to(REPO)))
    ]
    assert bad == []


def test_no_docs_snippet_imports_a_core_name_from_another_module():
    bad = []
    for doc in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")]):
        for block in _FENCE.findall(doc.read_text("utf-8")):
            bad += second_doors(block, doc.name)
    assert bad == []


def test_no_module_outside_core_defines_or_re_exports_a_core_name():
    """A module-level `CALIB = "calib"` or `__all__ = ["CONDITIONS", ...]` elsewhere is a second door too."""
    bad = []
    for path in _python_files():
        if path.is_relative_to(REPO / "tests"):
            continue  # test modules keep their own hand-written expectations (e.g. a SHIFT mapping)
        for node in ast.parse(path.read_text("utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id in NAMES:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: defines {target.id}")
                if target.id == "__all__" and isinstance(node.value, ast.List | ast.Tuple):
                    names = {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
                    where = str(path.relative_to(REPO))
                    bad += [
                        f"{where}:{node.lineno}: re-exports {n}"
                        for n in sorted(names & NAMES)
                        if (where, n) not in KEPT
                    ]
    assert bad == []


def test_the_check_sees_second_doors_at_any_depth():
    source = (
        "from crsbench.core import DEPTHS\n"
        "from crsbench.features.store import FeatureStore, CONDITIONS\n"
        "def f():\n"
        "    from crsbench.core.errors import CrsbenchError\n"
        "    from crsbench import __version__\n"
        "    from other.lib import DEPTHS\n"
    )
    assert second_doors(source, "m.py") == [
        "m.py:2: CONDITIONS from crsbench.features.store",
        "m.py:4: CrsbenchError from crsbench.core.errors",
        "m.py:5: __version__ from crsbench",
    ]
