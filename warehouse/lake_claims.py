"""Fit claims of the team warehouse: rows in its PostgreSQL catalog, one writer per fit on any machine.

DuckLake has no unique constraint, and concurrent appends to one table never conflict, so two sweeps
could both commit the same fit. The claim therefore lives in the catalog database itself, in the table
`crsbench_fit_claims` with `fit_id` as its PRIMARY KEY: a sweep takes a fit with one
`INSERT ... ON CONFLICT` statement, which PostgreSQL serialises, so exactly one sweep holds it. The
statement also takes over a claim whose holder is gone: silent for longer than the lease (a
heartbeat refreshes a live holder's rows every quarter lease, by the server's clock, so no client
clock matters), or a dead process on this very host.

The order is the file claims' (warehouse/claims.py): claim, then look once more whether the fit's runs
have committed (another sweep may have finished it since this one planned), compute, commit the
batch (`lake_writes`), release. A holder that died after its commit but before its release leaves a
claim whose fit is already in `runs`: the next taker finds the runs and releases it.

Fit ids and holder tokens are crsbench's own hexadecimal strings; they are checked as such before
they are spelled into the statements that `postgres_execute` sends, which binds no parameters.
"""

from __future__ import annotations

import os
import random
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import duckdb

from crsbench.core.claims import DEFAULT_LEASE_S, pid_alive
from crsbench.warehouse import lake

CLAIMS_TABLE = "crsbench_fit_claims"
PG = "crsbench_claims_pg"
SWEEP_PREFIX = "sweep-"
MERGE_CLAIM = "warehouse-merge"  # `Warehouse.compact_parts` on a team warehouse: one merge at a time
_SAFE = re.compile(r"[0-9A-Za-z_.:-]+")
# PostgreSQL's answers to two transactions on one row at once: retried (`LakeClaims._execute`).
_RETRIED = ("could not serialize access", "deadlock detected")

_CREATE = f"""create table if not exists {CLAIMS_TABLE} (
    fit_id text primary key,
    holder text not null,
    host text not null,
    pid integer not null,
    heartbeat timestamptz not null default now())"""


def _checked(values: Iterable[str]) -> list[str]:
    out = [str(v) for v in values]
    bad = [v for v in out if not _SAFE.fullmatch(v)]
    if bad:
        raise ValueError(f"claim names must be plain identifiers, got {bad[0]!r}")
    return out


def _array(values: Sequence[str]) -> str:
    return "array[" + ", ".join(f"'{v}'" for v in values) + "]::text[]"


