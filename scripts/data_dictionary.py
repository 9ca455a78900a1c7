"""Write docs/DATA_DICTIONARY.md from the COMMENTs inside a warehouse file.

    python scripts/data_dictionary.py            # a fresh, empty warehouse: every table, view, macro
    python scripts/data_dictionary.py --check    # exit 1 if docs/DATA_DICTIONARY.md is stale
    python scripts/data_dictionary.py --db demo-out/crsbench.duckdb --out /tmp/dd.md

The default reads a warehouse created in a temporary folder, so the document depends on the
code alone (not on which analyses some warehouse happens to hold); tests/warehouse/test_dictionary.py
fails when the committed file differs from it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.dictionary import entries, render_markdown

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "DATA_DICTIONARY.md"


def render(db: Path | None = None) -> str:
    """The Markdown dictionary of `db` (read-only), or of a fresh warehouse when None."""
    if db is not None:
        with Warehouse.open(db, read_only=True) as wh:
            return render_markdown(entries(wh.con))
    with tempfile.TemporaryDirectory() as tmp, Warehouse.open(Path(tmp) / "fresh.duckdb") as wh:
        return render_markdown(entries(wh.con))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="warehouse to read (default: a fresh one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if --out differs, write nothing")
    args = parser.parse_args(argv)
    text = render(args.db)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale; run python scripts/data_dictionary.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
