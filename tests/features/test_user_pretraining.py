"""TOML entries declare their pretraining data: unknown when absent, none when [], a typo kept
with a warning naming the closest known name, bad types refused naming the file (METHODS.md §20)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from support.user_encoders_support import isolate_registry

from crsbench.core import CrsbenchError
from crsbench.features.user import read_encoder_file


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    yield from isolate_registry(monkeypatch, tmp_path)


def _read(tmp_path: Path, extra: str) -> Path:
    file = tmp_path / "encoders.toml"
    body = f'[encoder.mine]\nsource = "timm"\nmodel = "resnet18"\npretrained = false\n{textwrap.dedent(extra)}'
    file.write_text(body)
    return file


def _declared(tmp_path: Path, extra: str):
    (entry,) = read_encoder_file(_read(tmp_path, extra))
    return entry.pretraining


def test_absent_is_unknown_and_an_empty_list_is_none(tmp_path):
    unknown = _declared(tmp_path, "")
    assert unknown.datasets is None and not unknown.known
    assert unknown.describe() == "pretraining data: unknown"
    none = _declared(tmp_path, "pretraining_datasets = []\n")
    assert none.datasets == () and none.known
    assert none.describe() == "pretrained on: none"


def test_declared_names_and_source_round_trip(tmp_path):
    declared = _declared(
        tmp_path, 'pretraining_datasets = ["chexpert", "mimic-cxr"]\npretraining_source = "https://example.org/card"\n'
    )
    assert declared.datasets == ("chexpert", "mimic-cxr")
    assert declared.source == "https://example.org/card"
    assert declared.describe() == "pretrained on: chexpert, mimic-cxr"


def test_a_source_alone_leaves_the_data_unknown(tmp_path):
    declared = _declared(tmp_path, 'pretraining_source = "https://example.org/card"\n')
    assert declared.datasets is None and declared.source == "https://example.org/card"


def test_an_unknown_name_is_kept_with_a_warning_naming_the_closest(tmp_path):
    with pytest.warns(UserWarning, match=r"\[encoder\.mine\].*'chexpret' \(closest known: chexpert"):
        declared = _declared(tmp_path, 'pretraining_datasets = ["chexpret"]\n')
    assert declared.datasets == ("chexpret",)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ('pretraining_datasets = "chexpert"\n', "pretraining_datasets"),
        ("pretraining_datasets = [1]\n", "pretraining_datasets"),
        ("pretraining_source = 3\n", "pretraining_source"),
    ],
)
def test_bad_types_are_refused_naming_the_file_and_field(tmp_path, extra, field):
    file = _read(tmp_path, extra)
    with pytest.raises(CrsbenchError, match=rf"^{re.escape(str(file))}: \[encoder\.mine\] field '{field}' must "):
        read_encoder_file(file)
