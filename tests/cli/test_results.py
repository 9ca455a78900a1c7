"""`crsbench results keygen|export|import`: each command parses, calls one Bench method and renders;
import shows what it adds and writes only when confirmed."""

from __future__ import annotations

import json

from support.exchange_support import build_sites, site_tables
from support.one_model_support import cli


def test_keygen_export_dry_run_then_import_through_the_cli(tmp_path):
    dbs = build_sites(tmp_path, {"site": None, "hub": None})
    code, out, err = cli("results", "keygen", "--name", "site", "--dir", str(tmp_path / "keys"))
    assert code == 0, err
    bundle = tmp_path / "b.zip"
    code, out, err = cli("--json", "results", "export", "--panel", "bp", "--site", "site-a", "--out", str(bundle),
                         "--key", str(tmp_path / "keys" / "site.key"), "--replicates", "5", "--db", str(dbs["site"]))  # fmt: skip
    assert code == 0, err
    exported = json.loads(out)
    assert exported["signed_by"] and exported["parts"]["cells"] == 8
    trusted = str(tmp_path / "keys" / "site.pub")
    code, out, err = cli(
        "results", "import", str(bundle), "--trusted-keys", trusted, "--dry-run", "--db", str(dbs["hub"])
    )
    assert code == 0 and "what it adds" in out and "nothing imported (dry run)" in out, (out, err)
    assert site_tables(dbs["hub"])["site_bundles"].empty
    code, out, err = cli("results", "import", str(bundle), "--trusted-keys", trusted, "--db", str(dbs["hub"]))
    assert code == 1 and "confirm with --yes" in err and site_tables(dbs["hub"])["site_bundles"].empty
    code, out, err = cli(
        "--json", "results", "import", str(bundle), "--trusted-keys", trusted, "--yes", "--db", str(dbs["hub"])
    )
    assert code == 0, err
    assert json.loads(out)["added"]["site_cells"] == 8
    assert list(site_tables(dbs["hub"])["site_bundles"]["site"]) == ["site-a"]
