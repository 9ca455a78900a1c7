"""Work in child interpreters that never re-import the caller's script.

multiprocessing's spawn and forkserver workers import the parent's main script as `__mp_main__`,
so a script without an `if __name__ == "__main__":` guard runs its own code again in every worker
(its ingest, its extraction, whose pool then fails to start). A `Child` here is a fresh
`python -m crsbench.core.children`: it imports only what the calls it is sent name, so a caller's
script needs no guard and none of its code runs twice.

A call is a module-level function and its arguments, pickled (a function by reference: its module
and name) over the child's stdin; the answer comes back over its stdout. Both ends are this process
and the child it started; nothing is read from a file. The child imports crsbench first, so it runs
under the canonical numerics (METHODS.md §4.3), and inherits this process's environment.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from typing import Any


class ChildStopped(RuntimeError):
    """A child interpreter stopped before answering (killed, out of memory, or it crashed)."""


class Child:
    """One child interpreter computing one call at a time."""

    def __init__(self) -> None:
        self.err = tempfile.TemporaryFile()  # noqa: SIM115  (a file, not a pipe: a chatty child never blocks)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "crsbench.core.children"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            env=os.environ.copy(),
        )

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` computed in the child; its exception is raised here as it was raised there."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            pickle.dump((fn, args), self.proc.stdin)
            self.proc.stdin.flush()
            status, payload = pickle.load(self.proc.stdout)  # our own child's answer, over its pipe
        except (OSError, EOFError, pickle.UnpicklingError):
            raise ChildStopped(f"a worker process stopped: {self.last_error()}") from None
        if status == "error":
            raise payload
        return payload

    def last_error(self) -> str:
        """The last line the stopped child wrote to stderr (its exit status if none)."""
        self.close()
        self.err.seek(0)
        lines = self.err.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {self.proc.returncode}"

    def close(self) -> None:
        """Let the child finish (its stdin closes) and wait for it."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with suppress(OSError):
                self.proc.stdin.close()
        self.proc.wait()


_STOP = None  # the queue's sentinel: one per child at shutdown


class ChildPool:
    """Up to `workers` children taking calls in the order submitted, each a `Future`.

    `initializer` (a module-level function) runs first in every child. A child that stops fails its
    call and every call still waiting with `ChildStopped`, and marks the pool `broken` (its owner
    then starts another one), as concurrent.futures' process pool does.
    """

    def __init__(self, workers: int, initializer: Callable[[], Any] | None = None) -> None:
        self.workers, self.initializer = max(1, int(workers)), initializer
        self.broken = False
        self.children: list[Child] = []
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None]
        self._calls = queue.SimpleQueue()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """`fn(*args)` computed by the next free child."""
        future: Future[Any] = Future()
        with self._lock:
            if self.broken:
                future.set_exception(ChildStopped("the worker pool is broken: a worker process stopped"))
                return future
            self._calls.put((future, fn, args))
            if len(self.children) < self.workers:  # started as work arrives, as the spawn pool does
                self.children.append(child := Child())
                threading.Thread(target=self._serve, args=(child,), daemon=True, name="crsbench-child").start()
        return future

    def _serve(self, child: Child) -> None:
        try:
            if self.initializer is not None:
                child.call(self.initializer)
            while (call := self._calls.get()) is not _STOP:
                future, fn, args = call
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(child.call(fn, *args))
                    except BaseException as exc:  # the call's own error, or the child stopped
                        future.set_exception(exc)
                        if isinstance(exc, ChildStopped):
                            raise
        except ChildStopped as exc:
            self._break(exc)
        finally:
            child.close()

    def _break(self, exc: ChildStopped) -> None:
        """Mark the pool broken and fail every call still waiting."""
        with self._lock:
            self.broken = True
            while True:
                try:
                    call = self._calls.get_nowait()
                except queue.Empty:
                    return
                if call is not _STOP and call[0].set_running_or_notify_cancel():
                    call[0].set_exception(ChildStopped(str(exc)))

    def shutdown(self, cancel_futures: bool = True) -> None:
        """Cancel the waiting calls (with `cancel_futures`) and let every child finish."""
        with self._lock:
            if cancel_futures:
                while True:
                    try:
                        call = self._calls.get_nowait()
                    except queue.Empty:
                        break
                    if call is not _STOP:
                        call[0].cancel()
            for _ in self.children:
                self._calls.put(_STOP)


def _serve() -> None:
    """The child's loop: a call from stdin, its answer to stdout, until stdin closes."""
    # The answers go over a private copy of stdout; file descriptor 1 becomes stderr, so whatever a
    # call prints, from Python or from a library's C code (MKL_VERBOSE, a BLAS warning), stays out of them.
    calls, answers = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while True:
        try:
            fn, args = pickle.load(calls)  # the parent's call, over our stdin
        except EOFError:
            return
        pickle.dump(_answer(fn, args), answers)
        answers.flush()


def _answer(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # raised again in the parent, as itself when it pickles
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            return ("error", RuntimeError(f"{type(exc).__name__}: {exc}"))
        return ("error", exc)


if __name__ == "__main__":  # `-m` imported crsbench.core first: the canonical numerics are set
    _serve()
