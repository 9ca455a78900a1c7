"""crsbench.core.children: calls computed in fresh interpreters, and what a caller sees when one fails."""

from __future__ import annotations

import gc
import operator
import os
import subprocess
import sys
import textwrap
from concurrent.futures import CancelledError

import pytest

from crsbench.core import Child, ChildPool, ChildStopped


def test_a_call_answers_what_it_answers_here_and_runs_in_another_process():
    child = Child()
    try:
        assert child.call(sorted, [3, 1, 2]) == [1, 2, 3]
        assert child.call(divmod, 17, 5) == divmod(17, 5)
        assert child.call(os.getpid) == child.proc.pid != os.getpid()
        assert child.call(print, "chatter") is None  # printed to its stderr, not into the answers
        assert child.call(operator.add, "a", "b") == "ab"
    finally:
        child.close()


def test_the_call_s_error_is_raised_here_as_itself():
    child = Child()
    try:
        with pytest.raises(ZeroDivisionError):
            child.call(operator.truediv, 1, 0)
        assert child.call(abs, -4) == 4  # the child goes on after its call's error
    finally:
        child.close()


def test_an_unguarded_script_runs_once_with_a_pool(tmp_path):
    # multiprocessing's spawn would import this script again in each worker: it would append to
    # the marker file once per worker, and its pool would fail to start there.
    marker = tmp_path / "runs.txt"
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import math
            from crsbench.core import ChildPool
            with open({str(marker)!r}, "a") as f:
                f.write("ran\\n")
            pool = ChildPool(2)
            print(sum(f.result() for f in [pool.submit(math.factorial, n) for n in range(8)]))
            pool.shutdown()
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == str(sum(__import__("math").factorial(n) for n in range(8)))
    assert marker.read_text() == "ran\n"


def test_the_initializer_runs_first_in_every_child_and_calls_keep_their_order():
    pool = ChildPool(2, initializer=gc.disable)
    try:
        futures = [pool.submit(gc.isenabled) for _ in range(6)]
        assert [f.result(timeout=60) for f in futures] == [False] * 6
        squares = [pool.submit(pow, n, 2) for n in range(20)]
        assert [f.result(timeout=60) for f in squares] == [n * n for n in range(20)]
        pids = {pool.submit(os.getpid).result(timeout=60) for _ in range(4)}
        assert os.getpid() not in pids and 1 <= len(pids) <= 2  # other processes, at most `workers` of them
    finally:
        pool.shutdown()


def test_a_killed_child_fails_its_calls_and_marks_the_pool_broken():
    pool = ChildPool(1)
    assert pool.submit(int, "7").result(timeout=60) == 7
    pool.children[0].proc.kill()
    pool.children[0].proc.wait()
    first = pool.submit(int, "8")
    with pytest.raises(ChildStopped, match="stopped"):
        first.result(timeout=60)
    assert pool.broken
    with pytest.raises(ChildStopped, match="broken"):
        pool.submit(int, "9").result(timeout=60)


def test_shutdown_cancels_the_calls_still_waiting():
    import time

    pool = ChildPool(1)
    busy = pool.submit(time.sleep, 1.0)
    waiting = [pool.submit(int, "1") for _ in range(3)]
    pool.shutdown(cancel_futures=True)
    assert busy.result(timeout=60) is None
    for future in waiting:
        with pytest.raises(CancelledError):
            future.result(timeout=60)
