"""`crsbench.Bench`: the library API every notebook, script and CLI command goes through.

    bench = crsbench.Bench("bench.duckdb")
    bench.ingest("isic2019", "/data/ISIC2019", "isic")
    bench.extract(["tiny-vit"], ["isic"], ExtractConfig(ExtractOptions(batch_size=32)))
    bench.probe(encoders=["tiny-vit"])
    bench.freeze_panel("ref", ["tiny-vit", "tiny-convnext", "tiny-resnet18", "tiny-dinov2"])
    bench.leaderboard("ref").board                      # a DataFrame

Each call opens the warehouse for as long as it needs it and closes it again, so a Bench
holds no lock between calls; long calls take an optional `progress(description, done, total)`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from crsbench.bench_results import Results
from crsbench.bench_scores import Scores
from crsbench.bench_team import Team
from crsbench.core import CrsbenchError, ProgressFn
from crsbench.features.extract_options import ExtractOptions
from crsbench.ingest.types import Dataset
from crsbench.pipeline.adapt import AdaptConfig, AdaptResult
from crsbench.pipeline.extract import ExtractConfig
from crsbench.pipeline.ingest import IngestConfig
from crsbench.pipeline.probe import ProbeConfig
from crsbench.pipeline.stores import check_store_url, default_store
from crsbench.reads.leaderboard import Leaderboard
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.snapshot import FRESHNESS_INPUTS, inputs_read_by

T = TypeVar("T")

if TYPE_CHECKING:
    from crsbench.pipeline.demo import DemoPlan
    from crsbench.pipeline.verify import VerifyReport
    from crsbench.pipeline.zeroshot import ZeroShotSummary
    from crsbench.probes.grid import GridSummary
    from crsbench.reads.status import WarehouseStatus
    from crsbench.warehouse.dictionary import Entry
    from crsbench.warehouse.grid import Extension
    from crsbench.warehouse.overlap import OverlapReport

__all__ = ["AdaptConfig", "Bench", "ExtractConfig", "ExtractOptions", "IngestConfig", "Leaderboard", "ProbeConfig"]


class Bench(Scores, Results, Team):
    """One warehouse (a DuckDB file and its Parquet parts) and its feature store."""

    def __init__(self, db: Path | str, store: str | None = None) -> None:
        self.db = Path(db)
        self._store = check_store_url(store)

    @property
    def store(self) -> str:
        """The feature store: as given, else the default for this warehouse (`default_store`), looked
        up at first use (a team warehouse's asks its catalog)."""
        if self._store is None:
            self._store = default_store(self.db)
        return self._store

    @store.setter
    def store(self, url: str) -> None:
        self._store = check_store_url(url)

    def __repr__(self) -> str:
        return f"Bench(db={str(self.db)!r}, store={(self._store or 'default')!r})"

    # -- warehouse ----------------------------------------------------------------------------

    def init(self, data_path: str | None = None) -> int:
        """Create the warehouse with every table and view (idempotent); returns the schema version.
        A team warehouse (`ducklake:...`) keeps its Parquet files under `data_path`, given at creation."""
        with Warehouse.open(self.db, data_path=data_path) as wh:
            return wh.schema_version()

    def compact(self) -> int:
        """Merge the run/prediction parts into one per kind; returns how many were merged. Refuses,
        before the file is opened for writing, while parts crsbench did not write lie in the folder."""
        from crsbench.warehouse.at_rest import refuse_foreign_before_open

        refuse_foreign_before_open(self.db)
        with Warehouse.open(self.db) as wh:
            return wh.compact_parts()

    def sql(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> pd.DataFrame:
        """Run a read-only query in a sandbox (queries only; DuckDB opens no file, the warehouse's
        own parts are read for it); a failing or refused query is a CrsbenchError with one line."""
        with Warehouse.open(self.db, sandbox=True, lean=True) as wh:
            wh.check_query(query)
            try:
                with wh.snapshot(inputs_read_by(wh.con, query)):
                    return wh.sql(query, params)
            except Exception as exc:  # duckdb raises many error types; all are the caller's query
                raise CrsbenchError(f"query failed: {str(exc).splitlines()[0]}") from exc

    def describe(self, name: str | None = None) -> list[Entry]:
        """The data dictionary stored in the file: every table, view and macro with its comment
        and columns (or parameters), or only the one called `name`."""
        from crsbench.warehouse.dictionary import describe

        with Warehouse.open(self.db, read_only=True, lean=True) as wh:
            return describe(wh.con, name)

    def status(self) -> WarehouseStatus:
        """What the warehouse holds: datasets, encoders, feature sets, runs, panels, analyses."""
        from crsbench.reads.status import read_status

        with Warehouse.open(self.db, read_only=True, lean=True) as wh, wh.snapshot(FRESHNESS_INPUTS):
            return read_status(wh)

    # -- ingest -------------------------------------------------------------------------------

    def make_suite(
        self,
        out: Path | str,
        scale: float = 1.0,
        image_size: int = 128,
        seed: int = 0,
        progress: ProgressFn | None = None,
    ) -> dict[str, Path]:
        """Write the embedded demo suite (four toy datasets in their published layouts)."""
        from crsbench.ingest import make_suite

        return make_suite(Path(out), scale=scale, image_size=image_size, seed=seed, progress=progress)

    def demo_plan(self, encoders: Sequence[str] = ()) -> DemoPlan:
        """What `crsbench demo` runs: encoders (default the tiny random-init ones), the suite's datasets."""
        from crsbench.pipeline.demo import demo_plan

        return demo_plan(encoders)

    def ingest(
        self,
        adapter: str,
        path: Path | str,
        name: str,
        config: IngestConfig = IngestConfig(),
        progress: ProgressFn | None = None,
        confirm: Callable[[str], bool] | None = None,
    ) -> Dataset:
        """Ingest one dataset (validated first, written in one transaction). Replacing it with
        other data retires its stale runs and feature sets if `config.yes` or `confirm(text)`."""
        from crsbench.pipeline.ingest import ingest_dataset

        return ingest_dataset(self.db, adapter, Path(path), name, config, progress, confirm=confirm, store=self.store)

    def ingest_suite(
        self, suite: Path | str, scale: float = 1.0, image_size: int = 128, progress: ProgressFn | None = None
    ) -> pd.DataFrame:
        """Generate and ingest the embedded suite's missing datasets and declare its shift pair."""
        from crsbench.pipeline.ingest import ingest_suite

        return ingest_suite(self.db, Path(suite), scale, image_size, progress)

    def relocate(self, name: str, path: Path | str, progress: ProgressFn | None = None) -> int:
        """Point a dataset at the folder its images moved to (every SHA-256 checked first);
        returns the number of images checked."""
        from crsbench.core import no_progress
        from crsbench.warehouse.datasets import relocate_dataset

        with Warehouse.open(self.db) as wh:
            return relocate_dataset(wh, name, Path(path), progress=progress or no_progress)

    def attach_metadata(self, name: str, csv: Path | str | None = None, bins: str = "") -> dict[str, int]:
        """Store per-image metadata of an ingested dataset, from `csv` or re-read from its source
        (image_metadata; rows per key returned). See warehouse.metadata."""
        from crsbench.warehouse.metadata import attach_metadata

        with Warehouse.open(self.db) as wh:
            return attach_metadata(wh, name, Path(csv) if csv is not None else None, bins)

    def declare_shift(self, source: str, target: str) -> None:
        """Declare a distribution-shift pair: probes fitted on `source` are also evaluated on `target`."""
        from crsbench.warehouse.datasets import declare_shift

        with Warehouse.open(self.db) as wh:
            declare_shift(wh, source, target)

    def datasets(self) -> pd.DataFrame:
        """The ingested datasets with their task, split sizes and shift targets."""
        from crsbench.warehouse.datasets import dataset_summary

        with Warehouse.open(self.db, read_only=True) as wh:
            return dataset_summary(wh)

    def overlap(
        self,
        manifest: Path | str | None = None,
        encoder: str | None = None,
        datasets: Sequence[str] = (),
        max_distance: int = 0,
        progress: ProgressFn | None = None,
    ) -> OverlapReport:
        """Pretraining overlap (METHODS.md §20). With `manifest` (a file of image hashes, one a line:
        SHA-256 or perceptual dHash, '#' comments), the share of each split of `datasets` (default
        all) found in it (a dHash within `max_distance` bits counts), stored as `encoder`'s
        measured overlap when one is named; always the rows of view encoder_dataset_overlap
        (declared, measured, unknown)."""
        from crsbench.warehouse.overlap import measure_overlap

        path = Path(manifest) if manifest is not None else None
        read_only = encoder is None
        with Warehouse.open(self.db, read_only=read_only) as wh:
            return measure_overlap(wh, path, encoder, list(datasets), max_distance, progress)

    # -- features and probes ------------------------------------------------------------------

    def extract(
        self,
        encoders: Sequence[str],
        datasets: Sequence[str] = ("all",),
        config: ExtractConfig = ExtractConfig(),
        progress: ProgressFn | None = None,
        *,
        screen: bool = False,
    ) -> pd.DataFrame:
        """Extract every depth and condition once per encoder and dataset (resumable); one row per
        pair (pipeline.extract.COLUMNS). `screen` (or `config.options.screen`) writes the clean
        condition alone, a set no probe reads that a later plain extract completes by reusing it
        (docs/METHODS.md §2.9)."""
        from crsbench.pipeline.extract import extract_all

        if screen:
            config = dataclasses.replace(config, options=dataclasses.replace(config.options, screen=True))
        return extract_all(self.db, self.store, list(encoders), list(datasets), config, progress)

    def convert_weights(
        self, source: Path | str, out: Path | str, force: bool = False, trust_pickle: bool = False
    ) -> dict[str, int]:
        """Write a checkpoint's tensors (and its state dicts, nested as they were) to a
        safetensors file, leaving its pickled Python objects behind. A checkpoint holding pickled
        Python objects is refused, naming them, unless `trust_pickle` (then it is unpickled after
        a warning naming it: only for files you trust). `out` is checked first: never the source,
        the warehouse's files or a device, an existing file only with `force`. Returns {part: tensors}."""
        from crsbench.core import check_write_target
        from crsbench.features.checkpoints import convert_to_safetensors, weight_file
        from crsbench.pipeline.stores import warehouse_paths

        source, out = Path(source), Path(out)
        inputs = [source, weight_file(source)] if source.is_dir() else [source]
        protected = warehouse_paths(self.db, self.store)
        check_write_target(
            out, force=force, protected=protected, inputs=inputs, option="OUT", example="out.safetensors"
        )
        return convert_to_safetensors(source, out, trust_pickle=trust_pickle)

    def verify(self, encoders: Sequence[str] = (), datasets: Sequence[str] = ()) -> VerifyReport:
        """Check every chunk of every feature set (codec checksum, content manifest) and every
        Parquet part (its recorded SHA-256); `report.damaged` lists what failed and the fits that read it."""
        from crsbench.pipeline.verify import verify_all

        return verify_all(self.db, self.store, list(encoders), list(datasets))

    def feature_sets(self, sync: bool = False) -> pd.DataFrame:
        """The feature-set catalog; `sync` rescans the store first."""
        from crsbench.warehouse import catalog

        if sync:
            from crsbench.features.store import FeatureStore

            with Warehouse.open(self.db) as wh:
                catalog.sync_catalog(wh, FeatureStore(self.store))
        with Warehouse.open(self.db, read_only=True) as wh:
            return catalog.feature_sets(wh)

    def confirm_feature_set(self, encoder: str, dataset: str) -> str:
        """Accept a feature set flagged degenerate at extraction (constant features, or a rank far
        below its width), so its encoder is ranked again; returns the reason it was flagged."""
        from crsbench.pipeline.degenerate import confirm_feature_set

        return confirm_feature_set(self.db, self.store, encoder, dataset)

    def probe(
        self,
        encoders: Sequence[str] = (),
        datasets: Sequence[str] = (),
        config: ProbeConfig = ProbeConfig(),
        progress: ProgressFn | None = None,
    ) -> GridSummary:
        """Fit the probe grid on cached features and record every evaluation (idempotent); then fold
        the run parts into the file (`config.compact`), so any DuckDB client reads it at rest.

        With no probe/depth/fraction/seed in `config`: exactly each dataset's declared grid, for
        every encoder given (default all). Values given must be declared; fits off the grid
        (a probe paired with a depth the grid lacks) are extras: stored, never scored."""
        from crsbench.pipeline.probe import probe_all

        self._check_writable(config.compact)
        summary = probe_all(self.db, self.store, list(encoders), list(datasets), config, progress)
        return dataclasses.replace(summary, **self._fold(config.compact))

    def zeroshot(
        self,
        encoders: Sequence[str] = (),
        datasets: Sequence[str] = (),
        prompts: Path | str | None = None,
        progress: ProgressFn | None = None,
        compact: bool = True,
    ) -> ZeroShotSummary:
        """Zero-shot classification (probe 'zeroshot') of the image-text encoders, from their text
        towers and stored image embeddings; `prompts` is a TOML file overriding the adapters'."""
        from crsbench.pipeline.zeroshot import zeroshot_all

        self._check_writable(compact)
        out = zeroshot_all(
            self.db, self.store, list(encoders), list(datasets), Path(prompts) if prompts else None, progress
        )
        return dataclasses.replace(out, **self._fold(compact))

    def _check_writable(self, compact: bool) -> None:
        from crsbench.warehouse.connection import check_writable

        check_writable(self.db, "probe" if compact else "probe --no-compact")

    def _fold(self, compact: bool) -> dict[str, Any]:
        """What a command that appended parts does last: fold them in unless told not to (or unsafe)."""
        from crsbench.warehouse.at_rest import fold_at_rest
        from crsbench.warehouse.parts import data_parts, parts_dir_for

        if compact:
            folded = fold_at_rest(self.db)
            return {"compacted": folded.parts, "pending_parts": folded.pending, "pending_reason": folded.reason}
        pending = len(data_parts(parts_dir_for(self.db.absolute()) / "runs"))
        reason = f"--no-compact; 'crsbench warehouse compact --db {self.db}' folds them" if pending else ""
        return {"compacted": 0, "pending_parts": pending, "pending_reason": reason}

    def grid(self) -> pd.DataFrame:
        """Each dataset's declared evaluation grid: probe@depth pairs, fractions, seeds, conditions."""
        from crsbench.warehouse.grid import grid_summary

        with Warehouse.open(self.db, read_only=True) as wh:
            return grid_summary(wh.con)

    def extend_grid(
        self,
        datasets: Sequence[str] = (),
        *,
        probes: Sequence[str] = (),
        depths: Sequence[float] = (),
        fractions: Sequence[float] = (),
        seeds: Sequence[int] = (),
        suites: Sequence[str] = (),
    ) -> Extension:
        """Widen the declared grid of `datasets` (default: every dataset probes are fitted on) for
        every encoder: each axis named takes the values given, the others every declared value.
        Existing cells are incomplete until `probe` fills the new fits. Each corruption suite named
        (`features.suites`) adds its conditions to the full-label fits of datasets of its domain."""
        from crsbench.probes.registry import probe_names
        from crsbench.warehouse.grid import extend_grid

        change = functools.partial(
            extend_grid,
            probes=probes,
            depths=depths,
            fractions=fractions,
            seeds=seeds,
            suites=suites,
            named=bool(datasets),
            known_probes=probe_names(),
        )
        if not suites:
            return self._change_grid(datasets, change)
        from crsbench.pipeline.suites import check_suites_on_images

        return self._change_grid(datasets, change, before=functools.partial(check_suites_on_images, suites=suites))

    def restrict_grid(self, config: ProbeConfig, datasets: Sequence[str] = ()) -> dict[str, int]:
        """Narrow the declared grid of `datasets` (default: every dataset probes are fitted on) to
        the fits matching the probes, depths, fractions and seeds `config` names, for a small
        study; refused once any panel is frozen. Returns the fits removed per dataset."""
        from crsbench.warehouse.grid import restrict_grid

        change = functools.partial(
            restrict_grid, probes=config.probes, depths=config.depths, fractions=config.fractions, seeds=config.seeds
        )
        return self._change_grid(datasets, change)

    def _change_grid(
        self,
        datasets: Sequence[str],
        change: Callable[[Any, list[str]], T],
        before: Callable[[Warehouse, list[str]], None] | None = None,
    ) -> T:
        """Apply `change(con, dataset names)` to the declared grids in one transaction, after
        `before(warehouse, names)` (a check). The default is every dataset `probe` fits on: one ingested
        --unlabeled has no grid and is left out (named, it is refused as `probe` refuses it)."""
        from crsbench.pipeline.probe import choose_datasets, labelled_only
        from crsbench.warehouse.datasets import list_datasets, shift_pairs

        with Warehouse.open(self.db) as wh:
            names = choose_datasets(list_datasets(wh), datasets, shift_pairs(wh))
            names = labelled_only(wh, names, requested=bool(datasets))
            if before is not None:
                before(wh, names)
            with wh.transaction() as con:
                return change(con, names)

    def adapt(
        self, encoder: str, dataset: str, config: AdaptConfig = AdaptConfig(), progress: ProgressFn | None = None
    ) -> AdaptResult:
        """LoRA-adapt `encoder` on `dataset` per seed and extract each variant `encoder@lora-s<seed>`."""
        from crsbench.pipeline.adapt import adapt_encoder

        return adapt_encoder(self.db, self.store, encoder, dataset, config, progress)

    def export(
        self, name_or_query: str, fmt: str = "csv", out: Path | str | None = None, force: bool = False
    ) -> tuple[int, str | None]:
        """Export a view, table or read-only query (in the SQL sandbox) as csv, parquet, json,
        markdown or latex; returns (rows, text), text None when written to `out`. `out` is
        checked before the query runs: never the warehouse, its WAL, parts folder or feature
        store, never a folder, device or FIFO, and an existing file only with `force`."""
        from crsbench.core import check_write_target
        from crsbench.pipeline.stores import warehouse_paths
        from crsbench.warehouse.export import export

        if out is not None:
            check_write_target(
                Path(out), force=force, protected=warehouse_paths(self.db, self.store), example="out.csv"
            )
        with Warehouse.open(self.db, sandbox=True, lean=True) as wh:
            return export(wh, name_or_query, fmt, Path(out) if out is not None else None, force=force)

    def encoders(
        self, files: Sequence[Path | str] = (), allow_code: bool = False, check_weights: bool = False
    ) -> list[dict[str, Any]]:
        """Every encoder (built-in, TOML `files` and the warehouse's crsbench.toml, plugins) with its
        origin, family, scope, loader and input size; `check_weights` adds whether its weights and
        text tower are available locally. `allow_code` lets `files` name Python code."""
        from crsbench.pipeline.encoders import encoder_rows

        return encoder_rows(self.db, [Path(f) for f in files], allow_code, check_weights)

    @staticmethod
    def missing_weights_hint() -> str:
        """Where missing weights go, in one line: the places extraction looks, in its order."""
        from crsbench.pipeline.encoders import missing_weights_hint

        return missing_weights_hint()
