"""What an import refuses, each with one line naming the difference, leaving the warehouse unchanged:
a changed number in a signed bundle, an unknown key, another protocol, a truncated bundle, a newer
bundle schema, an unknown panel (docs/METHODS.md §22.2-§22.3)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support.exchange_support import build_sites, entries, parquet_bytes, part, repack, rezip, site_tables
from support.one_model_support import cli

from crsbench.bench import Bench
from crsbench.core import CrsbenchError
from crsbench.features.perturbations import REGISTRY
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

PANEL = "bp"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("refusals")
    dbs = build_sites(root, {"site": None, "hub": None})
    private, public = Bench(dbs["site"]).results_keygen(root / "keys", "site")
    stranger, _ = Bench(dbs["site"]).results_keygen(root / "keys", "stranger")
    bench = Bench(dbs["site"])
    bench.results_export(PANEL, "site-a", root / "signed.zip", key=private, replicates=10)
    bench.results_export(PANEL, "site-a", root / "stranger.zip", key=stranger, replicates=10)
    return {**dbs, "root": root, "trusted": public}


def _refused(world: dict[str, Path], bundle: Path, match: str, **options: object) -> None:
    before = site_tables(world["hub"])
    with pytest.raises(CrsbenchError, match=match):
        Bench(world["hub"]).results_import(bundle, trusted_keys=world["trusted"], **options)  # type: ignore[arg-type]
    after = site_tables(world["hub"])
    for table, frame in before.items():
        pd.testing.assert_frame_equal(after[table], frame)


def test_one_changed_number_in_a_signed_bundle_is_refused_naming_the_part(world, tmp_path):
    files = entries(world["root"] / "signed.zip")
    runs = part(world["root"] / "signed.zip", "runs")
    runs.loc[0, "auroc"] += 1e-9
    files["runs.parquet"] = parquet_bytes(runs)
    _refused(world, rezip(files, tmp_path / "tampered.zip"), r"part runs\.parquet does not match the digest")


def test_a_manifest_changed_after_signing_is_refused(world, tmp_path):
    files = entries(world["root"] / "signed.zip")
    files["manifest.json"] = files["manifest.json"].replace(b'"site": "site-a"', b'"site": "site-z"')
    _refused(world, rezip(files, tmp_path / "renamed.zip"), "signature does not verify")


def test_a_bundle_from_an_unknown_key_needs_allow_unsigned(world):
    _refused(world, world["root"] / "stranger.zip", r"signed by key [0-9a-f]{16} \(stranger\), not in")
    unsigned = world["root"] / "unsigned.zip"
    repack(world["root"] / "signed.zip", unsigned)
    _refused(world, unsigned, "the bundle is unsigned; pass --allow-unsigned")


def test_another_protocol_is_refused_naming_the_condition(world, tmp_path, monkeypatch):
    # a site whose jpeg-s3 runs at another quality than this crsbench's
    here = REGISTRY.get("jpeg").levels[3]
    monkeypatch.setitem(REGISTRY.get("jpeg").levels, 3, here // 2)
    other = tmp_path / "other.zip"
    Bench(world["site"]).results_export(PANEL, "site-a", other, replicates=10)
    monkeypatch.setitem(REGISTRY.get("jpeg").levels, 3, here)
    _refused(world, other, rf"conditions differ: jpeg-s3 jpeg level {here // 2} vs {here} here", allow_unsigned=True)


def test_a_corruption_suite_this_site_cannot_load_is_refused_naming_it(world, tmp_path):
    # the other site ran a corruption suite (features.suites) whose package is not installed here
    from crsbench.features.suites import SUITES, Suite

    def not_installed(name: str):
        raise CrsbenchError("the far suites need the farpkg package: pip install farpkg")

    SUITES.add("far-derm", Suite("far-derm", "derm", "robustness (far, derm)", "pip install farpkg", not_installed))
    try:
        spec = {"perturbation": "far-derm.smudge", "severity": 1, "level": 1.0}
        suited = repack(
            world["root"] / "signed.zip",
            tmp_path / "suited.zip",
            manifest_edit=lambda m: m["protocol"]["conditions"].update({"far-derm.smudge-s1": spec}),
        )
        _refused(
            world,
            suited,
            r"conditions differ: far-derm\.smudge-s1 cannot be read here \(the far suites need the farpkg package",
            allow_unsigned=True,
        )
    finally:
        SUITES.remove("far-derm")


def test_a_bundle_from_a_newer_schema_is_refused(world, tmp_path):
    newer = repack(
        world["root"] / "signed.zip", tmp_path / "newer.zip", manifest_edit=lambda m: m.update(bundle_schema=99)
    )
    _refused(world, newer, "bundle schema 99 is newer than this crsbench reads", allow_unsigned=True)


def test_a_manifest_without_a_site_is_refused(world, tmp_path):
    nameless = repack(
        world["root"] / "signed.zip", tmp_path / "nameless.zip", manifest_edit=lambda m: m.update(site=" ")
    )
    _refused(world, nameless, "manifest.json names no site", allow_unsigned=True)


def test_a_bundle_whose_panel_is_unknown_here_is_refused(world, tmp_path):
    with Warehouse.open(world["site"]) as wh:
        freeze_panel(wh, "elsewhere", ["enc_a", "enc_b", "enc_c", "enc_d"])
    Bench(world["site"]).results_export("elsewhere", "site-a", tmp_path / "elsewhere.zip", replicates=10)
    _refused(
        world,
        tmp_path / "elsewhere.zip",
        "the bundle's panel is unknown here: no panel named 'elsewhere'",
        allow_unsigned=True,
    )


def test_the_cli_refuses_a_truncated_bundle_in_one_line_and_writes_nothing(world, tmp_path):
    data = (world["root"] / "signed.zip").read_bytes()
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(data[: len(data) // 2])
    before = site_tables(world["hub"])
    code, out, err = cli("results", "import", str(truncated), "--allow-unsigned", "--yes", "--db", str(world["hub"]))
    assert code == 1 and out == ""
    assert err.strip().count("\n") == 0 and "not a complete results bundle" in err, err
    after = site_tables(world["hub"])
    for table, frame in before.items():
        pd.testing.assert_frame_equal(after[table], frame)
