#!/usr/bin/env bash
# Every transcript, answer and figure the docs show, from one fresh demo (docs/METHODS.md §4.3):
#   rm -rf demo-out && COLUMNS=140 crsbench demo --out demo-out > demo.log
#   scripts/docs_from_demo.sh demo.log demo-out
# README's leaderboard and USER_GUIDE's transcript (scripts/docs_transcripts.py), ANALYST_GUIDE's
# answers (scripts/analyst_guide.py) and docs/report.png, the report's first 1280 x 800 screen
# (scripts/screenshot_report.sh). `make demo-check` checks the first two against a fresh demo.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 DEMO.log DEMO_OUT" >&2
  exit 1
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$here/.venv/bin/python}"
"$python" "$here/scripts/docs_transcripts.py" "$1" "$2"
"$python" "$here/scripts/analyst_guide.py" --db "$2/crsbench.duckdb"
# The page header names the warehouse as the docs spell it.
copy="$(mktemp -d)"
trap 'rm -rf "$copy"' EXIT
"$python" -m crsbench.cli report --db "$2/crsbench.duckdb" --panel demo --out "$copy/report.html" --force >/dev/null
sed "s#$2/crsbench.duckdb#demo-out/crsbench.duckdb#g; s#$(cd "$2" && pwd)/crsbench.duckdb#demo-out/crsbench.duckdb#g" \
  "$copy/report.html" > "$copy/page.html"
bash "$here/scripts/screenshot_report.sh" "$copy/page.html" "$here/docs/report.png" 1280 800
echo "docs regenerated from $1 and $2"
