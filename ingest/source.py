"""What an adapter hands to the common ingest path, plus the helpers adapters share.

An adapter only parses its layout into `Record`s (image id, relative path, label,
group, official split). Everything else -- path checks, decoding, hashing, duplicate
ids, splits, fractions -- happens once in `crsbench.ingest.core`.
"""

from __future__ import annotations

import dataclasses
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from crsbench.core import InputError
from crsbench.ingest.types import Task


@dataclasses.dataclass
class Record:
    image_id: str
    rel_path: str
    label: int | np.ndarray  # class index, or a 0/1 vector for multilabel tasks
    group_id: str
    split: str | None = None  # official split ('train' | 'calib' | 'test') or None
    file: str = ""  # source file and line, for messages and ingest_errors
    line: int = 0
    sha256: str = ""  # filled by the common path once the image has been decoded
    meta: dict[str, str] = dataclasses.field(default_factory=dict)  # metadata key -> raw value (ingest.metadata)


@dataclasses.dataclass
class Source:
    root: Path  # rel_path of every record is relative to this folder
    task: Task
    label_names: list[str]
    records: list[Record]
    notes: list[str] = dataclasses.field(default_factory=list)  # what the adapter decided
    # Kept with the dataset's options, for a later re-read of its source (a manifest's file name).
    kept_options: dict[str, str] = dataclasses.field(default_factory=dict)


class RowLog:
    """Collects bad rows: raises at the first one, or records it when skipping bad rows."""

    def __init__(self, skip_bad: bool) -> None:
        self.skip_bad = skip_bad
        self.rows: list[dict[str, object]] = []

    def bad(self, file: str, line: int, message: str) -> None:
        if not self.skip_bad:
            where = f"{file}: line {line}" if line else file
            raise InputError(f"{where}: {message}")
        self.rows.append({"row": int(line), "file": file, "message": message})

    @contextmanager
    def row(self, file: str, line: int) -> Iterator[None]:
        """Parse one row: an InputError inside becomes a bad row (skipped or raised)."""
        try:
            yield
        except InputError as exc:
            self.bad(file, line, str(exc))

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.rows, columns=["row", "file", "message"]).astype({"row": "int64"})
        return frame.sort_values(["file", "row", "message"], kind="stable").reset_index(drop=True)


def find_file(folder: Path, names: Sequence[str], what: str) -> Path:
    """The first of `names` present in `folder` (e.g. 'x.csv' or 'x.csv.gz')."""
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise InputError(f"{folder}: {what} not found (looked for {', '.join(names)})")


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def require_regular_file(path: Path, what: str) -> None:
    """Refuse, before anything opens it, a `path` that exists but is not a regular file: reading a
    FIFO blocks until a writer comes (forever), a device streams without end. A missing path is
    left to the caller's own "not found"."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "not a regular file")
    raise InputError(
        f"{what} is {kind}, not a regular file; crsbench reads only regular files: "
        f"replace it with the file itself or leave it out"
    )


def read_csv(path: Path, required: Sequence[str]) -> pd.DataFrame:
    """A CSV as strings (blank cells stay ''), with its required columns checked."""
    require_regular_file(path, str(path))
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        raise InputError(f"{path.name}: cannot read as CSV: {str(exc).splitlines()[0]}") from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(
            f"{path.name}: missing required column {', '.join(map(repr, missing))} (found: {', '.join(frame.columns)})"
        )
    return frame


def csv_line(index: int) -> int:
    """File line of a data row (the header is line 1)."""
    return int(index) + 2


def resolve_path(path: Path) -> Path:
    """`path.resolve()`, a symlink loop on the way an InputError naming the path (Python 3.11
    raises RuntimeError for one, 3.13 OSError ELOOP)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:
        raise InputError(f"{path}: cannot resolve the path ({exc}); remove the symlink loop") from None


def safe_rel_path(root: Path, value: str) -> str:
    """A clean relative POSIX path inside `root`; InputError if it escapes the root."""
    text = value.strip().replace("\\", "/")
    if not text:
        raise InputError("empty image path")
    pure = PurePosixPath(text)
    if pure.is_absolute() or ".." in pure.parts or (len(text) > 1 and text[1] == ":"):
        raise InputError(f"path {value!r} escapes the dataset root {root}")
    resolved, base = resolve_path(root / pure), resolve_path(root)
    if not resolved.is_relative_to(base):  # e.g. a symlink pointing outside
        raise InputError(f"path {value!r} escapes the dataset root {root}")
    return pure.as_posix()


def parse_binary(value: str, column: str, allowed: dict[str, int]) -> int:
    """A label cell mapped through `allowed` (e.g. {'1.0': 1, '0.0': 0, '': 0})."""
    key = value.strip()
    if key not in allowed:
        raise InputError(f"malformed label value {value!r} in column {column!r}")
    return allowed[key]
