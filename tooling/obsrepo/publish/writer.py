"""One publish (docs/design.md §16): ask the door for the rows after what the catalog holds,
then append them, the data tables first and `commits` last, one Iceberg snapshot on every
table (an empty append where a table gets no rows) with `obsrepo.git-commit` in its summary
and a tag `git-<sha>`. A reader that filters on `seq <= max(commits.seq)` never sees half a
publication."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ops import Publication, Session, run
from ..ops.publication import TABLES
from .catalog import CEILING_PROPERTY, TENANT_PROPERTY, check_settings, identifier, open_catalog, published_commits, table_or_none

DEFAULT_NAMESPACE = "obsrepo"


@dataclass(frozen=True)
class Published:
    catalog: str
    namespace: str
    answer: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "namespace": self.namespace, **self.answer}


def publish(session: Session, catalog_name: str, namespace: str = DEFAULT_NAMESPACE, *, rev: str | None = None,
            max_classification: str | None = None, rebase_published: bool = False) -> Published:
    """Publish the first-parent chain of `rev` (default HEAD) within the session's binding and
    the ceiling (default `internal`)."""
    from ..ops.publication import DEFAULT_CEILING

    catalog = open_catalog(catalog_name)
    ceiling = max_classification or DEFAULT_CEILING
    settings = {TENANT_PROPERTY: ",".join(f"{k}={v}" for k, v in sorted(session.binding.as_dict().items())),
                CEILING_PROPERTY: ceiling}
    check_settings(catalog, namespace, TABLES, settings)
    request = Publication(published=published_commits(catalog, namespace), rev=rev, max_classification=ceiling,
                          rebase_published=rebase_published)
    rows = run(session, request)
    if rows.status == "publish":
        catalog.create_namespace_if_not_exists(namespace)
        summary = {"obsrepo.git-commit": rows.rev, "obsrepo.repo": rows.repo, "obsrepo.seq": str(rows.seqs[-1])}
        for name in TABLES:
            _append(catalog, namespace, name, rows.tables[name], summary, settings)
    return Published(catalog_name, namespace, rows.to_json())


def _append(catalog: Any, namespace: str, name: str, data: Any, summary: dict[str, str], settings: dict[str, str]) -> None:
    table = table_or_none(catalog, namespace, name)
    if table is None:
        table = catalog.create_table(identifier(namespace, name), schema=data.schema, properties=settings)
    table.append(data, snapshot_properties=summary)
    tag = f"git-{summary['obsrepo.git-commit']}"
    if tag not in table.metadata.refs:
        table.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, tag).commit()
