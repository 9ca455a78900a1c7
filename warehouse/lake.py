"""The team warehouse: the same warehouse as a DuckLake, its catalog in PostgreSQL, its rows in Parquet.

`--db ducklake:postgres:dbname=crsbench host=db.example.org` (or `$CRSBENCH_DB`) names one. The
DuckLake extension keeps the catalog (tables, views, macros, comments and every snapshot) in the
PostgreSQL database and the rows as Parquet files under the data path (a local or shared folder, or
`s3://`), given once, when the warehouse is created (`crsbench warehouse init --data-path`). Every
connection is an in-memory DuckDB that attaches the lake as `lake` and makes it the default
database, so every statement crsbench runs on the lone file runs here unchanged; DuckLake makes each
transaction an ACID commit that concurrent writers on other machines see whole or not at all.

The extensions are loaded by path from the `duckdb-extension-*` packages, never downloaded: each is
built for exactly one DuckDB version, which must be the one installed (`check_duckdb_version`).

What this module owns: parsing the locator, loading the extensions, refusing a catalog that cannot
be reached or belongs to another application, a data path that cannot be written, and opening the
connection (optionally as of one snapshot). Claims live in `lake_claims`, publications in
`lake_snapshots`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
from pathlib import Path

import duckdb

from crsbench.core import CrsbenchError

LAKE_PREFIX = "ducklake:"
POSTGRES_PREFIX = "postgres:"
LAKE_NAME = "lake"
CATALOG_NAME = "crsbench_catalog"
DATA_PATH_ENV = "CRSBENCH_DATA_PATH"
# The DuckDB release the pinned extension packages are built for (pyproject pins both).
EXTENSION_DUCKDB = "1.5.5"
# Tables crsbench keeps in the catalog database beside DuckLake's own (`lake_claims`).
OWN_CATALOG_PREFIXES = ("ducklake_", "crsbench_")


# The instance is in memory and holds no data of its own: the warehouse is the catalog's committed
# transactions. The postgres extension raises an internal error when the server goes away mid-query,
# which would mark the instance invalid; a later rollback or close then throws inside a destructor and
# aborts the process instead of giving the one-line error. Nothing is lost by keeping it valid.
INSTANCE_CONFIG: dict[str, bool] = {"disable_database_invalidation": True}
# DuckDB prints its own progress bar to stdout once a query runs past 2 s: it would break a command's
# --json output. A session setting, so every connection crsbench opens runs this first.
QUIET = "set enable_progress_bar = false"


def is_lake(db: Path | str) -> bool:
    """Whether `db` names a team warehouse (`ducklake:...`) rather than a lone DuckDB file."""
    return str(db).startswith(LAKE_PREFIX)


@dataclasses.dataclass(frozen=True)
class LakeLocator:
    """A parsed `ducklake:` locator: the catalog the DuckLake extension attaches, and, for a
    PostgreSQL catalog, its libpq connection string."""

    text: str

    @property
    def catalog(self) -> str:
        return self.text.removeprefix(LAKE_PREFIX)

    @property
    def postgres(self) -> str | None:
        return self.catalog.removeprefix(POSTGRES_PREFIX) if self.catalog.startswith(POSTGRES_PREFIX) else None

    def shown(self) -> str:
        """The locator as messages print it: a password never appears."""
        return re.sub(r"(password\s*=\s*)(\S+)", r"\1***", self.text)

    @classmethod
    def parse(cls, db: Path | str) -> LakeLocator:
        text = str(db)
        if not is_lake(text) or not text.removeprefix(LAKE_PREFIX).strip():
            raise CrsbenchError(
                f"--db {text!r} is not a team warehouse; write ducklake:postgres:dbname=NAME host=HOST "
                f"(a PostgreSQL catalog) or ducklake:FILE.ducklake (a DuckDB-file catalog)"
            )
        return cls(text)


def check_duckdb_version(installed: str = duckdb.__version__) -> None:
    """Refuse a DuckDB the extension packages were not built for: they would not load."""
    if installed != EXTENSION_DUCKDB:
        raise CrsbenchError(
            f"the team warehouse needs DuckDB {EXTENSION_DUCKDB}, the release its DuckLake and PostgreSQL "
            f"extension packages are built for; this Python has duckdb {installed}: "
            f"pip install 'duckdb=={EXTENSION_DUCKDB}'"
        )


def extension_path(name: str, installed: str = duckdb.__version__) -> str:
    """The extension binary shipped by the `duckdb-extension-<name>` package, for `installed` DuckDB."""
    check_duckdb_version(installed)
    package = "duckdb_extension_" + name.replace("-", "_")
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise CrsbenchError(
            f"the team warehouse needs the {name} DuckDB extension: pip install "
            f"'duckdb-extension-{name}=={EXTENSION_DUCKDB}' (or crsbench's own pins)"
        )
    binary = Path(spec.origin).parent / "extensions" / f"v{installed}" / f"{name.replace('-', '_')}.duckdb_extension"
    if not binary.is_file():
        raise CrsbenchError(
            f"the {name} extension package holds no build for DuckDB {installed} (looked for {binary}): "
            f"pip install 'duckdb-extension-{name}=={installed}'"
        )
    return str(binary)


def load_extensions(con: duckdb.DuckDBPyConnection, locator: LakeLocator, data_path: str | None) -> None:
    """Load, by path, the extensions this locator needs; never `INSTALL` (it would download)."""
    names = ["ducklake"]
    if locator.postgres is not None:
        names.append("postgres_scanner")
    if data_path is not None and "://" in data_path and not data_path.startswith("file://"):
        names.append("httpfs")
    for name in names:
        con.execute(f"load {sql_literal(extension_path(name))}")


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def unreachable(locator: LakeLocator, exc: BaseException) -> CrsbenchError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return CrsbenchError(
        f"cannot reach the team warehouse's catalog {locator.shown()}: {first}; "
        f"start the PostgreSQL server or correct --db"
    )


def catalog_state(con: duckdb.DuckDBPyConnection, locator: LakeLocator) -> str | None:
    """Refuse a PostgreSQL database another application uses; return the data path a DuckLake
    there records (None: no DuckLake yet). Attaches the database read-only, then detaches it."""
    assert locator.postgres is not None
    try:
        con.execute(f"attach {sql_literal(locator.postgres)} as {CATALOG_NAME} (type postgres, read_only)")
    except duckdb.Error as exc:
        raise unreachable(locator, exc) from exc
    try:
        tables = [
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where database_name = ? "
                "and schema_name not in ('pg_catalog', 'information_schema') order by 1",
                [CATALOG_NAME],
            ).fetchall()
        ]
        foreign = [t for t in tables if not t.startswith(OWN_CATALOG_PREFIXES)]
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise CrsbenchError(
                f"{locator.shown()} is not a crsbench team warehouse: its PostgreSQL database holds "
                f"{shown}; give --db a database of its own (createdb crsbench)"
            )
        if "ducklake_metadata" not in tables:
            return None
        row = con.execute(
            f"select value from {CATALOG_NAME}.ducklake_metadata where key = 'data_path' and scope is null"
        ).fetchone()
        return None if row is None else str(row[0])
    except duckdb.Error as exc:
        raise unreachable(locator, exc) from exc
    finally:
        con.execute(f"detach {CATALOG_NAME}")


def check_data_path(data_path: str, create: bool) -> None:
    """Refuse a local data path this process cannot write (object stores answer at the first write)."""
    if "://" in data_path and not data_path.startswith("file://"):
        return
    folder = Path(data_path.removeprefix("file://"))
    if create:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CrsbenchError(
                f"the team warehouse's data path {folder} cannot be created ({exc.strerror}): it is not writable "
                f"by this user; grant write permission or give another --data-path"
            ) from exc
    probe = folder if folder.exists() else next((p for p in folder.parents if p.exists()), folder)
    if not os.access(probe, os.W_OK | os.X_OK):
        raise CrsbenchError(
            f"the team warehouse's data path {folder} is not writable by this user; "
            f"grant write permission or give another --data-path"
        )


def s3_secret_sql(environ: dict[str, str]) -> str:
    """A temporary DuckDB secret from the standard AWS environment, as the feature store's s3fs reads it:
    `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_DEFAULT_REGION`, else the AWS
    SDK's credential chain (`AWS_PROFILE`, ~/.aws, instance roles; the aws extension), and
    `AWS_ENDPOINT_URL` for an S3-compatible server (MinIO, Ceph, moto)."""
    fields = {"type": "s3"}
    for key, env in (("key_id", "AWS_ACCESS_KEY_ID"), ("secret", "AWS_SECRET_ACCESS_KEY"),
                     ("session_token", "AWS_SESSION_TOKEN"), ("region", "AWS_DEFAULT_REGION")):  # fmt: skip
        if environ.get(env):
            fields[key] = environ[env]
    if "key_id" not in fields:  # profiles, ~/.aws files, instance roles: the AWS SDK's chain, as s3fs reads them
        fields["provider"] = "credential_chain"
        if environ.get("AWS_PROFILE"):
            fields["profile"] = environ["AWS_PROFILE"]
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        fields["endpoint"] = endpoint.split("://", 1)[-1].rstrip("/")
        fields["use_ssl"] = "true" if endpoint.startswith("https://") else "false"
        fields["url_style"] = "path"
    body = ", ".join(f"{k} {v if k in ('type', 'use_ssl', 'provider') else sql_literal(v)}" for k, v in fields.items())
    return f"create or replace temporary secret crsbench_s3 ({body})"


def connect(
    locator: LakeLocator,
    *,
    read_only: bool,
    data_path: str | None = None,
    snapshot: int | None = None,
    config: dict[str, str | bool | int | float | list[str]] | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the team warehouse attached as `lake` (as of `snapshot` if given, then
    read-only) and made the default database. A new warehouse takes `data_path` (else
    `$CRSBENCH_DATA_PATH`); an existing one keeps the data path its catalog records."""
    check_duckdb_version()
    con = duckdb.connect(":memory:", config={**INSTANCE_CONFIG, **(config or {})})
    try:
        con.execute(QUIET)
        load_extensions(con, locator, None)
        recorded = catalog_state(con, locator) if locator.postgres is not None else None
        given = data_path or os.environ.get(DATA_PATH_ENV) or None
        if locator.postgres is not None and recorded is None:
            if read_only or snapshot is not None:
                raise CrsbenchError(
                    f"{locator.shown()} holds no team warehouse yet; create it with "
                    f"'crsbench warehouse init --db \"{locator.shown()}\" --data-path FOLDER'"
                )
            if given is None:
                raise CrsbenchError(
                    f"creating the team warehouse {locator.shown()} needs a data path for its Parquet files: "
                    f"give --data-path (a shared folder or s3://bucket/prefix) or set ${DATA_PATH_ENV}"
                )
        elif recorded is not None and data_path and data_path.rstrip("/") != recorded.rstrip("/"):
            raise CrsbenchError(
                f"the team warehouse {locator.shown()} keeps its data in {recorded}, not {data_path}; "
                f"leave out --data-path"
            )
        where = recorded or given
        if where is not None and not read_only:
            check_data_path(where, create=recorded is None)
        if where is not None and "://" in where and not where.startswith("file://"):
            load_extensions(con, LakeLocator(LAKE_PREFIX + "x"), where)
            secret = s3_secret_sql(dict(os.environ))
            if "credential_chain" in secret:
                con.execute(f"load {sql_literal(extension_path('aws'))}")
            try:
                con.execute(secret)
            except duckdb.Error as exc:
                raise CrsbenchError(
                    f"no S3 credentials for the team warehouse's data path {where}: set AWS_ACCESS_KEY_ID and "
                    f"AWS_SECRET_ACCESS_KEY, or AWS_PROFILE ({str(exc).strip().splitlines()[0]})"
                ) from exc
        options = [f"data_path {sql_literal(given)}"] if recorded is None and given else []
        options += ["read_only"] if read_only or snapshot is not None else []
        options += [f"snapshot_version {int(snapshot)}"] if snapshot is not None else []
        suffix = f" ({', '.join(options)})" if options else ""
        try:
            con.execute(f"attach {sql_literal(LAKE_PREFIX + locator.catalog)} as {LAKE_NAME}{suffix}")
        except duckdb.Error as exc:
            raise _attach_error(locator, exc, snapshot) from exc
        con.execute(f"use {LAKE_NAME}")
        return con
    except BaseException:
        con.close()
        raise


