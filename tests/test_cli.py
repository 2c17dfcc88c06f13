"""The command line as a newcomer meets it: help, exit codes that tell the truth, errors a user
can act on, progress on a terminal, and a bug report that needs no second run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from helpers import Repo, observation
from obsrepo.cli import main

NO_COMMITS = "the repository has no commits yet"
INTERNAL_WORDS = ("seed", "DESIGN", "§", "retrieve_entities", "list_relationships", "list_observations")

# Every command that reads the index, with arguments that would be fine in a repository that has
# commits. A command added to the CLI must be added here (test_every_reading_command_is_listed).
READERS: dict[str, list[str]] = {
    "index": [],
    "query": [],
    "sql": ["SELECT 1"],
    "snapshot": ["company/acme"],
    "provenance": ["company/acme", "name"],
    "entities": [],
    "find": ["acme"],
    "observations": ["company/acme"],
    "relations": ["company/acme"],
    "related": ["company/acme"],
    "timeline": [],
    "history": ["company/acme"],
    "identities": [],
    "intervals": ["company/acme"],
    "contested": [],
    "correct": ["company/acme", "name", "Acme Inc", "--reason", "typo"],
    "retract": ["obs-20260213-102500-0001", "--reason", "wrong"],
    "diff": [],
    "show": ["obs-20260213-102500-0001"],
    "status": [],
    "retention": [],
    "comprehensions": [],
    "recall": [],
}
# mcp and watch: servers (tests/test_mcp.py, tests/test_watch.py); the others write or export
NOT_READERS = {"check", "init", "new", "relate", "merge", "distinct", "mcp", "watch", "feedback", "reclassify", "comprehend",
               "export", "embed", "publish", "serve"}
TEXT_FORMAT = {"query": "short", "sql": "table"}  # the others: text


# --- help ------------------------------------------------------------------------------------

def test_bare_obsrepo_prints_the_help_over_several_lines_and_exits_0(repo: Repo) -> None:
    proc = repo.obsrepo()
    assert proc.returncode == 0, proc
    assert proc.stdout == repo.obsrepo("--help").stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Usage: obsrepo") and len(lines) > 20
    assert "Commands:" in lines and "\\n" not in proc.stdout and proc.stderr == ""
    assert all(f"  {name} " in proc.stdout for name in main.commands)
    in_process = CliRunner().invoke(main, [], prog_name="obsrepo")
    assert in_process.exit_code == 0 and in_process.stdout.startswith("Usage: obsrepo [OPTIONS] COMMAND")
    assert "\nCommands:\n" in in_process.stdout
    assert main(["--version"]) == 0  # arguments given positionally, as a Python caller would


def _texts(command: click.Command) -> list[str]:
    texts = [command.help or "", command.epilog or ""]
    texts += [p.help or "" for p in command.params if isinstance(p, click.Option)]
    return texts


def test_every_command_and_option_says_what_it_does_with_an_example() -> None:
    assert main.help and "Examples:" in (main.epilog or "")
    for name, command in main.commands.items():
        assert command.help and command.help.strip(), f"`{name}` has no help"
        assert command.get_short_help_str(limit=80).rstrip(".") and not command.get_short_help_str(limit=80).endswith("..."), \
            f"`{name}`'s first line does not fit the command list"
        examples = [line.strip() for line in (command.epilog or "").splitlines() if line.strip().startswith("obsrepo ")]
        assert "Examples:" in (command.epilog or "") and any(e.startswith(f"obsrepo {name}") for e in examples), \
            f"`{name}` has no example"
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help and param.help.strip(), f"`{name} {param.opts[0]}` has no help"
        for text in _texts(command):
            for word in INTERNAL_WORDS:
                assert word not in text, f"`{name}`'s help speaks of {word!r}: {text!r}"
    for word in INTERNAL_WORDS:
        assert word not in (main.help or "") + (main.epilog or "")


def test_every_command_prints_its_help_with_the_examples(repo: Repo) -> None:
    """Each command's help, in one process (click's runner over the same lazily loaded commands);
    the first also as a whole `obsrepo` process (which wraps at the terminal's width)."""
    runner = CliRunner()
    for number, name in enumerate(main.commands):
        done = runner.invoke(main, [name, "--help"], prog_name="obsrepo")
        assert done.exit_code == 0, (name, done.output)
        whole = [repo.obsrepo(name, "--help")] if number == 0 else []
        assert all(proc.returncode == 0 for proc in whole), whole
        for text in [done.output] + [proc.stdout for proc in whole]:
            assert f"Usage: obsrepo {name}" in text, (name, text)
            assert re.search(r"\n  Examples:\n    obsrepo ", text), name


# --- exit codes ----------------------------------------------------------------------------------

def _completion(repo: Repo, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "obsrepo"], cwd=repo.path, env={**repo.env, **env},
                          capture_output=True, text=True, check=False)


