"""`init`: make a folder a data repository, or complete one (docs/design.md §18).

The files come from the package's templates (`templates/init/`), with this release's version
as the Action's tag. The pre-commit hook is a local one running the `obsrepo` of the
environment that commits (the one that ran init): a hook pre-commit installs itself needs a
published release to install from, and the first commit must work where init ran.

Init touches only what it owns (§8b). Each file is written whole or not at all (§8a) and only
where there is none: a file that exists with other content is the user's and is kept, so init
run again changes nothing. `.gitignore` is the one file init adds to: the line it needs, when
missing, appended in place; a `.gitignore` that is a symlink or no regular file is refused
before anything is written, never replaced. No file goes into `observations/` or
`comprehension/`, since every file there is a document. A bare repository (or a repository's
`.git` folder) has no work tree for observations: refused, nothing written.

Not in the registry: every registered operation runs on a Session of an existing repository,
and init may have to make the repository first.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from ..errors import GitError, UsageError, WriteFault
from ..files import append_to, make_folders, write_new
from ..gitstore import Git
from ..version import __version__
from .registry import Answer

FOLDERS = ("observations", "comprehension", "schemas/entities")
# the template's name → the file's path in the data repository
FILES = {
    "README.md": "README.md",
    "pre-commit-config.yaml": ".pre-commit-config.yaml",
    "observations.yml": ".github/workflows/observations.yml",
    "company.yaml": "schemas/entities/company.yaml",
}
IGNORED = ".obsrepo"  # the index and its logs: rebuilt from git, never committed


@dataclass(frozen=True)
class Init:
    dir: str = "."


class Initialized(Answer):
    """{root, git_init, folders: [{path, status}], files: [{path, status}]}: a folder `created`
    or `exists`; a file `created`, `unchanged` (it already says what init would), `kept` (it
    says something else: left as it is) or `extended` (`.gitignore`: the missing line added)."""


def template(name: str) -> bytes:
    """A template of a data repository's file, for this release."""
    from importlib import resources

    text = resources.files("obsrepo").joinpath("templates").joinpath("init").joinpath(name).read_text(encoding="utf-8")
    return text.replace("@version@", __version__).encode("utf-8")


def init(request: Init) -> Initialized:
    """The folders and files of a data repository in the folder `request.dir` (made when
    missing); `git init` first when it is in no repository. A folder inside a repository but
    not at its top is refused: obsrepo reads `observations/` at the top of a repository only."""
    folder = os.path.abspath(request.dir)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise UsageError(f"dir '{request.dir}' is a file, not a folder", parameter="dir")
    _refuse_a_git_folder(request.dir, _nearest_existing(folder))
    git = Git.discover(_nearest_existing(folder))
    if git is not None and os.path.realpath(git.root) != os.path.realpath(folder):
        raise UsageError(f"dir '{request.dir}' is inside the git repository at {git.root}, and obsrepo reads "
                         f"observations/ at the top of a repository: run init there (obsrepo init {git.root}), "
                         "or make the folder a repository of its own first (git init)", parameter="dir", root=git.root)
    _editable(os.path.join(folder, ".gitignore"))
    git_init = git is None
    if git is None:
        make_folders(folder)
        git = Git.init(folder)
    root = git.root
    folders = [{"path": f"{name}/", "status": "created" if make_folders(os.path.join(root, name)) else "exists"}
               for name in FOLDERS]
    files = [{"path": path, "status": _place(os.path.join(root, path), template(name))} for name, path in FILES.items()]
    files.append({"path": ".gitignore", "status": _ignore(os.path.join(root, ".gitignore"))})
    return Initialized({"root": root, "git_init": git_init, "folders": folders, "files": files})


def _refuse_a_git_folder(dir: str, existing: str) -> None:
    held = Git.git_folder_holding(existing)
    if held is None:
        return
    git_dir, bare = held
    if bare:
        raise GitError(f"dir '{dir}' is in the bare repository {git_dir}, which has no work tree for observations: "
                       f"run init in a clone of it (git clone {git_dir})", git_dir=git_dir, bare=True)
    top = os.path.dirname(git_dir)
    raise GitError(f"dir '{dir}' is inside {git_dir}, git's own folder of the repository at {top}: "
                   f"run init there (obsrepo init {top})", git_dir=git_dir, bare=False, root=top)


def _editable(path: str) -> None:
    """`.gitignore` is the one file init edits; it must be a regular file (or absent). A symlink
    is never followed nor replaced (git itself does not read a `.gitignore` that is a symlink)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # none yet (a missing folder is made, or refused, later)
        return
    except OSError as exc:
        raise WriteFault(f"cannot read {path}: {exc.strerror or exc}", path=path, reason=exc.strerror or str(exc)) from None
    if stat.S_ISLNK(mode):
        raise WriteFault(f"cannot add the line {IGNORED}/ to {path}: it is a symlink, which init never replaces and git "
                         "does not read; make it a regular file, then run init again", path=path, reason="a symlink")
    if not stat.S_ISREG(mode):
        raise WriteFault(f"cannot add the line {IGNORED}/ to {path}: it is not a regular file; "
                         "make it one, then run init again", path=path, reason="not a regular file")


def _nearest_existing(folder: str) -> str:
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


def _place(path: str, data: bytes) -> str:
    if not os.path.lexists(path) and write_new(path, data):
        return "created"
    return "unchanged" if _read(path) == data else "kept"


def _ignore(path: str) -> str:
    """`.gitignore`: the template where there is none, else the missing line appended."""
    data = template("gitignore")
    if not os.path.lexists(path) and write_new(path, data):
        return "created"
    current = _read(path)
    if current is None:
        return "kept"
    if IGNORED in {line.strip().strip("/") for line in current.decode("utf-8", "replace").splitlines()}:
        return "unchanged"
    _editable(path)  # still a regular file, as it was before anything was written
    separator = b"\n" if current and not current.endswith(b"\n") else b""
    append_to(path, separator + data)
    return "extended"


def _read(path: str) -> bytes | None:
    """The file's bytes; None when it is no regular file or cannot be read."""
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return None
