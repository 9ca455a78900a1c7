"""The SQL macros rendered from core's constants; the warehouse creates them before any view.

fn_crs_weight(name)                the default CRS weight `name` (w_d, ..., w_worst; else NULL), METHODS §8.3
fn_encoder_key(encoder_id, regime) the `encoder@regime` key, as `EncoderKey.__str__` prints it
"""

from __future__ import annotations

from crsbench.core.constants import CRS_WEIGHTS, FROZEN
from crsbench.core.keys import SEPARATOR


def crs_constants_sql() -> str:
    """DDL of the constant macros: SQL's only source of the CRS weights and the key format."""
    # The values are this package's own constants, never user input, so rendering them
    # with repr() is exact and safe; DDL cannot take bound parameters. No `else error(...)`:
    # fn_crs_scores uses fn_crs_weight() as parameter defaults, which DuckDB requires to be constant
    # (error() is volatile), so an unknown name yields NULL.
    cases = " ".join(f"when '{name}' then {float(value)!r}::double" for name, value in CRS_WEIGHTS.items())
    return (
        "create or replace macro fn_crs_weight(name) as case name "
        f"{cases} end;\n"
        "create or replace macro fn_encoder_key(encoder_id, regime) as "
        f"case when regime = '{FROZEN}' then encoder_id else encoder_id || '{SEPARATOR}' || regime end;\n"
        "comment on macro fn_crs_weight is 'Scalar macro fn_crs_weight(name): the protocol default of CRS "
        "weight name (w_d, w_c, w_le, w_r, w_dom, w_ideal, w_worst; NULL for any other name), generated from "
        "crsbench.core. docs/METHODS.md §8.3.';\n"
        "comment on macro fn_encoder_key is 'Scalar macro fn_encoder_key(encoder_id, regime): the encoder "
        "key, encoder_id for the frozen regime else encoder_id@regime (as crsbench.core.EncoderKey prints it). "
        "docs/METHODS.md §13.';\n"
    )
