"""The one check of a file or folder a command is told to write (`export --out`, `report --out`,
`report --figures`, `weights convert OUT`, ...), made before any work starts.

Every writer here writes a temporary file and renames it over the target, so whatever the target
was (a warehouse, a device node, the command's own input) is replaced whole; the check is what
keeps that from happening. The caller names what must never be written (the warehouse file, its
WAL, its parts folder, its feature store): this module sits below the stages that know them.
Paths are compared resolved (symlinks, `..`) and, where they exist, by device and inode, so a
hard link or a second spelling of a protected path is refused too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from crsbench.core.errors import CrsbenchError

# (path, what it is), e.g. (Path("bench.duckdb.parts"), "the warehouse's parts folder")
Protected = Sequence[tuple[Path, str]]

_SPECIAL = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _mode(path: Path) -> int | None:
    """The mode of what `path` names (symlinks followed); None when nothing is there."""
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return None


def _special_kind(mode: int) -> str | None:
    """What a non-regular, non-folder file is ('a FIFO (named pipe)', ...); None for a regular file."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((what for test, what in _SPECIAL if test(mode)), "not a regular file")


def protected_by(path: Path, protected: Protected) -> str | None:
    """'is <what> (<p>)' or 'is inside <what> (<p>)' when `path` is, or lies in, a protected path."""
    real = _real(path)
    chain_ids = {i for i in map(_identity, [real, *real.parents]) if i is not None}
    target_id = _identity(path)
    for guarded, what in protected:
        guarded_real = _real(guarded)
        guarded_id = _identity(guarded)
        if real == guarded_real or (guarded_id is not None and guarded_id == target_id):
            return f"is {what} ({guarded})"
        if guarded_real in real.parents or (guarded_id is not None and guarded_id in chain_ids):
            return f"is inside {what} ({guarded})"
    return None


def _blocking_ancestor(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` when it is not a folder (the write could not happen)."""
    for parent in path.absolute().parents:
        mode = _mode(parent)
        if mode is not None:
            return None if stat.S_ISDIR(mode) else parent
    return None


def check_write_target(
    path: Path,
    *,
    force: bool = False,
    protected: Protected = (),
    inputs: Sequence[Path] = (),
    option: str = "--out",
    example: str = "out.txt",
) -> None:
    """Refuse `path` as a file to write, in one line naming it, why and the way out, when it is a
    protected path or inside one, a device, FIFO, socket or folder, an input of the same command,
    or (without `force`) an existing file. `example` is a file name suggested inside a folder."""
    where = protected_by(path, protected)
    if where is not None:
        raise CrsbenchError(f"{option} {path} {where}, which no command may write; name a file outside it")
    for source in inputs:
        same = _real(path) == _real(source) or (_identity(path) is not None and _identity(path) == _identity(source))
        if same:
            raise CrsbenchError(f"{option} {path} is also the input {source} of this command; name another file")
    mode = _mode(path)
    if mode is not None and stat.S_ISDIR(mode):
        raise CrsbenchError(f"{option} {path} is a folder; name a file, e.g. {path / example}")
    kind = _special_kind(mode) if mode is not None else None
    if kind is not None:
        raise CrsbenchError(f"{option} {path} is {kind}, not a regular file; name a regular file")
    blocker = _blocking_ancestor(path)
    if blocker is not None:
        raise CrsbenchError(f"{option} {path}: {blocker} is a file, not a folder; name a file in a folder")
    if os.path.lexists(path) and not force:
        raise CrsbenchError(f"{option} {path} already exists; give --force to overwrite it, or name another file")


def check_write_folder(
    path: Path, *, force: bool = False, protected: Protected = (), option: str = "--figures", suffix: str = ".png"
) -> None:
    """Refuse `path` as a folder to write `*<suffix>` files into, in one line: a protected path or
    inside one, something that exists and is not a folder, or (without `force`) a folder already
    holding `*<suffix>` files the command would replace."""
    where = protected_by(path, protected)
    if where is not None:
        raise CrsbenchError(f"{option} {path} {where}, which no command may write; name a folder outside it")
    mode = _mode(path)
    if mode is None and os.path.lexists(path):
        raise CrsbenchError(f"{option} {path} is a broken symlink; name a folder")
    if mode is not None and not stat.S_ISDIR(mode):
        what = _special_kind(mode) or "a file"
        raise CrsbenchError(f"{option} {path} is {what}, not a folder; name a new or existing folder")
    blocker = _blocking_ancestor(path)
    if blocker is not None:
        raise CrsbenchError(f"{option} {path}: {blocker} is a file, not a folder; name a folder")
    if mode is not None and not force and any(path.glob(f"*{suffix}")):
        raise CrsbenchError(
            f"{option} {path} already holds {suffix} files; give --force to replace them, or name a new folder"
        )
