"""`crsbench results keygen|export|import`: each command parses, calls one Bench method and renders;
import shows what it adds and writes only when confirmed (in-process `main`, as a shell runs it)."""

from __future__ import annotations

import json

from support.exchange_support import build_sites, site_tables

from crsbench.cli import main


def test_keygen_export_dry_run_then_import_through_the_cli(tmp_path, capsys):
    dbs = build_sites(tmp_path, {"site": None, "hub": None})
    assert main(["results", "keygen", "--name", "site", "--dir", str(tmp_path / "keys")]) == 0
    bundle = tmp_path / "b.zip"
    capsys.readouterr()
    assert main(["--json", "results", "export", "--panel", "bp", "--site", "site-a", "--out", str(bundle),
                 "--key", str(tmp_path / "keys" / "site.key"), "--replicates", "5", "--db", str(dbs["site"])]) == 0  # fmt: skip
    exported = json.loads(capsys.readouterr().out)
    assert exported["signed_by"] and exported["parts"]["cells"] == 8
    trusted = str(tmp_path / "keys" / "site.pub")
    hub = ["--trusted-keys", trusted, "--db", str(dbs["hub"])]
    assert main(["results", "import", str(bundle), "--dry-run", *hub]) == 0
    out = capsys.readouterr().out
    assert "what it adds" in out and "nothing imported (dry run)" in out, out
    assert site_tables(dbs["hub"])["site_bundles"].empty
    assert main(["results", "import", str(bundle), *hub]) == 1  # off a terminal: needs --yes
    assert "confirm with --yes" in capsys.readouterr().err and site_tables(dbs["hub"])["site_bundles"].empty
    assert main(["--json", "results", "import", str(bundle), "--yes", *hub]) == 0
    assert json.loads(capsys.readouterr().out)["added"]["site_cells"] == 8
    assert list(site_tables(dbs["hub"])["site_bundles"]["site"]) == ["site-a"]
