"""Byte-identical images (same SHA-256) kept out of two splits: refused, or grouped (METHODS.md §1).

Two files with one content in train and test leak the answer into the evaluation. Ingest
refuses that by default (`duplicates=refuse`), naming the files; `duplicates=group` puts every
image of one content in one split, by splitting over groups joined through shared content (the
stored `group_id` stays the source's patient or lesion id); `duplicates=keep` leaves them where
they fall (official splits that already hold the same file twice).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crsbench.core import InputError

DUPLICATE_CHOICES = ("refuse", "group", "keep")


def split_groups(groups: Sequence[str], hashes: Sequence[str]) -> list[str]:
    """Each row's group, with groups sharing an image content joined into one (union-find); the
    joined group is named by its smallest member, so the result is independent of row order."""
    parent: dict[str, str] = {g: g for g in groups}

    def find(g: str) -> str:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    first: dict[str, str] = {}
    for g, sha in zip(groups, hashes, strict=True):
        if not sha:
            continue
        other = first.setdefault(sha, g)
        a, b = find(g), find(other)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return [find(g) for g in groups]


def check_no_leak(paths: Sequence[str], hashes: Sequence[str], splits: Sequence[str] | np.ndarray, where: str) -> None:
    """InputError naming the files of the first content found in more than one split."""
    by_sha: dict[str, list[int]] = {}
    for i, sha in enumerate(hashes):
        if sha:
            by_sha.setdefault(sha, []).append(i)
    leaks = [rows for rows in by_sha.values() if len({str(splits[i]) for i in rows}) > 1]
    if not leaks:
        return
    rows = leaks[0]
    named = ", ".join(f"{paths[i]} ({splits[i]})" for i in rows[:4]) + (" ..." if len(rows) > 4 else "")
    more = f"; {len(leaks) - 1} more contents like it" if len(leaks) > 1 else ""
    raise InputError(
        f"{where}: byte-identical images (SHA-256 {hashes[rows[0]][:12]}) fall in different splits: "
        f"{named}{more}; remove the copies, or pass -o duplicates=group to keep each content in one split"
    )
