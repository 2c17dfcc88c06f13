"""Test helpers: valid documents, and real git repositories driven with a pinned environment.

    from helpers import observation, comprehension, obs_id

    doc = observation("obs-20260213-102500-0001", entity="company/acme", fields={"name": "Acme"})
    doc.path        # 'observations/2026/02/13/obs-20260213-102500-0001.md'
    repo.add(doc)   # a Doc is the text itself (a str) that also knows .path and .id

Strings are written as plain YAML scalars when the strict reader reads them back as the same
string, everything else as JSON (valid YAML flow). Each observation's event and body name its
id, so two ids never share content (DUPLICATE_CONTENT) unless a test passes the same `event`
and `body`. The `make_repo` fixture (conftest.py) builds `Repo` objects; helpers here import
nothing of the product, so tests judge it from outside.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

_ID_TIME = re.compile(r"^obs-(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})(?:-|$)")
_DEFAULT_TIMESTAMP = "2026-02-13T10:25:00Z"


class Doc(str):
    """The text of a document; `.path` is where it belongs in a repository, `.id` its id."""

    path: str
    id: str

    def __new__(cls, text: str, *, path: str, id: str) -> Doc:
        doc = super().__new__(cls, text)
        doc.path = path
        doc.id = id
        return doc


def obs_id(n: int, timestamp: str = _DEFAULT_TIMESTAMP) -> str:
    """`obs-YYYYMMDD-HHMMSS-NNNN` for the UTC time of `timestamp`: obs_id(1) == 'obs-20260213-102500-0001'."""
    return f"obs-{_utc(timestamp):%Y%m%d-%H%M%S}-{n:04d}"


def _utc(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(timezone.utc)


def _timestamp_of(doc_id: str) -> str:
    match = _ID_TIME.match(doc_id)
    if not match:
        return _DEFAULT_TIMESTAMP
    y, mo, d, h, mi, s = match.groups()
    return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"


_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./@+:-]*( [A-Za-z0-9_./@+:()-]+)*|\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}:\d{2}))?")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}


def scalar(value: Any) -> str:
    """YAML for `value`: a plain scalar when it reads back as the same string, else JSON (valid YAML)."""
    if (isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _RESERVED
            and ": " not in value and not value.endswith(":")):
        return value
    return json.dumps(value, ensure_ascii=False)


def front_matter(front: dict[str, Any]) -> str:
    return "".join(f"{key}: {scalar(value)}\n" for key, value in front.items())


def observation(id: str = "obs-20260213-102500-0001", timestamp: str | None = None, *, body: str | None = None,
                folder: str | None = None, **front: Any) -> Doc:
    """A valid observation/v1 document at `observations/YYYY/MM/DD/<id>.md` (UTC date of `timestamp`).

    `timestamp` defaults to the time in the id (or 2026-02-13T10:25:00Z); `source` and `event`
    default to values unique to the id; any other keyword becomes a front-matter key (`x_foo`
    is written `x-foo`). `folder` overrides the directory (observations may live in any folder
    under observations/).
    """
    timestamp = timestamp or _timestamp_of(id)
    head: dict[str, Any] = {
        "spec": "observation/v1",
        "id": id,
        "timestamp": timestamp,
        "source": front.pop("source", "agent/test"),
        "event": front.pop("event", f"observed {id}"),
    }
    head.update({key.replace("x_", "x-", 1) if key.startswith("x_") else key: value for key, value in front.items()})
    text = "---\n" + front_matter(head) + "---\n"
    body = f"Details of {id}." if body is None else body
    if body:
        text += f"\n{body}\n"
    folder = folder or f"observations/{_utc(timestamp):%Y/%m/%d}"
    return Doc(text, path=f"{folder}/{id}.md", id=id)


def comprehension(id: str = "comp-test", observations: list[str] | tuple[str, ...] = (), *, version: int = 1,
                  statement: str | None = None, **front: Any) -> Doc:
    """A valid comprehension/v1 document at `comprehension/<id>.md` citing `observations` (all used)."""
    cited = list(observations)
    head: dict[str, Any] = {
        "spec": "comprehension/v1",
        "id": id,
        "topic": front.pop("topic", f"what we believe about {id}"),
        "domain": front.pop("domain", "testing"),
        "created": front.pop("created", "2026-02-13"),
        "updated": front.pop("updated", "2026-02-14"),
        "version": version,
        "prior": front.pop("prior", {"statement": "nothing known", "confidence": "unknown", "source": "assumption"}),
        "observations": cited,
        "posterior": front.pop("posterior", {
            "statement": statement or f"belief {id} v{version}",
            "confidence": "medium",
            "update_reasoning": "the cited observations",
            "observations_used": cited,
        }),
    }
    head.update(front)
    return Doc("---\n" + front_matter(head) + "---\n", path=f"comprehension/{id}.md", id=id)


# --- git repositories --------------------------------------------------------------------

GIT_DATE = "2026-02-13T12:00:00+00:00"


def git_env(home: Path, ceiling: Path) -> dict[str, str]:
    """The environment of every process a test starts: nothing of the user's git or obsrepo setup leaks in.

    Nor a PYTHONDONTWRITEBYTECODE of the caller's shell: with it, each of the suite's thousands of
    `python -m obsrepo` processes compiled the package again (about a third of a short command's
    CPU), where an installed obsrepo runs from cached bytecode."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "OBSREPO_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_AUTHOR_DATE=GIT_DATE,
        GIT_COMMITTER_NAME="Test Committer",
        GIT_COMMITTER_EMAIL="committer@example.com",
        GIT_COMMITTER_DATE=GIT_DATE,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CEILING_DIRECTORIES=str(ceiling),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        LC_ALL="C",
    )
    return env


