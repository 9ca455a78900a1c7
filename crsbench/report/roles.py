"""What colour means in the report's figures: encoder roles and the direction of a rank change.

Three things get colours of their own, never reused for anything else, and a key in every
figure where they appear:
- a random-init encoder (pretrained = false): red shades, dashed lines;
- a candidate (scored against the panel, not a member of it): purple shades, dash-dot lines;
- the direction of a rank change (AUROC rank -> CRS rank): green rises, orange falls, grey unchanged.
Panel members (and every pretrained encoder when no panel is frozen) take categorical colours
with no red, purple, pink or grey in them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RANDOM_INIT, CANDIDATE, MEMBER = "random-init", "candidate", "member"
RISES, FALLS, UNCHANGED = "rises", "falls", "unchanged"

# The first shade of each role is its key colour.
ROLE_SHADES: dict[str, tuple[str, ...]] = {
    # apart in lightness, so encoders of one role stay apart; each also gets its own marker
    RANDOM_INIT: ("#c0392b", "#641e16", "#f1948a", "#943126", "#e6b0aa", "#d98880"),
    CANDIDATE: ("#7d3c98", "#4a235a", "#c39bd3", "#6c3483", "#e8daef", "#a569bd"),
}
ROLE_MARKERS = ("o", "s", "^", "D", "v", "P")
ROLE_COLORS = {role: shades[0] for role, shades in ROLE_SHADES.items()}
ROLE_LINESTYLES = {RANDOM_INIT: "--", CANDIDATE: "-.", MEMBER: "-"}
ROLE_KEYS = {
    RANDOM_INIT: "random-init checkpoint (red, dashed)",
    CANDIDATE: "candidate: not in the panel (purple, dash-dot)",
}
DIRECTION_COLORS = {RISES: "#1e8449", FALLS: "#e67e22", UNCHANGED: "#95a5a6"}
DIRECTION_KEYS = {
    RISES: "rises under CRS (green)",
    FALLS: "falls under CRS (orange)",
    UNCHANGED: "same rank (grey)",
}
RANDOM_INIT_SUFFIX = " (random-init)"


def role_of(label: str, roles: Mapping[str, str] | None = None) -> str:
    """The role of the encoder drawn as `label`: from `roles`, else random-init by its label's suffix."""
    if roles and label in roles:
        return roles[label]
    return RANDOM_INIT if label.endswith(RANDOM_INIT_SUFFIX) else MEMBER


def palette(labels: Sequence[str], roles: Mapping[str, str] | None = None) -> dict[str, str]:
    """One stable colour per label: role shades for random-init and candidates, categorical for the rest."""
    ordered = sorted(set(labels))
    members = [label for label in ordered if role_of(label, roles) == MEMBER]
    colors = categorical(len(members))
    out = {label: colors[i % len(colors)] for i, label in enumerate(members)}
    for role, shades in ROLE_SHADES.items():
        of_role = [label for label in ordered if role_of(label, roles) == role]
        out |= {label: shades[i % len(shades)] for i, label in enumerate(of_role)}
    return out


def markers(labels: Sequence[str], roles: Mapping[str, str] | None = None) -> dict[str, str]:
    """A marker per label: members "o"; the i-th encoder of a role (in palette order) the i-th of ROLE_MARKERS."""
    ordered = sorted(set(labels))
    out = {label: "o" for label in ordered}
    for role in ROLE_SHADES:
        of_role = [label for label in ordered if role_of(label, roles) == role]
        out |= {label: ROLE_MARKERS[i % len(ROLE_MARKERS)] for i, label in enumerate(of_role)}
    return out


def categorical(n: int) -> list[str]:
    """Colours for `n` things that are not roles (members, methods): tab10/tab20 without red,
    purple, pink or grey."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["tab20" if n > 6 else "tab10"]
    # tab10: red 3, purple 4, pink 6, grey 7; tab20: the same hues' pairs
    reserved = {6, 7, 8, 9, 12, 13, 14, 15} if cmap.N == 20 else {3, 4, 6, 7}
    return [to_hex(cmap(i)) for i in range(cmap.N) if i not in reserved]


def linestyle(label: str, roles: Mapping[str, str] | None = None) -> str:
    return ROLE_LINESTYLES[role_of(label, roles)]


def text_color(label: str, roles: Mapping[str, str] | None = None) -> str:
    """Colour of an encoder's name in a figure: its role's key colour, black for a member."""
    return ROLE_COLORS.get(role_of(label, roles), "black")


def roles_present(labels: Iterable[str], roles: Mapping[str, str] | None = None) -> list[str]:
    found = {role_of(str(label), roles) for label in labels}
    return [role for role in ROLE_KEYS if role in found]


def add_key(fig: Figure, entries: Sequence[tuple[str, str]], ncol: int | None = None) -> None:
    """A key under the whole figure (and under any figure legend already there): one filled
    swatch per (text, colour), outside every axes. Call it after the figure's layout is done."""
    if not entries:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.patches import Patch

    renderer = FigureCanvasAgg(fig).get_renderer()
    bottom = min((legend.get_window_extent(renderer).y0 / fig.bbox.height for legend in fig.legends), default=0.0)
    handles = [Patch(facecolor=color, edgecolor=color, label=text) for text, color in entries]
    fig.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, min(bottom, 0.0) - 0.02 * (bottom < 0)),
        ncol=ncol or len(handles),
        fontsize=8,
        frameon=False,
        title="colour key",
        title_fontsize=8,
    )


def role_key(fig: Figure, labels: Iterable[str], roles: Mapping[str, str] | None = None) -> None:
    """The key for the encoder roles drawn in `fig` (nothing when every encoder is a member)."""
    add_key(fig, [(ROLE_KEYS[r], ROLE_COLORS[r]) for r in roles_present(labels, roles)])
