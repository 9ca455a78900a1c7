"""A user's own encoders without editing the package: TOML tables and `crsbench.encoders` plugins.

TOML (`--encoders FILE`, `$CRSBENCH_ENCODERS`, or `crsbench.toml` beside the warehouse)::

    [encoder.derm-vit]
    source = "timm"                      # timm | hf | open_clip | python
    model = "vit_small_patch16_224"      # library name, hub repo / folder, arch, or module:function
    weights = "weights/derm_vit.pth"     # relative to this file
    scope = "specialty"
    domain = "derm"
    pooling = "mean"                     # optional; default: the model's own pooled output
    pretraining_datasets = ["isic2019"]  # optional; absent: unknown, []: none (known_datasets)
    pretraining_source = "https://..."   # where that is stated
    [encoder.derm-vit.overrides]         # any entry field the library config gets wrong
    input_size = 384

Data folders configure, never execute. A file is read at one of three trust levels:
`FOUND` (crsbench.toml beside the warehouse, read without being asked), `GIVEN` (named
explicitly) and `CODE` (named explicitly with `allow_code`, the CLI's `--allow-code`). Only a
`CODE` file may hold an entry that runs Python code: `source = "python"` (a `module:callable`),
`trust_remote_code = true` (code shipped in a hub folder), `trust_pickle = true` (unpickling
runs the code a pickle names) or a `model_kwargs` key that
switches such code on; anywhere else that entry is refused in one line naming the file, the
entry and how to allow it. The flag comes down as a parameter: this module reads no
`CRSBENCH_ALLOW_CODE` itself.

A plugin package declares `[project.entry-points."crsbench.encoders"] name = "pkg.mod:fn"`,
where `fn()` returns an `EncoderEntry` or a list of them; installing it was the user's
decision, and crsbench names the module it imports. Every entry records its origin
(`toml:<file>`, `plugin:<distribution>`), shown by `crsbench encoders`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
import warnings
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from crsbench.core import CrsbenchError
from crsbench.features.registry import (
    DOMAINS,
    POOLINGS,
    SCOPES,
    TEXT_TOWERS,
    EncoderEntry,
    KeyConversion,
    Pretraining,
    add_entry,
    remove_entries,
)
from crsbench.ingest.known_datasets import unknown_names_message

ENCODERS_ENV = "CRSBENCH_ENCODERS"
PROJECT_FILE = "crsbench.toml"
ENTRY_POINT_GROUP = "crsbench.encoders"
SOURCES = ("timm", "hf", "open_clip", "python")
ALLOW_CODE_ENV = "CRSBENCH_ALLOW_CODE"  # read at the edge (crsbench.pipeline), passed down as allow_code
FOUND, GIVEN, CODE = "found", "given", "code"  # trust levels, lowest first
_RANK = {FOUND: 0, GIVEN: 1, CODE: 2}
# model_kwargs keys that make a library import code shipped with the weights.
CODE_KWARGS = ("trust_remote_code", "code_revision")
CODE_OVERRIDES = ("trust_remote_code", "trust_pickle")

# field: (accepted types, description); `overrides`, `convert`, `model_kwargs` are tables.
_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "source": ((str,), f"one of {SOURCES}"),
    "model": ((str,), "a string"),
    "weights": ((str,), "a path"),
    "scope": ((str,), f"one of {SCOPES}"),
    "domain": ((str,), f"one of {DOMAINS}"),
    "pooling": ((str,), f"one of {POOLINGS}"),
    "family": ((str,), "a string"),
    "pretrained": ((bool,), "true or false"),
    "chest_only": ((bool,), "true or false"),
    "text_tower": ((str,), f"one of {TEXT_TOWERS} (zero-shot classification)"),
    "overrides": ((dict,), "a table"),
    "convert": ((dict,), "a table"),
    "model_kwargs": ((dict,), "a table"),
    # absent: unknown; [] declares none (METHODS.md §20)
    "pretraining_datasets": ((list,), "a list of dataset names (crsbench.ingest KNOWN_DATASETS)"),
    "pretraining_source": ((str,), "a string (where the data is stated: a model card's URL, a paper)"),
}
_OVERRIDE_TYPES: dict[str, tuple[type, ...]] = {
    "input_size": (int,),
    "mean": (list,),
    "std": (list,),
    "depth_blocks": (str, list),
    "final_norm": (str,),
    "token_pool": (str,),
    "prefix_tokens": (int,),
    "skip_last_blocks": (int,),
    "lora_targets": (list,),
    "weights_file": (str,),
    "extra_repos": (list,),
    "trust_remote_code": (bool,),
    "trust_pickle": (bool,),
}
_CONVERT_TYPES = {f.name: f.type for f in dataclasses.fields(KeyConversion)}
# model_kwargs keys crsbench itself passes to (or that fetch weights through) a library's
# constructor, by source: given twice they would clash (TypeError) or bypass crsbench's weights.
_WEIGHTS_BY = (
    'weights are given by `weights = "<file or folder>"` in the entry (or --weights), and '
    "`pretrained = false` at the entry's top level builds it untrained"
)
_SET_BY_CRSBENCH = "crsbench sets it itself (offline, float32, strict loading)"
RESERVED_KWARGS: dict[str, dict[str, str]] = {
    "timm": {
        "pretrained": _WEIGHTS_BY,
        "checkpoint_path": _WEIGHTS_BY,
        "pretrained_cfg": _WEIGHTS_BY,
        "pretrained_cfg_overlay": _WEIGHTS_BY,
        "num_classes": "crsbench builds the model without its classifier (num_classes=0)",
    },
    "hf": {
        "pretrained": _WEIGHTS_BY,
        "pretrained_model_name_or_path": _WEIGHTS_BY,
        **dict.fromkeys(
            ("local_files_only", "dtype", "torch_dtype", "output_loading_info", "ignore_mismatched_sizes"),
            _SET_BY_CRSBENCH,
        ),
    },
    "open_clip": {"pretrained": _WEIGHTS_BY},
}

_files: dict[Path, str] = {}  # file -> trust level
_env_trust = GIVEN  # of the $CRSBENCH_ENCODERS files: CODE when the edge allowed code
_loaded_files: dict[Path, tuple[float, str]] = {}
_loaded_plugins: set[tuple[str, str]] = set()
_scanned_path: tuple[str, ...] = ()


def use_encoder_files(files: Sequence[Path | str], db: Path | str | None = None, *, allow_code: bool = False) -> None:
    """The edge's one call: `files` (and those of $CRSBENCH_ENCODERS) may name Python code when
    `allow_code`; `crsbench.toml` beside `db` is data only, whatever `allow_code` says."""
    global _env_trust
    _env_trust = CODE if allow_code else GIVEN
    if db is not None:
        project_file(db)
    for file in files:
        add_encoder_file(file, allow_code=allow_code)


def add_encoder_file(path: Path | str, *, allow_code: bool = False) -> None:
    """Read `[encoder.<id>]` tables from this file too (the CLI's `--encoders FILE`); with
    `allow_code` (`--allow-code`) its entries may name Python code."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise CrsbenchError(f"encoders file {path} not found")
    _trust(file, CODE if allow_code else GIVEN)


def project_file(db: Path | str) -> None:
    """Use `crsbench.toml` beside the warehouse file when there is one: data only, never code."""
    file = Path(db).expanduser().resolve().parent / PROJECT_FILE
    if file.is_file():
        _trust(file, FOUND)


def _trust(file: Path, level: str) -> None:
    """Record how `file` came to be read; a file met twice keeps the higher level."""
    if file not in _files or _RANK[level] > _RANK[_files[file]]:
        _files[file] = level


def load_user_encoders() -> None:
    """Register (once, again when a file or its trust changes) every TOML and plugin entry."""
    files = dict(_files)
    env = os.environ.get(ENCODERS_ENV)
    if env:
        for part in env.split(os.pathsep):
            if not part:
                continue
            if not Path(part).expanduser().is_file():
                raise CrsbenchError(f"${ENCODERS_ENV} names {part}, which is not a file")
            file = Path(part).expanduser().resolve()
            files[file] = max(files.get(file, FOUND), _env_trust, key=_RANK.__getitem__)
    for file, trust in files.items():
        stamp = (file.stat().st_mtime, trust)
        if _loaded_files.get(file) != stamp:
            remove_entries(f"toml:{file}")
            _loaded_files.pop(file, None)
            for entry in read_encoder_file(file, trust):
                add_entry(entry)
            _loaded_files[file] = stamp
    _load_plugins()


def _load_plugins() -> None:
    global _scanned_path
    if _scanned_path == tuple(sys.path):  # entry points only change with what is importable
        return
    _scanned_path = tuple(sys.path)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = (ep.name, ep.value)
        if key in _loaded_plugins:
            continue
        _loaded_plugins.add(key)
        dist = getattr(ep.dist, "name", None) or ep.name
        print(f"crsbench: encoder plugin {ep.name!r} of {dist}: importing {ep.value}", file=sys.stderr)
        try:
            produced = ep.load()()
        except Exception as exc:
            raise CrsbenchError(
                f"encoder plugin {ep.name} ({ep.value}, {dist}) failed: {type(exc).__name__}: {exc}"
            ) from None
        entries = [produced] if isinstance(produced, EncoderEntry) else produced
        if not isinstance(entries, Iterable) or not all(isinstance(e, EncoderEntry) for e in entries):
            raise CrsbenchError(
                f"encoder plugin {ep.name} ({ep.value}) must return an EncoderEntry "
                f"or a list of them, not {type(produced).__name__}"
            )
        for entry in entries:
            warn_unknown_datasets(entry.pretraining, f"encoder plugin {ep.name} ({dist}), entry {entry.id!r}")
            add_entry(dataclasses.replace(entry, origin=f"plugin:{dist}"))


def read_encoder_file(file: Path, trust: str = GIVEN) -> list[EncoderEntry]:
    """The entries of one TOML file; every entry that would run code is refused first, before
    any entry is resolved, unless the file was given with `allow_code` (`trust == CODE`)."""
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CrsbenchError(f"{file}: cannot read TOML ({exc})") from None
    unknown = [k for k in data if k != "encoder"]
    if unknown:
        raise CrsbenchError(f"{file}: unknown top-level table {unknown[0]!r}; expected [encoder.<id>]")
    tables = data.get("encoder", {})
    if not isinstance(tables, dict):
        raise CrsbenchError(f"{file}: 'encoder' must hold [encoder.<id>] tables")
    if trust != CODE:
        for encoder_id, table in tables.items():
            refuse_code(file, encoder_id, table, trust)
    return [_entry(file, encoder_id, table) for encoder_id, table in tables.items()]


def code_fields(table: Any) -> list[str]:
    """What in one `[encoder.<id>]` table would make crsbench run Python code, as `field = value`."""
    if not isinstance(table, dict):
        return []
    found = []
    if table.get("source") == "python":
        found.append(f"source = 'python' (model {table.get('model')!r})")
    overrides = table.get("overrides")
    if isinstance(overrides, dict):
        # trust_pickle too: unpickling a checkpoint runs whatever code the pickle names
        found += [f"overrides.{k} = {overrides[k]!r}" for k in CODE_OVERRIDES if overrides.get(k) not in (None, False)]
    kwargs = table.get("model_kwargs")
    if isinstance(kwargs, dict):
        found += [f"model_kwargs.{k} = {kwargs[k]!r}" for k in CODE_KWARGS if kwargs.get(k) not in (None, False)]
    return found


def refuse_code(file: Path, encoder_id: str, table: Any, trust: str) -> None:
    """One line for an entry that names code in a file not given with --allow-code."""
    found = code_fields(table)
    if not found:
        return
    what = f"{file}: [encoder.{encoder_id}] {found[0]} would run Python code"
    if trust == FOUND:
        raise CrsbenchError(
            f"{what}, and a {PROJECT_FILE} found beside the warehouse may only declare library models "
            f"(timm, hf, open_clip), weights and preprocessing; to run it, name the file yourself: "
            f"--encoders {file} --allow-code"
        )
    raise CrsbenchError(f"{what}; to run it, add --allow-code (or set {ALLOW_CODE_ENV}=1) with --encoders {file}")


def _check(file: Path, where: str, field: str, value: Any, types: tuple[type, ...], what: str) -> None:
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise CrsbenchError(f"{file}: [{where}] field {field!r} must be {what}, not {type(value).__name__} {value!r}")


def _entry(file: Path, encoder_id: str, table: Any) -> EncoderEntry:
    where = f"encoder.{encoder_id}"
    if not isinstance(table, dict):
        raise CrsbenchError(f"{file}: [{where}] must be a table")
    for field, value in table.items():
        if field not in _FIELDS:
            raise CrsbenchError(f"{file}: [{where}] unknown field {field!r}; known: {', '.join(_FIELDS)}")
        _check(file, where, field, value, *_FIELDS[field])
    for field in ("source", "model"):
        if field not in table:
            raise CrsbenchError(f"{file}: [{where}] needs field {field!r}")
    if table["source"] not in SOURCES:
        raise CrsbenchError(f"{file}: [{where}] field 'source' must be one of {SOURCES}, not {table['source']!r}")
    overrides = dict(table.get("overrides", {}))
    for field, value in overrides.items():
        if field not in _OVERRIDE_TYPES:
            raise CrsbenchError(
                f"{file}: [{where}.overrides] unknown field {field!r}; known: {', '.join(_OVERRIDE_TYPES)}"
            )
        _check(
            file,
            f"{where}.overrides",
            field,
            value,
            _OVERRIDE_TYPES[field],
            "of type " + "/".join(t.__name__ for t in _OVERRIDE_TYPES[field]),
        )
    _refuse_reserved_kwargs(file, where, table)
    fields = _fields(file, where, table, overrides)
    try:
        if table["source"] == "python":
            return _python_entry(file, where, encoder_id, table["model"], fields)
        from crsbench.features.by_id import entry_from_id

        resolved = entry_from_id(f"{table['source']}:{table['model']}", **fields)
        return dataclasses.replace(resolved, id=encoder_id)
    except CrsbenchError as exc:
        raise CrsbenchError(f"{file}: [{where}] {exc}") from None


def _refuse_reserved_kwargs(file: Path, where: str, table: dict[str, Any]) -> None:
    """One line for a model_kwargs key crsbench passes itself (see RESERVED_KWARGS)."""
    reserved = RESERVED_KWARGS.get(table["source"], {})
    for key in table.get("model_kwargs", {}):
        if key in reserved:
            raise CrsbenchError(
                f"{file}: [{where}] model_kwargs.{key} is not passed to the {table['source']} model: "
                f"{reserved[key]}; remove it from [{where}.model_kwargs]"
            )


def _fields(file: Path, where: str, table: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {"origin": f"toml:{file}", "family": table.get("family", where[8:])}
    for key in ("scope", "domain", "pooling", "pretrained", "chest_only", "text_tower"):
        if key in table:
            fields[key] = table[key]
    if "weights" in table:
        weights = Path(table["weights"]).expanduser()
        fields["weights_path"] = str(weights if weights.is_absolute() else file.parent / weights)
    if "model_kwargs" in table:
        kwargs = dict(table["model_kwargs"])
        if table.get("source") != "python" and "trust_remote_code" in kwargs:
            fields["trust_remote_code"] = bool(kwargs.pop("trust_remote_code"))  # the loader passes it itself
        fields["model_kwargs"] = kwargs
    if "convert" in table:
        bad = [k for k in table["convert"] if k not in _CONVERT_TYPES]
        if bad:
            raise CrsbenchError(
                f"{file}: [{where}.convert] unknown field {bad[0]!r}; known: {', '.join(_CONVERT_TYPES)}"
            )
        conv: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in table["convert"].items()}
        fields["convert"] = KeyConversion(**conv)
    for key, value in overrides.items():
        fields[key] = tuple(value) if isinstance(value, list) else value
    if "pretraining_datasets" in table or "pretraining_source" in table:
        fields["pretraining"] = _pretraining(file, where, table)
    return fields


def _pretraining(file: Path, where: str, table: dict[str, Any]) -> Pretraining:
    """The entry's declared pretraining data; a source without datasets leaves the data unknown."""
    names = table.get("pretraining_datasets")
    if names is not None:
        bad = [n for n in names if not isinstance(n, str)]
        if bad:
            raise CrsbenchError(
                f"{file}: [{where}] field 'pretraining_datasets' must hold dataset names (strings), "
                f"not {type(bad[0]).__name__} {bad[0]!r}"
            )
    declared = Pretraining(tuple(names) if names is not None else None, table.get("pretraining_source"))
    warn_unknown_datasets(declared, f"{file}: [{where}]")
    return declared


def warn_unknown_datasets(pretraining: Pretraining, where: str) -> None:
    """A name outside the vocabulary is kept, with a warning: a typo must not read as "no overlap"."""
    message = unknown_names_message(pretraining.datasets or (), where)
    if message:
        warnings.warn(message, UserWarning, stacklevel=2)


def _python_entry(file: Path, where: str, encoder_id: str, target: str, fields: dict[str, Any]) -> EncoderEntry:
    from crsbench.features.loaders import python_model

    if ":" not in target:
        raise CrsbenchError(f"field 'model' must be 'module:function' for source 'python', not {target!r}")
    needed = [k for k in ("input_size", "mean", "std", "depth_blocks") if k not in fields]
    if needed:
        raise CrsbenchError(
            f"a python source declares {', '.join(needed)} in [{where}.overrides] (no library config to read them from)"
        )
    fields.setdefault("pooling", "projection")
    fields.setdefault("scope", "general")
    fields.setdefault("domain", "none")
    fields.setdefault("pretrained", "weights_path" in fields)
    return EncoderEntry(id=encoder_id, loader="python", checkpoint=target, constructor=python_model, **fields)
