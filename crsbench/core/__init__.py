"""The bottom of the flow: names, keys, errors and the registry class every stage shares.

`crsbench.core` imports nothing else from crsbench; every other package may import it. It is the
one door to these names: every other module imports them from `crsbench.core` itself, never from
a submodule of it or from a module that happens to hold them (tests/core/test_one_door.py).

The canonical numerics modes are set first, before anything below (or any stage) loads numpy or
torch: `crsbench.core.numerics`.
"""

from crsbench.core.children import Child, ChildPool, ChildStopped
from crsbench.core.constants import (
    AXES,
    AXIS_WEIGHTS,
    CALIB,
    CLEAN,
    CONDITIONS,
    CRS_DEPTH,
    CRS_WEIGHTS,
    DEFAULT_DB,
    DEPTHS,
    FRACTION_SEEDS,
    FROZEN,
    LABEL_FRACTIONS,
    LORA,
    MIN_PANEL_MEMBERS,
    NOT_MEASURED,
    PERTURBATION_PLUGINS,
    PERTURBATIONS,
    PERTURBED_CONDITIONS,
    PRIMARY_PROBE,
    PROTOCOL_PROBE_DEPTHS,
    SEVERITIES,
    SHIFT,
    SPLITS,
    SUITE_PLUGINS,
    SUITE_SEPARATOR,
    TERM_WEIGHTS,
    default_db_path,
    lora_regime,
    small_panel_reason,
)
from crsbench.core.errors import EXIT_BUG, EXIT_OK, EXIT_USER, CrsbenchError, InputError, ScreenInputError
from crsbench.core.keys import SEPARATOR, EncoderKey
from crsbench.core.numerics import NATIVE_SWITCH, apply_canonical_modes, numerics_modes, portable_products
from crsbench.core.progress import ProgressFn, no_progress
from crsbench.core.registry import Registry
from crsbench.core.sql import crs_constants_sql
from crsbench.core.targets import Protected, check_write_folder, check_write_target
from crsbench.core.version import __version__

# Before any stage loads numpy or torch (nothing above does): crsbench.core.numerics.
apply_canonical_modes()

__all__ = [
    "AXES",
    "AXIS_WEIGHTS",
    "CALIB",
    "CLEAN",
    "CONDITIONS",
    "CRS_DEPTH",
    "CRS_WEIGHTS",
    "DEFAULT_DB",
    "DEPTHS",
    "EXIT_BUG",
    "EXIT_OK",
    "EXIT_USER",
    "FRACTION_SEEDS",
    "FROZEN",
    "LABEL_FRACTIONS",
    "LORA",
    "MIN_PANEL_MEMBERS",
    "NATIVE_SWITCH",
    "NOT_MEASURED",
    "PERTURBATIONS",
    "PERTURBATION_PLUGINS",
    "PERTURBED_CONDITIONS",
    "PRIMARY_PROBE",
    "PROTOCOL_PROBE_DEPTHS",
    "SEPARATOR",
    "SEVERITIES",
    "SHIFT",
    "SPLITS",
    "SUITE_PLUGINS",
    "SUITE_SEPARATOR",
    "TERM_WEIGHTS",
    "Child",
    "ChildPool",
    "ChildStopped",
    "CrsbenchError",
    "EncoderKey",
    "InputError",
    "ProgressFn",
    "Protected",
    "Registry",
    "ScreenInputError",
    "__version__",
    "check_write_folder",
    "check_write_target",
    "crs_constants_sql",
    "default_db_path",
    "lora_regime",
    "no_progress",
    "numerics_modes",
    "portable_products",
    "small_panel_reason",
]
