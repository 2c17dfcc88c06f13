"""`obsrepo init [DIR]` (docs/design.md §18): a data repository that `check` passes and whose
pre-commit hook runs under the real `pre-commit`; idempotent, never replacing a user's file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import observation

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.search(r"__version__ = \"(.+)\"", (ROOT / "tooling" / "obsrepo" / "version.py").read_text(encoding="utf-8"))[1]
MADE = ["README.md", ".pre-commit-config.yaml", ".github/workflows/observations.yml", "schemas/entities/company.yaml",
        ".gitignore"]
FOLDERS = ["observations/", "comprehension/", "schemas/entities/"]


def _init(repo, *args: str) -> dict:
    proc = repo.obsrepo("init", *args, "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _statuses(done: dict) -> dict[str, str]:
    return {item["path"]: item["status"] for item in done["folders"] + done["files"]}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(folder).parts[:1]}


def _activated(repo) -> dict[str, str]:
    """The environment of a user who ran init: the `obsrepo` that ran it first on the PATH (this
    virtual environment's script, or where the package is not installed, the same module)."""
    scripts = Path(sys.executable).parent
    if not (scripts / "obsrepo").is_file():
        scripts = repo.path.parent / "_bin"
        scripts.mkdir(exist_ok=True)
        (scripts / "obsrepo").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m obsrepo "$@"\n', encoding="utf-8")
        (scripts / "obsrepo").chmod(0o755)
    return {**repo.env, "PATH": f"{scripts}{os.pathsep}{repo.env.get('PATH', '')}"}


def test_init_makes_a_repository_that_check_passes_and_pre_commit_runs_the_hook(make_repo):
    repo = make_repo("data", init=False)  # a plain folder: init makes it a git repository
    done = _init(repo)
    assert done["git_init"] is True and Path(done["root"]).resolve() == repo.path.resolve() and (repo.path / ".git").is_dir()
    assert _statuses(done) == {**dict.fromkeys(FOLDERS, "created"), **dict.fromkeys(MADE, "created")}
    assert all((repo.path / f).is_dir() and not any((repo.path / f).iterdir()) for f in FOLDERS[:2])  # every file there is a document
    assert repo.check().returncode == 0 and repo.check().issues == []

    # the configuration as init wrote it, unchanged: the real pre-commit installs the hook and
    # every commit runs `obsrepo check --staged`, with nothing fetched from the network
    env = _activated(repo)
    written = repo.read(".pre-commit-config.yaml")
    hook = [sys.executable, "-m", "pre_commit"]
    installed = subprocess.run([*hook, "install"], cwd=repo.path, env=env, capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    repo.add(observation("obs-20260213-102500-0001"))
    repo.git("add", "-A")
    first = subprocess.run(["git", "commit", "-q", "-m", "obsrepo init"], cwd=repo.path, env=env, capture_output=True,
                           text=True, check=False)
    assert first.returncode == 0 and re.search(r"obsrepo check .*Passed", first.stdout + first.stderr), first
    assert repo.git("log", "--format=%s").strip() == "obsrepo init"

    bad = observation("obs-20260213-102500-0002", colour="red")
    repo.add(bad)
    repo.git("add", "-A")
    refused = subprocess.run(["git", "commit", "-q", "-m", "a bad one"], cwd=repo.path, env=env, capture_output=True,
                             text=True, check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1 and re.search(r"obsrepo check .*Failed", said) and bad.path in said, said
    assert f"{bad.path}:7:1 VALIDATION_ERROR unknown key 'colour'" in said, said
    assert repo.git("log", "--format=%s").strip() == "obsrepo init"  # the commit was refused
    ran = subprocess.run([*hook, "run", "--files", bad.path], cwd=repo.path, env=env, capture_output=True, text=True,
                         check=False)
    assert ran.returncode == 1 and bad.path in ran.stdout, ran.stdout
    assert repo.read(".pre-commit-config.yaml") == written


def test_init_makes_a_missing_folder_in_no_repository_a_repository(make_repo):
    plain = make_repo("plain", init=False)
    done = _init(plain, "new/data")
    assert done["git_init"] is True and (plain.path / "new" / "data" / ".git").is_dir()
    assert not (plain.path / ".git").exists() and _files(plain.path / "new" / "data").keys() == set(MADE)
    text = plain.obsrepo("init", "other")
    assert text.returncode == 0 and "(it was in no git repository)" in text.stdout, text.stdout


def test_the_workflow_and_the_hook_configuration_satisfy_their_schemas(repo):
    _init(repo)
    workflow = repo.path / ".github" / "workflows" / "observations.yml"
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(workflow)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = yaml.safe_load(workflow.read_text(encoding="utf-8"))["jobs"]["check"]["steps"]
    action = next(s for s in steps if s["uses"].startswith("obsrepo/"))
    # the review in the job summary, the inspector's preview as an artifact
    assert action == {"uses": f"obsrepo/obsrepo@v{VERSION}", "with": {"review": "true", "preview": "true"}}
    inputs = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    assert set(action["with"]) <= set(inputs)  # every input the workflow gives, the Action takes
    assert steps[0]["with"]["fetch-depth"] == 0  # immutability needs the base's history
    from pre_commit import clientlib

    config = clientlib.load_config(str(repo.path / ".pre-commit-config.yaml"))
    published = {h["id"]: h for h in clientlib.load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    # a local hook (no release to install from) that checks exactly what the published one does:
    # the same entry, files and run conditions, every default pre-commit fills in included
    (local,) = config["repos"]
    (hook,) = local["hooks"]
    assert local["repo"] == "local" and hook["id"] in published
    # `system`: every pre-commit from 3 on reads it (4.4 and later call it `unsupported`)
    assert yaml.safe_load(repo.read(".pre-commit-config.yaml"))["repos"][0]["hooks"][0]["language"] == "system"
    differ = {key for key in hook.keys() | published[hook["id"]].keys() if hook.get(key) != published[hook["id"]].get(key)}
    assert differ <= {"language", "description"}, differ


def test_init_again_changes_nothing_and_keeps_what_the_user_changed(repo):
    _init(repo)
    first = _files(repo.path)
    again = _init(repo)
    assert again["git_init"] is False
    assert _statuses(again) == {**dict.fromkeys(FOLDERS, "exists"), **dict.fromkeys(MADE, "unchanged")}
    assert _files(repo.path) == first

    repo.write("README.md", "# Our observations\n")
    repo.write(".gitignore", "node_modules/")  # no final newline
    (repo.path / ".github" / "workflows" / "observations.yml").unlink()
    (repo.path / "comprehension").rmdir()
    third = _init(repo)
    assert _statuses(third) == {**_statuses(again), "README.md": "kept", ".gitignore": "extended",
                                ".github/workflows/observations.yml": "created", "comprehension/": "created"}
    assert repo.read("README.md") == "# Our observations\n"
    assert repo.read(".gitignore").startswith("node_modules/\n") and ".obsrepo/" in repo.read(".gitignore").splitlines()
    assert _files(repo.path)[".github/workflows/observations.yml"] == first[".github/workflows/observations.yml"]
    assert _statuses(_init(repo))[".gitignore"] == "unchanged"
    text = repo.obsrepo("init")
    assert text.returncode == 0 and "kept       README.md (yours: left as it is)" in text.stdout, text.stdout
    assert "git init" not in text.stdout


def test_init_in_a_repository_with_history_keeps_its_history(repo):
    doc = observation("obs-20260213-102500-0001")
    repo.add(doc)
    repo.write(".gitignore", "/.obsrepo\n")
    head = repo.commit("base")
    done = _init(repo)
    assert done["git_init"] is False and repo.sha() == head and _statuses(done)[".gitignore"] == "unchanged"
    assert _statuses(done)["observations/"] == "exists" and repo.check().issues == []


def test_init_refuses_a_folder_below_a_repositorys_top_and_a_file(repo):
    repo.write("notes.txt", "x\n")
    for name, says in (("sub/data", "is inside the git repository"), ("notes.txt", "is a file")):
        proc = repo.obsrepo("init", name, "--format", "json")
        error = json.loads(proc.stdout)["error"]
        assert proc.returncode == 2 and error["code"] == "VALIDATION_ERROR", proc.stdout
        assert error["details"]["parameter"] == "DIR" and error["message"].startswith(f"DIR '{name}' {says}"), error
    assert sorted(p.name for p in repo.path.iterdir()) == [".git", "notes.txt"]  # nothing written


def test_a_file_where_a_folder_should_be_is_a_write_error_and_the_rest_is_whole(repo):
    repo.write(".github", "not a folder\n")
    proc = repo.obsrepo("init", "--format", "json")
    error = json.loads(proc.stdout)["error"]
    assert proc.returncode == 4 and error["code"] == "WRITE_ERROR", proc.stdout
    assert error["details"]["blocker"].endswith(".github") and "where a folder should be" in error["message"]
    assert repo.read(".github") == "not a folder\n"
    assert not [p for p in repo.path.rglob("*.tmp")]  # no partial file anywhere


def test_the_mcp_client_configuration_of_the_readme_init_writes_starts_the_server(repo):
    """The README stub's MCP client configuration is JSON a client reads, and the server it names
    starts in the repository and lists its tools to the MCP SDK's own client."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    _init(repo)
    (block,) = re.findall(r"```json\n(.*?)```", repo.read("README.md"), flags=re.S)
    (server,) = json.loads(block)["mcpServers"].values()
    assert server["command"] == "obsrepo" and server["args"] == ["mcp"] and server["cwd"] == "/path/to/this/repository"
    repo.add(observation("obs-20260213-102500-0001"))
    repo.commit("a first observation")

    async def tools() -> set[str]:
        # `obsrepo` is this checkout's `python -m obsrepo`; the folder is the repository init made
        params = StdioServerParameters(command=sys.executable, args=["-m", "obsrepo", *server["args"]], cwd=str(repo.path),
                                       env=repo.env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            return {tool.name for tool in listed.tools}

    assert {"observation_query", "check_document", "record_observation"} <= anyio.run(tools)


def test_init_refuses_a_bare_repository_and_a_git_folder_and_writes_nothing(make_repo):
    """§8b "init touches only what it owns": a bare repository (or a repository's .git) has no
    work tree; init there is exit 4 naming it, and leaves it as it was."""
    plain = make_repo("plain", init=False)
    plain.run("git", "init", "-q", "--bare", "shared.git")
    plain.run("git", "init", "-q", "work")
    for name, says, git_dir in (("shared.git", "is in the bare repository", "shared.git"),
                                ("shared.git/refs/new", "is in the bare repository", "shared.git"),
                                ("work/.git", "is inside", "work/.git")):
        before = _files(plain.path)
        proc = plain.obsrepo("init", name, "--format", "json")
        error = json.loads(proc.stdout)["error"]
        assert proc.returncode == 4 and error["code"] == "GIT_ERROR", proc.stdout
        assert error["message"].startswith(f"dir '{name}' {says}") and error["details"]["git_dir"] in error["message"]
        assert Path(error["details"]["git_dir"]).resolve() == (plain.path / git_dir).resolve()
        assert _files(plain.path) == before and not (plain.path / "shared.git" / "observations").exists()
        assert not (plain.path / "shared.git" / "refs" / "new").exists()


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "folder"])
def test_init_refuses_a_gitignore_that_is_no_regular_file_and_writes_nothing(repo, kind):
    """The one file init edits is never replaced: a symlink (git does not read one either) or a
    folder is exit 4 naming it, before any other file is written."""
    target = repo.path.parent / "shared-ignores"
    target.write_text("*.log\n", encoding="utf-8")
    link = repo.path / ".gitignore"
    if kind == "folder":
        link.mkdir()
    else:
        link.symlink_to(target if kind == "symlink" else repo.path.parent / "missing")
    proc = repo.obsrepo("init", "--format", "json")
    error = json.loads(proc.stdout)["error"]
    assert proc.returncode == 4 and error["code"] == "WRITE_ERROR", proc.stdout
    assert error["details"]["path"].endswith(".gitignore") and ".gitignore" in error["message"], error
    assert error["details"]["reason"] == ("not a regular file" if kind == "folder" else "a symlink")
    assert link.is_dir() if kind == "folder" else link.is_symlink()
    assert target.read_text(encoding="utf-8") == "*.log\n"
    assert sorted(p.name for p in repo.path.iterdir()) == [".git", ".gitignore"]  # nothing else written


def test_init_appends_the_missing_line_to_the_users_gitignore_in_place(repo):
    """Appended in place: the same file (inode, permissions, a hard link to it sees the line)."""
    ignore = repo.path / ".gitignore"
    ignore.write_text("node_modules/\n", encoding="utf-8")
    ignore.chmod(0o640)
    twin = repo.path.parent / "ignore-twin"
    twin.hardlink_to(ignore)
    inode = ignore.stat().st_ino
    assert _statuses(_init(repo))[".gitignore"] == "extended"
    assert ignore.stat().st_ino == inode and oct(ignore.stat().st_mode & 0o777) == oct(0o640)
    assert twin.read_text(encoding="utf-8") == ignore.read_text(encoding="utf-8")
    assert ignore.read_text(encoding="utf-8").startswith("node_modules/\n") and ".obsrepo/" in ignore.read_text().splitlines()


def test_every_shell_example_of_the_readme_init_writes_runs_in_the_repository_it_made(make_repo):
    """The README stub's commands, block after block, in the repository init made, as its reader
    runs them (tests/test_readme_examples.py's reading of a page): each exits 0, the commits go
    through the hook, and the reads find the observation the README records. `pip install`
    lines are not run: they need the network, and what they install is installed here."""
    from test_readme_examples import _commands

    repo = make_repo("data", init=False)
    _init(repo)
    env = _activated(repo)
    blocks = re.findall(r"```sh\n(.*?)```", repo.read("README.md"), flags=re.S)
    commands = [command for block in blocks for _, command in _commands(list(enumerate(block.splitlines(), 1)))]
    assert [c.split("#")[0].strip() for c in commands if c.startswith("obsrepo ")] == [
        "obsrepo new --source human/alice --event \"Acme signed the contract\" --entity company/acme --field status=customer",
        "obsrepo check", "obsrepo snapshot company/acme", "obsrepo query --entity company/acme"]
    said: dict[str, str] = {}
    for command in commands:
        if command.startswith("pip "):
            continue
        proc = subprocess.run(["bash", "-c", command], cwd=repo.path, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
        said[command.split("#")[0].split(" --")[0].strip()] = proc.stdout + proc.stderr
    assert re.search(r"obsrepo check .*Passed", said["git add observations && git commit -m \"observations: Acme signed\""])
    (recorded,) = (repo.path / "observations").rglob("*.md")
    assert repo.git("ls-files", "observations").strip() == recorded.relative_to(repo.path).as_posix()  # committed
    snapshot = json.loads(said["obsrepo snapshot company/acme"])
    assert snapshot["snapshot"] == {"status": "customer"} and snapshot["provenance"] == {"status": recorded.stem}
    assert said["obsrepo query"].rstrip().endswith("] Acme signed the contract"), said["obsrepo query"]
