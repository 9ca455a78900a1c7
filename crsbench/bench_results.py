"""The results-exchange half of `crsbench.Bench` (docs/METHODS.md §22): export a site's results
as a bundle, sign it, import other sites' bundles, and build a board from a folder of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.core import ProgressFn
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    from crsbench.exchange.board import BoardSummary
    from crsbench.exchange.export import ExportSummary
    from crsbench.exchange.importing import ImportPlan


@dataclass(frozen=True)
class ImportResult:
    plan: ImportPlan
    added: dict[str, int] = field(default_factory=dict)  # table -> rows added (empty: nothing written)
    declined: bool = False


class Results:
    """Bench's methods over results bundles (`self.db` is the warehouse)."""

    db: Path

    def results_keygen(self, folder: Path | str, name: str) -> tuple[Path, Path]:
        """Create an Ed25519 key pair `<name>.key` (private, mode 0600) and `<name>.pub` in `folder`."""
        from crsbench.exchange.signing import keygen

        return keygen(Path(folder), name)

    def results_export(
        self,
        panel: str,
        site: str,
        out: Path | str,
        *,
        key: Path | str | None = None,
        include_predictions: bool = False,
        replicates: int = 200,
        seed: int = 0,
        progress: ProgressFn | None = None,
    ) -> ExportSummary:
        """Write the panel members' results at `site` as a bundle (no image ids, paths, predictions,
        embeddings or labels unless `include_predictions`), signed with `key` when given."""
        from crsbench.exchange.export import export_bundle

        with Warehouse.open(self.db, read_only=True) as wh:
            return export_bundle(
                wh, panel, site, Path(out), key=Path(key) if key else None, include_predictions=include_predictions,
                replicates=replicates, seed=seed, progress=progress,
            )  # fmt: skip

    def results_import(
        self,
        bundle: Path | str,
        *,
        trusted_keys: Path | str | None = None,
        allow_unsigned: bool = False,
        confirm: Callable[[ImportPlan], bool] | None = None,
    ) -> ImportResult:
        """Check `bundle` and, when `confirm` (shown the plan: what would be added and how it
        compares) agrees or is None, add it apart from this warehouse's results; idempotent."""
        from crsbench.exchange.importing import apply_import, plan_import

        path, trusted = Path(bundle), Path(trusted_keys) if trusted_keys else None
        with Warehouse.open(self.db, read_only=True) as wh:
            plan = plan_import(wh, path, trusted, allow_unsigned)
        if plan.already or (confirm is not None and not confirm(plan)):
            return ImportResult(plan, declined=not plan.already)
        with Warehouse.open(self.db) as wh:  # checked again under the write lock
            plan = plan_import(wh, path, trusted, allow_unsigned)
            return ImportResult(plan, apply_import(wh, plan))

    def results_board(
        self, folder: Path | str, *, trusted_keys: Path | str | None = None, allow_unsigned: bool = False
    ) -> BoardSummary:
        """Build (or update) this warehouse as a board of every bundle in `folder`."""
        from crsbench.exchange.board import build_board

        return build_board(self.db, Path(folder), Path(trusted_keys) if trusted_keys else None, allow_unsigned)
