"""Every pluggable set is one crsbench.core.Registry, loaded with its built-in entries."""

from __future__ import annotations

import pytest

from crsbench.core import PERTURBATIONS, CrsbenchError, Registry


def _registries() -> dict[str, Registry]:
    from crsbench.analyses.registry import ANALYSES
    from crsbench.features.perturbations import REGISTRY as PERTURBATION_REGISTRY
    from crsbench.ingest.registry import ADAPTERS
    from crsbench.probes.registry import PROBES

    return {"adapter": ADAPTERS, "probe": PROBES, "analysis": ANALYSES, "perturbation": PERTURBATION_REGISTRY}


def test_each_registry_is_a_core_registry_with_its_builtins():
    regs = _registries()
    assert all(isinstance(r, Registry) for r in regs.values())
    assert {"isic2019", "aptos2019", "chexpert", "mimic-cxr", "medmnist", "manifest"} == set(regs["adapter"])
    assert regs["probe"].names() == ["logreg", "mlp", "knn"]
    assert {"e1", "e2", "e3", "e4", "e5", "e6"} <= set(regs["analysis"])
    assert tuple(regs["perturbation"].names()) == PERTURBATIONS  # core's names are the registered ones


@pytest.mark.parametrize(
    "kind, typo, meant",
    [
        ("adapter", "isic2091", "isic2019"),
        ("probe", "knnn", "knn"),
        ("perturbation", "jpg", "jpeg"),
        ("analysis", "e33", "e3"),
    ],
)
def test_a_typo_suggests_the_registered_name(kind, typo, meant):
    with pytest.raises(CrsbenchError, match=f"unknown {kind} '{typo}'; did you mean .*'{meant}'"):
        _registries()[kind].get(typo)
