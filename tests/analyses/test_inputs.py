"""What a stored analysis read decides when it goes stale (`inputs.py`, METHODS.md §10).

The shortcut audit declares it reads images, not runs: probing an encoder after it ran leaves it
fresh, while an analysis that reads runs (the default) goes stale on the same runs; re-labelling
an audited dataset's image makes the audit stale, and only the audit of that dataset.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support.bootstrap_support import cell_batches

from crsbench.analyses import AnalysisResult, register_analysis, registry, run_analysis
from crsbench.analyses.inputs import described_inputs
from crsbench.ingest import Dataset
from crsbench.warehouse.connection import Warehouse


@pytest.fixture
def reads_runs():
    """An analysis that reads runs (the default declaration) and names no encoder: every encoder's runs."""

    @register_analysis("toy_runs")
    def toy_runs(wh, params):
        """A toy analysis over every encoder's runs."""
        return AnalysisResult({}, pd.DataFrame({"n": [1]}))

    yield
    registry.ANALYSES.remove("toy_runs")


def stale(wh: Warehouse) -> dict[str, bool]:
    rows = wh.sql("select analysis, bool_or(stale) as stale from analysis_freshness group by all")
    return dict(zip(rows["analysis"], rows["stale"], strict=True))


def test_runs_leave_the_shortcut_audit_fresh_and_its_images_do_not(
    ingested_db: Path, suite_datasets: dict[str, Dataset], reads_runs: None
) -> None:
    with Warehouse.open(ingested_db) as wh:
        wh.append_runs(*cell_batches(suite_datasets["isic2019"], "tiny-resnet18", 1.0, 0))
        run_analysis(wh, "shortcuts", {"dataset": "aptos2019"})
        run_analysis(wh, "toy_runs")
        assert stale(wh) == {"shortcuts": False, "toy_runs": False}
        (encoders,) = wh.con.execute("select input_encoders from analyses where analysis = 'shortcuts'").fetchone() or (
            None,
        )
        assert encoders == ["images:aptos2019"]

        wh.append_runs(*cell_batches(suite_datasets["isic2019"], "tiny-vit", 1.0, 1))
        assert stale(wh) == {"shortcuts": False, "toy_runs": True}  # the same runs: only the run reader

        wh.con.execute("update labels set value = 1 - value where dataset_id = 'isic2019'")
        assert not stale(wh)["shortcuts"]  # a dataset it did not audit
        image = wh.sql("select image_id from images where dataset_id = 'aptos2019' limit 1")["image_id"][0]
        wh.con.execute("update labels set value = 1 - value where dataset_id = 'aptos2019' and image_id = ?", [image])
        assert stale(wh)["shortcuts"]

        run_analysis(wh, "shortcuts", {"dataset": "aptos2019"})
        assert not stale(wh)["shortcuts"]


def test_inputs_name_datasets_for_images_and_encoders_for_runs() -> None:
    digests = {"e1": "a", "e2": "b", "images:d1": "c", "images:d2": "d"}
    frame = pd.DataFrame({"dataset": ["d1"], "encoder_id": ["e2"]})
    assert described_inputs([frame], digests, ("images",))[1] == ["images:d1"]
    assert described_inputs([frame], digests, ("runs",))[1] == ["e2"]
    assert described_inputs([frame], digests, ("runs", "images"))[1] == ["e2", "images:d1"]
    bare = pd.DataFrame({"n": [1]})
    assert described_inputs([bare], digests, ("runs",)) == (registry.merge.digest_over(digests, None), None)
    assert described_inputs([bare], digests, ("images",))[1] == ["images:d1", "images:d2"]


def test_an_undeclared_input_is_refused() -> None:
    with pytest.raises(ValueError, match="declare some of"):
        register_analysis("toy_bad", reads=("pixels",))
