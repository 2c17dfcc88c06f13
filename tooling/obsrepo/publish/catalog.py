"""The catalog a publish writes to, found by name the way every pyiceberg user configures one
(`.pyiceberg.yaml` in PYICEBERG_HOME, the home folder or the working folder;
`PYICEBERG_CATALOG__<NAME>__…` variables), and what its tables already hold."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..errors import PublishFault
from ..ops.publication import OBSERVATION_COLUMN, SEQ_COLUMN, cites
from .faults import first_line, reason_of

# the columns of `contested_fields` that name an observation
CONTESTS = ("winner_observation_id", "challenger_observation_id")

# the columns a publish reads of a table it finds, before it knows the rows it appends
READ_COLUMNS = {name: ("repo", column, *(("sha",) if name == "commits" else ()),
                       *(("entity_id", "provenance", "deleted") if name == "entity_snapshots" else ()),
                       *((OBSERVATION_COLUMN[name],) if name in OBSERVATION_COLUMN else ()),
                       *(("entity_a", "entity_b", "evidence") if name == "identity_candidates" else ()),
                       *(CONTESTS if name == "contested_fields" else ()))
                for name, column in SEQ_COLUMN.items()}

# recorded on every table: a publish with another binding or ceiling into the namespace is refused
TENANT_PROPERTY, CEILING_PROPERTY = "obsrepo.tenant", "obsrepo.max-classification"


def open_catalog(name: str) -> Any:
    """The catalog `name`; one that is not configured, or does not open, is an environment
    error (exit 4) naming the field `catalog`."""
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    # pyiceberg reads its configuration once, at import; a process that publishes more than once
    # (the library, a test) must see the environment and the folders of this publish
    pyiceberg.catalog._ENV_CONFIG = config = Config()
    if config.get_catalog_config(name) is None:
        raise PublishFault(f"catalog '{name}' is not configured: pyiceberg reads catalogs from .pyiceberg.yaml "
                           f"(in PYICEBERG_HOME, the home folder or the working folder) and from PYICEBERG_CATALOG__"
                           f"{name.upper()}__<PROPERTY> variables (type, uri, warehouse…)", parameter="catalog", catalog=name)
    _local_folders(name, Config().get_catalog_config(name) or {})
    try:
        return pyiceberg.catalog.load_catalog(name)
    except Exception as exc:  # pyiceberg raises what its catalog's driver raises: a bad URI, no server
        reason = reason_of(exc) or first_line(str(exc))
        raise PublishFault(f"catalog '{name}' could not be opened: {reason}", parameter="catalog", catalog=name,
                           reason=reason) from None


def _local_folders(name: str, config: dict[str, Any]) -> None:
    """A warehouse on this machine is created when missing (its parent folder exists), so the
    first publish of a new catalog needs no `mkdir`; a missing folder of an SQLite catalog's
    database (one other than the warehouse) is named, with how to create it."""
    from urllib.parse import unquote, urlparse

    warehouse = str(config.get("warehouse", ""))
    if warehouse.startswith("file://") or warehouse.startswith("/"):
        folder = Path(unquote(urlparse(warehouse).path) if warehouse.startswith("file://") else warehouse)
        if not folder.exists() and folder.parent.is_dir():
            try:
                folder.mkdir()
            except OSError as exc:
                raise PublishFault(f"catalog '{name}': its warehouse folder {folder} could not be created: "
                                   f"{reason_of(exc)}", parameter="catalog", catalog=name, folder=str(folder)) from None
        elif not folder.exists():
            raise PublishFault(f"catalog '{name}': its warehouse folder {folder} does not exist, nor the folder above it: "
                               f"create it (mkdir -p {folder})", parameter="catalog", catalog=name, folder=str(folder))
    uri = str(config.get("uri", ""))
    if uri.startswith("sqlite:///") and "mode=ro" not in uri:
        database = Path(unquote(uri.removeprefix("sqlite:///").split("?", 1)[0]).removeprefix("file:"))
        if not database.parent.is_dir():
            raise PublishFault(f"catalog '{name}': the folder of its database {database} does not exist: create it "
                               f"(mkdir -p {database.parent})", parameter="catalog", catalog=name,
                               folder=str(database.parent))


def identifier(namespace: str, table: str) -> tuple[str, str]:
    return (namespace, table)


def table_or_none(catalog: Any, namespace: str, table: str) -> Any:
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(identifier(namespace, table))
    except NoSuchTableError:
        return None


def published_commits(table: Any) -> dict[str, tuple[tuple[int, str], ...]]:
    """repo → its published (seq, sha), by seq: the `commits` table (None: not created yet),
    which is appended last, so a publication stopped half way is not in it."""
    if table is None:
        return {}
    rows = table.scan(selected_fields=("repo", "seq", "sha")).to_arrow().to_pylist()
    published: dict[str, list[tuple[int, str]]] = {}
    for row in sorted(rows, key=lambda r: (r["repo"], r["seq"])):
        published.setdefault(row["repo"], []).append((row["seq"], row["sha"]))
    return {repo: tuple(pairs) for repo, pairs in published.items()}


def check_settings(tables: dict[str, Any], namespace: str, settings: dict[str, str]) -> None:
    """Refuse a publish whose binding or ceiling differs from what the namespace's tables
    (name → table, or None) hold."""
    for table in tables.values():
        if table is None:
            continue
        for key, wanted in settings.items():
            held = table.properties.get(key)
            if held is not None and held != wanted:
                raise PublishFault(f"namespace {namespace} holds tables published with {key}={held!r}, not {wanted!r}: "
                                   "publish into another namespace", parameter="namespace", namespace=namespace,
                                   property=key, held=held, wanted=wanted)


def gone_rows(table: Any, name: str, repo: str, head: int, erased: tuple[str, ...]) -> Any:
    """The predicate of the rows of `repo` that leave `table` before this publish appends, or
    None: those a publication stopped half way left above the published head `head`, and
    those of the `erased` observations (a snapshot: one whose provenance cites them)."""
    import pyiceberg.expressions

    where: Any = pyiceberg.expressions  # pydantic models whose constructors mypy does not read
    mine = where.EqualTo("repo", repo)
    parts: list[Any] = []
    if _stopped_above(table, repo, head):
        parts.append(where.GreaterThan(SEQ_COLUMN[name], head))
    if erased and name == "entity_snapshots":
        parts.extend(where.And(where.EqualTo("entity_id", e), where.EqualTo("from_seq", s))
                     for e, s in _citing(table, mine, erased))
    elif erased and name == "identity_candidates":
        held = table.scan(row_filter=mine, selected_fields=("entity_a", "entity_b", "from_seq", "evidence")).to_arrow()
        parts.extend(where.And(where.And(where.EqualTo("entity_a", row["entity_a"]), where.EqualTo("entity_b", row["entity_b"])),
                               where.EqualTo("from_seq", row["from_seq"]))
                     for row in held.to_pylist() if cites(row["evidence"], erased))
    elif erased and name == "contested_fields":
        parts.extend(where.In(column, erased) for column in CONTESTS)
    elif erased and name in OBSERVATION_COLUMN:
        parts.append(where.In(OBSERVATION_COLUMN[name], erased))
    if not parts:
        return None
    return where.And(mine, functools.reduce(where.Or, parts))


def _stopped_above(table: Any, repo: str, head: int) -> bool:
    """Whether the last snapshot `repo` made of `table` is above its published head: the rows
    of a publication stopped before `commits` was appended."""
    for snapshot in reversed(table.snapshots()):  # the metadata's log, oldest first
        summary = snapshot.summary
        if summary is not None and summary.additional_properties.get("obsrepo.repo") == repo:
            return int(summary.additional_properties.get("obsrepo.seq", 0)) > head
    return False


def _citing(table: Any, mine: Any, erased: tuple[str, ...]) -> list[tuple[str, int]]:
    """(entity, from_seq) of the snapshots the erased observations decided, and of every row of
    an entity that keeps no snapshot without them: a deletion of what left is no trace to keep."""
    rows = table.scan(row_filter=mine, selected_fields=("entity_id", "from_seq", "provenance", "deleted")).to_arrow()
    by_entity: dict[str, list[dict[str, Any]]] = {}
    for row in rows.to_pylist():
        by_entity.setdefault(row["entity_id"], []).append(row)
    out: list[tuple[str, int]] = []
    for entity, held in by_entity.items():
        gone = [row for row in held if cites(row["provenance"], erased)]
        if gone and all(row["deleted"] for row in held if row not in gone):
            gone = held
        out.extend((entity, row["from_seq"]) for row in gone)
    return out


def check_shape(catalog: str, namespace: str, name: str, table: Any, wanted: Any = None,
                required: tuple[str, ...] = ()) -> None:
    """Refuse a table that obsrepo did not publish, or not in this shape: one without the
    properties every publish records, without a column `required` reads, or whose columns
    differ from `wanted` (an Arrow schema) by name or kind."""
    where = f"catalog '{catalog}': table {namespace}.{name}"
    remedy = "publish into another namespace (--namespace), or drop that table"
    if TENANT_PROPERTY not in table.properties or CEILING_PROPERTY not in table.properties:
        raise PublishFault(f"{where} was not written by obsrepo publish (it has no {TENANT_PROPERTY} property): {remedy}",
                           catalog=catalog, namespace=namespace, table=name, reason="not obsrepo's")
    held = {field.name: field for field in table.schema().as_arrow()}
    missing = [column for column in required if column not in held]
    if wanted is not None:
        missing = [f.name for f in wanted if f.name not in held]
        extra = [column for column in held if column not in wanted.names]
        other = [f.name for f in wanted if f.name in held and _kind(f.type) != _kind(held[f.name].type)]
    else:
        extra, other = [], []
    if missing or extra or other:
        said = "; ".join(part for part in (f"lacks {', '.join(missing)}" * bool(missing),
                                           f"has {', '.join(extra)} besides" * bool(extra),
                                           f"holds another kind of value in {', '.join(other)}" * bool(other)) if part)
        raise PublishFault(f"{where} has another shape than obsrepo publishes (it {said}): {remedy}", catalog=catalog,
                           namespace=namespace, table=name, reason="another shape", missing=missing, extra=extra,
                           other=other)


def _kind(arrow_type: Any) -> str:
    """An Arrow type as Iceberg stores it: strings and lists whatever their size, list items by kind."""
    import pyarrow as pa

    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"list<{_kind(arrow_type.value_type)}>"
    if pa.types.is_struct(arrow_type):
        return "struct<" + ",".join(f"{f.name}:{_kind(f.type)}" for f in arrow_type) + ">"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)
