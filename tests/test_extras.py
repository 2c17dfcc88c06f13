"""A command whose extra is not installed says which extra and how to install it (docs/design.md §8a).

Each test runs `python -m obsrepo` in an interpreter where some modules cannot be imported: a
`None` in `sys.modules` makes `import name` raise ModuleNotFoundError exactly as an uninstalled
package does, so the CLI meets the absence where a user's installation would.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import Repo, observation

ROOT = Path(__file__).resolve().parent.parent
INDEX = ("duckdb", "duckdb_extension_fts", "pyarrow")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
RELEASE = re.search(r'__version__ = "(.+)"', (ROOT / "tooling" / "obsrepo" / "version.py").read_text(encoding="utf-8"))[1]
# the install that works before the package is on PyPI: the repository of [project.urls] at the release's tag
FROM_GIT = f"pip install 'obsrepo[%s] @ git+{PROJECT['urls']['Repository']}@v{RELEASE}'"


def without(*modules: str) -> str:
    """`python -c` source running obsrepo as if `modules` were not installed."""
    return (f"import sys, runpy; sys.modules.update(dict.fromkeys({modules!r})); sys.argv[0] = 'obsrepo'; "
            "runpy.run_module('obsrepo', run_name='__main__')")


@pytest.fixture
def committed(repo: Repo) -> Repo:
    repo.add(observation("obs-20260213-102500-0001"))
    repo.commit("base")
    return repo


def refusal(repo: Repo, modules: tuple[str, ...], argv: list[str]) -> str:
    """What `obsrepo ARGV` prints without `modules`: exit 4 and one error, before anything else."""
    proc = repo.run(sys.executable, "-c", without(*modules), *argv, input="", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, (argv, out)
    assert "Traceback" not in out and "INTERNAL_ERROR" not in out, (argv, out)
    assert out.startswith(("error: INDEX_ERROR: this command needs the ", '{"error": {"code": "INDEX_ERROR"')), (argv, out)
    return out


def test_without_the_index_extra_check_works_and_index_commands_name_the_extra(committed):
    assert committed.run(sys.executable, "-c", without(*INDEX), "check", check=False).returncode == 0
    for argv in (["index"], ["query", "--scope", "task/42"], ["sql", "SELECT 1"], ["snapshot", "company/acme"],
                 ["entities"]):
        out = refusal(committed, INDEX, argv)
        assert "needs the index extra" in out and "pip install 'obsrepo[index]'" in out, (argv, out)
    proc = committed.run(sys.executable, "-c", without(*INDEX), "index", "--format", "json", check=False)
    assert json.loads(proc.stdout)["error"] == {
        "code": "INDEX_ERROR",
        "message": "this command needs the index extra, which is not installed (duckdb is missing): "
                   f"pip install 'obsrepo[index]' (before obsrepo is on PyPI: {FROM_GIT % 'index'}; "
                   "from a clone: pip install '.[index]')",
        "details": {"missing": "duckdb", "extra": "index", "install": "pip install 'obsrepo[index]'",
                    "install_from_git": FROM_GIT % "index"},
    }


@pytest.mark.parametrize(("modules", "argv", "extra"), [
    (("anyio",), ["mcp"], "mcp"),                     # a dependency of the SDK, imported outside it
    (("mcp",), ["mcp"], "mcp"),
    (("uvicorn",), ["mcp", "--transport", "http", "--port", "0"], "mcp"),
    (INDEX, ["mcp"], "mcp"),                          # the mcp extra brings the index: one command fixes it
    (("watchdog",), ["watch"], "watch"),
    (INDEX, ["watch"], "watch"),                      # so does the watch extra
    (("watchdog",), ["mcp", "--watch"], "watch"),     # the SDK is there; what is missing is the watcher's
    (("starlette",), ["serve", "--port", "0"], "serve"),  # a module the mcp extra brings too: the command's own extra
    (("markdown_it",), ["serve", "--port", "0"], "serve"),
    (("jinja2",), ["serve", "--port", "0"], "serve"),
    (INDEX, ["serve", "--port", "0"], "serve"),       # the serve extra brings the index
], ids=lambda value: " ".join(value) if isinstance(value, (list, tuple)) else value)
def test_a_command_without_its_extra_names_the_extra_and_its_install_command(committed, modules, argv, extra):
    out = refusal(committed, modules, argv)
    assert f"needs the {extra} extra" in out, out
    assert f"pip install 'obsrepo[{extra}]' (before obsrepo is on PyPI: {FROM_GIT % extra}; " \
           f"from a clone: pip install '.[{extra}]')" in out, out


def test_every_extra_that_needs_the_index_includes_it():
    """So that the hint of `watch` and `mcp` is one working command."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for name in ("mcp", "watch", "serve"):
        assert "obsrepo[index]" in extras[name], name
