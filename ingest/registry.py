"""The adapter registry: one entry per source layout, added with `@register_adapter`.

An adapter is data (name, task, options with defaults and help) plus one reader
function `read(path, log, options, progress) -> Source`. Nothing outside the adapter's
own module names it; the CLI lists the registry for its help text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

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
    domain: str = "none",
    options: Mapping[str, AdapterOption] | None = None,
) -> AdapterEntry:
    return AdapterEntry(name, task, description, dict(options or {}), read, domain)


ADAPTERS: Registry[AdapterEntry] = Registry(
    "adapter",
    make=_entry,
    entry_point_group="crsbench.adapters",
    builtins=(
        "crsbench.ingest.adapter_isic",
        "crsbench.ingest.adapter_cxr",
        "crsbench.ingest.adapter_generic",
        "crsbench.ingest.adapter_folder",
    ),
)


def register_adapter(
    name: str,
    *,
    task: Task | None,
    description: str,
    domain: str = "none",
    options: Mapping[str, AdapterOption] | None = None,
) -> Callable[[Reader], Reader]:
    """Decorator: `read` becomes adapter `name` (see AdapterEntry for the fields)."""
    return ADAPTERS.register(name, task=task, description=description, domain=domain, options=options)


def get_adapter(name: str) -> AdapterEntry:
    return ADAPTERS.get(name)
