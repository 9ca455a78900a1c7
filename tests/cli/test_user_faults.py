"""Faults the user's disk or files cause are one line naming the file and exit 1, never an internal
error, and leave the state as it was (issue 34 point 6). Each case runs the CLI in a subprocess.

How each fault is made: the file-size limit is real (RLIMIT_FSIZE in the child, as `ulimit -f`;
Python ignores SIGXFSZ, so the write fails with EFBIG). A full disk is injected: OSError(ENOSPC)
raised by zarr's local-store file write (for feature chunks) and by pyarrow.parquet.write_table
(for run parts), the calls the kernel's ENOSPC reaches; a tmpfs would need mount rights. The
truncated Parquet part and Zarr chunk, the symlink loop and the pickled pytorch_model.bin are real
files.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import zarr
from PIL import Image
from support.fault_support import env, one_line_user_error, raw_runs, synthetic_warehouse
from support.runs_factory import encoder_runs, frame

from crsbench.cli import main
from crsbench.cli.faults import user_fault
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

PROBE = ["probe", "--probe", "logreg", "--depth", "1.0", "--fraction", "1.0"]
RUN_CLI = "import sys\nfrom crsbench.cli import main\nsys.exit(main())\n"
FULL_ZARR_CHUNKS = """import errno
import zarr.storage._local as local
_put = local._put
def full(path, value, **kw):
    if "/clean/c/" in str(path):  # a clean feature chunk (not metadata, not the image ids)
        raise OSError(errno.ENOSPC, "No space left on device")
    return _put(path, value, **kw)
local._put = full
"""
FULL_PARQUET = """import errno
import pyarrow.parquet as pq
def full(*args, **kw):
    raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")
pq.write_table = full
"""


def _cli(args: list[str], prelude: str = "", fsize: int | None = None) -> tuple[int, str]:
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    proc = subprocess.run(
        [sys.executable, "-c", prelude + RUN_CLI, *args],
        env={k: v for k, v in env().items() if k != "CRSBENCH_DEBUG"},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    return proc.returncode, proc.stderr


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The synthetic warehouse (features of one encoder) with run parts pending (not folded)."""
    folder = tmp_path_factory.mktemp("faults")
    db = synthetic_warehouse(folder)
    with Warehouse.open(db) as wh:
        wh.append_runs(frame(encoder_runs("e1")))
        wh.append_runs(frame(encoder_runs("e2")))
    return db


@pytest.fixture
def db(template, tmp_path) -> Path:
    shutil.copytree(template.parent, tmp_path / "w")
    return tmp_path / "w" / template.name


def _runs(db: Path) -> int:
    return len(raw_runs(db))


def test_a_file_size_limit_is_a_user_error_and_the_warehouse_is_intact(db):
    before = _runs(db)
    rc, err = _cli(["warehouse", "compact", "--db", str(db)], fsize=16 * 1024)  # writing the file fails
    one_line_user_error(rc, err, str(db), "file-size limit (ulimit -f)")
    assert _runs(db) == before
    rc, err = _cli(["warehouse", "compact", "--db", str(db)])  # a rerun does the job
    assert rc == 0, err
    assert _runs(db) == before and not list((parts_dir_for(db) / "runs").glob("part-0[1-9]*.parquet"))


def test_a_full_disk_while_writing_parquet_parts(tmp_path):
    db = tmp_path / "new.duckdb"
    rc, err = _cli(["warehouse", "init", "--db", str(db)], prelude=FULL_PARQUET)  # writes the empty parts
    one_line_user_error(rc, err, str(parts_dir_for(db)), ".parquet: the disk is full")
    assert not [p for p in parts_dir_for(db).rglob("*") if p.name.startswith(".tmp-")]  # no temporary left


def test_a_full_disk_while_writing_feature_chunks(tmp_path):
    (tmp_path / "ds" / "img").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(24):
        Image.fromarray(rng.integers(0, 255, (16, 16), dtype=np.uint8)).save(tmp_path / "ds" / "img" / f"{i}.png")
    pd.DataFrame({"path": [f"img/{i}.png" for i in range(24)], "label": ["ab"[i % 2] for i in range(24)]}).to_csv(
        tmp_path / "ds" / "manifest.csv", index=False
    )
    db = tmp_path / "w.duckdb"
    assert (
        main(["ingest", "manifest", str(tmp_path / "ds"), "--name", "m", "-o", "task=multiclass", "--db", str(db)]) == 0
    )
    extract = ["extract", "-e", "tiny-convnext", "-d", "m", "--db", str(db)]
    rc, err = _cli(extract, prelude=FULL_ZARR_CHUNKS)
    one_line_user_error(rc, err, f"{db}.features.zarr/m/tiny-convnext/", "(row chunk 0): the disk is full")
    with Warehouse.open(db, read_only=True) as wh:  # nothing catalogued; the set is left to resume
        assert wh.sql("select count(*) n from feature_sets")["n"].item() == 0
    group = zarr.open_group(f"{db}.features.zarr/m/tiny-convnext", mode="r")
    assert group.attrs["complete"] is False and not np.asarray(group["_chunks_done"][:]).any()


def test_a_truncated_parquet_part_names_it(db):
    part = next(p for p in sorted((parts_dir_for(db) / "runs").glob("part-*.parquet")) if "empty" not in p.name)
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    for command in (["status"], ["warehouse", "compact"]):
        rc, err = _cli([*command, "--db", str(db)])
        one_line_user_error(rc, err, f"Parquet file {part} is truncated")
    moved = db.parent / "moved"
    moved.mkdir()
    shutil.move(part, moved / part.name)  # the fix the message gives: the rest is served
    rc, err = _cli(["status", "--db", str(db)])
    assert rc == 0, err


