"""Progress without a terminal (batch jobs, CI logs): a line at least every N seconds.

Each line names the step, done/total, the rate since the step's first report and the ETA
at that rate. A background ticker prints even while no report arrives (one long chunk,
one analysis), so a log never goes quiet for longer than the interval:
CRSBENCH_PROGRESS_SECONDS (default 30; tests set it lower).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable

DEFAULT_INTERVAL_S = 30.0
INTERVAL_ENV = "CRSBENCH_PROGRESS_SECONDS"


def interval_s() -> float:
    """The interval between lines: CRSBENCH_PROGRESS_SECONDS if set to a positive number."""
    raw = os.environ.get(INTERVAL_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


def duration(seconds: float) -> str:
    """`1:05:03`, `4:07` or `12 s`."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}" if minutes else f"{secs} s"


@dataclasses.dataclass
class _Step:
    started: float
    first_done: int
    done: int = 0
    total: int | None = None
    ended: float = 0.0


class PlainProgress:
    """A ProgressFn printing through `write`: one line per finished step, and a line per
    unfinished step whenever `interval` seconds have passed since the last lines."""

    def __init__(
        self,
        write: Callable[[str], None],
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        defer_done: bool = False,
    ) -> None:
        # defer_done: a step's total may still grow (one bar for a whole demo step), so its
        # "done" line waits for close() instead of the first time done reaches total.
        self.write, self.interval, self.clock, self.defer_done = write, interval, clock, defer_done
        self.steps: dict[str, _Step] = {}
        self.finished: set[str] = set()
        self.last = clock()
        self.lock = threading.Lock()

    def __call__(self, description: str, done: int, total: int | None) -> None:
        with self.lock:
            now = self.clock()
            step = self.steps.setdefault(description, _Step(started=now, first_done=done))
            step.done, step.total = done, total
            if description in self.finished and (total is None or done < total):
                self.finished.discard(description)  # a merged step whose total grew
            if total is not None and done >= total and description not in self.finished:
                self.finished.add(description)
                step.ended = now
                if not self.defer_done:
                    self.write(self.done_line(description, step))
        self.tick()

    def done_line(self, description: str, step: _Step) -> str:
        return f"done {description} ({step.done}/{step.total}) in {duration(step.ended - step.started)}"

    def close(self) -> None:
        """The deferred "done" lines of the steps that finished."""
        if self.defer_done:
            with self.lock:
                for description in self.finished:
                    self.write(self.done_line(description, self.steps[description]))

    def line(self, description: str, step: _Step, now: float) -> str:
        elapsed = now - step.started
        rate = (step.done - step.first_done) / elapsed if elapsed > 0 else 0.0
        if step.total is None:
            return f"{description}: {step.done} done, {rate:.2f}/s, {duration(elapsed)} elapsed"
        left = step.total - step.done
        eta = duration(left / rate) if rate > 0 else "unknown"
        pct = 100.0 * step.done / step.total if step.total else 100.0
        return f"{description}: {step.done}/{step.total} ({pct:.0f} %), {rate:.2f}/s, eta {eta}"

    def tick(self) -> None:
        """Print the unfinished steps if the interval has passed since the last lines."""
        with self.lock:
            now = self.clock()
            if now - self.last < self.interval:
                return
            self.last = now
            for description, step in self.steps.items():
                if description not in self.finished:
                    self.write(self.line(description, step, now))


class Ticker:
    """Calls `progress.tick()` from a daemon thread until stopped (a context manager)."""

    def __init__(self, progress: PlainProgress) -> None:
        self.progress = progress
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="crsbench-progress", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(min(self.progress.interval, 1.0)):
            self.progress.tick()

    def __enter__(self) -> Ticker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
