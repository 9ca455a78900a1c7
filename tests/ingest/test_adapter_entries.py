"""An adapter's registry entry carries its zero-shot prompts, licence and citation: the prompt
lookup and `crsbench adapters` read them from there, so a plugin adapter installed as a package
(a dist-info with a `crsbench.adapters` entry point) shows up in both with no other change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.ingest import ADAPTERS, Dataset, Task, register_adapter
from crsbench.ingest.prompts import GENERIC_NEGATIVE, GENERIC_TEMPLATES, default_prompts, make_prompt_set

# The whole plugin: one reader and its registration (what a user's package would hold).
PLUGIN = """
from crsbench.ingest import Task, register_adapter


@register_adapter(
    "toy-xray",
    task=Task.MULTILABEL,
    description="a toy layout",
    licence="CC0-1.0 (toy data)",
    citation="Toy, A. (2099) A toy x-ray set.",
    prompts={
        "classes": {"A": "alpha", "B": "beta"},
        "templates": ["an x-ray of {}.", "{} on an x-ray."],
        "negative_templates": ["an x-ray without {}.", "no {} on an x-ray."],
    },
)
def read_toy(path, log, options, progress):
    raise NotImplementedError("listing and prompts only")
"""

# Runs in a fresh interpreter that sees the plugin only as an installed distribution.
SCRIPT = """
import json
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.cli import main
from crsbench.ingest import Dataset, Task
from crsbench.ingest.prompts import default_prompts

ds = Dataset("toy", "toy-xray", Path("."), Task.MULTILABEL, ["A", "B"], pd.DataFrame(), np.zeros((0, 2)), pd.DataFrame())
prompts = default_prompts(ds)
print("PROMPTS " + json.dumps({"set": prompts.to_dict(), "negative": prompts.texts(prompts.negative_templates)}))
print("LISTING")
assert main(["--json", "adapters"]) == 0
"""


def _dataset(adapter: str, labels: list[str], task: Task) -> Dataset:
    return Dataset("d", adapter, Path("."), task, labels, pd.DataFrame(), np.zeros(0, dtype=int), pd.DataFrame())


def _install_plugin(site: Path) -> None:
    dist = site / "crsbench_toy_xray-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crsbench-toy-xray\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[crsbench.adapters]\ntoy-xray = crsbench_toy_xray\n")
    (site / "crsbench_toy_xray.py").write_text(textwrap.dedent(PLUGIN))


def test_every_builtin_adapter_states_licence_and_citation():
    for name in ("isic2019", "aptos2019", "chexpert", "mimic-cxr", "medmnist", "manifest", "folder"):
        entry = ADAPTERS.get(name)
        assert entry.licence.strip() and entry.citation.strip(), name


def test_a_registration_without_licence_or_citation_is_refused():
    with pytest.raises(ValueError, match=r"adapter 'nolicence': give a licence and a citation"):
        register_adapter("nolicence", task=None, description="x", licence=" ", citation="unknown")
    assert "nolicence" not in ADAPTERS


def test_builtin_prompts_come_from_the_entry_and_others_get_the_generic_set():
    isic = ["MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC"]
    got = default_prompts(_dataset("isic2019", isic, Task.MULTICLASS))
    assert dict(got.classes)["MEL"] == "melanoma" and got.templates[0] == "a dermoscopy image of {}."
    assert got == make_prompt_set("x", ADAPTERS.get("isic2019").prompts or {}, isic, Task.MULTICLASS)
    # mimic-cxr shares chexpert's ensemble; a multilabel set has negative templates
    cxr = list(ADAPTERS.get("chexpert").prompts["classes"])  # type: ignore[index]
    assert len(cxr) == 14
    chexpert = default_prompts(_dataset("chexpert", cxr, Task.MULTILABEL))
    assert chexpert == default_prompts(_dataset("mimic-cxr", cxr, Task.MULTILABEL))
    assert chexpert.negative_templates[0] == "a chest x-ray with no {}."
    for adapter in ("manifest", "no-longer-installed"):
        generic = default_prompts(_dataset(adapter, ["a", "b"], Task.MULTILABEL))
        assert generic.classes == (("a", "a"), ("b", "b"))
        assert (generic.templates, generic.negative_templates) == (GENERIC_TEMPLATES, GENERIC_NEGATIVE)


def test_a_plugin_adapter_shows_its_prompts_and_its_listing(tmp_path):
    site = tmp_path / "site"
    _install_plugin(site)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "adapter plugin 'toy-xray' of crsbench-toy-xray: importing crsbench_toy_xray" in done.stderr
    head, listing = done.stdout.split("LISTING\n", 1)
    prompts = json.loads(head.split("PROMPTS ", 1)[1])
    assert prompts["set"] == {
        "classes": {"A": "alpha", "B": "beta"},
        "templates": ["an x-ray of {}.", "{} on an x-ray."],
        "negative_templates": ["an x-ray without {}.", "no {} on an x-ray."],
    }
    assert prompts["negative"] == [
        ["an x-ray without alpha.", "no alpha on an x-ray."],
        ["an x-ray without beta.", "no beta on an x-ray."],
    ]
    rows = {row["adapter"]: row for row in json.loads(listing)["adapters"]}
    assert {"isic2019", "folder"} <= set(rows)  # the built-ins, then the plugin
    assert list(rows)[-1] == "toy-xray"
    toy = rows["toy-xray"]
    assert (toy["licence"], toy["citation"]) == ("CC0-1.0 (toy data)", "Toy, A. (2099) A toy x-ray set.")
    assert toy["zero-shot prompts"] == "2 templates" and toy["task"] == "multilabel"
    assert rows["manifest"]["zero-shot prompts"] == "generic"
    assert rows["isic2019"]["dataset"] == "isic2019" and rows["manifest"]["dataset"] == "unknown (--source)"
