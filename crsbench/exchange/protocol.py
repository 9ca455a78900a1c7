"""The protocol a bundle's numbers were produced under, and how two protocols differ
(docs/METHODS.md §22.3). Two sites' numbers are comparable only under the same protocol: the CRS
weights, the label fractions and seeds, the primary probe and its settings, the perturbed
conditions with their parameters, and each dataset's declared grid. Datasets are identified by
counts and a digest of their image hashes, never by image ids."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from crsbench.core import (
    CALIB,
    CLEAN,
    CRS_DEPTH,
    CRS_WEIGHTS,
    FRACTION_SEEDS,
    LABEL_FRACTIONS,
    PRIMARY_PROBE,
    SHIFT,
    SPLITS,
    CrsbenchError,
)
from crsbench.probes.lbfgs import TOL
from crsbench.warehouse.connection import Warehouse

_GRID_SQL = """
    select dataset_id, list([probe, depth::varchar, label_fraction::varchar, seed::varchar, condition]
                            order by probe, depth, label_fraction, seed, condition) as keys
    from dataset_grid where list_contains(?, dataset_id) group by dataset_id order by dataset_id
"""
_DATASETS_SQL = """
    select d.dataset_id, d.task, g.n_images, g.digest as image_digest,
           count(*) filter (where i.split = 'train') as n_train,
           count(*) filter (where i.split = 'calib') as n_calib,
           count(*) filter (where i.split = 'test') as n_test
    from datasets d
    join dataset_image_digest g using (dataset_id)
    join images i using (dataset_id)
    where list_contains(?, d.dataset_id)
    group by all order by d.dataset_id
"""


def condition_parameters(conditions: Sequence[str]) -> dict[str, dict[str, Any]]:
    """condition -> its perturbation, severity and level parameter, from this crsbench's registry."""
    from crsbench.features.perturbations import REGISTRY, parse_condition

    out: dict[str, dict[str, Any]] = {}
    for condition in sorted(set(conditions)):
        if condition in (CLEAN, CALIB, SHIFT):
            continue
        name, severity = parse_condition(condition) or ("", 0)
        out[condition] = {"perturbation": name, "severity": severity, "level": REGISTRY.get(name).levels[severity]}
    return out


def site_protocol(wh: Warehouse, datasets: Sequence[str], conditions: Sequence[str]) -> dict[str, Any]:
    """The protocol of this warehouse's numbers on `datasets` over `conditions`."""
    grid = {
        r.dataset_id: {
            "keys": len(r.keys),
            "digest": hashlib.sha256(json.dumps([list(k) for k in r.keys]).encode()).hexdigest(),
        }
        for r in wh.sql(_GRID_SQL, [list(datasets)]).itertuples()
    }
    identity = {
        r.dataset_id: {
            "task": r.task,
            "n_images": int(r.n_images),
            **{f"n_{s}": int(getattr(r, f"n_{s}")) for s in SPLITS},
            "image_digest": r.image_digest,
        }
        for r in wh.sql(_DATASETS_SQL, [list(datasets)]).itertuples()
    }
    return {
        "crs_weights": dict(CRS_WEIGHTS),
        "label_fractions": list(LABEL_FRACTIONS),
        "fraction_seeds": list(FRACTION_SEEDS),
        "primary_probe": PRIMARY_PROBE,
        "crs_depth": CRS_DEPTH,
        "probe_settings": {"logreg_objective": "L2 logistic regression, C = 1, divided by n", "logreg_tol": TOL},
        "conditions": condition_parameters(conditions),
        "grid": grid,
        "datasets": identity,
    }


def _fixed_part_differences(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    out = []
    for key in ("crs_weights", "label_fractions", "fraction_seeds", "primary_probe", "crs_depth", "probe_settings"):
        if theirs.get(key) != ours.get(key):
            out.append(f"{key.replace('_', ' ')} differ: {theirs.get(key)!r} vs {ours.get(key)!r} here")
    return out


def _condition_differences(theirs: dict[str, Any]) -> list[str]:
    from crsbench.features.perturbations import REGISTRY

    out = []
    for condition, spec in sorted(theirs.get("conditions", {}).items()):
        name, severity = spec.get("perturbation"), spec.get("severity")
        try:
            known = name in REGISTRY  # a corruption suite's name loads the suite (features.suites)
        except CrsbenchError as exc:  # e.g. its package is not installed here
            out.append(f"conditions differ: {condition} cannot be read here ({exc})")
            continue
        if not known or severity not in REGISTRY.get(name).levels:
            out.append(f"conditions differ: {condition} is not a registered condition here")
            continue
        here = REGISTRY.get(name).levels[severity]
        if spec.get("level") != here:
            out.append(f"conditions differ: {condition} {name} level {spec.get('level')} vs {here} here")
    return out


def protocol_differences(
    theirs: dict[str, Any], ours: dict[str, Any], panel_conditions: dict[str, list[str]]
) -> list[str]:
    """Every way the bundle's protocol differs from this warehouse's, one line each (empty: the same).
    `panel_conditions`: the local panel's perturbed conditions per dataset scope; a bundle dataset the
    panel also covers must hold exactly that set."""
    out = _fixed_part_differences(theirs, ours) + _condition_differences(theirs)
    shipped = set(theirs.get("conditions", {}))
    for dataset, expected in sorted(panel_conditions.items()):
        if dataset in theirs.get("datasets", {}) and set(expected) != shipped:
            missing, added = sorted(set(expected) - shipped), sorted(shipped - set(expected))
            out.append(
                f"conditions differ on {dataset}: the panel here was frozen over {len(expected)}, the bundle holds "
                f"{len(shipped)}"
                + (f" (missing {', '.join(missing)})" if missing else "")
                + (f" (extra {', '.join(added)})" if added else "")
            )
    return out
