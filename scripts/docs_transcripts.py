"""Regenerate the demo transcripts in README.md and docs/USER_GUIDE.md from a fresh demo, so the
digits in the docs are the digits the program prints (docs/METHODS.md §4.3).

    crsbench demo --out demo-out > demo.log        # on a quiet machine, from a fresh folder
    python scripts/docs_transcripts.py demo.log demo-out
    python scripts/docs_transcripts.py demo.log demo-out --check   # exit 1 at the first drift

The demo runs with COLUMNS=140 (rich wraps its tables to it), as `make demo-check` does.

USER_GUIDE's `text` block that starts with the demo's first line is replaced by the log, less the
progress-bar lines (a pipe prints each update as a line), with the output folder spelled
`demo-out`. README's leaderboard block is replaced by the head of `crsbench leaderboard --panel
demo` as it prints on that warehouse: its verdict and its table (the rank agreement and warnings
that follow are in USER_GUIDE's transcript). Nothing else in either file changes. --check compares
instead of writing, every line but the wall times, rates and ETAs, and names the first line that
differs (`make demo-check`, run by CI after the tests).
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


# What changes from run to run of the same demo: wall times, rates and ETAs. --check masks them.
TIMING = (
    (re.compile(r"\b(in|eta) \d[\d.:]*( s)?\b"), r"\1 <t>"),
    (re.compile(r"\d[\d.,]*/s\b"), "<rate>"),
    (re.compile(r"^(  .+?)\s+\d+\.\d s$"), r"\1 <t>"),  # the closing "time per step" table
)


def without_timing(text: str) -> str:
    lines = []
    for line in text.splitlines():
        for pattern, mask in TIMING:
            line = pattern.sub(mask, line)
        lines.append(line.rstrip())
    return "\n".join(lines)


def regenerated(log: Path, out: Path) -> dict[Path, str]:
    """{doc: its text with the demo's transcript and leaderboard in place}."""
    guide, readme = ROOT / "docs" / "USER_GUIDE.md", ROOT / "README.md"
    text = transcript(log.read_text(encoding="utf-8"), out)
    board = leaderboard(out)
    current = readme.read_text(encoding="utf-8")
    block = re.search(r"Its leaderboard \(`crsbench leaderboard[^\n]*\n\n```text\n([^\n]*)", current)
    if block is None:
        raise SystemExit("README has no leaderboard block after 'Its leaderboard (`crsbench leaderboard ...'")
    return {
        guide: replace_block(guide.read_text(encoding="utf-8"), "crsbench demo ->", text),
        readme: replace_block(current, block.group(1), board),
    }


def first_drift(doc: Path, fresh: str) -> str | None:
    """The first line where `doc` and the fresh text differ, timings aside; None if none does."""
    old, new = without_timing(doc.read_text(encoding="utf-8")), without_timing(fresh)
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines(), strict=False), start=1):
        if a != b:
            return f"{doc.relative_to(ROOT)}:{number}:\n  docs: {a}\n  demo: {b}"
    if len(old.splitlines()) != len(new.splitlines()):
        return (
            f"{doc.relative_to(ROOT)}: {len(old.splitlines())} lines in the docs, {len(new.splitlines())} from the demo"
        )
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="the demo's standard output")
    parser.add_argument("out", type=Path, help="the demo's folder (crsbench demo --out)")
    parser.add_argument("--check", action="store_true", help="exit 1 where the docs differ from this demo")
    args = parser.parse_args()
    fresh = regenerated(args.log, args.out)
    if args.check:
        drifts = [d for doc, text in fresh.items() if (d := first_drift(doc, text)) is not None]
        for drift in drifts:
            print(f"docs differ from the demo at {drift}", file=sys.stderr)
        if not drifts:
            print(f"{', '.join(str(d.relative_to(ROOT)) for d in fresh)}: every printed digit as the demo prints it")
        return 1 if drifts else 0
    for doc, text in fresh.items():
        doc.write_text(text, encoding="utf-8")
    print(f"regenerated {', '.join(str(d.relative_to(ROOT)) for d in fresh)} from {args.log}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
