"""`obsrepo publish`: the index as Apache Iceberg tables (docs/design.md §16)."""

from __future__ import annotations

import click

from .. import errors
from ..ops.surface import CLASSIFICATIONS
from .app import main
from .errors import _emit_json, handled
from .options import examples, output_format, read_options, session


@main.command(epilog=examples("obsrepo publish --catalog local",
                              "obsrepo publish --catalog glue --namespace analytics --tenant org=northwind",
                              "PYICEBERG_CATALOG__LOCAL__URI=sqlite:///$PWD/lake/catalog.db "
                              "PYICEBERG_CATALOG__LOCAL__WAREHOUSE=file://$PWD/lake obsrepo publish --catalog local --rev v1.2"))
@click.option("--catalog", "catalog_name", required=True, metavar="NAME",
              help="A catalog as pyiceberg configures it (.pyiceberg.yaml, PYICEBERG_CATALOG__<NAME>__… variables).")
@click.option("--namespace", default="obsrepo", show_default=True, help="The namespace of the tables.")
@click.option("--rev", metavar="REV", help="Publish the first-parent chain up to this commit (default HEAD).")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), default="internal", show_default=True,
              help="Nothing classified above this level leaves.")
@click.option("--rebase-published", is_flag=True,
              help="Publish a rewritten history: what only the abandoned commits held is withdrawn (reason rebased).")
@output_format(help_text="text: what was published; json: the same as an object.")
@read_options
@handled
def publish(catalog_name: str, namespace: str, rev: str | None, max_classification: str, rebase_published: bool,
            output_format: str, tenant: str | None, index_path: str | None) -> int:
    """Publish the history as Apache Iceberg tables (Spark, Trino, Athena, DuckDB).

    Appends only the commits after the last one this repository published: the tables
    observations, observation_removals, observation_fields, relations and entity_snapshots,
    then commits, each row carrying the commit's sequence number, so "as of commit X" is plain
    SQL on every engine. Publishing the same commit twice changes nothing. Needs the publish
    extra.
    """
    from ..publish import publish as write

    answer = write(session(index_path, tenant), catalog_name, namespace, rev=rev, max_classification=max_classification,
                   rebase_published=rebase_published).to_json()
    if output_format == "json":
        _emit_json(answer)
    else:
        click.echo(_line(answer, max_classification))
    return errors.EXIT_OK


def _line(answer: dict, ceiling: str) -> str:
    where = f"{answer['catalog']}.{answer['namespace']}"
    if answer["status"] == "current":
        return f"{answer['rev']} is already published to {where}: nothing changed"
    if answer["status"] == "older":
        return f"{answer['rev']} is older than what {answer['repo']} published to {where}: nothing changed"
    rows = ", ".join(f"{name} {count}" for name, count in answer["rows"].items())
    held = answer["held_back"]
    return (f"published {answer['commits']} commit(s) up to {answer['rev'][:12]} to {where} as {answer['repo']} "
            f"(seq {answer['first_seq']}..{answer['last_seq']}): {rows}; "
            f"{held} observation{'' if held == 1 else 's'} above {ceiling} held back")
