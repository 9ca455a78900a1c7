"""Zero-shot prompts as data (METHODS.md §3.5): class names and templates per dataset.

An adapter declares a CLIP_benchmark-style ensemble where it is registered (`prompts=` of
`register_adapter`): a phrase per label and several templates with one `{}` where the phrase
goes. Multiclass and ordinal tasks score one prompt set per class; multilabel tasks score each
label's positive templates against its negative ones ("a chest x-ray showing {}" vs "a chest
x-ray with no {}"). An adapter without one gets `GENERIC_TEMPLATES` with the label names as
phrases. A TOML file (`--prompts FILE`) overrides them per dataset:

    [dataset.isic2019]
    templates = ["a dermoscopy image of {}."]
    [dataset.isic2019.classes]
    MEL = "melanoma"
    ...

Its `classes` table must name exactly the dataset's labels. The set's `digest` (SHA-256 of its
canonical JSON) is part of every zero-shot fit's identity, so changing one template gives new
runs and leaves the old ones as they were.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crsbench.core import CrsbenchError
from crsbench.ingest.registry import ADAPTERS
from crsbench.ingest.types import Dataset, Task


@dataclasses.dataclass(frozen=True)
class PromptSet:
    """Phrases (label name -> text, in label order), templates, and for multilabel tasks the
    negative templates."""

    classes: tuple[tuple[str, str], ...]
    templates: tuple[str, ...]
    negative_templates: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "classes": dict(self.classes),
            "templates": list(self.templates),
            "negative_templates": list(self.negative_templates),
        }

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def texts(self, templates: Sequence[str]) -> list[list[str]]:
        """For each class, its phrase put into every template."""
        return [[t.replace("{}", phrase) for t in templates] for _, phrase in self.classes]


GENERIC_TEMPLATES = ("a medical image of {}.", "an image showing {}.")
GENERIC_NEGATIVE = ("a medical image with no {}.", "an image without {}.")


def _check_templates(where: str, templates: object, field: str) -> tuple[str, ...]:
    if not isinstance(templates, list) or not templates or not all(isinstance(t, str) for t in templates):
        raise CrsbenchError(f"{where}: {field} must be a non-empty list of strings")
    for t in templates:
        if t.count("{}") != 1:
            raise CrsbenchError(f"{where}: template {t!r} in {field} needs exactly one {{}} where the class name goes")
    return tuple(templates)


def make_prompt_set(where: str, spec: Mapping[str, Any], label_names: Sequence[str], task: Task) -> PromptSet:
    """A validated set: classes exactly the dataset's labels (in its order), templates with `{}`."""
    classes = spec.get("classes")
    if not isinstance(classes, Mapping) or not classes:
        raise CrsbenchError(f"{where}: the class list is empty; give [classes] with one phrase per label")
    missing = [n for n in label_names if n not in classes]
    extra = sorted(set(classes) - set(label_names))
    if missing or extra:
        raise CrsbenchError(
            f"{where}: class names do not match the dataset's labels "
            f"(missing: {', '.join(missing) or 'none'}; extra: {', '.join(extra) or 'none'})"
        )
    bad = [k for k in label_names if not isinstance(classes[k], str) or not classes[k].strip()]
    if bad:
        raise CrsbenchError(f"{where}: class {bad[0]!r} needs a non-empty phrase")
    templates = _check_templates(where, spec.get("templates"), "templates")
    negative: tuple[str, ...] = ()
    if task is Task.MULTILABEL:
        negative = _check_templates(where, spec.get("negative_templates"), "negative_templates")
    return PromptSet(tuple((k, str(classes[k])) for k in label_names), templates, negative)


def default_prompts(dataset: Dataset) -> PromptSet:
    """The adapter's declared ensemble, or the generic templates over the label names."""
    # An adapter no longer registered (a plugin since uninstalled) still gets the generic set.
    spec = ADAPTERS.get(dataset.adapter).prompts if dataset.adapter in ADAPTERS else None
    if spec is None:
        spec = {
            "classes": {n: n for n in dataset.label_names},
            "templates": list(GENERIC_TEMPLATES),
            "negative_templates": list(GENERIC_NEGATIVE),
        }
    return make_prompt_set(f"prompts of adapter {dataset.adapter!r}", spec, dataset.label_names, Task(dataset.task))


def read_prompt_file(path: Path | str) -> dict[str, dict[str, Any]]:
    """{dataset name: its table} of a `--prompts` TOML file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CrsbenchError(f"cannot read prompt file {path}: {exc}") from None
    tables = data.get("dataset")
    if not isinstance(tables, dict) or not tables:
        raise CrsbenchError(f"prompt file {path} has no [dataset.<name>] table")
    return {str(k): dict(v) for k, v in tables.items()}


def prompts_for(
    dataset: Dataset, overrides: Mapping[str, Mapping[str, Any]] | None = None, source: str = ""
) -> PromptSet:
    """The dataset's prompt set: its table in `overrides` (a prompt file) if any, else the default."""
    if overrides and dataset.name in overrides:
        where = f"prompt file {source} [dataset.{dataset.name}]" if source else f"prompts of {dataset.name!r}"
        return make_prompt_set(where, overrides[dataset.name], dataset.label_names, Task(dataset.task))
    return default_prompts(dataset)
