"""The catalog a publish writes to, found by name the way every pyiceberg user configures one
(`.pyiceberg.yaml` in PYICEBERG_HOME, the home folder or the working folder;
`PYICEBERG_CATALOG__<NAME>__…` variables), and what its tables already hold."""

from __future__ import annotations

from typing import Any

from ..errors import PublishFault

# recorded on every table: a publish with another binding or ceiling into the namespace is refused
TENANT_PROPERTY, CEILING_PROPERTY = "obsrepo.tenant", "obsrepo.max-classification"


def open_catalog(name: str) -> Any:
    """The catalog `name`; one that is not configured, or does not open, is an environment
    error (exit 4) naming the field `catalog`."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.utils.config import Config

    if Config().get_catalog_config(name) is None:
        raise PublishFault(f"catalog '{name}' is not configured: pyiceberg reads catalogs from .pyiceberg.yaml "
                           f"(in PYICEBERG_HOME, the home folder or the working folder) and from PYICEBERG_CATALOG__"
                           f"{name.upper()}__<PROPERTY> variables (type, uri, warehouse…)", parameter="catalog", catalog=name)
    try:
        return load_catalog(name)
    except Exception as exc:  # pyiceberg raises what its catalog's driver raises: a bad URI, no server
        raise PublishFault(f"catalog '{name}' could not be opened: {type(exc).__name__}: {exc}", parameter="catalog",
                           catalog=name) from None


def identifier(namespace: str, table: str) -> tuple[str, str]:
    return (namespace, table)


def table_or_none(catalog: Any, namespace: str, table: str) -> Any:
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(identifier(namespace, table))
    except NoSuchTableError:
        return None


def published_commits(catalog: Any, namespace: str) -> dict[str, tuple[tuple[int, str], ...]]:
    """repo → its published (seq, sha), by seq: the `commits` table, which is appended last, so
    a publication stopped half way is not in it."""
    table = table_or_none(catalog, namespace, "commits")
    if table is None:
        return {}
    rows = table.scan(selected_fields=("repo", "seq", "sha")).to_arrow().to_pylist()
    published: dict[str, list[tuple[int, str]]] = {}
    for row in sorted(rows, key=lambda r: (r["repo"], r["seq"])):
        published.setdefault(row["repo"], []).append((row["seq"], row["sha"]))
    return {repo: tuple(pairs) for repo, pairs in published.items()}


def check_settings(catalog: Any, namespace: str, tables: tuple[str, ...], settings: dict[str, str]) -> None:
    """Refuse a publish whose binding or ceiling differs from what the namespace's tables hold."""
    for name in tables:
        table = table_or_none(catalog, namespace, name)
        if table is None:
            continue
        for key, wanted in settings.items():
            held = table.properties.get(key)
            if held is not None and held != wanted:
                raise PublishFault(f"namespace {namespace} holds tables published with {key}={held!r}, not {wanted!r}: "
                                   "publish into another namespace", parameter="namespace", namespace=namespace,
                                   property=key, held=held, wanted=wanted)
