"""Shared pytest fixtures: the generated demo suite and a warehouse with it ingested.

* `suite_dir` (session): the embedded suite written once at SUITE_SCALE / SUITE_IMAGE_SIZE;
  `suite_dir / name` is the folder to ingest for name in SUITE_DATASETS.
* `suite_datasets` (session): {name: Dataset} ingested in memory (do not mutate).
* `ingested_db` (per test): a private copy of a warehouse holding all four datasets and
  the shift pair chexpert -> mimic-cxr; tests may write to it freely.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

# Piped output is as wide as COLUMNS says (140 when unset): the tests read whole tables, so they
# fix it before crsbench's console exists, in this process and every subprocess they start.
os.environ["COLUMNS"] = "140"

import pytest
from support.postgres_support import PostgresServer, postgres_server

from crsbench.ingest import Dataset, ingest, make_suite
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

# scale 0.5 still keeps every class/label with >= 2 positives and negatives in each test split.
SUITE_SCALE = 0.5
SUITE_IMAGE_SIZE = 64
SUITE_DATASETS: tuple[str, ...] = ("isic2019", "aptos2019", "chexpert", "mimic-cxr")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test process's own (support/postgres_support.py), for the team warehouse."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suite")
    make_suite(out, scale=SUITE_SCALE, image_size=SUITE_IMAGE_SIZE, seed=0)
    return out


@pytest.fixture(scope="session")
def suite_datasets(suite_dir: Path) -> dict[str, Dataset]:
    return {name: ingest(name, suite_dir / name, name) for name in SUITE_DATASETS}


@pytest.fixture(scope="session")
def _ingested_db_template(tmp_path_factory: pytest.TempPathFactory, suite_datasets: dict[str, Dataset]) -> Path:
    from crsbench.warehouse.datasets import declare_shift, load_dataset

    db = tmp_path_factory.mktemp("warehouse") / "suite.duckdb"
    with Warehouse.open(db) as wh:
        for ds in suite_datasets.values():
            load_dataset(wh, ds)
        declare_shift(wh, "chexpert", "mimic-cxr")
    return db


@pytest.fixture
def ingested_db(tmp_path: Path, _ingested_db_template: Path) -> Path:
    db = tmp_path / "crsbench.duckdb"
    shutil.copyfile(_ingested_db_template, db)
    shutil.copytree(parts_dir_for(_ingested_db_template), parts_dir_for(db))
    with Warehouse.open(db):  # a read-write open re-points the part views at this copy
        pass
    return db


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`soak` tests repeat a fault the default suite already covers, at more length (a second
    kill path, a third concurrent process): `make soak` (CRSBENCH_SOAK=1) runs them. `demo` tests
    read a finished fresh demo: `make demo-check` runs one and them (CRSBENCH_DEMO_OUT)."""
    _slow_files_first(items)
    if not os.environ.get("CRSBENCH_DEMO_OUT"):
        for item in items:
            if item.get_closest_marker("demo") is not None:
                item.add_marker(pytest.mark.skip(reason="reads a fresh demo: run by `make demo-check`"))
    if os.environ.get("CRSBENCH_SOAK", "0") not in ("", "0"):
        return
    skip = pytest.mark.skip(reason="soak test: run with `make soak` (CRSBENCH_SOAK=1)")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


def _slow_files_first(items: list[pytest.Item]) -> None:
    """Files holding a `slow` test run first. `make test` hands whole files to two workers in this
    order (`--dist loadfile --no-loadscope-reorder`), so the run does not end with one worker alone on
    a long file while the other idles. The sort is stable: every worker collects the same order."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)
