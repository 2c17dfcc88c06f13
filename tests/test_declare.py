"""A command is declared by its request: every option's name, type, default, choices and help
come from the request's fields (cli/declare.py), the same the MCP tools describe."""

from __future__ import annotations

import dataclasses
import typing

import click
from click.testing import CliRunner
from helpers import observation
from obsrepo.cli import main
from obsrepo.cli.app import load_all
from obsrepo.cli.declare import parameters
from obsrepo.ops import OPERATIONS
from obsrepo.ops.fields import Field

DECLARED = ("query", "show", "sql", "status", "snapshot", "provenance", "entities", "find", "observations", "relations",
            "related", "timeline", "history", "retention", "comprehensions", "recall", "diff", "check", "index",
            "correct", "retract", "relate", "merge", "distinct", "feedback", "reclassify", "comprehend")
# fields a command fills itself or offers under other options: a query vector (library and MCP
# callers), a write's destination (--commit, --branch), check's folder and progress bar
NOT_OFFERED = {"embedding", "destination", "cwd", "progress", "timestamp", "check"}
SAID_OTHERWISE = {"reason", "outcome", "allow_type_change", "observation", "effect"}  # the command's own words


def _field_meta(request: type, name: str) -> Field:
    hint = typing.get_type_hints(request, include_extras=True)[name]
    return next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Field)), Field())


def test_every_declared_command_offers_its_request_as_the_request_says() -> None:
    load_all()
    for name in DECLARED:
        request = OPERATIONS[name].request
        command = main.commands[name]
        by_field = {p.name: p for p in command.params}
        for field in dataclasses.fields(request):
            if field.name in NOT_OFFERED:
                assert field.name not in by_field, (name, field.name)
                continue
            param = by_field[field.name]  # the parameter is named as its field: errors rename by it
            meta = _field_meta(request, field.name)
            if isinstance(param, click.Argument):
                assert param.required == (field.default is dataclasses.MISSING), (name, field.name)
                continue
            assert param.help, (name, field.name)
            assert param.required == (field.default is dataclasses.MISSING), (name, field.name)
            if field.name in SAID_OTHERWISE:
                continue
            if field.name != "overlay" and not param.is_flag and not param.required:
                assert param.default == field.default, (name, field.name)
            if meta.choices and isinstance(param.type, click.Choice):
                assert set(param.type.choices) <= set(meta.choices), (name, field.name)
            if meta.description and field.name not in ("overlay", "types", "scopes", "entities"):
                assert param.help.split(":")[0] == meta.description.split(":")[0].replace("`text`", "--text"), \
                    (name, field.name, param.help)


def test_a_field_in_backquotes_is_spelt_as_its_flag_and_an_unoffered_one_is_left_out() -> None:
    from obsrepo.ops import Query

    options = {p.field: p.param for p in parameters(Query, {"scopes": "--scope", "embedding": None})}
    assert options["unweighted"].help == "--text ranks without feedback weights."
    assert "embedding" not in (options["match"].help or "") and "--text" in (options["match"].help or "")
    assert options["scopes"].opts == ["--scope"] and options["scopes"].multiple
    assert options["semantic_k"].metavar == "K" and options["at"].metavar == "REV" and options["after"].metavar == "TIME"
    assert isinstance(options["max_classification"].type, click.Choice)


def _committed(repo, monkeypatch) -> None:
    repo.add(observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z"))
    repo.commit("one")
    monkeypatch.chdir(repo.path)


def test_committed_only_sets_overlay_false_and_its_absence_leaves_the_sessions_setting(repo, monkeypatch) -> None:
    import obsrepo.ops.reads as reads
    from obsrepo.ops import registry

    _committed(repo, monkeypatch)
    seen: list[object] = []
    real = reads.query

    def spy(session, request):
        seen.append(request.overlay)
        return real(session, request)

    monkeypatch.setitem(registry._BY_REQUEST, reads.Query, dataclasses.replace(OPERATIONS["query"], function=spy))
    runner = CliRunner()
    assert runner.invoke(main, ["query", "--committed-only"]).exit_code == 0
    assert runner.invoke(main, ["query"]).exit_code == 0
    assert seen == [False, None]


def test_an_error_names_the_generated_flag(repo, monkeypatch) -> None:
    _committed(repo, monkeypatch)
    done = CliRunner().invoke(main, ["entities", "--type", "x", "--limit", "0", "--format", "json"])
    assert done.exit_code == 2 and '"parameter": "--limit"' in done.output, done.output
    done = CliRunner().invoke(main, ["timeline", "--after", "soon", "--format", "json"])
    assert done.exit_code == 2 and '"parameter": "--after"' in done.output, done.output


def test_a_statement_writes_where_commit_and_branch_say_and_its_renderer_sets_the_exit_code(repo, monkeypatch) -> None:
    _committed(repo, monkeypatch)
    runner = CliRunner()
    done = runner.invoke(main, ["relate", "company/acme", "PART_OF", "company/acme", "--branch", "b"])
    assert done.exit_code == 2 and "--commit" in done.output, done.output  # a branch is named only for a commit
    done = runner.invoke(main, ["retract", "obs-20260101-090000-0001", "--format", "json"])
    assert done.exit_code == 2 and "--reason" in done.output  # a required option, not a positional argument
    done = runner.invoke(main, ["retract", "obs-20260101-090000-0001", "--reason", "wrong", "--commit", "--branch", "p/x",
                                "--source", "human/r", "--format", "json"])
    assert done.exit_code == 0 and '"branch": "p/x"' in done.output, done.output
    assert runner.invoke(main, ["diff", "HEAD", "HEAD", "--format", "json"]).exit_code == 0
    repo.write("observations/bad.md", "not a document")
    assert runner.invoke(main, ["check"]).exit_code == 1
