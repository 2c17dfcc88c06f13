"""One publish (docs/design.md §16): ask the door for the rows after what the catalog holds,
then append them, the data tables first and `commits` last, one Iceberg snapshot on every
table (an empty append where a table gets no rows) with `obsrepo.git-commit` in its summary
and a tag `git-<sha>`. A reader that filters on `seq <= max(commits.seq)` never sees half a
publication.

Two kinds of rows leave in the same transaction as a data table's append (so a publish stopped
half way cannot lose them): the rows a stopped publication left above `max(commits.seq)`
(found from the snapshots' `obsrepo.seq`), and the rows of the observations withheld at the
head (`erased`: expired, or raised above the ceiling) with the snapshots they decided. Both
are Iceberg row deletes by predicate: the stopped publication's rows are whole files of their
own, so dropping them rewrites nothing, and an erased observation's rows are rewritten out of
the few files that hold them (copy-on-write, readable by every engine that reads v2 tables).
Overwriting the tables instead would rewrite every row of every repository in the namespace."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import PublishFault
from ..ops import Publication, Session, run
from ..ops.publication import TABLES
from .catalog import (
    CEILING_PROPERTY,
    READ_COLUMNS,
    TENANT_PROPERTY,
    check_settings,
    check_shape,
    gone_rows,
    identifier,
    open_catalog,
    published_commits,
    table_or_none,
)
from .faults import environment, namespace_checked

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
    the ceiling (default `internal`). Whatever the catalog, its database or its warehouse
    refuses is `PublishFault` naming the catalog, the table and why (§8b)."""
    from ..ops.publication import DEFAULT_CEILING

    namespace = namespace_checked(namespace)
    catalog = open_catalog(catalog_name)
    ceiling = max_classification or DEFAULT_CEILING
    settings = {TENANT_PROPERTY: ",".join(f"{k}={v}" for k, v in sorted(session.binding.as_dict().items())),
                CEILING_PROPERTY: ceiling}
    tables = {}
    for name in TABLES:  # each loaded once per publish
        with environment(catalog_name, namespace, name, "read"):
            tables[name] = table_or_none(catalog, namespace, name)
        if tables[name] is not None:
            check_shape(catalog_name, namespace, name, tables[name], required=READ_COLUMNS[name])
    check_settings(tables, namespace, settings)
    with environment(catalog_name, namespace, "commits", "read"):
        published = published_commits(tables["commits"])
    request = Publication(published=published, rev=rev, max_classification=ceiling, rebase_published=rebase_published)
    rows = run(session, request)
    if rows.status == "publish":
        for name in TABLES:
            if tables[name] is not None:
                check_shape(catalog_name, namespace, name, tables[name], wanted=rows.tables[name].schema)
        with environment(catalog_name, namespace, None, "create"):
            catalog.create_namespace_if_not_exists(namespace)
        summary = {"obsrepo.git-commit": rows.rev, "obsrepo.repo": rows.repo, "obsrepo.seq": str(rows.seqs[-1])}
        head = request.published.get(rows.repo, ((0, ""),))[-1][0]
        for name in TABLES:
            with environment(catalog_name, namespace, name), _lost_race_refused(catalog_name, namespace, name):
                _append(catalog, namespace, name, tables[name], rows, head, summary, settings)
    return Published(catalog_name, namespace, rows.to_json())


@contextmanager
def _lost_race_refused(catalog_name: str, namespace: str, name: str) -> Iterator[None]:
    """Commit a table where another publish that committed `name` after this one loaded it wins
    (Iceberg's optimistic concurrency: the catalog refuses a commit whose table moved, or a
    table created twice). `commits` is appended last, so what the loser committed of the data
    tables lies above the published head, unseen by readers and deleted by the next publish
    (as a stopped publication's rows are): the loser says so, and the user publishes again."""
    from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError

    try:
        yield
    except (CommitFailedException, TableAlreadyExistsError) as exc:
        raise PublishFault(f"another publish into {catalog_name}.{namespace} committed table {name} while this one was "
                           f"writing ({type(exc).__name__}: {exc}); what is published is whole: run publish again to "
                           "add what this one did not", catalog=catalog_name, namespace=namespace, table=name,
                           conflict=True) from None


def _append(catalog: Any, namespace: str, name: str, table: Any, rows: Any, head: int, summary: dict[str, str],
            settings: dict[str, str]) -> None:
    data = rows.tables[name]
    if table is None:
        table = catalog.create_table(identifier(namespace, name), schema=data.schema, properties=settings)
    _without_retries(table)
    leaving = gone_rows(table, name, rows.repo, head, rows.erased)
    tag = f"git-{summary['obsrepo.git-commit']}"
    with table.transaction() as transaction, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an erased observation this publish alone held matches no row: not news
        if leaving is not None and table.current_snapshot() is not None:
            transaction.delete(leaving, snapshot_properties=summary)
        transaction.append(data, snapshot_properties=summary)
        _tag(transaction, tag)


def _without_retries(table: Any) -> None:
    """pyiceberg retries a commit that lost a race on the table's new state (four times, by
    default): it would append this publish's rows again after another publish's, and delete
    by a predicate planned before that publish. One attempt, then `_lost_race_refused`. Set on
    the loaded metadata only: the catalog applies the commit to its own."""
    from pyiceberg.table import TableProperties

    properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    table.metadata = table.metadata.model_copy(update={"properties": properties})


def _tag(transaction: Any, tag: str) -> None:
    """Tag the transaction's new snapshot `tag`, in the same catalog commit; a tag left pointing
    into a publication stopped half way moves."""
    from pyiceberg.table.update.snapshot import ManageSnapshots

    snapshot = transaction.table_metadata.current_snapshot().snapshot_id
    held = transaction.table_metadata.refs.get(tag)
    if held is not None and held.snapshot_id == snapshot:
        return
    manage = ManageSnapshots(transaction)
    if held is not None:
        manage.remove_tag(tag)
    manage.create_tag(snapshot, tag).commit()