def _attach_error(locator: LakeLocator, exc: duckdb.Error, snapshot: int | None) -> CrsbenchError:
    first = str(exc).strip().splitlines()[0]
    if snapshot is not None and "snapshot" in first.lower():
        return CrsbenchError(f"the team warehouse {locator.shown()} has no snapshot {snapshot}: {first}")
    if "permission" in first.lower():
        return CrsbenchError(f"the team warehouse {locator.shown()}: {first}; grant write permission on its data path")
    return unreachable(locator, exc)


def without_constraints(statement: str) -> str:
    """A DDL statement of crsbench's declared schemas for DuckLake, which keeps no PRIMARY KEY: the
    keys are crsbench's own (each writer deletes before it inserts a keyed row, and fits are
    claimed in the catalog, `lake_claims`)."""
    return re.sub(r"\s+primary key\b", "", statement, flags=re.IGNORECASE)


def recorded_data_path(locator: LakeLocator) -> str | None:
    """The data path the team warehouse's catalog records (None: no DuckLake there yet, or a
    DuckDB-file catalog, whose data path only the attach reads)."""
    if locator.postgres is None:
        return None
    check_duckdb_version()
    con = duckdb.connect(":memory:", config=dict(INSTANCE_CONFIG))
    try:
        load_extensions(con, locator, None)
        return catalog_state(con, locator)
    finally:
        con.close()


