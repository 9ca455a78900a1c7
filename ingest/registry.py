"""The adapter registry: one entry per source layout, added with `@register_adapter`.

An adapter is data (name, task, options with defaults and help, its zero-shot prompts, the
data's licence and citation) plus one reader function `read(path, log, options, progress) ->
Source`. Nothing outside the adapter's own module names it: every `adapter_*` module of this
package is imported when the registry is first asked, and the CLI lists the registry
(`crsbench adapters`, the `ingest` help).
"""

from __future__ import annotations

import dataclasses
import pkgutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from crsbench.core import CrsbenchError, ProgressFn, Registry
from crsbench.ingest.source import RowLog, Source
from crsbench.ingest.types import Task


@dataclasses.dataclass(frozen=True)
class AdapterOption:
    default: str | None
    help: str
    choices: tuple[str, ...] | None = None


Reader = Callable[[Path, RowLog, dict[str, str], ProgressFn], Source]


@dataclasses.dataclass(frozen=True)
class AdapterEntry:
    name: str
    task: Task | None  # None: the user declares it (manifest) or the source says (medmnist)
    description: str
    options: Mapping[str, AdapterOption]
    read: Reader
    domain: str = "none"  # imaging domain of the data: 'derm' | 'eye' | 'rad' | 'none'
    # The zero-shot ensemble (ingest.prompts, METHODS.md §3.5): {"classes": {label: phrase},
    # "templates": [...], "negative_templates": [...] for multilabel}; None: the generic templates.
    prompts: Mapping[str, Any] | None = None
    # Of the data the adapter reads, as the user should credit it; "unknown" where nobody has checked.
    licence: str = "unknown"
    citation: str = "unknown"
    # What the data is, as a name of `ingest.known_datasets` (pretraining overlap): a published
    # dataset's adapter names it; None for generic layouts (folder, manifest), whose data only the
    # user can name (`crsbench ingest --source`).
    dataset: str | None = None

    def resolve_options(self, given: Mapping[str, object]) -> dict[str, str]:
        """Defaults filled in, values checked; an unknown or missing option is a CrsbenchError."""
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise CrsbenchError(f"adapter {self.name!r} has no option {unknown[0]!r} (options: {known})")
        out: dict[str, str] = {}
        for key, opt in self.options.items():
            value = given.get(key, opt.default)
            if value is None:
                raise CrsbenchError(f"adapter {self.name!r} needs --option {key}=... ({opt.help})")
            value = str(value).lower() if isinstance(value, bool) else str(value)
            if opt.choices is not None and value not in opt.choices:
                raise CrsbenchError(
                    f"option {key}={value!r} for adapter {self.name!r}: expected one of {', '.join(opt.choices)}"
                )
            out[key] = value
        return out


def _entry(
    name: str,
    read: Reader,
    *,
    task: Task | None,
    description: str,
    licence: str,
    citation: str,
    domain: str = "none",
    options: Mapping[str, AdapterOption] | None = None,
    prompts: Mapping[str, Any] | None = None,
    dataset: str | None = None,
) -> AdapterEntry:
    return AdapterEntry(name, task, description, dict(options or {}), read, domain, prompts, licence, citation, dataset)


# The built-ins are the `adapter_*` modules of this package, found rather than listed, so adding
# an adapter is adding its module (the other modules are the ingest machinery).
ADAPTERS: Registry[AdapterEntry] = Registry(
    "adapter",
    make=_entry,
    entry_point_group="crsbench.adapters",
    builtins=tuple(
        f"crsbench.ingest.{m.name}"
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("adapter_")
    ),
)


def register_adapter(
    name: str,
    *,
    task: Task | None,
    description: str,
    licence: str,
    citation: str,
    domain: str = "none",
    options: Mapping[str, AdapterOption] | None = None,
    prompts: Mapping[str, Any] | None = None,
    dataset: str | None = None,
) -> Callable[[Reader], Reader]:
    """Decorator: `read` becomes adapter `name` (see AdapterEntry for the fields). `licence` and
    `citation` are required so every adapter says them, if only as "unknown"."""
    if not licence.strip() or not citation.strip():
        raise ValueError(f'adapter {name!r}: give a licence and a citation ("unknown" where unknown)')
    return ADAPTERS.register(
        name,
        task=task,
        description=description,
        licence=licence,
        citation=citation,
        domain=domain,
        options=options,
        prompts=prompts,
        dataset=dataset,
    )


def get_adapter(name: str) -> AdapterEntry:
    return ADAPTERS.get(name)
