"""The leaderboard's verdict sentence (`leaderboard.verdict_line`), against boards written here."""

from __future__ import annotations

import pandas as pd

from crsbench.reads.leaderboard import verdict_line


def board(**extra) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "encoder_id": ["a", "b", "c", "d", "p"],
            "crs": [0.9, 0.8, 0.5, 0.1, 0.95],
            "crs_rank": [1, 2, 3, 4, None],
            "tier": ["=1", "=1", "3", "4", None],
            "crs_lo": [0.5, 0.4, 0.3, 0.0, None],
            "crs_hi": [1.0, 0.9, 0.6, 0.3, None],
            "coverage": ["full", "full", "full", "full", "partial"],
        }
    )
    return frame.assign(**extra)


def test_names_the_leader_the_tied_and_the_mean_width():
    line = verdict_line("ref", board(), "images+seeds")
    # widths 0.5, 0.5, 0.3, 0.3 -> 0.40; CRS spread of the ranked 0.9 - 0.1 = 0.8: 0.40 >= 0.5 x 0.8
    assert line == (
        "a leads on CRS (panel ref); tied with it within the 95 % intervals: b; "
        "mean CRS interval width 0.40 (wide: more test images would separate them)."
    )


def test_a_lone_leader_with_narrow_intervals_and_no_bootstrap():
    narrow = board(tier=["1", "2", "3", "4", None], crs_lo=[0.85, 0.75, 0.45, 0.05, None])
    narrow["crs_hi"] = narrow["crs_lo"] + 0.1
    assert verdict_line("cohort", narrow, "seeds") == (
        "a leads on CRS (cohort mode); no other encoder is within its 95 % interval; "
        "mean CRS interval width 0.10 (narrow beside the CRS spread of 0.80)."
    )
    assert verdict_line("ref", board(), None).startswith("a leads on CRS (panel ref); no intervals yet")
    shared = board(crs_rank=[1, 1, 3, 4, None])
    assert verdict_line("ref", shared, None).startswith("a and b lead on CRS")
    assert verdict_line("ref", board().iloc[:0], None) == "No encoder is ranked yet (panel ref)."
    # ranked without the overlapping cells, the stored intervals do not apply: no 'run bootstrap' advice
    excluded = verdict_line("ref", board(), "images+seeds", excluded=True)
    assert excluded.startswith("a leads on CRS (panel ref), with the overlapping cells left out; no intervals")
    assert "analyze bootstrap" not in excluded
