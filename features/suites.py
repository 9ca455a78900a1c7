"""Corruption suites: opt-in, per-domain sets of perturbations from another package (METHODS.md §25).

A suite (`medmnistc-derm`, ...) is a registry entry: the imaging domain it is for, the title of its
robustness view, and how to load its corruptions. Loading registers each one into the perturbation
registry as `<suite>.<corruption>`, with the grid's severities mapped onto the package's, so its
conditions are `<suite>.<corruption>-s<severity>`. They are never in the default condition list
(`features.conditions.registered_conditions`): a dataset's grid gains them only when asked
(`crsbench grid extend --suite`), and the dot keeps them out of the paper's robustness axis.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping

import numpy as np

from crsbench.core import SUITE_PLUGINS, SUITE_SEPARATOR, CrsbenchError, Registry
from crsbench.features.perturbations import REGISTRY as PERTURBATIONS
from crsbench.features.perturbations import perturb
from crsbench.ingest.types import Dataset


@dataclasses.dataclass(frozen=True)
class LoadedSuite:
    """A suite's corruptions once registered: what the grid may declare, and what was left out."""

    perturbations: tuple[str, ...]  # registered perturbation names '<suite>.<corruption>', the package's order
    severities: Mapping[int, int]  # grid severity -> the package's own severity (1-based), the recorded mapping
    unavailable: Mapping[str, str]  # corruption -> why it is left out (it failed on a probe image here)
    source: str  # e.g. 'medmnistc 0.1.0, dermamnist'


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    domain: str  # the datasets it applies to: Dataset.domain
    title: str  # its robustness view's title, e.g. 'robustness (MedMNIST-C, derm)'
    install: str  # what makes it loadable, e.g. "pip install 'crsbench[medmnistc]'"
    load: Callable[[str], LoadedSuite]  # registers the suite's perturbations (called once per process)


SUITES: Registry[Suite] = Registry(
    "corruption suite", builtins=("crsbench.features.medmnistc",), entry_point_group=SUITE_PLUGINS
)
_LOADED: dict[str, LoadedSuite] = {}
_LOADING = threading.RLock()


def register_suite(suite: Suite) -> Suite:
    if SUITE_SEPARATOR in suite.name:
        raise ValueError(f"suite name {suite.name!r} must not hold {SUITE_SEPARATOR!r}")
    return SUITES.add(suite.name, suite)


def load_suite(name: str) -> LoadedSuite:
    """The suite's registered corruptions (loaded and registered on first use in this process, once
    even when threads perturbing images ask at the same moment)."""
    with _LOADING:
        if name not in _LOADED:
            _LOADED[name] = SUITES.get(name).load(name)
        return _LOADED[name]


def resolve_perturbation(name: str) -> None:
    """The perturbation registry's resolver: a name '<suite>.<corruption>' of a known suite loads the
    suite (which registers its perturbations); any other name is left alone."""
    suite = suite_of(name)
    if suite is not None and suite in SUITES:
        load_suite(suite)


def suite_of(name: str) -> str | None:
    """The suite a perturbation or condition belongs to ('medmnistc-derm.speckle_noise-s2' ->
    'medmnistc-derm'); None for the protocol's and other plugins' perturbations."""
    head, sep, _ = name.partition(SUITE_SEPARATOR)
    return head if sep else None


def suite_conditions(name: str) -> tuple[str, ...]:
    """Every condition of the suite: each available corruption at each grid severity."""
    loaded = load_suite(name)
    return tuple(f"{p}-s{s}" for p in loaded.perturbations for s in sorted(loaded.severities))


def suites_for(domain: str) -> list[str]:
    """The suites declared for an imaging domain, by name."""
    return sorted(n for n, s in SUITES.items() if s.domain == domain)


def check_suite_for(name: str, dataset: str, domain: str) -> Suite:
    """The suite, if it applies to a dataset of `domain`; else a one-line error listing the suites."""
    suite = SUITES.get(name)
    if suite.domain != domain:
        own = suites_for(domain)
        every = ", ".join(f"{n} ({s.domain})" for n, s in sorted(SUITES.items()))
        fits = f"its domain's suites: {', '.join(own)}" if own else f"no suite is declared for domain {domain!r}"
        raise CrsbenchError(
            f"suite {name!r} is for domain {suite.domain!r}, but dataset {dataset!r} is declared {domain!r}; "
            f"{fits} (every suite: {every})"
        )
    return suite


def check_on_images(dataset: Dataset, name: str) -> None:
    """Refuse, in one line and before anything is declared, a suite some of whose corruptions fail on
    the dataset's test images: each distinct decoded image shape is tried once at every severity.
    MedMNIST-C's corruptions, for one, assume square images of about 100 px or more."""
    from crsbench.features.transforms import decode_image

    by_shape: dict[tuple[int, ...], list[str]] = {}
    examples: dict[tuple[int, ...], np.ndarray] = {}
    test = dataset.images[dataset.images["split"] == "test"]
    for image_id, rel_path in zip(test["image_id"], test["rel_path"], strict=True):
        image = decode_image(dataset.root, str(rel_path))
        by_shape.setdefault(image.shape, []).append(str(image_id))
        examples.setdefault(image.shape, image)
    loaded = load_suite(name)
    for shape, ids in sorted(by_shape.items()):
        for perturbation in loaded.perturbations:
            for severity in sorted(loaded.severities):
                try:
                    perturb(examples[shape], ids[0], perturbation, severity)
                except CrsbenchError as exc:
                    size = "x".join(map(str, shape))
                    raise CrsbenchError(
                        f"suite {name!r} cannot corrupt dataset {dataset.name!r}: {perturbation} fails on its "
                        f"{len(ids)} test image(s) of {size} ({exc}); nothing was declared"
                    ) from None


PERTURBATIONS.set_resolver(resolve_perturbation)
