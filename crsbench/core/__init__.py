"""The bottom of the flow: names, keys, errors and the registry class every stage shares.

`crsbench.core` imports nothing else from crsbench; every other package may import it.
"""

from crsbench.core.constants import (
    AXES,
    AXIS_WEIGHTS,
    CALIB,
    CLEAN,
    CONDITIONS,
    CRS_WEIGHTS,
    DEPTHS,
    FROZEN,
    LORA,
    PERTURBATIONS,
    PERTURBED_CONDITIONS,
    PRIMARY_PROBE,
    PROTOCOL_PROBE_DEPTHS,
    SEVERITIES,
    SHIFT,
    TERM_WEIGHTS,
    lora_regime,
)
from crsbench.core.errors import EXIT_BUG, EXIT_OK, EXIT_USER, CrsbenchError, InputError
from crsbench.core.keys import EncoderKey
from crsbench.core.registry import Registry
from crsbench.core.sql import crs_constants_sql
from crsbench.core.version import __version__

__all__ = [
    "AXES",
    "AXIS_WEIGHTS",
    "CALIB",
    "CLEAN",
    "CONDITIONS",
    "CRS_WEIGHTS",
    "DEPTHS",
    "EXIT_BUG",
    "EXIT_OK",
    "EXIT_USER",
    "FROZEN",
    "LORA",
    "PERTURBATIONS",
    "PERTURBED_CONDITIONS",
    "PRIMARY_PROBE",
    "PROTOCOL_PROBE_DEPTHS",
    "SEVERITIES",
    "SHIFT",
    "TERM_WEIGHTS",
    "CrsbenchError",
    "EncoderKey",
    "InputError",
    "Registry",
    "__version__",
    "crs_constants_sql",
    "lora_regime",
]
