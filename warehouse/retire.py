"""Retiring what a replaced dataset made stale: its runs, predictions and feature sets.

`ingest --replace` with other data (another `Dataset.data_digest`) retires every fit that
was trained on the dataset or evaluated on it as a shift target: its fit id goes into
`retired_fits`, so the `runs` and `predictions` views (and everything built on them, such
as `metrics_seed`) no longer see it, while the rows themselves stay where they are and
remain readable in the archive views `retired_runs` and `retired_predictions`. Nothing is
deleted. Feature sets of other images are moved from `feature_sets` to
`retired_feature_sets` (the catalog row, as JSON). Fit ids carry the data digest, so the
next `probe` refits under new ids; replacing a dataset back to earlier data restores the
fits retired with that data.
"""

from __future__ import annotations

import dataclasses

import duckdb

from crsbench.ingest.types import Dataset
from crsbench.warehouse.parts import one_row


@dataclasses.dataclass(frozen=True)
class Impact:
    """What replacing a dataset would retire."""

    dataset: str
    data_changed: bool
    images_changed: bool
    fits: int
    runs: int
    feature_sets: int

    @property
    def anything(self) -> bool:
        return bool(self.fits or self.feature_sets)

    def describe(self) -> str:
        return (
            f"replacing dataset {self.dataset!r} with other "
            f"{'images' if self.images_changed else 'labels or splits'} retires {self.fits:,} fits "
            f"({self.runs:,} run records) and {self.feature_sets} feature sets (kept in "
            f"retired_runs / retired_feature_sets)"
        )


def replacement_impact(con: duckdb.DuckDBPyConnection, old: Dataset | None, new: Dataset) -> Impact:
    """What `retire_for_replacement(con, old, new)` would retire (nothing if the data is the same)."""
    if old is None or old.data_digest() == new.data_digest():
        return Impact(new.name, False, False, 0, 0, 0)
    fits, runs = one_row(
        con.execute(
            "select count(distinct fit_id), count(*) from runs where dataset_id = ? or eval_dataset_id = ?",
            [new.name, new.name],
        ).fetchone()
    )
    images_changed = old.image_digest() != new.image_digest()
    feature_sets = (
        one_row(con.execute("select count(*) from feature_sets where dataset_id = ?", [new.name]).fetchone())[0]
        if images_changed
        else 0
    )
    return Impact(new.name, True, images_changed, int(fits), int(runs), int(feature_sets))


def retire_for_replacement(con: duckdb.DuckDBPyConnection, old: Dataset | None, new: Dataset) -> Impact:
    """Retire the fits (and, for other images, feature sets) that `new` makes stale.

    Runs inside the caller's transaction (the dataset load), so a failed load retires nothing.
    """
    impact = replacement_impact(con, old, new)
    if old is None or not impact.data_changed:
        return impact
    name = new.name
    con.execute(
        "insert into retired_fits select distinct fit_id, ?, ?, 'dataset replaced', current_timestamp "
        "from runs where dataset_id = ? or eval_dataset_id = ?",
        [name, old.data_digest(), name, name],
    )
    if impact.images_changed:
        con.execute(
            "insert into retired_feature_sets select dataset_id, encoder_id, regime, image_digest, "
            "to_json(f), current_timestamp from feature_sets f where dataset_id = ?",
            [name],
        )
        con.execute("delete from feature_sets where dataset_id = ?", [name])
    # Back to data retired earlier: those fits are valid again (unless retired for another reason).
    con.execute("delete from retired_fits where dataset_id = ? and data_digest = ?", [name, new.data_digest()])
    return impact


def retire_for_new_shift(con: duckdb.DuckDBPyConnection, source: str, target: str) -> int:
    """Declaring source -> target adds an evaluation to every fit of `source`, which changes
    their ids; the fits made without it are retired. Returns how many."""
    before = one_row(con.execute("select count(*) from retired_fits").fetchone())[0]
    con.execute(
        "insert into retired_fits select distinct fit_id, ?, ?, 'shift target declared', current_timestamp "
        "from runs where dataset_id = ?",
        [source, f"shift:{target}", source],
    )
    return int(one_row(con.execute("select count(*) from retired_fits").fetchone())[0] - before)


def retire_for_new_weights(
    con: duckdb.DuckDBPyConnection, store_url: str, key: tuple[str, str, str], old_hash: str, new_hash: str
) -> int:
    """A feature set (`key` = dataset, encoder, regime) replaced by one of other weights
    (`extract --force`): retire the fits trained on it and its old catalog row. Their ids carry
    the old weights hash, so the next `probe` refits under new ids; going back to weights used
    before restores the fits retired with them. Returns how many fits were retired."""
    dataset, _encoder_id, _regime = key
    before = one_row(con.execute("select count(*) from retired_fits").fetchone())[0]
    of_set = "from runs where dataset_id = ? and encoder_id = ? and regime = ?"
    con.execute(
        f"insert into retired_fits select distinct fit_id, ?, ?, 'weights replaced', current_timestamp {of_set}",
        [dataset, f"weights:{old_hash}", *key],
    )
    retired = int(one_row(con.execute("select count(*) from retired_fits").fetchone())[0] - before)
    con.execute(
        "delete from retired_fits where dataset_id = ? and data_digest = ? and fit_id in "
        "(select fit_id from runs_all where dataset_id = ? and encoder_id = ? and regime = ?)",
        [dataset, f"weights:{new_hash}", *key],
    )
    con.execute(
        "insert into retired_feature_sets select dataset_id, encoder_id, regime, image_digest, "
        "to_json(f), current_timestamp from feature_sets f "
        "where dataset_id = ? and encoder_id = ? and regime = ? and store_url = ?",
        [*key, store_url],
    )
    return retired
