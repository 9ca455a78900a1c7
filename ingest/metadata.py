"""Per-image metadata kept at ingest (age, sex, site, view, ...), for subgroup analyses.

Adapters hand each `Record` its published metadata as raw strings under a canonical key
(`Record.meta`, e.g. ISIC's age_approx -> `age`); a manifest declares its own with
`meta:<name>` columns. `metadata_frame` turns them into the long rows (image_id, key, value)
stored in the warehouse table image_metadata:

* blank cells (and the usual missing spellings) are no row: the image is simply not in any
  group of that key;
* numeric keys are binned by declared edges (`bins` option, e.g. ``age=0,40,60,80``; age
  defaults to 0-40-60-80+): value v goes to "lo-hi" with lo <= v < hi, or "last+" above the
  last edge; a value below the first edge or not a number is an error naming the image;
* other values are categorical, stripped, kept as spelled ('Male', 'PA'); spellings of one
  key that differ only in case ('Male', 'male') are one group, stored under its most frequent
  spelling (ties: the first in sorting order), with one warning per key naming the spellings;
  a key with more than MAX_CATEGORIES distinct values that is not binned is refused (bin it, or
  leave it out).
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path

import pandas as pd

from crsbench.core import InputError
from crsbench.ingest.source import Record

METADATA_COLUMNS: tuple[str, ...] = ("image_id", "key", "value")
AGE_EDGES: tuple[float, ...] = (0.0, 40.0, 60.0, 80.0)
DEFAULT_BINS: dict[str, tuple[float, ...]] = {"age": AGE_EDGES}
MAX_CATEGORIES = 50
KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
MISSING = {"", "nan", "na", "n/a", "null", "none"}


def empty_metadata() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in METADATA_COLUMNS})


def check_key(key: str, where: str) -> str:
    """A metadata key: lower-case letters, digits and '_', starting with a letter."""
    if not KEY_PATTERN.match(key):
        raise InputError(
            f"{where}: invalid metadata key {key!r}: use lower-case letters, digits or '_', starting with a letter"
        )
    return key


def parse_bins(option: str) -> dict[str, tuple[float, ...]]:
    """``key=e1,e2,...;key2=...`` -> {key: increasing edges}, over the defaults (age)."""
    bins = dict(DEFAULT_BINS)
    for part in (p.strip() for p in option.split(";")):
        if not part:
            continue
        key, sep, edges_text = part.partition("=")
        key = check_key(key.strip(), "option bins")
        try:
            edges = tuple(float(e) for e in edges_text.split(",") if e.strip())
        except ValueError:
            edges = ()
        if not sep or not edges or any(b <= a for a, b in pairwise(edges)) or not all(map(math.isfinite, edges)):
            raise InputError(
                f"option bins: {part!r} is not KEY=EDGES with increasing numbers (e.g. bins=age=0,40,60,80)"
            )
        bins[key] = edges
    return bins


def bin_label(value: float, edges: Sequence[float]) -> str | None:
    """'lo-hi' for lo <= value < hi, 'last+' at or above the last edge, None below the first."""
    if value < edges[0]:
        return None
    for lo, hi in pairwise(edges):
        if value < hi:
            return f"{_num(lo)}-{_num(hi)}"
    return f"{_num(edges[-1])}+"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def metadata_frame(records: Sequence[Record], bins: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """The long (image_id, key, value) rows of the records' metadata, binned and checked."""
    rows: list[tuple[str, str, str]] = []
    for rec in records:
        for key, raw in rec.meta.items():
            text = str(raw).strip()
            if text.lower() in MISSING:
                continue
            edges = bins.get(key)
            value = text if edges is None else _binned(text, key, edges, rec)
            rows.append((rec.image_id, key, value))
    frame = pd.DataFrame(rows, columns=list(METADATA_COLUMNS)) if rows else empty_metadata()
    frame = _fold_case(frame, set(bins))
    counts = frame.groupby("key")["value"].nunique()
    for key, count in counts.items():
        if key not in bins and count > MAX_CATEGORIES:
            example = frame[frame["key"] == key].iloc[0]
            raise InputError(
                f"metadata key {key!r} has {count} distinct values (over {MAX_CATEGORIES}; e.g. image "
                f"{example['image_id']!r}: {example['value']!r}) and no bins: "
                f"declare edges with --option bins={key}=E1,E2,... or leave the column out"
            )
    return frame.sort_values(["image_id", "key"], kind="stable").reset_index(drop=True)