def test_a_truncated_zarr_chunk_names_it(db):
    chunk = Path(str(db) + ".features.zarr") / "derm" / "enc" / "d100" / "clean" / "c" / "0" / "0"
    chunk.write_bytes(chunk.read_bytes()[: chunk.stat().st_size // 2])
    rc, err = _cli([*PROBE, "--seed", "0", "--db", str(db)])
    one_line_user_error(rc, err, "damaged feature chunk derm/enc/d100/clean/c/0/0", "extract --repair -e enc -d derm")


def test_a_symlink_loop_in_a_dataset_folder_names_it(tmp_path):
    (tmp_path / "ds" / "img").mkdir(parents=True)
    rng = np.random.default_rng(1)
    for i in range(12):
        Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8)).save(tmp_path / "ds" / "img" / f"{i}.png")
    os.symlink("loop", tmp_path / "ds" / "img" / "loop")
    paths = [f"img/{i}.png" for i in range(12)] + ["img/loop"]
    pd.DataFrame({"path": paths, "label": ["ab"[i % 2] for i in range(13)]}).to_csv(
        tmp_path / "ds" / "manifest.csv", index=False
    )
    db = tmp_path / "w.duckdb"
    rc, err = _cli(
        ["ingest", "manifest", str(tmp_path / "ds"), "--name", "m", "-o", "task=multiclass", "--db", str(db)]
    )
    one_line_user_error(rc, err, "manifest.csv: line 14:", f"{tmp_path / 'ds' / 'img' / 'loop'}", "symlink loop")
    assert not db.exists() or "m" not in duckdb.connect(str(db), read_only=True).sql("from datasets").df().values


def test_a_pickle_inside_an_hf_folder_names_the_file(db, tmp_path):
    import argparse

    import torch
    from transformers import ViTConfig, ViTModel

    folder = tmp_path / "vit"
    config = ViTConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, image_size=16, patch_size=8
    )
    ViTModel(config).save_pretrained(folder)
    state = ViTModel(config).state_dict()
    (folder / "model.safetensors").unlink()
    torch.save({**state, "args": argparse.Namespace(lr=0.1)}, folder / "pytorch_model.bin")
    (folder / "preprocessor_config.json").write_text(
        '{"image_processor_type": "ViTImageProcessor", "size": {"height": 16, "width": 16}, '
        '"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}'
    )
    rc, err = _cli(["extract", "-e", f"hf:{folder}", "-d", "derm", "--db", str(db)])
    one_line_user_error(
        rc, err, f"weights {folder / 'pytorch_model.bin'} hold pickled Python objects (argparse.Namespace)"
    )
    assert "crsbench weights convert" in err
    assert not (Path(str(db) + ".features.zarr") / "derm" / "hf:vit").exists()


def test_the_translator_knows_duckdb_and_arrow_texts_and_nothing_else(tmp_path):
    wal = f"{tmp_path}/w.duckdb.wal"
    full = duckdb.TransactionException(f'Failed to commit: Could not write file "{wal}": No space left on device')
    assert user_fault(full) == (
        f"cannot write {wal}: the disk is full; free space (or use --db / --store on another disk) and rerun "
        "(what was stored before is intact; a rerun resumes)"
    )
    chained = RuntimeError("while folding")
    chained.__cause__ = OSError(errno.EFBIG, "File too large", "/x/part.parquet")
    assert user_fault(chained).startswith("cannot write /x/part.parquet: the file exceeds the file-size limit")
    assert user_fault(RuntimeError("disk on fire")) is None
    assert user_fault(OSError(errno.EACCES, "Permission denied", "/x")) is None  # not one of ours to name
    assert user_fault(ValueError("No space left on device")) is None  # the text alone, from no OS call


def test_a_catalog_gone_mid_statement_is_named_by_each_text_the_postgres_extension_gives_it():
    """The texts seen when the team warehouse's PostgreSQL stopped under a writer (tests/fault/test_lake_faults.py):
    libpq's message is empty once the connection is dead, so the statement's text ends at the colon."""
    gone = (
        duckdb.IOException("IO Error: Unable to connect to Postgres at dbname=x host=/tmp/s: connection refused"),
        duckdb.Error('Failed to execute query "ROLLBACK": '),
        duckdb.TransactionException('TransactionContext Error: Failed to commit: Failed to execute query "ROLLBACK": '),
        duckdb.InvalidInputException(
            "Invalid Input Error: Attempting to fetch from an unsuccessful query result\nError: Invalid Error: "
            'Failed to prepare COPY "COPY (SELECT "table_id" FROM "public"."ducklake_schema_versions") TO STDOUT '
            '(FORMAT "binary");": '
        ),
    )
    for exc in gone:
        assert "PostgreSQL catalog went away" in (user_fault(exc) or ""), exc
    inside = duckdb.Error('Failed to execute query "ROLLBACK": ')
    inside.__context__ = duckdb.InternalException("INTERNAL Error: Attempted to access index 0 within vector of size 0")
    assert "PostgreSQL catalog went away" in (user_fault(inside) or "")
    # The server's own message after the colon is a real error of the statement, not a lost server.
    assert user_fault(duckdb.Error('Failed to execute query "SELECT 1": ERROR: permission denied for table t')) is None
    assert (
        user_fault(duckdb.InternalException("INTERNAL Error: Attempted to access index 0 within vector of size 0"))
        is None
    )
