"""The columns of the versioned tables, defined once: the DDL, the Arrow types of a bulk
load, the column lists of inserts and the printed record columns all derive from here."""

from __future__ import annotations

from typing import Any

RELATION = "STRUCT(type VARCHAR, target VARCHAR)[]"
# a TIMESTAMP column as text the way documents and the reducer write an instant: UTC, `Z`,
# microseconds only when there are any (`UTC_TEXT.format("o.timestamp")`)
UTC_TEXT = ("strftime({0}, '%Y-%m-%dT%H:%M:%S') || CASE WHEN epoch_us({0}) % 1000000 <> 0 "
            "THEN strftime({0}, '.%f') ELSE '' END || 'Z'")

# (name, DuckDB type, NOT NULL)
OBS_VERSIONS: list[tuple[str, str, bool]] = [
    ("row_id", "BIGINT", True), ("added_seq", "INTEGER", True), ("removed_seq", "INTEGER", True),
    ("id", "VARCHAR", True), ("path", "VARCHAR", True), ("blob", "VARCHAR", True),
    ("timestamp", "TIMESTAMP", True), ("source", "VARCHAR", True), ("event", "VARCHAR", True), ("type", "VARCHAR", False),
    ("body", "VARCHAR", True), ("scope", "VARCHAR[]", True), ("entity", "VARCHAR", False), ("entity_type", "VARCHAR", False),
    ("fields", "JSON", False), ("priority", "INTEGER", True), ("specificity", "DOUBLE", True),
    ("corrects", "VARCHAR[]", True), ("retracts", "VARCHAR[]", True), ("relations", RELATION, True),
    ("tenant_org", "VARCHAR", False), ("tenant_project", "VARCHAR", False), ("tenant_agent", "VARCHAR", False),
    ("tenant_user", "VARCHAR", False), ("classification", "VARCHAR", True), ("class_rank", "TINYINT", True),
    ("source_ref", "VARCHAR", False), ("interpretation", "VARCHAR", False), ("data", "JSON", False),
    ("context", "JSON", False), ("trace_ref", "VARCHAR", False), ("extensions", "JSON", False),
    ("content_hash", "VARCHAR", True), ("commit", "VARCHAR", True), ("author", "VARCHAR", True),
    ("author_email", "VARCHAR", True), ("committed_at", "TIMESTAMP", True),
    # retracts something or merges (DUPLICATE_OF): the reducer reads these first
    ("special", "BOOLEAN", True),
    # stewardship (docs/design.md §14): `classification` above is the declared value raised by
    # the content rules; feedback and reclassify documents are folded in when read
    ("declared_classification", "VARCHAR", True), ("feedback_target", "VARCHAR", False),
    ("feedback_outcome", "VARCHAR", False), ("feedback_session", "VARCHAR", False),
    ("reclassify_targets", "VARCHAR[]", True), ("reclassify_rank", "TINYINT", False),
    # the entity as a number (`entity_key`): a statement that names entities compares it first,
    # a number per row instead of the text, and the text only where the number matched
    ("entity_key", "UBIGINT", False),
    # the period of valid time (docs/design.md §19); NULL where the observation wrote none
    ("valid_from", "TIMESTAMP", False), ("valid_until", "TIMESTAMP", False),
]
COMP_VERSIONS: list[tuple[str, str, bool]] = [
    ("row_id", "BIGINT", True), ("added_seq", "INTEGER", True), ("removed_seq", "INTEGER", True),
    ("id", "VARCHAR", True), ("path", "VARCHAR", True), ("blob", "VARCHAR", True), ("topic", "VARCHAR", True),
    ("domain", "VARCHAR", True), ("created", "TIMESTAMP", True), ("updated", "TIMESTAMP", True),
    ("version", "INTEGER", True), ("verified", "BOOLEAN", True), ("prior", "JSON", True), ("posterior", "JSON", True),
    ("observations", "VARCHAR[]", True), ("observations_used", "VARCHAR[]", True), ("body", "VARCHAR", True),
    ("extensions", "JSON", False), ("commit", "VARCHAR", True), ("author", "VARCHAR", True),
    ("author_email", "VARCHAR", True), ("committed_at", "TIMESTAMP", True),
]
# what a query prints (copied into obs_records, in row-id order)
RECORD = ["id", "timestamp", "type", "source", "event", "body", "scope", "entity", "fields", "priority", "specificity",
          "tenant_org", "tenant_project", "tenant_agent", "tenant_user", "classification", "data", "context",
          "trace_ref", "path", "commit"]

