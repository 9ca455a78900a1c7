"""A sweep's catalog traffic in a loop, for the stopped-server stress test (tests/fault/test_lake_faults.py):
claim four fits, commit a batch (to `stress_compacted`), release, until the catalog goes away; then exit
as the CLI does, with the fault translator's one line and status 1, or a traceback for anything else.

    python tests/support/lake_writer_loop.py LOCATOR
"""

from __future__ import annotations

import sys
import uuid

import numpy as np
import pyarrow as pa

from crsbench.cli.faults import user_fault
from crsbench.warehouse import lake
from crsbench.warehouse.lake_claims import LakeClaims
from crsbench.warehouse.lake_writes import LakeSink, commit_batch
from crsbench.warehouse.provenance import batch_record


def loop(locator: lake.LakeLocator) -> None:
    with LakeClaims(locator) as claims:
        sink = LakeSink(locator)
        try:
            while True:
                got = claims.acquire([uuid.uuid4().hex for _ in range(4)])
                claims.done(got)
                batch = uuid.uuid4().hex
                rows = pa.table({"x": np.random.default_rng().random(20_000)})
                commit_batch(sink._connection(), batch, {"batches": batch_record(batch), "stress": rows})
                claims.release(got)
        finally:
            sink.close()


if __name__ == "__main__":
    try:
        loop(lake.LakeLocator(sys.argv[1]))
    except Exception as exc:
        message = user_fault(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        sys.exit(1)
