"""An error is one line (docs/design.md §8a): a library's message wrapped in one of ours (git's
hints, a validator's list, a catalog's causes) has its lines joined, in one place (the error
root), so every surface prints it as one line and never as a literal `\\n`."""

from __future__ import annotations

import json

from helpers import Repo
from obsrepo.cli.errors import _report_error
from obsrepo.errors import GitError, ObsrepoError, one_line
from obsrepo.gitstore import Git


def test_a_wrapped_message_of_many_lines_becomes_one(repo: Repo, capsys) -> None:
    repo.commit("base", allow_empty=True)
    (repo.path / ".git" / "refs" / "heads" / "busy.lock").write_text("")
    try:  # git's own message: the error, a blank line, then a paragraph of advice
        Git(str(repo.path)).run("update-ref", "refs/heads/busy", repo.sha())
    except GitError as exc:
        failure = exc
    assert "\n" not in failure.message and "cannot lock ref 'refs/heads/busy'" in failure.message, failure.message
    # a paragraph break is a `; `, a line of the paragraph wrapped at git's width goes on
    assert "File exists.; Another git process seems to be running" in failure.message, failure.message
    assert "If it still fails, a git process may have crashed" in failure.message, failure.message
    assert json.loads(json.dumps(failure.envelope()))["error"]["message"] == failure.message == str(failure)

    cause = ValueError("Bad:\n  no table\n")  # a library's exception, wrapped as the adapters wrap one
    _report_error(ObsrepoError(f"catalog 'c' could not be opened: {cause}", code="PUBLISH_ERROR"), as_json=False)
    printed = capsys.readouterr().err
    assert printed == "error: PUBLISH_ERROR: catalog 'c' could not be opened: Bad: no table\n", printed


def test_one_line_keeps_a_message_of_one_line_and_joins_the_others() -> None:
    assert one_line("plain: as it was") == "plain: as it was"
    assert one_line("First\r\nSecond\n\n  third\u2028Fourth\n") == "First; Second; third; Fourth"
    assert one_line("causes:\n- one\n- two") == "causes: - one; - two"
