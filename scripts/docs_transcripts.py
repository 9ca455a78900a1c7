"""Regenerate the demo transcripts in README.md and docs/USER_GUIDE.md from a fresh demo, so the
digits in the docs are the digits the program prints (docs/METHODS.md §4.3).

    crsbench demo --out demo-out > demo.log        # on a quiet machine, from a fresh folder
    python scripts/docs_transcripts.py demo.log demo-out

USER_GUIDE's `text` block that starts with the demo's first line is replaced by the log, less the
progress-bar lines (a pipe prints each update as a line), with the output folder spelled
`demo-out`. README's leaderboard block is replaced by the head of `crsbench leaderboard --panel
demo` as it prints on that warehouse: its verdict and its table (the rank agreement and warnings
that follow are in USER_GUIDE's transcript). Nothing else in either file changes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRESS = re.compile(r": \d[\d,]*/\d[\d,]* \(\d+ %\)")  # "...: 351/2251 (16 %), 12.65/s, eta 2:30"


def transcript(log: str, out: Path) -> str:
    lines = [line.rstrip() for line in log.splitlines() if not PROGRESS.search(line)]
    text = "\n".join(lines).strip("\n")
    return text.replace(str(out.resolve()), "demo-out").replace(str(out), "demo-out")


def replace_block(doc: str, starts_with: str, body: str) -> str:
    """`doc` with the fenced ```text block whose first line starts with `starts_with` replaced by `body`."""
    pattern = re.compile(r"```text\n(" + re.escape(starts_with) + r".*?)\n```", re.S)
    if not pattern.search(doc):
        raise SystemExit(f"no ```text block starting with {starts_with!r}")
    return pattern.sub(lambda _: f"```text\n{body}\n```", doc, count=1)


def leaderboard(out: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "crsbench.cli", "leaderboard", "--db", str(out / "crsbench.duckdb"), "--panel", "demo"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "130", "PATH": "/usr/bin:/bin"},
    )
    lines = transcript(proc.stdout, out).splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("\u2514"))  # the table's bottom rule
    return "\n".join(lines[: end + 1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="the demo's standard output")
    parser.add_argument("out", type=Path, help="the demo's folder (crsbench demo --out)")
    args = parser.parse_args()
    guide = ROOT / "docs" / "USER_GUIDE.md"
    text = transcript(args.log.read_text(encoding="utf-8"), args.out)
    guide.write_text(replace_block(guide.read_text(encoding="utf-8"), "crsbench demo ->", text), encoding="utf-8")
    readme = ROOT / "README.md"
    board = leaderboard(args.out)
    first = board.splitlines()[0]
    current = readme.read_text(encoding="utf-8")
    block = re.search(r"Its leaderboard \(`crsbench leaderboard[^\n]*\n\n```text\n([^\n]*)", current)
    if block is None:
        raise SystemExit("README has no leaderboard block after 'Its leaderboard (`crsbench leaderboard ...'")
    readme.write_text(replace_block(current, block.group(1), board), encoding="utf-8")
    print(f"regenerated {guide.relative_to(ROOT)} ({len(text.splitlines())} lines) and README's leaderboard: {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
