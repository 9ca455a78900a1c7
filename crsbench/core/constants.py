"""The names every stage shares: reliability axes, CRS weights, depths, conditions, regimes.

This is their one home (docs/METHODS.md). SQL reads the CRS weights through the `fn_crs_weight(name)`
macro that `crsbench.core.sql` renders from them, so the score's defaults cannot drift.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pathlib import Path

# The four reliability axes, in the order every table, chart and weight vector uses (METHODS §6).
AXES: Final[tuple[str, ...]] = ("discrimination", "calibration", "label_efficiency", "robustness")
# Weight names: one per axis (in AXES order) for the ideal-point distance, then the three terms.
AXIS_WEIGHTS: Final[tuple[str, ...]] = ("w_d", "w_c", "w_le", "w_r")
TERM_WEIGHTS: Final[tuple[str, ...]] = ("w_dom", "w_ideal", "w_worst")
# The default CRS weights (METHODS §8.3): equal axes; dominance 0.60, ideal 0.25, worst 0.15.
CRS_WEIGHTS: Final = MappingProxyType(
    {
        "w_d": 0.25,
        "w_c": 0.25,
        "w_le": 0.25,
        "w_r": 0.25,
        "w_dom": 0.60,
        "w_ideal": 0.25,
        "w_worst": 0.15,
    }
)

# Relative depths at which features are read (METHODS §2).
DEPTHS: Final[tuple[float, ...]] = (0.25, 0.50, 0.75, 1.0)
# The protocol's perturbations (METHODS §2.3): the paper's conditions as a fixed fact, read without
# importing torch (ingest declares its grid from them, the v5 migration and feature sets written before
# conditions were recorded hold exactly these). The running set is the perturbation registry
# (features.conditions.registered_conditions); tests/test_registries.py holds its built-ins to these.
PERTURBATIONS: Final[tuple[str, ...]] = ("gaussian_blur", "jpeg", "contrast", "rician", "fov_crop")
SEVERITIES: Final[tuple[int, ...]] = (1, 2, 3)
CLEAN: Final = "clean"
PERTURBED_CONDITIONS: Final[tuple[str, ...]] = tuple(f"{p}-s{s}" for p in PERTURBATIONS for s in SEVERITIES)
CONDITIONS: Final[tuple[str, ...]] = (CLEAN, *PERTURBED_CONDITIONS)
# The run-record condition of a model evaluated on the paired external dataset (E7).
SHIFT: Final = "shift"
# A corruption suite's conditions are '<suite>.<corruption>-s<severity>' (METHODS §25): the dot keeps
# them out of the paper's robustness axis, whose perturbed conditions are '[a-z0-9_]+-s[0-9]+'.
SUITE_SEPARATOR: Final = "."

# Below this many members the min-max anchors are set by so few encoders that the CRS says little
# (with 2, every member scores 0 or 1 on every axis); freezing one needs allow_small (METHODS §8.1).
MIN_PANEL_MEMBERS: Final = 4


def small_panel_reason(n_members: int) -> str:
    """Why a panel of `n_members` (< MIN_PANEL_MEMBERS) gives scores that mean little."""
    return f"each axis is min-max normalised over the {n_members} members, so " + (
        "each member scores exactly 0 or 1 on every axis and the CRS cannot tell them apart"
        if n_members == 2
        else "the anchors are set by the members themselves and the CRS says little"
    )


# The probe whose grid covers every depth and fraction; the axes and the CRS are read from it (METHODS §3).
PRIMARY_PROBE: Final = "logreg"
# The depth the axes and the CRS read (METHODS §6): the other depths feed only the depth profile (E3).
CRS_DEPTH: Final = 1.0
# The (probe, depth) pairs of the protocol's declared grid: the primary probe at every depth, the
# check probes (mlp, knn) at full depth. Each pair is fitted at every declared fraction x seed.
PROTOCOL_PROBE_DEPTHS: Final[tuple[tuple[str, float], ...]] = (
    *((PRIMARY_PROBE, d) for d in DEPTHS),
    ("mlp", 1.0),
    ("knn", 1.0),
)
# The evaluation condition of the clean calibration split (besides CONDITIONS and SHIFT).
CALIB: Final = "calib"
# The entry-point group of perturbation plugins (features.perturbations.REGISTRY loads it).
PERTURBATION_PLUGINS: Final = "crsbench.perturbations"
SUITE_PLUGINS: Final = "crsbench.suites"

# The dataset splits, the nested label fractions of the train split and their seeds (METHODS §1).
SPLITS: Final[tuple[str, ...]] = ("train", "calib", "test")
LABEL_FRACTIONS: Final[tuple[float, ...]] = (0.01, 0.05, 0.10, 0.25, 1.0)
FRACTION_SEEDS: Final[tuple[int, ...]] = (0, 1, 2, 3, 4)

# Regimes: the frozen backbone, or one LoRA adaptation seed (`lora-s<seed>`).
FROZEN: Final = "frozen"
LORA: Final = "lora"


def lora_regime(seed: int) -> str:
    """The feature-store / run-record regime of one adaptation seed: `lora-s<seed>`."""
    return f"{LORA}-s{int(seed)}"


# What a cost field reads where it was not measured (a set extracted before cost was measured): never zero.
NOT_MEASURED: Final = "not measured"

# The warehouse file used when neither --db nor $CRSBENCH_DB names one.
DEFAULT_DB: Final[str] = "crsbench.duckdb"


def default_db_path() -> Path:
    """`$CRSBENCH_DB`, else `crsbench.duckdb` in the working directory."""
    import os
    from pathlib import Path

    return Path(os.environ.get("CRSBENCH_DB", DEFAULT_DB))
