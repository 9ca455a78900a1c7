"""Digests of a demo's chain (docs/METHODS.md §4.3): suite bytes -> images -> features -> runs ->
leaderboard and the main analysis tables, against the golden file in the repository.

    python scripts/demo_digests.py demo-out            # print them (JSON)
    python scripts/demo_digests.py demo-out --check    # compare with the golden file's "demo" part
    python scripts/demo_digests.py demo-out --write    # replace that part (after a deliberate change)

--check exits 1 naming the first stage whose digests differ. The features digested are every
stored array of every encoder on every dataset.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from crsbench.pipeline.digests import chain_digests, first_difference, table_digests
from crsbench.warehouse.connection import Warehouse

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "data" / "golden_digests.json"
TABLES = {
    "crs_encoder": "select * from crs_encoder order by panel, encoder_id",
    "bootstrap_intervals": "select * exclude (input_digest) from bootstrap_intervals order by all",
    "analysis_e1_specialisation": "select * from analysis_e1_specialisation order by all",
    "analysis_e4_corruption": "select * from analysis_e4_summary order by all",
    "analysis_agreement": "select * from analysis_agreement_encoder_agreement order by all",
    "operating_points": "select * from operating_points order by all",
}


def demo_digests(out: Path) -> dict[str, str]:
    db = out / "crsbench.duckdb"
    with Warehouse.open(db, read_only=True) as wh:
        datasets = [r[0] for r in wh.con.execute("select dataset_id from datasets order by 1").fetchall()]
        encoders = [r[0] for r in wh.con.execute("select distinct encoder_id from feature_sets order by 1").fetchall()]
        known = {r[0] for r in wh.con.execute("select table_name from information_schema.tables").fetchall()}
        tables = {k: q for k, q in TABLES.items() if q.split(" from ")[1].split()[0] in known}
        return {
            **chain_digests(wh, str(db) + ".features.zarr", datasets, encoders, ("logreg", "knn", "mlp", "zeroshot")),
            **table_digests(wh, tables),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the demo's folder (crsbench demo --out)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    args = parser.parse_args()
    found = demo_digests(args.out)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if args.write:
        golden["demo"] = found
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(found)} demo digests to {GOLDEN}")
        return 0
    if args.check:
        difference = first_difference(found, golden.get("demo", {}))
        print(difference or f"the demo's {len(found)} digests equal the golden file's")
        return 1 if difference else 0
    print(json.dumps(found, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
