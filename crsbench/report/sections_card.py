"""The reporting card, right after the leaderboard: eight items, each with its measured number
(computed in crsbench/reads/card.py; this module only renders it). METHODS.md §19.2."""

from __future__ import annotations

from crsbench.reads.card import reporting_card
from crsbench.reads.card_model import Card, CardItem
from crsbench.reads.report_data import ReportData
from crsbench.report.html import FigureSink, esc
from crsbench.report.sections import Missing, section


def _item(n: int, item: CardItem) -> str:
    warn = f'<div class="banner" role="alert"><strong>Warning:</strong> {esc(item.warn)}.</div>' if item.warn else ""
    measured = "".join(f"<li>{esc(s)}</li>" for s in item.statements)
    not_run = "".join(
        f'<li class="not-run">Not run: {esc(what)}: <code>{esc(command)}</code></li>'
        for what, _, command in (n.partition(": ") for n in item.not_run)
    )
    return (
        f'<tr data-card-item="{esc(item.key)}" data-status="{esc(item.status)}"><td>{n}</td>'
        f'<td class="text"><strong>{esc(item.title)}</strong></td>'
        f'<td class="text card-text">{warn}<ul>{measured}{not_run}</ul></td></tr>'
    )


def render_card(card: Card) -> str:
    rows = "".join(_item(n, item) for n, item in enumerate(card.items, start=1))
    return (
        '<p class="note">What a reader needs to judge these results, each with its number from this '
        "warehouse; <code>crsbench report --card-only</code> prints it as markdown.</p>"
        '<div class="scroll"><table class="card"><thead><tr><th>#</th><th class="text">Item</th>'
        f'<th class="text">Measured</th></tr></thead><tbody>{rows}</tbody></table></div>'
    )


@section("card", "Reporting card", order=20)
def card(data: ReportData, sink: FigureSink) -> str | Missing:
    return render_card(reporting_card(data.wh, data.panel))
