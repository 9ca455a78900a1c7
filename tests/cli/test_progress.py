"""Progress without a terminal: a line at least every interval, with done/total, rate and ETA."""

from __future__ import annotations

import threading

import pytest

from crsbench.cli.output import _merged
from crsbench.cli.progress_plain import PlainProgress, Ticker, duration, interval_s


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_interval_with_rate_and_eta():
    clock, lines = FakeClock(), []
    bar = PlainProgress(lines.append, interval=30.0, clock=clock)
    bar("probe fits", 0, 100)
    clock.now += 10
    bar("probe fits", 20, 100)
    assert lines == []  # 10 s: not yet
    clock.now += 20
    bar("probe fits", 30, 100)  # 30 fits in 30 s: 1/s, 70 left
    assert lines == ["probe fits: 30/100 (30 %), 1.00/s, eta 1:10"]
    clock.now += 29
    bar("probe fits", 50, 100)
    assert len(lines) == 1
    clock.now += 61  # 100 in 120 s
    bar("probe fits", 100, 100)
    assert lines[1:] == ["done probe fits (100/100) in 2:00"]


def test_the_ticker_prints_while_no_report_arrives(monkeypatch):
    monkeypatch.setenv("CRSBENCH_PROGRESS_SECONDS", "0.02")
    lines: list[str] = []
    printed = threading.Event()

    def write(line: str) -> None:
        lines.append(line)
        printed.set()

    bar = PlainProgress(write, interval_s())
    bar("analysis bootstrap", 0, 1)
    with Ticker(bar):
        assert printed.wait(5.0)  # no further report: the ticker alone printed
    assert lines[0].startswith("analysis bootstrap: 0/1 (0 %), 0.00/s, eta unknown")


@pytest.mark.parametrize(("raw", "expected"), [("", 30.0), ("5", 5.0), ("-1", 30.0), ("x", 30.0)])
def test_interval_override(monkeypatch, raw, expected):
    monkeypatch.setenv("CRSBENCH_PROGRESS_SECONDS", raw)
    assert interval_s() == expected


def test_durations():
    assert [duration(s) for s in (4.4, 65, 3723)] == ["4 s", "1:05", "1:02:03"]


def test_one_bar_per_step_sums_its_descriptions():
    clock, lines = FakeClock(), []
    bar = PlainProgress(lines.append, interval=30.0, clock=clock, defer_done=True)
    step = _merged("3/6 probe grid", bar)
    step("checking features", 0, 1)
    step("checking features", 1, 1)  # 1/1 so far: the step looks finished ...
    step("probe fits", 0, 10)  # ... until its next description arrives
    clock.now += 40
    step("probe fits", 4, 10)  # 4 in 40 s, 6 left
    clock.now += 60
    step("probe fits", 10, 10)
    assert lines == ["3/6 probe grid: 5/11 (45 %), 0.12/s, eta 48 s"]
    bar.close()
    assert lines[1:] == ["done 3/6 probe grid (11/11) in 1:40"]
    assert set(bar.steps) == {"3/6 probe grid"}