def test_shell_completion_as_the_docs_set_it_up_completes_commands_and_choices(repo: Repo) -> None:
    adopt = (Path(__file__).resolve().parent.parent / "docs" / "adopt.md").read_text(encoding="utf-8")
    shells = re.findall(r"_OBSREPO_COMPLETE=(\w+)_source obsrepo", adopt)
    assert sorted(shells) == ["bash", "fish", "zsh"]
    for shell in shells:
        script = _completion(repo, _OBSREPO_COMPLETE=f"{shell}_source")
        assert script.returncode == 0 and "_OBSREPO_COMPLETE" in script.stdout and script.stderr == "", (shell, script)
    commands = _completion(repo, _OBSREPO_COMPLETE="bash_complete", COMP_WORDS="obsrepo in", COMP_CWORD="1")
    assert commands.stdout.split() == ["plain,index", "plain,init", "plain,intervals"], commands
    choices = _completion(repo, _OBSREPO_COMPLETE="bash_complete", COMP_WORDS="obsrepo query --format ", COMP_CWORD="3")
    assert choices.stdout.split() == [f"plain,{mode}" for mode in ("short", "full", "json", "jsonl")], choices


def test_every_reading_command_is_listed() -> None:
    assert set(READERS) | NOT_READERS == set(main.commands)


def _envelope(proc: subprocess.CompletedProcess) -> dict[str, Any]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)["error"]