class LakeClaims:
    """The claims of one sweep on the team warehouse `locator`: `acquire` before computing, `release`
    after the batch commits, `close` (or the `with` block's end) gives back the rest."""

    def __init__(self, locator: lake.LakeLocator, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        if locator.postgres is None:
            raise ValueError("fit claims in the catalog need a PostgreSQL catalog")
        self.lease_s = float(lease_s)
        self.host = socket.gethostname()
        self.token = _checked([f"{self.host}:{os.getpid()}:{uuid.uuid4().hex}"])[0]
        self.held: set[str] = set()
        self._lake = lake.connect(locator, read_only=True)
        try:
            self._lake.execute(f"attach {lake.sql_literal(locator.postgres)} as {PG} (type postgres)")
            self._execute(_CREATE)
            # The holder's marker, for as long as it runs (refreshed with its claims): `live_sweeps`.
            self._execute(
                f"insert into {CLAIMS_TABLE} (fit_id, holder, host, pid) values "
                f"('{SWEEP_PREFIX}{uuid.uuid4().hex}', '{self.token}', '{self.host}', {os.getpid()})"
            )
        except duckdb.Error as exc:
            self._lake.close()
            raise lake.unreachable(locator, exc) from exc
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="lake-claims", daemon=True)
        self._beat.start()

    def _execute(self, statement: str, con: duckdb.DuckDBPyConnection | None = None) -> None:
        # The postgres extension runs each statement in a REPEATABLE READ transaction, so two sweeps
        # touching one claim row at once (a takeover against a heartbeat) fail one of them with a
        # serialization error; each statement is its own transaction and idempotent, so it is retried.
        delay = 0.02
        for attempt in range(30):
            try:
                (con or self._lake).execute(f"call postgres_execute('{PG}', {lake.sql_literal(statement)})")
                return
            except duckdb.Error as exc:
                if attempt == 29 or not any(p in str(exc) for p in _RETRIED):
                    raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.5)

    def _query(self, statement: str) -> list[tuple[object, ...]]:
        return self._lake.execute(f"select * from postgres_query('{PG}', {lake.sql_literal(statement)})").fetchall()

    def acquire(self, fit_ids: Sequence[str]) -> set[str]:
        """The fits of `fit_ids` this sweep now holds and whose runs no commit holds yet."""
        wanted = _checked(fit_ids)
        if not wanted:
            return set()
        with self._lock:
            self._release_dead_holders()
            self._execute(
                f"insert into {CLAIMS_TABLE} (fit_id, holder, host, pid) "
                f"select unnest({_array(wanted)}), '{self.token}', '{self.host}', {os.getpid()} "
                f"on conflict (fit_id) do update set holder = excluded.holder, host = excluded.host, "
                f"pid = excluded.pid, heartbeat = now() "
                f"where {CLAIMS_TABLE}.heartbeat < now() - interval '{self.lease_s} seconds'"
            )
            got = {
                str(r[0])
                for r in self._query(
                    f"select fit_id from {CLAIMS_TABLE} where holder = '{self.token}' "
                    f"and fit_id = any({_array(wanted)})"
                )
            }
            self.held |= got
        finished = got & self.done(got)
        self.release(finished)
        return got - finished

    def done(self, fit_ids: Iterable[str]) -> set[str]:
        """Those of `fit_ids` whose runs have committed (by any sweep), read at the latest snapshot."""
        wanted = sorted(set(fit_ids))
        if not wanted:
            return set()
        with self._lock:
            self._lake.execute("begin transaction")  # a fresh snapshot: commits made since are seen
            try:
                rows = self._lake.execute(
                    "select distinct fit_id from runs_compacted where fit_id in (select unnest(?))", [wanted]
                ).fetchall()
            finally:
                self._lake.execute("rollback")
        return {str(r[0]) for r in rows}

    def release(self, fit_ids: Iterable[str]) -> None:
        names = _checked(set(fit_ids) & self.held)
        if not names:
            return
        with self._lock:
            self._execute(f"delete from {CLAIMS_TABLE} where holder = '{self.token}' and fit_id = any({_array(names)})")
            self.held -= set(names)

    def _release_dead_holders(self) -> None:
        # A holder on this host whose process is gone (kill -9) frees its fits at once, not after a lease.
        rows = self._query(f"select distinct holder, pid from {CLAIMS_TABLE} where host = '{self.host}'")
        for holder, pid in rows:
            if holder != self.token and not pid_alive(int(str(pid))):
                self._execute(f"delete from {CLAIMS_TABLE} where holder = '{_checked([str(holder)])[0]}'")

    def _heartbeat(self) -> None:
        beat = self._lake.cursor()  # its own cursor, used under the lock: one catalog statement at a time
        beat.execute(lake.QUIET)
        try:
            while not self._stop.wait(self.lease_s / 4):
                with self._lock:
                    self._execute(f"update {CLAIMS_TABLE} set heartbeat = now() where holder = '{self.token}'", beat)
        except duckdb.Error:
            return  # the catalog went away: the sweep's next claim or commit reports it
        finally:
            beat.close()

    def close(self) -> None:
        self._stop.set()
        self._beat.join(timeout=5)
        try:
            with self._lock:
                self._execute(f"delete from {CLAIMS_TABLE} where holder = '{self.token}'")
        except duckdb.Error:
            pass  # the catalog went away: the claims expire with their lease
        finally:
            self.held.clear()
            self._lake.close()

    def __enter__(self) -> LakeClaims:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def name_claim(name: str) -> str:
    """The claim name of a panel name (any text) in `crsbench_fit_claims`: a digest, so it is a plain identifier."""
    import hashlib

    return "panel-" + hashlib.sha256(name.encode()).hexdigest()[:40]


@contextmanager
def holding_panel_name(locator: lake.LakeLocator, panel: str) -> Iterator[None]:
    """Hold the catalog's claim on panel name `panel` for the length of a freeze, so two freezes of one
    name on two machines cannot both commit (DuckLake has no unique constraint). The freeze looks for
    the panel once more after taking the claim; the claim is released after its commit."""
    from crsbench.core import CrsbenchError

    claims = LakeClaims(locator)
    try:
        if not claims.acquire([name_claim(panel)]):
            raise CrsbenchError(
                f"panel {panel!r} is being frozen by another command right now; frozen panels are immutable: "
                f"wait for it and see 'crsbench panel list', or freeze under a new name"
            )
        yield
    finally:
        claims.close()


def live_sweeps(locator: lake.LakeLocator, lease_s: float = DEFAULT_LEASE_S) -> int:
    """How many sweeps hold claims on the team warehouse now: their markers refreshed within the lease
    (a dead process on this host counts until the next sweep clears it, or its lease runs out)."""
    if locator.postgres is None:
        return 0
    con = lake.connect(locator, read_only=True)
    try:
        con.execute(f"attach {lake.sql_literal(locator.postgres)} as {PG} (type postgres, read_only)")
        tables = con.execute(
            "select count(*) from duckdb_tables() where database_name = ? and table_name = ?", [PG, CLAIMS_TABLE]
        ).fetchone()
        if not tables or not tables[0]:
            return 0
        rows = con.execute(
            f"select host, pid from {PG}.public.{CLAIMS_TABLE} where fit_id like '{SWEEP_PREFIX}%' "
            f"and heartbeat > now() - interval '{float(lease_s)} seconds'"
        ).fetchall()
    finally:
        con.close()
    here = socket.gethostname()
    return sum(1 for host, pid in rows if host != here or pid_alive(int(str(pid))))
