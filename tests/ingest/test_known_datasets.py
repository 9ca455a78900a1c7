"""The vocabulary of dataset names that pretraining overlap is matched in (METHODS.md §20)."""

from __future__ import annotations

from crsbench.ingest.known_datasets import KNOWN_DATASETS, closest_known, unknown_names_message


def test_names_are_canonical_and_described():
    for name, description in KNOWN_DATASETS.items():
        assert name == name.lower().strip() and " " not in name, name
        assert description.strip() and "\n" not in description, name


def test_a_typo_is_named_with_its_closest_known_name():
    assert closest_known("chexpret")[0] == "chexpert"
    message = unknown_names_message(["chexpret", "mimic-cxr"], "entry x")
    assert message is not None
    assert message.startswith("entry x declares unknown dataset name(s) 'chexpret' (closest known: chexpert")
    assert "'mimic-cxr'" not in message.split("; known names:")[0]


def test_known_names_give_no_message():
    assert unknown_names_message(["mimic-cxr", "webli"], "entry x") is None
    assert unknown_names_message([], "entry x") is None
