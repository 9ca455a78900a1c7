"""Faults of the user's environment or files, told as one line (exit 1) instead of an internal error.

The CLI's last-resort handler asks `user_fault` about an exception before calling it a bug. Only
these are recognised, each by its errno or by the exact text DuckDB or Arrow gives it:
* a full disk or quota (ENOSPC, EDQUOT) and a file-size limit (`ulimit -f`: EFBIG; Python ignores
  SIGXFSZ, so the write fails instead of killing the process);
* a symlink loop (ELOOP);
* a truncated or foreign Parquet file (no Parquet footer);
* the team warehouse's PostgreSQL catalog gone mid-command (its server stopped or unreachable).
The message names the file and the fix. Every writer of crsbench is atomic (a part appears by a
rename, a DuckDB transaction commits whole, a feature chunk's progress mark comes after it), so
what failed left the previous state in place and a rerun resumes.
"""

from __future__ import annotations

import errno
import re

_ERRNO_TEXT = {
    errno.ENOSPC: "No space left on device",
    errno.EDQUOT: "Disk quota exceeded",
    errno.EFBIG: "File too large",
    errno.ELOOP: "Too many levels of symbolic links",
}
_FIX = {
    errno.ENOSPC: "the disk is full; free space (or use --db / --store on another disk) and rerun",
    errno.EDQUOT: "the disk quota is exhausted; free space and rerun",
    errno.EFBIG: "the file exceeds the file-size limit (ulimit -f); raise the limit and rerun",
    errno.ELOOP: "a symlink loop; remove the link",
}
_STATE = "what was stored before is intact; a rerun resumes"
_PARQUET_TEXT = (
    "No magic bytes found at end of file",
    "Parquet magic bytes not found",
    "is not a parquet file",
    "Invalid Parquet file",
    "Could not open Parquet input source",
)
# A team warehouse's catalog server gone mid-command (warehouse/lake.py), as the postgres extension says it.
_CATALOG_GONE = (
    "Unable to connect to Postgres",
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "no connection to the server",
)
# When the connection is already dead, libpq's message is empty: the extension's "Failed to execute query
# "ROLLBACK": " (or "Failed to prepare COPY "...": ") then ends at the colon.
_CATALOG_STATEMENT_FAILED = ('Failed to execute query "', 'Failed to prepare COPY "')
_QUOTED = re.compile(r"""["']([^"']+)["']""")


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc`, then what caused it or was being handled when it was raised (at most 8 links)."""
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in seen and len(seen) < 8:
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen


def _named_file(text: str, after: str = "") -> str:
    """The first quoted path in `text` (after the phrase `after`), or '' when none."""
    start = text.find(after) if after else 0
    for found in _QUOTED.finditer(text, max(start, 0)):
        if "/" in found.group(1) or "." in found.group(1):
            return found.group(1)
    return ""


def _errno_of(exc: BaseException) -> int | None:
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in _ERRNO_TEXT:
        return code
    text = str(exc)
    for code, phrase in _ERRNO_TEXT.items():
        if phrase in text:
            return code
    return None


def _catalog_gone(text: str) -> bool:
    if any(p in text for p in _CATALOG_GONE):
        return True
    return text.endswith('":') and any(p in text for p in _CATALOG_STATEMENT_FAILED)


def user_fault(exc: BaseException) -> str | None:
    """One line naming the file and the fix when `exc` is a fault listed above, else None."""
    for link in _chain(exc):
        text = " ".join(str(link).split())
        if type(link).__module__.startswith(("duckdb", "_duckdb")) and _catalog_gone(text):
            return (
                "the team warehouse's PostgreSQL catalog went away during the command (server stopped or "
                "unreachable); start the PostgreSQL server and rerun: every committed batch is kept and "
                "the rerun resumes"
            )
        code = (
            _errno_of(link)
            if isinstance(link, OSError) or type(link).__module__.startswith(("duckdb", "_duckdb"))
            else None
        )
        if code is not None:
            name = getattr(link, "filename", None) or _named_file(text) or "a file"
            return f"cannot write {name}: {_FIX[code]} ({_STATE})" if code != errno.ELOOP else f"{name}: {_FIX[code]}"
        for phrase in _PARQUET_TEXT:
            if phrase in text:
                name = _named_file(text, phrase) or _named_file(text) or "a Parquet file"
                return (
                    f"Parquet file {name} is truncated or not Parquet ({phrase.lower()}); restore it, or move "
                    f"it (and its .sha256) out of its folder: the rest is served and 'crsbench probe' refits "
                    f"the fits it held"
                )
    return None
