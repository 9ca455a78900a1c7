#!/usr/bin/env bash
# Screenshot a crsbench HTML report with headless Chromium, e.g. for docs/report.png:
#   scripts/screenshot_report.sh demo-out/report.html docs/report.png [WIDTH [HEIGHT]]
# Whole page by default; with HEIGHT only the top WIDTH x HEIGHT view (a README-sized image).
# Fails (exit 1) if the page logs a console error, a script error or a blocked request.
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 4 ]; then
  echo "usage: $0 REPORT.html OUT.png [WIDTH [HEIGHT]]" >&2
  exit 1
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$here/.venv/bin/python}"
[ -x "$python" ] || python=python3
exec "$python" "$here/tests/support/browser_support.py" "$@"
