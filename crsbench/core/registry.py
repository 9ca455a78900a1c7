"""`Registry[T]`: named entries with a decorator, lookup with suggestions, and listing.

Every pluggable set in crsbench (encoders, adapters, probes, perturbations, metrics,
analyses) is one `Registry`. Built-in entries register on import of their module
(`builtins` names those modules, imported on first lookup so listing stays cheap);
third-party packages add entries through an entry-point group, loaded the same way: installing
the package was the user's decision, and one line on stderr names each module imported so.
"""

from __future__ import annotations

import difflib
import importlib
import sys
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from crsbench.core.errors import CrsbenchError

T = TypeVar("T")
F = TypeVar("F")


class Registry(Generic[T]):
    """Entries of one kind by name.

    `make(name, obj, **meta)` turns what the decorator wraps into the stored entry (by
    default the object itself). Registering a name twice with a different entry is a bug,
    not a user error. Listing follows registration order (a registry may mean something
    by it, e.g. the metrics' column order); callers sort where they want sorted.
    """

    def __init__(
        self,
        kind: str,
        *,
        make: Callable[..., T] | None = None,
        builtins: tuple[str, ...] = (),
        entry_point_group: str | None = None,
    ) -> None:
        self.kind = kind
        self._make = make
        self._builtins = builtins
        self._group = entry_point_group
        self._entries: dict[str, T] = {}
        self._loaded = False
        self._in_load = False
        self._loading = threading.RLock()
        self._resolver: Callable[[str], None] | None = None

    def set_resolver(self, resolver: Callable[[str], None]) -> None:
        """Offer each name not registered to `resolver` first, which may register it (entries made
        on demand: a corruption suite registers its perturbations the first time one is named)."""
        self._resolver = resolver

    def _resolve(self, name: str) -> None:
        if name not in self._entries and self._resolver is not None:
            self._resolver(name)

    def add(self, name: str, entry: T) -> T:
        """Store one entry under `name`."""
        if name in self._entries and self._entries[name] != entry:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> None:
        """Forget one entry (entries re-read from a user's file that changed)."""
        self._entries.pop(name, None)

    def register(self, name: str, **meta: Any) -> Callable[[F], F]:
        """Decorator: `@REG.register("name", **meta)` stores `make(name, obj, **meta)`."""

        def wrap(obj: F) -> F:
            self.add(name, self._make(name, obj, **meta) if self._make else obj)  # type: ignore[arg-type]
            return obj

        return wrap

    def get(self, name: str) -> T:
        """The entry called `name`; an unknown name is a CrsbenchError naming the close matches."""
        self.load()
        self._resolve(name)
        try:
            return self._entries[name]
        except KeyError:
            raise CrsbenchError(self._unknown(name)) from None

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        self.load()
        return list(self._entries)

    def values(self) -> list[T]:
        """Every entry, in registration order."""
        self.load()
        return list(self._entries.values())

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs in registration order."""
        self.load()
        return list(self._entries.items())

    def __contains__(self, name: object) -> bool:
        self.load()
        if isinstance(name, str):
            self._resolve(name)
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def load(self) -> None:
        """Import the built-in modules and the plugins of the entry-point group, once. Another
        thread asking meanwhile waits until they are all in (it would otherwise see a part)."""
        if self._loaded:
            return
        with self._loading:
            if self._loaded or self._in_load:
                return  # loaded meanwhile, or a module being imported below looks itself up
            self._in_load = True
            try:
                self._import_entries()
            finally:
                self._in_load = False
                self._loaded = True  # a failing plugin is not imported again on every lookup

    def _import_entries(self) -> None:
        for module in self._builtins:
            importlib.import_module(module)
        if self._group:
            for point in entry_points(group=self._group):
                dist = getattr(getattr(point, "dist", None), "name", None) or "an installed package"
                print(
                    f"crsbench: {self.kind} plugin {point.name!r} of {dist}: importing {point.value}", file=sys.stderr
                )
                point.load()  # a plugin registers its entries on import, like a built-in module

    def _unknown(self, name: str) -> str:
        known = sorted(self._entries)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        return f"unknown {self.kind} {name!r}{hint} (expected one of: {', '.join(known)})"
