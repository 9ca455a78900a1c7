"""The SQL macros rendered from core's constants; the warehouse creates them before any view.

    crs_weight(name)               the default CRS weight `name` (w_d, ..., w_worst; else NULL), SPEC 5.2
    encoder_key(encoder_id, regime) the `encoder@regime` key, as `EncoderKey.__str__` prints it
"""

from __future__ import annotations

from crsbench.core.constants import CRS_WEIGHTS, FROZEN
from crsbench.core.keys import SEPARATOR


def crs_constants_sql() -> str:
    """DDL of the constant macros: SQL's only source of the CRS weights and the key format."""
    # The values are this package's own constants, never user input, so rendering them
    # with repr() is exact and safe; DDL cannot take bound parameters. No `else error(...)`:
    # crs_scores uses crs_weight() as parameter defaults, which DuckDB requires to be constant
    # (error() is volatile), so an unknown name yields NULL.
    cases = " ".join(f"when '{name}' then {float(value)!r}::double" for name, value in CRS_WEIGHTS.items())
    return (
        "create or replace macro crs_weight(name) as case name "
        f"{cases} end;\n"
        "create or replace macro encoder_key(encoder_id, regime) as "
        f"case when regime = '{FROZEN}' then encoder_id else encoder_id || '{SEPARATOR}' || regime end;\n"
    )
