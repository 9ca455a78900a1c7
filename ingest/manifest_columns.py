"""The columns a manifest CSV is read by, and the options naming them where a manifest calls
them otherwise (`-o path_column=file -o label_column=diagnosis -o group_column=patient
-o split_column=fold`).

The named columns are read as the standard ones (`path`, `label`, `group`, `split`,
`image_id`); a missing standard column is one line naming the option that would supply it and,
where a column looks like it (`file` for the paths, `diagnosis` for the labels), that column.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import pandas as pd

from crsbench.core import InputError
from crsbench.ingest.labels import clean_label

MANIFEST_RESERVED = ("path", "image_id", "group", "split", "label")
MANIFEST_FILE = "manifest"  # kept in the dataset's options: the file a source re-read opens
# option -> (standard column, what it holds)
COLUMN_OPTIONS: dict[str, tuple[str, str]] = {
    "path_column": ("path", "image paths"),
    "label_column": ("label", "class labels"),
    "group_column": ("group", "groups kept in one split (patient, lesion)"),
    "split_column": ("split", "official splits (train, calib or val, test)"),
    "id_column": ("image_id", "image ids"),
}
OPTION_OF = {column: option for option, (column, _) in COLUMN_OPTIONS.items()}
# Spellings that suggest a column holds what a standard column would (compared lower-case).
LOOKALIKES: dict[str, tuple[str, ...]] = {
    "path": ("file", "filename", "file_name", "filepath", "file_path", "image", "image_path", "img"),
    "label": ("label", "labels", "class", "classes", "target", "diagnosis", "dx", "category", "grade"),
    "group": ("patient", "patient_id", "subject", "subject_id", "lesion_id", "group_id", "case", "case_id"),
    "split": ("fold", "set", "subset", "partition", "split_name"),
}


def likely_column(frame: pd.DataFrame, column: str) -> str | None:
    """The first column of `frame` that looks like the standard `column` (not itself)."""
    names = LOOKALIKES.get(column, ())
    return next((c for c in frame.columns if c != column and clean_label(c).lower() in names), None)


def column_hint(frame: pd.DataFrame, column: str, otherwise: str = "") -> str:
    """'; did you mean 'diagnosis'? (-o label_column=diagnosis)', or how to name the column."""
    option = OPTION_OF[column]
    near = likely_column(frame, column)
    if near is not None:
        return f"; did you mean {near!r}? (-o {option}={near})"
    return f"; name the column with -o {option}=NAME" + (f", {otherwise}" if otherwise else "")


def named_columns(frame: pd.DataFrame, options: Mapping[str, str], name: str) -> pd.DataFrame:
    """`frame` with the columns the options name renamed to the standard ones; checked."""
    renames: dict[str, str] = {}
    for option, (column, _) in COLUMN_OPTIONS.items():
        given = str(options.get(option, column)).strip()
        if given == column:
            continue
        if given not in frame.columns:
            raise InputError(
                f"{name}: no column {given!r} (option {option}); found: {', '.join(map(str, frame.columns))}"
            )
        if column in frame.columns:
            raise InputError(
                f"{name}: option {option}={given!r}, but the manifest also has a column {column!r}; "
                f"drop or rename one of them"
            )
        if given in renames:
            raise InputError(f"{name}: column {given!r} named by two options ({OPTION_OF[renames[given]]}, {option})")
        renames[given] = column
    frame = frame.rename(columns=renames)
    if "path" not in frame.columns:
        raise InputError(
            f"{name}: missing required column 'path'{column_hint(frame, 'path')} "
            f"(found: {', '.join(map(str, frame.columns))})"
        )
    return frame


def warn_unread_columns(frame: pd.DataFrame, name: str) -> None:
    """Warn once about a column that looks like a group or split column but is not read as one."""
    for column in ("group", "split"):
        near = likely_column(frame, column) if column not in frame.columns else None
        if near is not None:
            warnings.warn(
                f"{name}: column {near!r} is not read (no {column!r} column); if it holds the "
                f"{COLUMN_OPTIONS[OPTION_OF[column]][1]}, pass -o {OPTION_OF[column]}={near}",
                stacklevel=3,
            )
