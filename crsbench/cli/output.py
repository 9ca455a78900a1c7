"""Console output for the CLI: rich tables and progress bars, or JSON, or nothing (--quiet)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:  # pandas and the stages load only when a command prints a frame (fast --help)
    import pandas as pd

    from crsbench.core import ProgressFn


class _Output:
    def __init__(self) -> None:
        self.quiet = False
        self.json_mode = False
        self.out = Console()
        if not self.out.is_terminal:
            # Piped output (logs, CI, README captures) gets room for a whole leaderboard row, unless
            # COLUMNS says otherwise (as on a terminal).
            columns = os.environ.get("COLUMNS", "")
            self.out = Console(width=int(columns) if columns.isdigit() and int(columns) > 0 else 140)
        self.error_console = Console(stderr=True)

    def configure(self, quiet: bool = False, json_mode: bool = False) -> None:
        self.quiet, self.json_mode = quiet, json_mode

    @property
    def chatty(self) -> bool:
        return not (self.quiet or self.json_mode)

    def print(self, *objects: Any) -> None:
        if self.chatty:
            # Lines of text are never re-wrapped at the terminal width (grep- and log-friendly).
            self.out.print(*objects, soft_wrap=all(isinstance(o, str) for o in objects))

    def err(self, message: str) -> None:
        # One line, however long: errors are read by scripts as well as people.
        self.error_console.print(message, markup=False, highlight=False, soft_wrap=True)

    def fail(self, message: str, exit_code: int) -> None:
        """Report a failed command: the message on stderr; with --json also a JSON document on stdout."""
        message = " | ".join(line.strip() for line in message.splitlines() if line.strip())
        self.err(message)
        if self.json_mode:
            sys.stdout.write(json.dumps({"error": message, "exit_code": exit_code}) + "\n")


console = _Output()


def _jsonable(value: Any) -> Any:
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        return json.loads(value.to_json(orient="records", date_format="iso"))
    return value


def emit(payload: dict[str, Any], human: str | None = None) -> None:
    """Report a command's result: JSON with --json, a line of text otherwise."""
    if console.json_mode:
        sys.stdout.write(json.dumps({k: _jsonable(v) for k, v in payload.items()}, default=str) + "\n")
    elif human is not None:
        console.print(human)


def frame_table(frame: pd.DataFrame, title: str | None = None, max_rows: int = 60) -> Table:
    import pandas as pd

    table = Table(title=title, show_lines=False)
    for col in frame.columns:
        table.add_column(str(col), justify="right" if pd.api.types.is_numeric_dtype(frame[col]) else "left")
    for _, row in frame.head(max_rows).iterrows():
        table.add_row(*[_fmt(v) for v in row.tolist()])
    if len(frame) > max_rows:
        table.caption = f"{len(frame) - max_rows} more rows not shown"
    return table


def fitted_table(frame: pd.DataFrame, title: str, order: Sequence[str], width: int) -> Table:
    """`frame` as a table no wider than `width` whose cells are never wrapped or cut (ids one
    types): the columns in `order` first, then the rest, each while it still fits; the first
    always. The columns left out are named in the caption."""
    import pandas as pd

    names = [*[c for c in order if c in frame.columns], *[c for c in frame.columns if c not in order]]
    cells = {name: [_fmt(v) for v in frame[name].tolist()] for name in names}
    used = 1  # the left border; each column adds its text, one space either side and a border
    shown: list[str] = []
    for name in names:
        need = max([len(name), *(len(text) for text in cells[name])]) + 3
        if not shown or used + need <= width:
            shown.append(name)
            used += need
    table = Table(title=title, show_lines=False)
    for name in shown:
        numeric = pd.api.types.is_numeric_dtype(frame[name])
        table.add_column(name, justify="right" if numeric else "left", no_wrap=True, overflow="fold")
    for i in range(len(frame)):
        table.add_row(*[cells[name][i] for name in shown])
    left_out = [name for name in names if name not in shown]
    if left_out:
        table.caption = f"not shown at this width: {', '.join(left_out)} (see --json)"
    return table


def _fmt(value: Any) -> str:
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float):
        return "" if value != value else f"{value:.4f}"
    return str(value)


def print_frame(frame: pd.DataFrame, title: str | None = None, key: str = "rows") -> None:
    if console.json_mode:
        emit({key: frame})
    else:
        console.print(frame_table(frame, title))


@contextmanager
def progress(step: str | None = None) -> Iterator[ProgressFn]:
    """A progress callback: one rich bar per step description (count, elapsed, ETA) on a
    terminal; without one, plain lines at least every CRSBENCH_PROGRESS_SECONDS (30 s).

    Given `step`, every description reported goes into one bar titled `step` (the demo:
    one bar per step), its counts summed over the descriptions seen so far.
    """
    if not console.chatty:
        yield no_op
        return
    if not sys.stderr.isatty() and not console.out.is_terminal:
        from crsbench.cli.progress_plain import PlainProgress, Ticker, interval_s

        plain = PlainProgress(lambda line: console.print(escape(line)), interval_s(), defer_done=step is not None)
        with Ticker(plain):
            yield plain if step is None else _merged(step, plain)
        plain.close()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bars = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console.out,
        transient=False,
    )
    tasks: dict[str, TaskID] = {}

    def report(description: str, done: int, total: int | None) -> None:
        if description not in tasks:
            tasks[description] = bars.add_task(description, total=total)
        bars.update(tasks[description], completed=done, total=total)

    with bars:
        yield report if step is None else _merged(step, report)


def no_op(description: str, done: int, total: int | None) -> None:
    return None


def _merged(step: str, report: ProgressFn) -> ProgressFn:
    """Reports of several descriptions as one: done and totals summed, under `step`."""
    counts: dict[str, tuple[int, int | None]] = {}

    def merged(description: str, done: int, total: int | None) -> None:
        counts[description] = (done, total)
        totals = [t for _, t in counts.values()]
        known = None if any(t is None for t in totals) else sum(t or 0 for t in totals)
        report(step, sum(d for d, _ in counts.values()), known)

    return merged
