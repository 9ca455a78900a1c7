"""The provenance of probe batches in the warehouse: one `batches` part row per appended batch."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from crsbench.core.provenance import collect, to_json
from crsbench.warehouse.schema_ledger import BATCHES


def batch_record(batch: str, device: str = "cpu") -> pa.Table:
    """The one-row `batches` part of `batch`: when it was written and the software that computed it."""
    return pa.table(
        {"batch": [batch], "created_at": [datetime.now(UTC)], "provenance": [to_json(collect(device=device))]},
        schema=BATCHES.arrow(),
    )
