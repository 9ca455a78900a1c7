"""The evaluation conditions, derived from the perturbation registry (METHODS.md §2.3).

A condition is `clean` or `<perturbation>-s<severity>` for every registered perturbation
(`features.perturbations.REGISTRY`: the built-ins and the `crsbench.perturbations` entry-point
plugins) and each of its severities, in registration order; a corruption suite's conditions
(`<suite>.<corruption>-s<severity>`, `features.suites`) are a dataset's only when its grid declares
them. With no plugin installed this is the
paper's protocol, core's CONDITIONS (clean + 5 perturbations x 3 severities = 16). Extraction
writes these conditions by default, each dataset's grid is declared over them at ingest, and a
probe evaluates the conditions its feature set records (`stored_conditions`).

The perturbation kernels import torch, so the registry is loaded only where it may hold more than
the protocol's entries (`registered_conditions`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from typing import Any

from crsbench.core import CLEAN, CONDITIONS, PERTURBATION_PLUGINS, SUITE_SEPARATOR, CrsbenchError

PERTURBATIONS_MODULE = "crsbench.features.perturbations"


def condition_name(perturbation: str, severity: int) -> str:
    """('jpeg', 2) -> 'jpeg-s2'."""
    return f"{perturbation}-s{int(severity)}"


def perturbed_conditions() -> tuple[str, ...]:
    """Every registered perturbation x its severities, in registration order; a corruption suite's
    are left out (a dataset's grid takes them only when asked: `features.suites`)."""
    from crsbench.features.perturbations import REGISTRY

    return tuple(
        condition_name(name, s)
        for name, entry in REGISTRY.items()
        if SUITE_SEPARATOR not in name
        for s in sorted(entry.levels)
    )


def registered_conditions() -> tuple[str, ...]:
    """`clean`, then every registered perturbed condition: the default condition list.

    Without the perturbation module imported (nothing can have registered into it) and without
    entry-point plugins, the registry would hold the built-ins alone, the protocol's conditions:
    those are returned without importing torch (ingest declares its grid with them)."""
    if PERTURBATIONS_MODULE not in sys.modules and not entry_points(group=PERTURBATION_PLUGINS):
        return CONDITIONS
    return (CLEAN, *perturbed_conditions())


def is_condition(condition: str) -> bool:
    """True for clean, a protocol condition, a registered plugin's or a corruption suite's (the
    protocol's need no registry)."""
    if condition in CONDITIONS or condition in registered_conditions():
        return True
    if SUITE_SEPARATOR not in condition:
        return False
    from crsbench.features.perturbations import parse_condition

    try:
        parse_condition(condition)
    except CrsbenchError:
        return False
    return True


def check_conditions(conditions: Iterable[str]) -> tuple[str, ...]:
    """The conditions as a tuple, if each is registered and clean is among them; else a one-line error."""
    chosen = tuple(conditions)
    unknown = [c for c in chosen if not is_condition(c)]
    if unknown or CLEAN not in chosen:
        known = ", ".join(registered_conditions())
        what = f"unknown condition(s) {', '.join(map(repr, unknown))}" if unknown else "'clean' is missing"
        raise CrsbenchError(f"conditions: {what}; choose 'clean' and any of the registered ones: {known}")
    return chosen


def stored_conditions(attrs: Mapping[str, Any]) -> tuple[str, ...]:
    """The conditions a feature set holds, from its attributes; a set written before they were
    recorded holds the protocol's."""
    return tuple(str(c) for c in attrs.get("conditions", CONDITIONS))


def conditions_of(stored: Iterable[str], suite: str = "") -> tuple[str, ...]:
    """The conditions a fit evaluates among those its feature set stores: a suite's fit its suite's
    ('<suite>.<corruption>-s<k>'), the protocol's fit every other one."""
    if suite:
        return tuple(c for c in stored if c.startswith(suite + SUITE_SEPARATOR))
    return tuple(c for c in stored if SUITE_SEPARATOR not in c)
