"""Every shell example of README.md and of the documentation (docs/, the generated reference
aside) runs on the demo data, as a newcomer would run it.

The convention, for whoever writes README.md or a page under docs/:

* Every fenced shell block (```sh, ```bash, ```shell) is read. A command is one line with its `\\` continuations; comment
  lines are skipped, and so is a trailing `# …` comment.
* The commands that run obsrepo — those starting with `obsrepo `, or piping into it
  (`echo … | obsrepo …`) — are run, block after block, README.md first and then the pages of
  docs/ by path, in one fresh clone of this repository (the demo data is its own
  `observations/`, `comprehension/` and `schemas/`), with `obsrepo` being `python -m obsrepo`
  (a plain `obsrepo …` line, without pipes, redirections, variables or assignments, runs through
  the same entry in the test's own process, as tests/helpers.py `in_process` runs the CLI).
  What they write stays in that throwaway clone, so a page may build on what an earlier one
  wrote. A command that an earlier page already ran, after the same assignments, runs once.
* A line `NAME=$(…)` is kept and run before each later command of its block (the review example
  names a commit that way). Other commands (`git push`, `gh`, `pip`) are not run: they need a
  remote or the network.
* A block preceded by an HTML comment `<!-- examples: not run (why) -->` is skipped whole.
* A command is expected to exit 0, unless it ends with `# exit N`, and to show something: print
  on stdout or stderr, or write the file it names (`> FILE`, `--output`); an example that finds
  nothing ("No comprehensions found.") teaches nothing.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import git_env, in_process

ROOT = Path(__file__).resolve().parent.parent
# README first, then every page of docs/ but the generated reference (no shell examples: each
# command's own examples are click's, run by tests/test_cli.py's help test)
PAGES = [ROOT / "README.md", *sorted(path for path in (ROOT / "docs").rglob("*.md")
                                   if path.relative_to(ROOT / "docs").parts[0] != "reference")]
SHELL_FENCES = {"```sh", "```bash", "```shell"}
PLAIN = re.compile(r"^obsrepo [^|<>$`;&()\\]*$")  # one obsrepo command and its words, nothing for a shell to do
SKIP = re.compile(r"^<!-- examples: not run \(.+\) -->$")
EXPECTED_EXIT = re.compile(r"#\s*exit (\d+)\s*$")
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\$\(")
RUNS_OBSREPO = re.compile(r"^obsrepo |\|\s*obsrepo ")
WRITES_A_FILE = re.compile(r" > | --output ")
FOUND_NOTHING = re.compile(r"^No \w+( found)?\.$")


@dataclass(frozen=True)
class Example:
    line: int  # where the command starts in its page
    command: str
    setup: tuple[str, ...]  # the block's assignments before it
    exit_code: int


def _commands(block: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line, command) with continuations joined and comment lines dropped."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, text in block:
        if pending is None and (not text.strip() or text.lstrip().startswith("#")):
            continue
        start, joined = pending or (number, "")
        joined += text.rstrip()
        if joined.endswith("\\"):
            pending = (start, joined[:-1] + " ")
            continue
        pending = None
        out.append((start, joined))
    return out


def readme_examples(text: str) -> list[Example]:
    examples: list[Example] = []
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        if lines[number].strip() not in SHELL_FENCES:
            number += 1
            continue
        skipped = number > 0 and SKIP.match(lines[number - 1].strip())
        block: list[tuple[int, str]] = []
        number += 1
        while lines[number].strip() != "```":
            block.append((number + 1, lines[number]))
            number += 1
        if skipped:
            continue
        setup: list[str] = []
        for start, command in _commands(block):
            if ASSIGNMENT.match(command):
                setup.append(command)
            elif RUNS_OBSREPO.search(command):
                expected = EXPECTED_EXIT.search(command)
                examples.append(Example(start, command, tuple(setup), int(expected.group(1)) if expected else 0))
    return examples


def test_the_reader_finds_commands_continuations_assignments_and_skips():
    text = ("<!-- examples: not run (the network) -->\n```sh\nobsrepo index\n```\n"
            "```sh\n# a comment\nC=$(git log -1 --format=%H)\nobsrepo new --source a \\\n    --event b  # → a path\n"
            "echo '{}' \\\n    | obsrepo new --json -\ngit push origin x\nobsrepo check  # exit 1\n```\n")
    found = readme_examples(text)
    assert [(e.line, e.exit_code, e.setup) for e in found] == [
        (8, 0, ("C=$(git log -1 --format=%H)",)), (10, 0, ("C=$(git log -1 --format=%H)",)),
        (13, 1, ("C=$(git log -1 --format=%H)",))]
    assert found[0].command == "obsrepo new --source a      --event b  # → a path"


@pytest.fixture(scope="module")
def demo_clone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh clone of this repository on a branch `main`, its index built once, and the
    environment that makes `obsrepo` this checkout's `python -m obsrepo`."""
    folder = tmp_path_factory.mktemp("readme")
    home, bin_dir, clone = folder / "home", folder / "bin", folder / "clone"
    home.mkdir()
    bin_dir.mkdir()
    (bin_dir / "obsrepo").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m obsrepo "$@"\n')
    (bin_dir / "obsrepo").chmod(0o755)
    env = git_env(home, folder)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT / 'tooling'}:{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(ROOT / "tooling")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], env=env, check=True, capture_output=True)
    subprocess.run(["git", "checkout", "-q", "-B", "main"], cwd=clone, env=env, check=True, capture_output=True)
    built = subprocess.run(["obsrepo", "index", "--quiet"], cwd=clone, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return clone, env


def test_every_shell_example_of_the_readme_and_the_docs_runs_on_the_demo_data(demo_clone):
    clone, env = demo_clone
    examples = [(page, example) for page in PAGES for example in readme_examples(page.read_text("utf-8"))]
    assert len({example.command for _, example in examples}) >= 40, "the reader lost the examples"
    assert {page.name for page, _ in examples} >= {"README.md", "tutorial.md", "howto.md", "adopt.md"}
    failed, ran = [], set()
    for page, example in examples:
        script = "\n".join([*example.setup, example.command])
        if script in ran:
            continue
        ran.add(script)
        proc = _run(script, example, clone, env)
        shown = proc.stdout.strip() or proc.stderr.strip() or WRITES_A_FILE.search(example.command)
        if proc.returncode != example.exit_code or not shown or FOUND_NOTHING.match(proc.stdout.strip()):
            failed.append(f"{page.relative_to(ROOT)}:{example.line}: exit {proc.returncode} (expected {example.exit_code}): "
                          f"{example.command}\n{proc.stderr.strip()[-600:]}")
    assert not failed, "\n\n".join(failed)


def _run(script: str, example: Example, clone: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The example as bash runs it; a plain `obsrepo …` line through the program's entry in process."""
    if not example.setup and PLAIN.match(example.command):
        words = shlex.split(example.command, comments=True)
        return in_process(words[1:], cwd=clone, env=env)
    return subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