def test_every_command_that_needs_a_commit_says_so_in_a_repository_without_one(repo: Repo) -> None:
    repo.add(observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme"}))
    cases = [[name, *args] for name, args in READERS.items()]
    cases += [["index", "--rev", "HEAD"], ["index", "--rev", "main"], ["query", "--at", "HEAD"],
              ["snapshot", "company/acme", "--at", "main"]]
    for argv in cases:
        proc = repo.obsrepo(*argv, "--format", "json")
        error = _envelope(proc)
        assert (proc.returncode, error["code"]) == (4, "GIT_ERROR"), (argv, proc)
        assert error["message"].startswith(NO_COMMITS), (argv, error)
    for argv in (["index"], ["query"], ["snapshot", "company/acme"]):
        text = repo.obsrepo(*argv, "--format", TEXT_FORMAT.get(argv[0], "text"))
        assert text.returncode == 4 and text.stderr.startswith(f"error: GIT_ERROR: {NO_COMMITS}"), (argv, text)
    proc = repo.obsrepo("check", "--base", "main", "--format", "json")
    assert proc.returncode == 4 and _envelope(proc)["message"].startswith(NO_COMMITS)


def test_check_still_checks_the_work_tree_of_a_repository_without_commits(repo: Repo) -> None:
    good = observation("obs-20260213-102500-0001")
    repo.add(good)
    result = repo.check()
    assert (result.returncode, result.data["checked"]) == (0, 1), result
    repo.write("observations/2026/02/13/obs-20260213-102500-0002.md", "---\nspec: observation/v1\n---\n")
    result = repo.check()
    assert result.returncode == 1 and ("VALIDATION_ERROR", "missing-key",
                                       "observations/2026/02/13/obs-20260213-102500-0002.md") in result.issues
    assert repo.obsrepo("check", "--staged").returncode == 0  # nothing staged yet


def test_a_repository_without_documents_says_so(repo: Repo) -> None:
    proc = repo.obsrepo("check")
    assert proc.returncode == 0 and "no documents found" in proc.stderr, proc
    repo.write("README.md", "nothing observed yet\n")
    repo.commit("no documents")
    proc = repo.obsrepo("check")
    assert proc.returncode == 0 and "no documents found" in proc.stderr, proc
    proc = repo.obsrepo("query")
    assert (proc.returncode, proc.stdout) == (0, "No observations found.\n"), proc
    proc = repo.obsrepo("entities", "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["total"] == 0
    assert repo.obsrepo("snapshot", "company/acme").returncode == 3


@pytest.fixture
def committed(repo: Repo) -> Repo:
    repo.add(observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme"}))
    repo.commit("one")
    return repo


def _unwritable_places(base: Path) -> dict[str, str]:
    (base / "plain-file").write_text("x")
    os.mkfifo(base / "a-pipe")
    places = {"under a regular file": str(base / "plain-file" / "sub" / "index.duckdb"),
              "a folder": str(base),
              "a pipe": str(base / "a-pipe")}
    if os.path.isdir("/proc/self"):
        places["under /proc"] = "/proc/obsrepo-nowhere/index.duckdb"
    return places


def test_an_index_path_that_cannot_be_created_is_an_index_error(committed: Repo, tmp_path: Path) -> None:
    places = tmp_path / "places"
    places.mkdir()
    commands = [["index"], ["query"], ["sql", "SELECT 1"], ["snapshot", "company/acme"]]
    for what, place in _unwritable_places(places).items():
        for command in commands:
            proc = committed.obsrepo(*command, "--index", place, "--format", "json")
            error = _envelope(proc)
            assert (proc.returncode, error["code"]) == (4, "INDEX_ERROR"), (what, command, proc)
            assert place in error["message"] and "--index" in error["message"], error
        proc = committed.obsrepo("query", "--index", place)
        assert proc.returncode == 4 and proc.stderr.startswith("error: INDEX_ERROR: the index cannot be created at "), proc
        by_environment = Repo(committed.path, dict(committed.env, OBSREPO_INDEX=place), None)  # type: ignore[arg-type]
        proc = by_environment.obsrepo("entities", "--format", "json")
        assert (proc.returncode, _envelope(proc)["code"]) == (4, "INDEX_ERROR"), (what, proc)
    assert (places / "a-pipe").is_fifo(), "the pipe was not replaced"
    assert (places / "plain-file").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_index_in_a_read_only_folder_is_an_index_error(committed: Repo, tmp_path: Path) -> None:
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        proc = committed.obsrepo("query", "--index", str(folder / "index.duckdb"), "--format", "json")
    finally:
        folder.chmod(0o755)
    assert (proc.returncode, _envelope(proc)["code"]) == (4, "INDEX_ERROR")


# --- a bug is reported with its traceback in a file ----------------------------------------------

@pytest.fixture
def in_repo(committed: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """The repository as the current directory of this process, with its pinned environment."""
    for key in list(os.environ):
        if key.startswith(("GIT_", "OBSREPO_")):
            monkeypatch.delenv(key)
    for key, value in committed.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(committed.path)
    return committed


def _simulated_bug(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("simulated bug in a renderer")


def _log_named_in(message: str) -> Path:
    match = re.search(r"the details are in (\S+\.log);", message)
    assert match, message
    return Path(match.group(1))


def test_an_internal_error_names_a_log_file_holding_the_traceback(in_repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    import obsrepo.cli.reads

    monkeypatch.setattr(obsrepo.cli.reads, "observation_lines", _simulated_bug)
    result = CliRunner().invoke(main, ["query"])
    assert result.exit_code == 5, result.output
    assert "error: INTERNAL_ERROR: " in result.stderr and "Traceback" not in result.stderr
    log = _log_named_in(result.stderr)
    assert log.parent == in_repo.path / ".obsrepo" / "logs"
    text = log.read_text("utf-8")
    assert "Traceback" in text and "RuntimeError: simulated bug in a renderer" in text and "_simulated_bug" in text
    assert in_repo.git("status", "--porcelain") == "", "the log is not something to commit"

    result = CliRunner().invoke(main, ["query", "--format", "json"])
    assert result.exit_code == 5
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "INTERNAL_ERROR" and Path(error["details"]["log"]).is_file()
    assert error["details"]["log"] in error["message"]


def test_an_internal_error_logs_to_the_temporary_folder_when_the_repository_is_not_writable(
        in_repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import obsrepo.cli.render

    (in_repo.path / ".obsrepo").write_text("not a folder")  # .obsrepo/logs cannot be created
    in_repo.write(".gitignore", ".obsrepo\n")
    temp = tmp_path / "system-temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(obsrepo.cli.render, "render_report", _simulated_bug)
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 5, result.output
    log = _log_named_in(result.stderr)
    assert log.parent == temp and "simulated bug in a renderer" in log.read_text("utf-8")


# --- progress on a terminal ----------------------------------------------------------------------

def _with_stderr_on_a_terminal(repo: Repo, *args: str) -> tuple[int, str, str]:
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "obsrepo", *args], cwd=repo.path, env=repo.env,
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait()
    os.close(master)
    return code, out, seen.decode("utf-8", "replace")


def test_progress_shows_on_a_terminal_only(committed: Repo) -> None:
    # check first: after an index, check finds every document in the shared analysis cache
    code, out, terminal = _with_stderr_on_a_terminal(committed, "check")
    assert code == 0 and "checking [" in terminal and "checked 1 document: ok" in terminal, terminal
    code, out, terminal = _with_stderr_on_a_terminal(committed, "query")
    assert code == 0 and "] [-] observed obs-20260213-102500-0001" in out
    assert "indexing [" in terminal and "100%" in terminal, terminal

    committed.add(observation("obs-20260213-102500-0002"))
    committed.commit("two")
    piped = committed.obsrepo("query")  # builds the index again (a new commit), silently: a pipe gets no progress
    assert piped.returncode == 0 and piped.stderr == "", piped
    piped = committed.obsrepo("check")
    assert piped.returncode == 0 and piped.stderr == "checked 2 documents: ok\n", piped


# --- new: errors name the field and the rule, never a file that was not written -----------------

@pytest.mark.parametrize("args,words", [
    (["--source", "bad source"], "source must start with a letter or digit"),
    (["--entity", "Company/Acme", "--field", "name=Acme"], "entity must be <type>/<key>"),
    (["--type", "task updated"], "type must start with a letter or digit"),
    (["--corrects", "OBS-1"], "ids look like obs-<lowercase letters and digits>"),
    (["--entity", "company/acme", "--field", "bad-name=1"], "is not a field name"),
], ids=["source", "entity", "type", "corrects", "field-name"])
def test_new_explains_the_rule_in_words_and_names_no_file(repo: Repo, args: list[str], words: str) -> None:
    base = ["new", "--source", "agent/x", "--event", "something happened"]
    proc = repo.obsrepo(*base, *args)
    assert proc.returncode == 1, proc
    assert words in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error: the observation was not written:\n"), proc.stderr
    for bad in ("observations/", "draft.md", ".md", "should match pattern", "^"):
        assert bad not in proc.stderr, (bad, proc.stderr)
    proc = repo.obsrepo(*base, *args, "--format", "json")
    error = json.loads(proc.stdout)["error"]
    assert words in error["message"] and "not written" in error["message"]
    assert {i["path"] for i in error["details"]["issues"]} == {"(not written)"}
    assert not (repo.path / "observations").exists()


def test_user_mistakes_around_new_and_check_are_never_internal_errors(repo: Repo, tmp_path: Path) -> None:
    (tmp_path / "latin1.json").write_bytes('{"source": "agent/x", "event": "caf\xe9"}'.encode("latin-1"))
    cases = [
        (["new", "--json", str(tmp_path / "missing.json")], 2, "--json"),
        (["new", "--json", str(tmp_path)], 2, "--json"),
        (["new", "--json", str(tmp_path / "latin1.json")], 1, "--json"),
        (["new", "--source", "agent/x", "--event", "e", "--field", "=3"], 2, "--field"),
    ]
    for argv, code, parameter in cases:
        proc = repo.obsrepo(*argv, "--format", "json")
        error = _envelope(proc)
        assert (proc.returncode, error["code"], error["details"].get("parameter")) == (code, "VALIDATION_ERROR", parameter), \
            (argv, proc)
    (repo.path / "schemas" / "entities" / "company.yaml").mkdir(parents=True)  # a folder named like a schema
    result = repo.check()
    assert result.returncode == 1 and result.issues == [("VALIDATION_ERROR", "entity-schema", "schemas/entities/company.yaml")]


def test_the_program_delivers_all_its_output_and_its_exit_code_when_it_exits_at_once(committed: Repo) -> None:
    """`obsrepo` skips Python's teardown after a command (run()): what it printed still arrives
    whole through a pipe, on both streams, with the command's exit code."""
    assert committed.obsrepo("index").returncode == 0
    proc = committed.obsrepo("sql", "SELECT range AS n FROM range(200000)", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 200000 and rows[-1] == {"n": 199999}
    proc = committed.obsrepo("query", "--after", "not a time", "--format", "json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["code"] == "VALIDATION_ERROR"
    proc = committed.obsrepo("check")
    assert proc.returncode == 0 and proc.stderr == "checked 1 document: ok\n"


def test_a_reader_that_closes_the_pipe_early_ends_the_program_quietly(committed: Repo) -> None:
    """`obsrepo sql … | head -1`: no traceback and no "Exception ignored" on stderr. (Held before
    the quick exit too: click flushes as it writes; this keeps it so with the exit.)"""
    assert committed.obsrepo("index").returncode == 0
    proc = subprocess.run(f"{sys.executable} -m obsrepo sql 'SELECT range AS n FROM range(300000)' | head -c 100",
                          shell=True, cwd=committed.path, env=committed.env, capture_output=True, text=True)
    assert len(proc.stdout) == 100
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr and "Broken" not in proc.stderr, proc.stderr


def test_the_lazy_command_table_names_the_module_of_every_command() -> None:
    """`obsrepo` loads a command's module only when it runs; the table that says where each
    command lives must hold every command, each in the module that defines it."""
    from obsrepo.cli.app import COMMANDS

    assert set(COMMANDS) == set(main.commands)
    for name, command in main.commands.items():
        callback = command.callback if command.callback else next(iter(command.commands.values())).callback
        assert callback.__module__ == f"obsrepo.cli.{COMMANDS[name]}", name


def test_check_loads_neither_the_reads_nor_the_writes_of_the_door(repo: Repo) -> None:
    """The pre-commit hook's command starts without the operations it does not run, nor the
    index's reader and writer."""
    probe = ("import sys\nfrom obsrepo.cli import run\nsys.argv = ['obsrepo', 'check']\n"
             "import atexit, os\n"
             "loaded = lambda: print(sorted(m for m in sys.modules if m.startswith(('obsrepo.ops.', 'obsrepo.cli.', 'obsrepo.index.'))))\n"
             "os._exit = (lambda real: (lambda code: (loaded(), sys.stdout.flush(), real(code))))(os._exit)\n"
             "run()\n")
    proc = repo.run(sys.executable, "-c", probe, check=False)
    modules = proc.stdout.strip().splitlines()[-1]
    for heavy in ("obsrepo.ops.reads", "obsrepo.ops.entities", "obsrepo.ops.writes", "obsrepo.ops.publication", "obsrepo.ops.adopt",
                  "obsrepo.cli.reads", "obsrepo.cli.steward", "obsrepo.cli.publish",
                  # where the index lives is all check asks of it (its reader and writer are DuckDB's side)
                  "obsrepo.index.reader", "obsrepo.index.engine", "obsrepo.index.writer"):
        assert f"'{heavy}'" not in modules, (heavy, modules)
    assert "'obsrepo.cli.gate'" in modules and "'obsrepo.ops.review'" in modules, modules