def default_store(locator: LakeLocator) -> str:
    """The team warehouse's default feature store: `features.zarr` under its data path, so every
    machine that reaches the data path reaches the features too."""
    where = recorded_data_path(locator) or os.environ.get(DATA_PATH_ENV)
    if not where:
        raise CrsbenchError(
            f"the team warehouse {locator.shown()} names no data path to keep features under: "
            f"give --store (a shared folder or s3:// URL) or set $CRSBENCH_STORE"
        )
    return where.rstrip("/") + "/features.zarr"


def on_lake(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con`'s default database is a DuckLake (a team warehouse's connection)."""
    row = con.execute("select type from duckdb_databases() where database_name = current_database()").fetchone()
    return row is not None and str(row[0]) == "ducklake"


_NAME = r'(?:"[^"]*"|\w+)'
_LEADING = r"(?:\s|--[^\n]*\n)*"  # whitespace and line comments before the statement
_VIEW_COLUMN_COMMENT = re.compile(
    rf"{_LEADING}comment\s+on\s+column\s+({_NAME}(?:\.{_NAME})*)\.{_NAME}\s+is\s", re.IGNORECASE
)
_MACRO_COMMENT = re.compile(rf"{_LEADING}comment\s+on\s+(macro|function)\b", re.IGNORECASE)


def lake_stores(con: duckdb.DuckDBPyConnection, statement: str) -> bool:
    """Whether DuckLake can store `statement`: every statement crsbench ships but the comments on a
    view's column or on a macro (there, views and tables keep theirs; the rest is documented in the
    data dictionary, docs/DATA_DICTIONARY.md, and `crsbench describe`). On a lone file: every statement."""
    if not on_lake(con):
        return True
    if _MACRO_COMMENT.match(statement):
        return False
    match = _VIEW_COLUMN_COMMENT.match(statement)
    if match is None:
        return True
    name = match.group(1).strip().split(".")[-1].strip('"')
    row = con.execute(
        "select count(*) from duckdb_views() where database_name = current_database() and view_name = ?", [name]
    ).fetchone()
    return not (row and row[0])


def data_path_of(con: duckdb.DuckDBPyConnection) -> str:
    """The data path of the team warehouse `con` has attached, from its catalog."""
    row = con.execute(
        f"select value from __ducklake_metadata_{LAKE_NAME}.ducklake_metadata where key = 'data_path' and scope is null"
    ).fetchone()
    if row is None:
        raise CrsbenchError("the team warehouse's catalog records no data path")
    return str(row[0])