def _fold_case(frame: pd.DataFrame, binned: set[str]) -> pd.DataFrame:
    """One group per value whatever its case: spellings of a categorical key that differ only in
    case take the most frequent one (ties: the first in sorting order), and a warning says so."""
    if frame.empty:
        return frame
    values = frame["value"].to_numpy(dtype=object).copy()
    keys = frame["key"].to_numpy(dtype=object)
    for key in sorted(set(keys) - binned):
        at = keys == key
        counts = Counter(values[at])
        spellings: dict[str, list[str]] = {}
        for value in sorted(counts):
            spellings.setdefault(value.casefold(), []).append(value)
        merged = {folded: group for folded, group in spellings.items() if len(group) > 1}
        if not merged:
            continue
        # `group` is sorted and max keeps the first of equals: ties go to the first in sorting order.
        chosen = {v: max(group, key=counts.__getitem__) for group in merged.values() for v in group}
        values[at] = [chosen.get(v, v) for v in values[at]]
        shown = "; ".join(" + ".join(map(repr, group)) + f" -> {chosen[group[0]]!r}" for group in merged.values())
        warnings.warn(
            f"metadata key {key!r}: values differing only in case are one group, stored under the most "
            f"frequent spelling: {shown}",
            stacklevel=3,
        )
    return frame.assign(value=values)


def _binned(text: str, key: str, edges: Sequence[float], rec: Record) -> str:
    where = f"{rec.file}: line {rec.line}" if rec.line else (rec.file or rec.image_id)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(f"{where}: metadata {key}={text!r} of image {rec.image_id!r} is not a number (key is binned)")
    label = bin_label(value, edges)
    if label is None:
        raise InputError(
            f"{where}: metadata {key}={text!r} of image {rec.image_id!r} is below the first bin edge "
            f"{_num(edges[0])} (declare edges with --option bins={key}=...)"
        )
    return label


def check_known_images(
    meta_images: Sequence[str], known: set[str], file: str, lines: Sequence[int] | None = None
) -> None:
    """A metadata file may only describe images of the dataset: the first orphan is named (with
    its line where `lines` gives the rows' file lines), the others counted as images, not cells."""
    orphans = [k for k, i in enumerate(meta_images) if i not in known]
    if orphans:
        first = meta_images[orphans[0]]
        others = len({meta_images[k] for k in orphans}) - 1
        more = f" (and {others} more image{'s' if others > 1 else ''})" if others else ""
        where = f"{file}: line {lines[orphans[0]]}" if lines is not None else file
        raise InputError(
            f"{where}: metadata row for image {first!r}{more}, which is not in the dataset; "
            f"remove the row or add the image"
        )


def check_one_row_per_image(meta_images: Sequence[str], lines: Sequence[int], file: str) -> None:
    """Two rows of one image would give it two values of a key: the first repeat is named."""
    first: dict[str, int] = {}
    for image, line in zip(meta_images, lines, strict=True):
        seen = first.setdefault(image, line)
        if seen != line:
            repeats = len(meta_images) - len(set(meta_images))
            more = f" ({repeats} repeated rows in all)" if repeats > 1 else ""
            raise InputError(
                f"{file}: line {line}: a second row for image {image!r} (first at line {seen}){more}; "
                f"keep one row per image"
            )


def read_metadata_csv(path: Path, bins: Mapping[str, Sequence[float]], known: set[str] | None = None) -> pd.DataFrame:
    """A metadata CSV: column image_id, then one column per key (lower-case names) -> long rows.
    One row per image; with `known`, every row's image must be one of them."""
    from crsbench.ingest.source import csv_line, read_csv

    frame = read_csv(path, ["image_id"])
    keys = {c: check_key(c.strip(), f"{path.name}: column {c!r}") for c in frame.columns if c != "image_id"}
    if not keys:
        raise InputError(f"{path.name}: no metadata columns beside image_id")
    ids = [str(image).strip() for image in frame["image_id"]]
    lines = [csv_line(i) for i in range(len(ids))]
    check_one_row_per_image(ids, lines, path.name)
    if known is not None:
        check_known_images(ids, known, path.name, lines)
    cells = {key: frame[c].to_numpy() for c, key in keys.items()}
    records = [
        Record(
            str(image).strip(),
            "",
            0,
            "",
            file=path.name,
            line=csv_line(i),
            meta={k: str(v[i]) for k, v in cells.items()},
        )
        for i, image in enumerate(frame["image_id"].to_numpy())
    ]
    return metadata_frame(records, bins)


def read_source_metadata(
    adapter: str, root: Path, options: Mapping[str, str], bins: Mapping[str, Sequence[float]]
) -> pd.DataFrame:
    """The metadata an adapter reads from a dataset's source (no image is decoded)."""
    from crsbench.core import no_progress
    from crsbench.ingest.registry import get_adapter
    from crsbench.ingest.source import RowLog

    entry = get_adapter(adapter)
    source = entry.read(Path(root), RowLog(skip_bad=True), dict(options), no_progress)
    return metadata_frame(source.records, bins)
