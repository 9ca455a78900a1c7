"""The package as users install it: an sdist, the wheels built from it and from the tree, and a
non-editable install of that wheel in a fresh virtual environment.

The editable install the tests otherwise run under maps source folders directly, so it cannot
show a module or data file that the wheel leaves out. Here the wheel's files are compared with
the source tree (every module of every mapped folder, every `.sql` of sql/), the wheel built
from the sdist with the one built from the tree, and the installed tool runs from outside the
repository. The fresh environment borrows the test interpreter's dependencies through *path
lines* in a .pth file (torch is not installed twice); `.pth` files inside those directories are
not processed, so the editable install's finder stays out, which the test checks.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # ~1 min: two wheel builds, an sdist and a fresh environment

REPO = Path(__file__).resolve().parents[1]
# Folders of the checkout that are not part of the package source (copied tree stays small).
NOT_SOURCE = {".git", ".venv", "build", "dist", "demo-out", ".hypothesis", ".pytest_cache", "__pycache__"}


def _package_dirs() -> dict[str, Path]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {package: REPO / folder for package, folder in config["package-dir"].items()}


def source_files() -> set[str]:
    """Every file the installed package must hold, by its path inside the wheel (crsbench/...)."""
    files: set[str] = set()
    for package, folder in _package_dirs().items():
        for path in folder.rglob("*"):
            rel = path.relative_to(folder)
            if path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc":
                files.add("/".join([*package.split("."), *rel.parts]))
    return files


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if ".dist-info/" not in name}


def _setuptools_builds_wheels() -> bool:
    try:
        major, minor = (int(p) for p in importlib.metadata.version("setuptools").split(".")[:2])
    except importlib.metadata.PackageNotFoundError:
        return False
    return (major, minor) >= (70, 1)


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """sdist and two wheels, built from a copy of the tree (no build/ or egg-info left in the checkout)."""
    root = tmp_path_factory.mktemp("packaging")
    tree = root / "src"
    shutil.copytree(
        REPO,
        tree,
        ignore=lambda _, names: [
            n for n in names if n in NOT_SOURCE or n.endswith((".egg-info", ".duckdb", ".pyc", ".duckdb.parts"))
        ],
    )
    # Offline where the test environment has setuptools >= 70.1 (the [test] extra pins it);
    # otherwise pip's isolated build fetches setuptools from the configured index.
    offline = _setuptools_builds_wheels()
    dist = root / "dist"
    sdist_name = _run(
        [sys.executable, "-c", f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"],
        cwd=tree,
    ).split()[-1]
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q"]
    pip_wheel += ["--no-build-isolation", "--no-index"] if offline else []
    _run([*pip_wheel, "-w", str(root / "from-tree"), str(tree)], cwd=root)
    _run([*pip_wheel, "-w", str(root / "from-sdist"), str(dist / sdist_name)], cwd=root)
    (wheel,) = (root / "from-tree").glob("crsbench-*.whl")
    (sdist_wheel,) = (root / "from-sdist").glob("crsbench-*.whl")
    return {"root": root, "sdist": dist / sdist_name, "wheel": wheel, "sdist_wheel": sdist_wheel}


def test_the_wheel_holds_every_module_and_data_file_of_the_source_tree(built: dict[str, Path]) -> None:
    expected = source_files()
    assert "crsbench/pipeline/probe.py" in expected and "crsbench/sql/views/080_crs_encoder.sql" in expected
    assert wheel_files(built["wheel"]) == expected
    sql = {p.relative_to(REPO / "sql").as_posix() for p in (REPO / "sql").rglob("*.sql")}
    assert sql and {f"crsbench/sql/{name}" for name in sql} <= wheel_files(built["wheel"])


def test_the_sdist_holds_everything_the_wheel_needs(built: dict[str, Path]) -> None:
    assert wheel_files(built["sdist_wheel"]) == wheel_files(built["wheel"])
    with zipfile.ZipFile(built["wheel"]) as a, zipfile.ZipFile(built["sdist_wheel"]) as b:
        for name in wheel_files(built["wheel"]):
            assert a.read(name) == b.read(name), name
        meta = next(n for n in a.namelist() if n.endswith(".dist-info/METADATA"))
        assert "Requires-Python: >=3.11" in a.read(meta).decode()


def test_pip_refuses_a_python_before_3_11_naming_the_supported_range(built: dict[str, Path]) -> None:
    """What an index install on Python 3.10 meets: pip reads Requires-Python and stops at once."""
    root = built["root"]
    ask = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-index", "--only-binary=:all:", "--find-links",
           str(built["wheel"].parent), "-d", str(root / "download"), "crsbench"]  # fmt: skip
    old = subprocess.run([*ask, "--python-version", "3.10"], capture_output=True, text=True, timeout=120)
    assert old.returncode != 0
    assert "requires a different Python: 3.10.0 not in '>=3.11'" in old.stdout + old.stderr
    _run([*ask, "--python-version", "3.11"], cwd=root)


def test_a_non_editable_install_runs_the_cli_and_imports_every_module(built: dict[str, Path]) -> None:
    root = built["root"]
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=root).strip())
    # Dependencies from the test interpreter's path (its site-packages and whatever its .pth
    # files added), never the checkout itself.
    stdlib = {Path(sysconfig.get_path(k)).resolve() for k in ("stdlib", "platstdlib")}
    # (The venv may live inside the checkout, as `make` builds it: its site-packages is borrowed.)
    prefix = Path(sys.prefix).resolve()

    def from_checkout(path: Path) -> bool:
        return path.is_relative_to(REPO) and not path.is_relative_to(prefix)

    borrowed = [
        p
        for p in sys.path
        if p and Path(p).is_dir() and not from_checkout(Path(p).resolve()) and Path(p).resolve() not in stdlib
    ]
    (site / "_borrowed_deps.pth").write_text("\n".join(borrowed) + "\n", encoding="utf-8")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
          str(built["wheel"])], cwd=root)  # fmt: skip

    work = root / "elsewhere"  # not the repository
    work.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("CRSBENCH_")
    }
    crsbench = env_dir / "bin" / "crsbench"
    version = importlib.metadata.version("crsbench")
    assert _run([str(crsbench), "--version"], cwd=work, env=env).strip() == f"crsbench {version}"
    assert "leaderboard" in _run([str(crsbench), "--help"], cwd=work, env=env)
    assert "Usage: crsbench demo" in _run([str(crsbench), "demo", "--help"], cwd=work, env=env)  # loads the command

    probe = """
import importlib, json, os, pkgutil, sys
import crsbench, crsbench.bench, crsbench.pipeline
names = sorted(m.name for m in pkgutil.walk_packages(crsbench.__path__, "crsbench."))
files = {}
for name in names:
    files[name] = getattr(importlib.import_module(name), "__file__", None)
print(json.dumps({"cwd": os.getcwd(), "file": crsbench.__file__, "modules": files,
                  "editable": sorted(m for m in sys.modules if "editable" in m)}))
"""
    report = json.loads(_run([str(python), "-c", probe], cwd=work, env=env).strip().splitlines()[-1])
    assert Path(report["cwd"]).resolve() == work.resolve()
    assert Path(report["file"]).resolve().is_relative_to(site.resolve()), report["file"]
    assert report["editable"] == []
    wheel_modules = {
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in wheel_files(built["wheel"])
        if name.endswith(".py")
    }
    assert set(report["modules"]) | {"crsbench"} == wheel_modules
    outside = [n for n, f in report["modules"].items() if not Path(f).resolve().is_relative_to(site.resolve())]
    assert outside == []
    assert {"crsbench.pipeline.probe", "crsbench.bench", "crsbench.sql", "crsbench.warehouse.connection"} <= set(
        report["modules"]
    )