# the public `observations` view
OBSERVATION = ["id", "timestamp", "source", "event", "type", "body", "scope", "entity", "entity_type", "fields",
               "priority", "specificity", "corrects", "retracts", "relations", "tenant_org", "tenant_project",
               "tenant_agent", "tenant_user", "classification", "source_ref", "interpretation", "data", "context",
               "trace_ref", "extensions", "content_hash", "path", "blob", "commit", "author", "author_email",
               "committed_at", "declared_classification", "feedback_target", "feedback_outcome", "feedback_session",
               "reclassify_targets", "valid_from", "valid_until"]

# obs_keys (keyed.py): a version's scopes and type as keys, with what a query filters and orders by
KEYED = ["row_id", "added_seq", "removed_seq", "id", "timestamp", "source", "type", "entity", "tenant_org",
         "tenant_project", "tenant_agent", "tenant_user", "class_rank"]
OBS_KEYS: list[tuple[str, str, bool]] = [("key", "UBIGINT", True), ("kind", "VARCHAR", True), ("value", "VARCHAR", True)] + [
    column for column in OBS_VERSIONS if column[0] in KEYED]

OBS_COLUMNS = [name for name, _type, _nn in OBS_VERSIONS]
COMP_COLUMNS = [name for name, _type, _nn in COMP_VERSIONS]


def quoted(name: str) -> str:
    return f'"{name}"' if name == "commit" else name


def entity_key(entity: str | None) -> int | None:
    """An entity's key: the first 64 bits of the MD5 of its UTF-8, as DuckDB's
    `md5_number_upper` gives them (its first eight bytes, little-endian), so a statement can
    spell the key of a literal in SQL. None for no entity."""
    if entity is None:
        return None
    import hashlib

    # a name no document can hold (a lone surrogate, from a URL) still has a key: it matches nothing
    return int.from_bytes(hashlib.md5(entity.encode("utf-8", "surrogatepass")).digest()[:8], "little")


def column_list(names: list[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + quoted(name) for name in names)


RECORD_COLUMNS = column_list(RECORD)


def ddl(table: str, columns: list[tuple[str, str, bool]]) -> str:
    body = ",\n    ".join(f"{quoted(name)} {kind}{' NOT NULL' if not_null else ''}" for name, kind, not_null in columns)
    return f"CREATE TABLE {table} (\n    {body}\n);"


def arrow_types() -> dict[str, Any]:
    """Column name → Arrow type for a bulk load (strings where not listed)."""
    import pyarrow as pa

    text = pa.string()
    by_sql = {"BIGINT": pa.int64(), "UBIGINT": pa.uint64(), "INTEGER": pa.int32(), "TINYINT": pa.int8(), "DOUBLE": pa.float64(),
              "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us"),  # UTC; DuckDB TIMESTAMP
              "VARCHAR[]": pa.list_(text), RELATION: pa.list_(pa.struct([("type", text), ("target", text)]))}
    types = {name: by_sql[kind] for name, kind, _nn in OBS_VERSIONS + COMP_VERSIONS if kind in by_sql}
    types.update(seq=pa.int32(), observation_count=pa.int32(), last_observation_at=pa.timestamp("us"), deleted=pa.bool_())
    return types
