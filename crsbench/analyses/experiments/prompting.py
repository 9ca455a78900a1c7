"""E5 prompts and the deterministic answer parser (METHODS.md §12): pure text, no model.

Five prompt styles are built from a dataset's label names: `simple`, `multiple_choice`,
`chain_of_thought`, `refined` and `few_shot` (the simple question after solved examples).
`parse_answer` maps a generated answer to one label index or None ("unparsed"), by these
rules, in order:

1. Only the text after the last "answer:" / "answer is" marker is read when there is one
   (a chain of thought ends with its answer); if that part names nothing, the whole text is.
2. Candidates: a parenthesised option letter "(C)" or a leading "C." / "C)" / lone "C" (only
   for prompts that listed lettered options); every label name or known alias as a whole
   word, case and punctuation ignored, the longest match winning where matches overlap, and
   a match right after "no", "not" or "without" dropped (negated); for ordinal tasks
   "grade/level/stage N" or a bare number N (0-based, as the grades are).
3. Exactly one distinct label among the candidates is the answer; none, or two different
   labels (e.g. "Answer: (C) Melanoma" when (C) is not melanoma, or "melanoma or nevus"),
   is unparsed.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from crsbench.features.vlm import LETTERS
from crsbench.ingest.types import Task

STYLES: tuple[str, ...] = ("simple", "multiple_choice", "chain_of_thought", "refined", "few_shot")
UNPARSED = "unparsed"

# Spelled-out names for the label codes the datasets publish (first = display name).
LABEL_ALIASES: dict[str, tuple[str, ...]] = {
    "MEL": ("melanoma",),
    "NV": ("melanocytic nevus", "nevus", "naevus", "mole"),
    "BCC": ("basal cell carcinoma",),
    "AK": ("actinic keratosis",),
    "BKL": ("benign keratosis", "seborrheic keratosis", "solar lentigo"),
    "DF": ("dermatofibroma",),
    "VASC": ("vascular lesion",),
    "SCC": ("squamous cell carcinoma",),
    "No DR": ("no diabetic retinopathy", "no retinopathy"),
    "Proliferative DR": ("proliferative diabetic retinopathy", "proliferative"),
}
_DOMAIN_NOUN = {
    "derm": "dermoscopic image",
    "eye": "retinal fundus photograph",
    "rad": "chest X-ray",
    "none": "medical image",
}
_SPECIALIST = {"derm": "dermatologist", "eye": "ophthalmologist", "rad": "radiologist", "none": "clinician"}
_NEGATION = re.compile(r"(?:\bno|\bnot|\bwithout)\s+$")
_MARKER = re.compile(r"answer\s*(?:is|:|-)\s*:?", re.IGNORECASE)
_NUMBER = re.compile(r"(?:\b(?:grade|level|stage|class)\s*(\d+)\b)|^\s*(\d+)\s*$")


@dataclasses.dataclass(frozen=True)
class Prompt:
    style: str
    text: str
    letters: bool  # the prompt listed lettered options (the parser then accepts letters)
    shots: tuple[tuple[int, str], ...] = ()  # few-shot: (dataset row, the example's answer)


def display_name(label: str) -> str:
    aliases = LABEL_ALIASES.get(label)
    return aliases[0].capitalize() if aliases else label


def _names(labels: Sequence[str]) -> str:
    return ", ".join(display_name(x) for x in labels)


def question(labels: Sequence[str], task: Task, domain: str) -> str:
    noun = _DOMAIN_NOUN.get(domain, _DOMAIN_NOUN["none"])
    if task is Task.ORDINAL:
        return (
            f"What is the severity grade of this {noun}, from grade 0 ({display_name(labels[0])}) "
            f"to grade {len(labels) - 1} ({display_name(labels[-1])})?"
        )
    if task is Task.MULTILABEL:
        return f"What is the main finding in this {noun}?"
    return f"What is the diagnosis for this {noun}?"


def build_prompt(
    style: str, labels: Sequence[str], task: Task | str, domain: str = "none", shots: Sequence[tuple[int, int]] = ()
) -> Prompt:
    """The prompt of one style; `shots` are (row, label index) examples for `few_shot`."""
    task = Task(task)
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {STYLES}")
    q = question(labels, task, domain)
    simple = f"{q} Answer with one of: {_names(labels)}."
    if style == "simple":
        return Prompt(style, simple, False)
    if style == "multiple_choice":
        options = "\n".join(f"({LETTERS[i]}) {display_name(x)}" for i, x in enumerate(labels))
        return Prompt(style, f"{q}\n{options}\nAnswer with the letter of one option.", True)
    if style == "chain_of_thought":
        return Prompt(
            style,
            f"{q} The options are: {_names(labels)}. Think step by step about the "
            "visible features, then give the final answer on the last line as "
            "'Answer: <option>'.",
            False,
        )
    if style == "refined":
        specialist = _SPECIALIST.get(domain, _SPECIALIST["none"])
        return Prompt(
            style,
            f"You are an experienced {specialist}. {q} Consider each of these "
            f"options in turn: {_names(labels)}. Reply with exactly one option "
            "from the list and nothing else.",
            False,
        )
    answers = tuple((int(row), display_name(labels[int(k)])) for row, k in shots)
    return Prompt(style, simple, False, answers)


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9]+", " ", text.lower())).strip()


def _label_mentions(text: str, labels: Sequence[str]) -> set[int]:
    norm = f" {_normalise(text)} "
    spans: list[tuple[int, int, int]] = []  # (start, end, label)
    for idx, label in enumerate(labels):
        for name in {_normalise(label), *(_normalise(a) for a in LABEL_ALIASES.get(label, ()))}:
            if not name:
                continue
            for m in re.finditer(rf"(?<= ){re.escape(name)}(?= )", norm):
                spans.append((m.start(), m.end(), idx))
    spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))  # longest first
    taken: list[tuple[int, int]] = []
    found: set[int] = set()
    for start, end, idx in spans:
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        if not _NEGATION.search(norm[:start]):
            found.add(idx)
    return found


def _letter(text: str, n: int) -> set[int]:
    hits = re.findall(r"\(([A-Za-z])\)", text)
    lead = re.match(r"^\s*(?:option\s+)?([A-Z])\s*(?:[.):]|$)", text)
    if lead:
        hits.append(lead.group(1))
    return {LETTERS.index(h.upper()) for h in hits if LETTERS.index(h.upper()) < n}


def _grade(text: str, n: int) -> set[int]:
    out = set()
    for m in _NUMBER.finditer(_normalise(text)):
        value = int(m.group(1) or m.group(2))
        if value < n:
            out.add(value)
    return out


def _candidates(text: str, labels: Sequence[str], task: Task, letters: bool) -> set[int]:
    found = _label_mentions(text, labels)
    if letters:
        found |= _letter(text, len(labels))
    if task is Task.ORDINAL:
        found |= _grade(text, len(labels))
    return found


def parse_answer(answer: str | None, labels: Sequence[str], task: Task | str, letters: bool = False) -> int | None:
    """The label index an answer names, or None (unparsed); rules in the module docstring."""
    if not answer or not answer.strip():
        return None
    task = Task(task)
    markers = list(_MARKER.finditer(answer))
    parts = [answer[markers[-1].end() :], answer] if markers else [answer]
    for part in parts:
        found = _candidates(part, labels, task, letters)
        if found:
            return found.pop() if len(found) == 1 else None
    return None
