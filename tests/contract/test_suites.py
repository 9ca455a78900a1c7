"""Contract of every corruption suite (crsbench.features.suites.SUITES): complete metadata, a load that
registers perturbations under the suite's name at the grid's severities, conditions the store and
the grid can name but the default condition list never holds, deterministic images of the input's
shape, and a refusal naming the suites for a dataset of another domain."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crsbench.core import SEVERITIES, SUITE_SEPARATOR, CrsbenchError
from crsbench.features.conditions import is_condition, registered_conditions
from crsbench.features.perturbations import REGISTRY, parse_condition, perturb
from crsbench.features.suites import SUITES, check_suite_for, load_suite, suite_conditions, suite_of
from tests.contract.support import names

SUITE_NAMES = names(SUITES)


def _loaded(name: str):
    return load_suite(name)  # a suite's package is in the test extra: a missing one fails here, naming it


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_metadata_is_complete(name):
    suite = SUITES.get(name)
    assert suite.name == name and SUITE_SEPARATOR not in name
    assert re.fullmatch("[a-z]+", suite.domain)
    assert suite.domain in suite.title and suite.title.startswith("robustness (")
    assert suite.install.startswith("pip install") and callable(suite.load)


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_load_registers_its_perturbations_at_the_grids_severities(name):
    loaded = _loaded(name)
    assert loaded.perturbations and loaded.source
    assert sorted(loaded.severities) == list(SEVERITIES)  # the grid's declared severities, each mapped
    own = [loaded.severities[s] for s in SEVERITIES]
    assert own == sorted(own) and len(set(own)) == len(own)  # mild to severe, as the grid's are
    for perturbation in loaded.perturbations:
        assert suite_of(perturbation) == name and perturbation in REGISTRY
        assert sorted(REGISTRY.get(perturbation).levels) == list(SEVERITIES)
    assert not set(loaded.perturbations) & set(loaded.unavailable)
    conditions = suite_conditions(name)
    assert len(conditions) == len(loaded.perturbations) * len(SEVERITIES)
    for condition in conditions:
        perturbation, severity = parse_condition(condition)  # type: ignore[misc]
        assert is_condition(condition) and condition == f"{perturbation}-s{severity}"
    assert not set(conditions) & set(registered_conditions())  # never a default condition
    assert load_suite(name) is loaded  # once per process


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_images_keep_shape_and_are_deterministic(name):
    loaded = _loaded(name)
    rng = np.random.default_rng(0)
    for channels in (3, 1):
        image = rng.integers(0, 256, size=(128, 128, channels), dtype=np.uint8)  # MedMNIST-C's are square
        for perturbation in loaded.perturbations:
            top = max(SEVERITIES)
            out = perturb(image, "img-1", perturbation, top)
            assert out.dtype == np.uint8 and out.shape == image.shape, perturbation
            assert np.array_equal(out, perturb(image, "img-1", perturbation, top)), perturbation


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_a_dataset_of_another_domain_is_refused_listing_the_suites(name):
    suite = SUITES.get(name)
    assert check_suite_for(name, "mine", suite.domain) is suite
    with pytest.raises(CrsbenchError) as err:
        check_suite_for(name, "mine", "otherdomain")
    message = str(err.value)
    assert f"suite {name!r} is for domain {suite.domain!r}" in message and "'mine'" in message
    assert all(other in message for other in SUITES.names())
