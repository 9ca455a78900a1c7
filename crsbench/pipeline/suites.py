"""Declaring a corruption suite on datasets: first, its corruptions tried on their test images."""

from __future__ import annotations

from collections.abc import Sequence

from crsbench.features.suites import SUITES, check_on_images
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset


def check_suites_on_images(wh: Warehouse, names: Sequence[str], suites: Sequence[str]) -> None:
    """Refuse in one line a suite that fails on some test image of a dataset of its domain, before the
    grid changes (a dataset of another domain is refused by the declaration itself, listing the suites)."""
    for name in names:
        dataset = read_dataset(wh, name)
        for suite in suites:
            if SUITES.get(suite).domain == dataset.domain:
                check_on_images(dataset, suite)
