"""The one check of a file or folder a command writes (issue 40 points 1-3, 5): protected paths
however spelled, special files, folders, the command's own input, and existing files without
--force are refused in one line naming the path; anything else passes and is left untouched."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from crsbench.core import CrsbenchError, check_write_folder, check_write_target


@pytest.fixture
def warehouse(tmp_path: Path) -> tuple[Path, list[tuple[Path, str]]]:
    db = tmp_path / "bench.duckdb"
    db.write_bytes(b"DUCK")
    parts = tmp_path / "bench.duckdb.parts"
    (parts / "runs").mkdir(parents=True)
    store = tmp_path / "bench.duckdb.features.zarr"  # not created: a store not there yet is protected too
    protected = [
        (db, "the warehouse file"),
        (tmp_path / "bench.duckdb.wal", "the warehouse's write-ahead log"),
        (parts, "the warehouse's parts folder"),
        (store, "the feature store"),
    ]
    return db, protected


def _refused(path: Path, *fragments: str, **kw: object) -> str:
    with pytest.raises(CrsbenchError) as info:
        check_write_target(path, **kw)  # type: ignore[arg-type]
    text = str(info.value)
    assert "\n" not in text and str(path) in text, text
    for fragment in fragments:
        assert fragment in text, text
    return text


def test_the_warehouse_however_spelled_is_refused_even_with_force(warehouse, tmp_path, monkeypatch):
    db, protected = warehouse
    (tmp_path / "sub").mkdir()
    os.symlink(db, tmp_path / "link.duckdb")
    os.link(db, tmp_path / "hard.duckdb")
    os.symlink(tmp_path / "bench.duckdb.parts", tmp_path / "parts-link")
    monkeypatch.chdir(tmp_path / "sub")
    spellings = {
        db: "is the warehouse file",
        Path("../bench.duckdb"): "is the warehouse file",
        tmp_path / "sub" / ".." / "bench.duckdb": "is the warehouse file",
        tmp_path / "link.duckdb": "is the warehouse file",
        tmp_path / "hard.duckdb": "is the warehouse file",  # another name of the same inode
        tmp_path / "bench.duckdb.wal": "is the warehouse's write-ahead log",
        tmp_path / "bench.duckdb.parts": "is the warehouse's parts folder",
        tmp_path / "bench.duckdb.parts" / "runs" / "part-x.parquet": "is inside the warehouse's parts folder",
        tmp_path / "parts-link" / "runs" / "part-x.parquet": "is inside the warehouse's parts folder",
        tmp_path / "bench.duckdb.parts" / "new" / "deep.csv": "is inside the warehouse's parts folder",
        tmp_path / "bench.duckdb.features.zarr" / "x.csv": "is inside the feature store",
    }
    for path, why in spellings.items():
        _refused(path, why, "name a file outside it", force=True, protected=protected)
    assert db.read_bytes() == b"DUCK"


def test_a_file_beside_the_warehouse_passes(warehouse, tmp_path):
    _, protected = warehouse
    check_write_target(tmp_path / "crs.csv", protected=protected)
    check_write_target(tmp_path / "bench.duckdb.parts" / ".." / "crs.csv", protected=protected)  # `..` resolved
    check_write_target(tmp_path / "bench.duckdb.csv", protected=protected)  # a prefix is not the file
    assert not (tmp_path / "crs.csv").exists()  # the check writes nothing


def test_special_files_are_refused_and_stay(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _refused(fifo, "is a FIFO (named pipe), not a regular file", force=True)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    _refused(Path("/dev/null"), "is a character device", force=True)
    os.symlink("/dev/null", tmp_path / "null-link")
    _refused(tmp_path / "null-link", "is a character device", force=True)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        _refused(tmp_path / "sock", "is a socket", force=True)


def test_a_folder_or_a_file_as_parent_is_refused(tmp_path):
    _refused(
        tmp_path, "is a folder; name a file, e.g.", str(tmp_path / "report.html"), force=True, example="report.html"
    )
    (tmp_path / "notes.txt").write_text("x")
    _refused(tmp_path / "notes.txt" / "r.html", "notes.txt is a file, not a folder", force=True)


def test_the_command_input_is_refused(tmp_path):
    source = tmp_path / "self.pth"
    source.write_bytes(b"weights")
    os.symlink(source, tmp_path / "alias.pth")
    for out in (source, tmp_path / "alias.pth", tmp_path / "." / "self.pth"):
        _refused(out, "is also the input", force=True, inputs=[source])
    check_write_target(tmp_path / "out.safetensors", inputs=[source])


def test_an_existing_file_only_with_force(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    _refused(precious, "already exists; give --force to overwrite it")
    check_write_target(precious, force=True)
    os.symlink(tmp_path / "absent", tmp_path / "dangling")  # a name that is there, pointing nowhere
    _refused(tmp_path / "dangling", "already exists")
    assert precious.read_text() == "keep me"


def test_the_option_is_named(tmp_path):
    (tmp_path / "a.pth").write_bytes(b"x")
    _refused(tmp_path / "a.pth", "OUT ", option="OUT")


def test_a_figures_folder(warehouse, tmp_path):
    _, protected = warehouse
    check_write_folder(tmp_path / "new" / "figs", protected=protected)  # new: fine
    (tmp_path / "empty").mkdir()
    check_write_folder(tmp_path / "empty", protected=protected)  # existing, nothing to replace
    cases = {
        tmp_path / "bench.duckdb.parts" / "figs": "is inside the warehouse's parts folder",
        tmp_path / "bench.duckdb": "is the warehouse file",
    }
    (tmp_path / "file.png").write_bytes(b"png")
    cases[tmp_path / "file.png"] = "is a file, not a folder"
    os.mkfifo(tmp_path / "pipe")
    cases[tmp_path / "pipe"] = "is a FIFO (named pipe), not a folder"
    cases[tmp_path / "file.png" / "figs"] = "is a file, not a folder"
    for path, why in cases.items():
        with pytest.raises(CrsbenchError) as info:
            check_write_folder(path, force=True, protected=protected)
        assert why in str(info.value) and "\n" not in str(info.value), str(info.value)
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "crs.png").write_bytes(b"old")
    with pytest.raises(CrsbenchError, match=r"already holds \.png files; give --force"):
        check_write_folder(figs, protected=protected)
    check_write_folder(figs, force=True, protected=protected)
