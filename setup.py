"""Package discovery for the mapped layout (the rest of the configuration is in pyproject.toml).

pyproject's `package-dir` maps each top-level package to its folder (crsbench.ingest is
ingest/, ...). setuptools' own `packages.find` cannot follow such a map, so the package list
is computed here from it: each mapped package plus every folder found beneath its folder.
Nothing is listed by hand.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import find_namespace_packages, setup

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: still write the metadata, so pip refuses by requires-python
    tomllib = None  # type: ignore[assignment]

HERE = Path(__file__).resolve().parent


def mapped_packages() -> list[str]:
    """Every package under pyproject's package-dir roots, by its installed name."""
    if tomllib is None:
        return []
    config = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    roots: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    found: list[str] = []
    for name, folder in roots.items():
        found.append(name)
        # Namespace discovery: a folder of package data (sql/views) is a package too, so its files
        # ship as the data of `crsbench.sql` without setuptools warning about them.
        subs = find_namespace_packages(str(HERE / folder), exclude=["__pycache__", "*.__pycache__"])
        found += [f"{name}.{sub}" for sub in subs]
    return sorted(set(found))


setup(packages=mapped_packages())
