"""Every pluggable set is one crsbench.core.Registry, loaded with its built-in entries."""

from __future__ import annotations

import pytest

from crsbench.core import PERTURBATIONS, CrsbenchError, Registry
from crsbench.features import tiny_encoder_ids
from crsbench.probes.metrics import metric_columns


def _registries() -> dict[str, Registry]:
    from crsbench.analyses.registry import ANALYSES
    from crsbench.features.perturbations import REGISTRY as PERTURBATION_REGISTRY
    from crsbench.features.registry import ENCODERS
    from crsbench.features.suites import SUITES
    from crsbench.ingest.registry import ADAPTERS
    from crsbench.probes.metrics import METRICS
    from crsbench.probes.registry import PROBES

    return {
        "encoder": ENCODERS,
        "adapter": ADAPTERS,
        "probe": PROBES,
        "perturbation": PERTURBATION_REGISTRY,
        "metric": METRICS,
        "analysis": ANALYSES,
        "corruption suite": SUITES,
    }


def test_each_registry_is_a_core_registry_with_its_builtins():
    regs = _registries()
    assert len(regs) == 7  # encoders, adapters, probes, perturbations, metrics, analyses, corruption suites
    for kind, reg in regs.items():
        assert isinstance(reg, Registry), kind
        assert reg.kind == kind
        assert len(reg) > 0, kind  # built-ins load on first use
    assert set(tiny_encoder_ids()) <= set(regs["encoder"])
    assert {"isic2019", "aptos2019", "chexpert", "mimic-cxr", "medmnist", "manifest", "folder"} <= set(regs["adapter"])
    assert {"logreg", "mlp", "knn", "zeroshot"} <= set(regs["probe"])  # every module of probes/kinds registered
    assert {"e1", "e2", "e3", "e4", "e5", "e6"} <= set(regs["analysis"])
    assert {"medmnistc-derm", "medmnistc-eye", "medmnistc-rad", "medmnistc-path"} <= set(regs["corruption suite"])
    # the protocol's five come first, in their order; a new built-in perturbation is one entry more
    assert tuple(regs["perturbation"].names())[: len(PERTURBATIONS)] == PERTURBATIONS
    # metrics list in registration order: the run record's metric columns
    assert regs["metric"].names() == [c.name for c in metric_columns()]
    assert regs["metric"].names()[:2] == ["auroc", "ece"]


@pytest.mark.parametrize(
    "kind, typo, meant",
    [
        ("adapter", "isic2091", "isic2019"),
        ("probe", "knnn", "knn"),
        ("perturbation", "jpg", "jpeg"),
        ("analysis", "e33", "e3"),
        ("metric", "brierr", "brier"),
        ("encoder", "tiny-vitt", "tiny-vit"),
    ],
)
def test_a_typo_suggests_the_registered_name(kind, typo, meant):
    with pytest.raises(CrsbenchError, match=f"unknown {kind} '{typo}'; did you mean .*'{meant}'"):
        _registries()[kind].get(typo)
