"""Write the sql/views/ files of the analyses' public views from the analysis registry.

    python scripts/analysis_sql.py            # (re)write every declared view's file
    python scripts/analysis_sql.py --check    # exit 1 if a file is stale, write nothing

The warehouse applies sql/ without importing the analyses (they sit above it), so the declarations
are generated here from `crsbench.analyses.views`; tests/analyses/test_agreement.py fails when a
committed file differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsbench.analyses.views import shipped_files

SQL = Path(__file__).resolve().parent.parent / "sql"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file differs, write nothing")
    args = parser.parse_args(argv)
    files = shipped_files()
    stale = [n for n, text in files.items() if not (SQL / n).is_file() or (SQL / n).read_text(encoding="utf-8") != text]
    if args.check:
        for name in stale:
            print(f"sql/{name} is stale: run python scripts/analysis_sql.py", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        (SQL / name).write_text(files[name], encoding="utf-8")
        print(f"wrote sql/{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
