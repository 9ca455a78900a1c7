"""The reporting card's data: items with their statements and numbers, and the card as markdown
(computed by crsbench/reads/card.py from crsbench/reads/card_items.py; rendered by report/sections_card.py)."""

from __future__ import annotations

import dataclasses

Value = float | int | str | None


@dataclasses.dataclass(frozen=True)
class CardItem:
    key: str
    title: str
    statements: tuple[str, ...]  # what was measured, with its numbers
    values: dict[str, Value]  # the numbers, by name (what tests and --json read)
    not_run: tuple[str, ...] = ()  # "what: command" for each part whose analysis has not run
    warn: str | None = None  # a warning the reader must see (the shortcut audit)

    @property
    def status(self) -> str:
        if not self.not_run:
            return "measured"
        return "partial" if self.statements else "not run"

    @property
    def text(self) -> str:
        parts = [*self.statements, *(f"Not run: {n}" for n in self.not_run)]
        return " ".join(_sentence(p) for p in parts)


@dataclasses.dataclass(frozen=True)
class Card:
    panel: str | None
    items: tuple[CardItem, ...]

    def item(self, key: str) -> CardItem:
        return next(i for i in self.items if i.key == key)

    def markdown(self) -> str:
        """The card as a markdown table, for a paper's supplement."""
        lines = [
            "## Reporting card",
            "",
            f"Measured in this warehouse{f' (panel `{self.panel}`)' if self.panel else ''}.",
            "",
            "| # | Item | Measured |",
            "|---|---|---|",
        ]
        for n, item in enumerate(self.items, start=1):
            text = (f"**WARNING: {item.warn}** " if item.warn else "") + item.text
            lines.append(f"| {n} | {item.title} | {text.replace('|', '/')} |")
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict[str, object]:
        return {
            "panel": self.panel,
            "items": [
                {
                    "key": i.key,
                    "title": i.title,
                    "status": i.status,
                    "text": i.text,
                    "values": i.values,
                    "not_run": list(i.not_run),
                    "warn": i.warn,
                }
                for i in self.items
            ],
        }


def _sentence(text: str) -> str:
    return text if text.endswith(".") else text + "."
