"""`crsbench results import` (docs/METHODS.md §22.2-§22.3): check a bundle, show what it would add,
then add it apart from this warehouse's own results, once.

Checks, in order, each refusing with one line and writing nothing: the file (complete zip,
manifest, schema version, every part's digest); the signature (it must verify over the manifest's
bytes; an unsigned bundle or one from a key outside the trusted list needs `allow_unsigned`); the
panel (frozen here under the same name and members); the protocol (§22.3); and the parts
themselves (the shipped cells must be what the shipped runs give by the one axes definition).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from crsbench.analyses.validity.criterion import registered
from crsbench.core import AXES, CrsbenchError
from crsbench.exchange.bundle import Bundle, read_bundle
from crsbench.exchange.export import CELL_COLUMNS, RUN_KEYS
from crsbench.exchange.protocol import protocol_differences, site_protocol
from crsbench.exchange.signing import parse_public, trusted_keys, verifies
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import get_panel

REQUIRED = {
    "runs": (*RUN_KEYS, "auroc", "ece", "metrics", "n_train", "n_test", "pretrained"),
    "cells": CELL_COLUMNS,
    "replicates": ("replicate", "encoder_id", "dataset_id", *AXES),
    "anchors": ("scope", "axis", "lo", "hi"),
    "scores": ("encoder_id", "crs", "auroc"),
}


@dataclass(frozen=True)
class ImportPlan:
    bundle: Bundle
    site: str
    panel: str
    signed_by: str | None
    trusted: bool
    already: bool  # this exact bundle is already here: importing adds nothing
    preview: pd.DataFrame  # per encoder: the site's AUROC and CRS here, and this warehouse's own
    notes: list[str] = field(default_factory=list)


def _signature(bundle: Bundle, trusted_file: Path | None, allow_unsigned: bool) -> tuple[str | None, bool]:
    where = bundle.path
    if bundle.signature is None:
        if not allow_unsigned:
            raise CrsbenchError(f"{where}: the bundle is unsigned; pass --allow-unsigned to import it marked untrusted")
        return None, False
    public = parse_public(str(bundle.signature.get("public_key", "")), f"{where}: signature.json")
    try:
        signature = bytes.fromhex(str(bundle.signature.get("signature", "")))
    except ValueError as exc:
        raise CrsbenchError(f"{where}: signature.json holds no hex signature") from exc
    if not verifies(public.raw, signature, bundle.manifest_bytes):
        raise CrsbenchError(f"{where}: the signature does not verify: manifest.json was changed after signing")
    trusted = trusted_file is not None and public.key_id in trusted_keys(trusted_file)
    if not trusted and not allow_unsigned:
        listed = f"not in {trusted_file}" if trusted_file is not None else "no trusted keys are configured"
        raise CrsbenchError(
            f"{where}: signed by key {public.key_id} ({public.name or 'unnamed'}), {listed}; add the site's public "
            "key to the trusted keys (--trusted-keys FILE) or pass --allow-unsigned to import it marked untrusted"
        )
    return public.key_id, trusted


def _check_manifest(bundle: Bundle) -> None:
    """The manifest fields an import stores: a one-line site, an ISO export time, a panel with members."""
    m = bundle.manifest
    site = m.get("site")
    if not isinstance(site, str) or not site.strip() or "\n" in site:
        raise CrsbenchError(f"{bundle.path}: manifest.json names no site (site {site!r})")
    try:
        datetime.fromisoformat(str(m.get("exported_at")))
    except ValueError as exc:
        raise CrsbenchError(f"{bundle.path}: manifest.json exported_at {m.get('exported_at')!r} is not a time") from exc
    panel = m.get("panel")
    if not isinstance(panel, dict) or not isinstance(panel.get("members"), list) or not panel.get("name"):
        raise CrsbenchError(f"{bundle.path}: manifest.json names no panel with members")


def _check_parts(bundle: Bundle) -> None:
    for part, columns in REQUIRED.items():
        if part not in bundle.parts:
            raise CrsbenchError(f"{bundle.path}: part {part}.parquet is missing")
        missing = [c for c in columns if c not in bundle.parts[part].columns]
        if missing:
            raise CrsbenchError(f"{bundle.path}: part {part}.parquet lacks column {missing[0]!r}")


def _check_panel(wh: Warehouse, bundle: Bundle) -> str:
    spec = bundle.manifest.get("panel", {})
    name = str(spec.get("name", ""))
    try:
        panel = get_panel(wh, name)
    except CrsbenchError as exc:
        raise CrsbenchError(f"{bundle.path}: the bundle's panel is unknown here: {exc}") from exc
    theirs, ours = sorted(spec.get("members", [])), sorted(panel.members)
    if theirs != ours:
        raise CrsbenchError(
            f"{bundle.path}: panel {name!r} differs: members {', '.join(theirs)} in the bundle vs {', '.join(ours)} here"
        )
    return name


def _check_protocol(wh: Warehouse, bundle: Bundle, panel: str) -> None:
    ours = site_protocol(wh, [], [])
    sets = wh.sql("select scope, conditions from panel_conditions where panel = ?", [panel])
    differences = protocol_differences(
        bundle.manifest.get("protocol", {}), ours, {r.scope: list(r.conditions) for r in sets.itertuples()}
    )
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise CrsbenchError(f"{bundle.path}: another protocol: {differences[0]}{more}; nothing imported")


_RECOMPUTED_CELLS_SQL = """
with seed_means as (
    select 'bundle' as grp, encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction,
           condition, fn_exact_mean(auroc) as auroc_mean, fn_exact_mean(ece) as ece_mean,
           bool_and(pretrained) as pretrained
    from {runs}
    group by all
)
select encoder_id, dataset_id, discrimination, calibration, label_efficiency, robustness
from fn_axes_cell('seed_means')
"""


def _check_cells_follow_from_runs(wh: Warehouse, bundle: Bundle) -> None:
    """The shipped cells must be what the shipped runs give by the one definition of the axes."""
    with registered(wh, {"runs": bundle.parts["runs"]}) as names:
        recomputed = wh.sql(_RECOMPUTED_CELLS_SQL.format(**names))
    shipped = bundle.parts["cells"]
    both = shipped.merge(recomputed, on=["encoder_id", "dataset_id"], how="left", suffixes=("", "_runs"))
    for axis in AXES:
        bad = both[~(both[axis].eq(both[f"{axis}_runs"]) | (both[axis].isna() & both[f"{axis}_runs"].isna()))]
        if len(bad):
            r = bad.iloc[0]
            raise CrsbenchError(
                f"{bundle.path}: part cells does not follow from part runs: {r.encoder_id} on {r.dataset_id}, "
                f"{axis} {r[axis]!r} shipped vs {r[f'{axis}_runs']!r} from the runs"
            )


def _preview(wh: Warehouse, bundle: Bundle, site: str, panel: str) -> pd.DataFrame:
    cells = bundle.parts["cells"].assign(grp="bundle", panel=panel, site=site)
    with registered(wh, {"cells": cells}) as names:
        theirs = wh.sql(
            f"select encoder_id, discrimination as site_auroc, crs as site_crs from fn_site_scores('{names['cells']}')"
        )
    ours = wh.sql(
        "select encoder_id, auroc as here_auroc, crs as here_crs from crs_encoder where panel = ? and regime = 'frozen'",
        [panel],
    )
    preview = theirs.merge(ours, on="encoder_id", how="left").sort_values("site_crs", ascending=False)
    preview.insert(1, "site_rank", preview["site_crs"].rank(ascending=False, method="min"))
    preview.insert(4, "here_rank", preview["here_crs"].rank(ascending=False, method="min"))
    return preview.reset_index(drop=True)


def plan_import(
    wh: Warehouse, path: Path, trusted_file: Path | None = None, allow_unsigned: bool = False
) -> ImportPlan:
    """Every check, and what the import would add; writes nothing."""
    bundle = read_bundle(path)
    signed_by, trusted = _signature(bundle, trusted_file, allow_unsigned)
    _check_manifest(bundle)
    _check_parts(bundle)
    panel = _check_panel(wh, bundle)
    _check_protocol(wh, bundle, panel)
    _check_cells_follow_from_runs(wh, bundle)
    site = str(bundle.manifest.get("site", ""))
    already = bool(wh.sql("select count(*) as n from site_bundles where bundle_digest = ?", [bundle.digest])["n"][0])
    notes = _dataset_notes(wh, bundle)
    if not trusted:
        notes.append("untrusted: " + ("unsigned" if signed_by is None else f"key {signed_by} is not a trusted key"))
    return ImportPlan(bundle, site, panel, signed_by, trusted, already, _preview(wh, bundle, site, panel), notes)


def _dataset_notes(wh: Warehouse, bundle: Bundle) -> list[str]:
    here = {r.dataset_id: r.digest for r in wh.sql("select dataset_id, digest from dataset_image_digest").itertuples()}
    notes = []
    for dataset, spec in sorted(bundle.manifest.get("protocol", {}).get("datasets", {}).items()):
        same = "not held here" if dataset not in here else (
            "the same images and labels as here" if here[dataset] == spec.get("image_digest") else "other images than here"
        )  # fmt: skip
        notes.append(f"{dataset}: {spec.get('n_images')} images, {spec.get('n_test')} test ({same})")
    return notes


def _rows(bundle: Bundle, part: str, columns: tuple[str, ...], site: str) -> pd.DataFrame:
    frame = bundle.parts[part][list(columns)].copy()
    frame.insert(0, "site", site)
    frame.insert(0, "bundle_digest", bundle.digest)
    return frame


def apply_import(wh: Warehouse, plan: ImportPlan) -> dict[str, int]:
    """Add the bundle's rows in one transaction; rows added per table (nothing when already here)."""
    b = plan.bundle
    identity = b.manifest.get("protocol", {}).get("datasets", {})
    datasets = pd.DataFrame(
        [
            [b.digest, plan.site, d, s.get("task"), s.get("n_images"), s.get("n_test"), s.get("image_digest")]
            for d, s in sorted(identity.items())
        ],
        columns=["bundle_digest", "site", "dataset_id", "task", "n_images", "n_test", "image_digest"],
    )
    tables = {
        "site_runs": _rows(b, "runs", REQUIRED["runs"], plan.site),
        "site_cells": _rows(b, "cells", CELL_COLUMNS, plan.site),
        "site_replicates": _rows(b, "replicates", REQUIRED["replicates"], plan.site),
        "site_datasets": datasets,
    }
    with wh.transaction() as con:
        if con.execute("select count(*) from site_bundles where bundle_digest = ?", [b.digest]).fetchone() != (0,):
            return {}
        con.execute(
            "insert into site_bundles values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                b.digest, plan.site, plan.panel, plan.signed_by, plan.trusted, b.manifest.get("crsbench_version"),
                datetime.fromisoformat(str(b.manifest.get("exported_at"))), datetime.now(UTC).replace(tzinfo=None),
                json.dumps(b.manifest, sort_keys=True),
            ],
        )  # fmt: skip
        for table, frame in tables.items():
            con.register("_site_rows", frame)
            try:
                con.execute(f"insert into {table} by name select * from _site_rows")
            finally:
                con.unregister("_site_rows")
    return {"site_bundles": 1, **{t: len(f) for t, f in tables.items()}}
