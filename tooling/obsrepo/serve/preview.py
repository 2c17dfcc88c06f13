"""`obsrepo serve --static DIR BASE..HEAD`: the review of a change and the pages of everything
it touches, written as files (docs/design.md §17), so a pull request's reviewers can browse
"the repository after this change" from a CI artifact, with no server.

    DIR/index.html                       the review page of BASE..HEAD
    DIR/entity/TYPE/KEY.html             every entity the change touches, at HEAD
    DIR/observation/ID.html              every observation it adds, loses or retracts
    DIR/comprehension/ID.html            every belief it adds or edits
    DIR/style.css, DIR/icon.svg          the style sheet and the icon

The pages are the server's, from the same templates; their links are relative (they work from
the file system and from an unpacked artifact), and an id whose page was not written stays text.
Each file is written whole to a temporary name beside it, then renamed over the old one: a
reader never sees half a page.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import EnvironmentFault, NotFoundError, UsageError
from ..ops import Session
from .app import HERE, templates
from .links import FileLinks, file_name
from .pages import PAGES, Answer, Ask, review

ASSETS = ("style.css", "icon.svg")


def touched(review_json: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of every page the review leads to, in a stable order."""
    found: set[tuple[str, str]] = set()
    for entry in review_json["entities"]:
        found.update(("entity", name) for name in (entry["entity_id"], entry.get("into")) if name)
    for losing in review_json["losing"]:
        found.add(("observation", losing["observation_id"]))
        found.add(("entity", losing["entity_id"]))
    for retraction in review_json["retracted"]:
        found.update(("observation", name) for name in (retraction["observation_id"], retraction["target"]))
        if retraction.get("entity_id"):
            found.add(("entity", retraction["entity_id"]))
    for relation in review_json["relations"]:
        found.update(("entity", name) for name in (relation.get("source_entity_id"), relation["target_entity_id"]) if name)
    found.update(("observation", name) for name in review_json["added"])
    found.update(("comprehension", c["id"]) for c in review_json["comprehensions"] if c["change"] != "deleted")
    return sorted(found)


def write_preview(session: Session, directory: str, given_range: str) -> dict[str, Any]:
    """Write the preview of `given_range` (`BASE..HEAD`) into `directory` (made when missing);
    {directory, pages, review} for the caller to report."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise UsageError(f"static {directory} is not a folder", parameter="static")
    shown = review(session, Ask(given_range, {}, None))
    head = shown.json["head"]
    answers: dict[tuple[str, str], Answer] = {}
    with session.together():  # every page reads HEAD through one scope: its overlay built once, each entity reduced once
        for kind, name in touched(shown.json):
            try:
                answers[(kind, name)] = PAGES[kind](session, Ask(name, {}, head))
            except NotFoundError:
                continue  # hidden from this server's binding or ceiling, or gone at HEAD: its id stays text
    env = templates()
    pages = {"index.html": shown, **{file_name(kind, name): answer for (kind, name), answer in answers.items()}}
    try:
        root.mkdir(parents=True, exist_ok=True)
        for relative, answer in pages.items():
            links = FileLinks(relative.count("/"), answers.keys())
            html = env.get_template(answer.template).render(**answer.context, keep="", links=links, twin=None, query={})
            _write_whole(root / relative, html.encode("utf-8"))
        for asset in ASSETS:
            _write_whole(root / asset, (HERE / "static" / asset).read_bytes())
    except OSError as exc:
        raise EnvironmentFault(f"cannot write the preview into {directory}: {exc.strerror or exc}", path=directory) from None
    return {"directory": str(root), "pages": len(pages), "review": shown.json}


def _write_whole(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

