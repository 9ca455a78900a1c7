"""The repository sends readers only to files it contains: no design document outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# "SPEC 5.1" or "shared/SPEC.md" pointed at a design file that never shipped with the code.
OUTSIDE = re.compile(r"\bSPEC\b|shared/SPEC|seeds/crs-bench")


def test_no_reference_to_files_outside_the_repository():
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.sql", "*.sh", "*.toml", "Makefile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    offenders = [
        f"{name}:{i}"
        for name in files
        if name != "tests/test_docs_references.py"
        for i, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_every_methods_section_cited_in_the_code_exists():
    methods = (ROOT / "docs" / "METHODS.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#+ §(\d+(?:\.\d+)?)", methods, flags=re.M))
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.sql"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    cited = {
        (name, s)
        for name in files
        for s in re.findall(r"METHODS(?:\.md)? §(\d+(?:\.\d+)?)", (ROOT / name).read_text(encoding="utf-8"))
    }
    assert cited, "nothing cites docs/METHODS.md"
    assert sorted((n, s) for n, s in cited if s not in headings) == []