@dataclass(repr=False)
class CheckResult:
    """`obsrepo check --format json`: the process, and its stdout parsed (None if it is not JSON)."""

    proc: subprocess.CompletedProcess
    data: Any

    @property
    def returncode(self) -> int:
        return self.proc.returncode

    @property
    def issues(self) -> list[tuple[str, str, str]]:
        """(code, rule, path) of every issue, sorted."""
        return sorted((i["code"], i["rule"], i["path"]) for i in (self.data or {}).get("issues", []))

    def __repr__(self) -> str:  # what pytest shows when an assertion about it fails
        return f"exit {self.returncode}\nstdout: {self.proc.stdout}\nstderr: {self.proc.stderr}"


class Repo:
    """A git repository (or a plain folder) in a temporary folder, driven with a pinned environment."""

    def __init__(self, path: Path, env: dict[str, str], factory: Callable[..., Repo]) -> None:
        self.path = path
        self.env = env
        self._factory = factory

    def __repr__(self) -> str:
        return f"Repo({self.path})"

    def run(self, *argv: str, input: str | bytes | None = None, check: bool = True,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        text = not isinstance(input, bytes)
        proc = subprocess.run(argv, cwd=cwd or self.path, env=self.env, input=input, capture_output=True, text=text)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def git(self, *args: str, input: str | None = None) -> str:
        """Run git in the repository; its stdout with the final newline removed. Fails the test on error."""
        return self.run("git", *args, input=input).stdout.rstrip("\n")

    def write(self, relpath: str, content: str | bytes) -> Path:
        """Write a file (creating folders); text is written as UTF-8 exactly as given (no newline translation)."""
        full = self.path / relpath
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return full

    def add(self, *docs: Doc) -> None:
        """Write each document at its own `.path`."""
        for doc in docs:
            self.write(doc.path, doc)

    def read(self, relpath: str) -> str:
        return (self.path / relpath).read_text("utf-8")

    def commit(self, message: str = "change", *, allow_empty: bool = False) -> str:
        """`git add -A` and commit; the new commit's full sha."""
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "-m", message, *(["--allow-empty"] if allow_empty else []))
        return self.sha()

    def sha(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", "--verify", f"{rev}^{{commit}}")

    def clone(self, name: str, *args: str) -> Repo:
        """`git clone ARGS file://<this repo> <name>` next to this repository."""
        target = self._factory(name, init=False)
        target.path.rmdir()
        self.run("git", "clone", "-q", *args, f"file://{self.path}", str(target.path), cwd=self.path.parent)
        return target

    def obsrepo(self, *args: str, input: str | bytes | None = None, cwd: Path | None = None,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """`obsrepo ARGS` in the repository, run in this process (`in_process`); never raises on a
        non-zero exit. Output is text, or bytes when `input` is bytes; `env` adds to the
        repository's environment."""
        return in_process(args, cwd=cwd or self.path, env={**self.env, **(env or {})}, input=input)

    def process(self, *args: str, input: str | bytes | None = None, cwd: Path | None = None,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """`python -m obsrepo ARGS` as a real child process: for the tests whose subject is the
        process itself (exit codes at its boundary, signals, what it imports, its memory)."""
        text = not isinstance(input, bytes)
        return subprocess.run([sys.executable, "-m", "obsrepo", *args], cwd=cwd or self.path,
                              env={**self.env, **(env or {})}, input=input, capture_output=True, text=text, check=False)

    def check(self, *args: str, cwd: Path | None = None) -> CheckResult:
        """`obsrepo check --format json ARGS`, stdout parsed as JSON."""
        proc = self.obsrepo("check", "--format", "json", *args, cwd=cwd)
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            data = None
        return CheckResult(proc, data)


def in_process(args: tuple[str, ...] | list[str], *, cwd: Path, env: dict[str, str],
               input: str | bytes | None = None) -> subprocess.CompletedProcess:
    """`obsrepo ARGS` through the program's own entry (`obsrepo.cli.app.main`) in this process,
    answering as the child process would: its environment is exactly `env` (nothing of this
    process's), its working folder `cwd`, stdin `input` (empty when None, never a terminal),
    stdout and stderr captured as bytes and decoded as the child's pipes are (UTF-8, universal
    newlines) unless `input` is bytes; the exit code is the one the process would exit with.
    What the process does after its answer (`settle`) is done too, so the next command sees
    what a next process would. The environment, folder and streams are put back afterwards."""
    import io

    from obsrepo.cli.app import main
    from obsrepo.ops.surface import settle

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    raw_in = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    out, err = io.BytesIO(), io.BytesIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(raw_in), encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    os.environ.clear()
    os.environ.update(env)
    code: Any = 0
    try:
        os.chdir(cwd)
        try:
            main.main(args=list(args), prog_name="obsrepo")
        except SystemExit as exc:
            code = exc.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        settle()
    finally:
        stdout, stderr = out.getvalue(), err.getvalue()  # before the wrappers, dropped, close them
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
    if isinstance(input, bytes):
        return subprocess.CompletedProcess(["obsrepo", *args], code, stdout, stderr)
    return subprocess.CompletedProcess(["obsrepo", *args], code, _text(stdout), _text(stderr))


def _text(data: bytes) -> str:
    """Bytes of a pipe as `subprocess.run(text=True)` reads them: UTF-8, universal newlines."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


PROPOSALS = "obsrepo/proposals"


def check_branch(repo: Repo, branch: str = PROPOSALS, base: str = "main") -> None:
    """`obsrepo check --base BASE` in a work tree of the branch is clean."""
    where = repo.path.parent / f"wt-{abs(hash(branch))}"
    repo.git("worktree", "add", "-q", "--detach", str(where), branch)
    try:
        result = repo.check("--base", base, cwd=where)
        assert result.returncode == 0 and not result.issues, result
    finally:
        repo.git("worktree", "remove", "--force", str(where))


@contextlib.contextmanager
def hermetic(env: dict[str, str]) -> Iterator[None]:
    """In-process calls see the same environment as the test's git and obsrepo processes:
    no GIT_* or OBSREPO_* of the caller's, and `env` set."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith(("GIT_", "OBSREPO_")):
                mp.delenv(key)
        for key, value in env.items():
            mp.setenv(key, value)
        yield


def fingerprint(repo: Repo, *moving: str) -> dict[str, object]:
    """Everything a write to the proposal branches `moving` (default obsrepo/proposals) must
    leave alone: HEAD, every other ref, git's index and the work tree, byte for byte."""
    moving = moving or (PROPOSALS,)
    files = {}
    for path in sorted(repo.path.rglob("*")):
        rel = path.relative_to(repo.path).as_posix()
        if path.is_file() and not rel.startswith((".git/", ".obsrepo/")):
            files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    refs = [line for line in repo.git("for-each-ref", "--format=%(refname) %(objectname)").splitlines()
            if line.split()[0] not in {f"refs/heads/{branch}" for branch in moving}]
    return {"HEAD": (repo.path / ".git" / "HEAD").read_bytes(), "refs": refs, "files": files,
            "index": (repo.path / ".git" / "index").read_bytes(), "status": repo.git("status", "--porcelain")}


# --- servers: the inspector, the MCP server over HTTP --------------------------------------

def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    """End a process the test started: SIGTERM, then SIGKILL when it does not end in `timeout` s."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


class Server:
    """`obsrepo serve ARGS` on a free port of 127.0.0.1 until `close`."""

    def __init__(self, repo: Repo, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "obsrepo", "serve", "--port", "0", *args], cwd=repo.path,
                                     env={**repo.env, **(env or {})}, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert "obsrepo serve: http://" in line, line + self.proc.stderr.read()
        self.port = int(line.split("http://", 1)[1].split("/")[0].rsplit(":", 1)[1])

    def get(self, path: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method, headers=headers or {})
        try:
            with OPENER.open(request, timeout=60) as response:
                return response.status, dict(response.headers), response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read().decode("utf-8")

    def json(self, path: str, status: int = 200) -> Any:
        code, headers, body = self.get(path)
        assert code == status and headers["content-type"].startswith("application/json"), (path, code, body)
        return json.loads(body)

    def close(self) -> None:
        stop(self.proc)
