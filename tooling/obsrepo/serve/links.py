"""Where a page's links lead: to the server's pages (absolute paths that keep `?at=`), or, in
the static preview, to the files written beside the page (relative paths, so the pages work
opened from the file system and from a downloaded artifact; an id whose page was not written
stays text).

Templates call `links.id(kind, name)` for every id they show: one place decides whether it is a
link, and where to."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from markupsafe import Markup, escape

# what `quote` leaves as it is (letters, digits, `_.-~`, and the readable `/:@`): most ids are only
# that, and a page shows hundreds of them
_KEPT = re.compile(r"[A-Za-z0-9_.~/:@-]*").fullmatch


def path(text: str) -> str:
    """A path segment kept readable (`company/acme` stays), everything else percent-encoded."""
    return text if _KEPT(text) else quote(text, safe="/:@")


class Links:
    """The server's links: `/KIND/NAME`, keeping the page's `?at=` (or pinning `at`)."""

    searchable = True
    style = "/static/style.css"
    icon = "/static/icon.svg"

    def __init__(self, keep: str = "") -> None:
        self.keep = keep  # "?at=…" when the page was asked with one

    @property
    def home(self) -> str:
        return "/" + self.keep

    def href(self, kind: str, name: str, at: str | None = None) -> str | None:
        return f"/{kind}/{path(name)}" + ("?" + urlencode({"at": at}) if at else self.keep)

    def id(self, kind: str, name: str | list[str] | None, at: str | None = None) -> Markup:
        """The id, monospaced, a link to its page where there is one (several ids: each, by a
        space: a merged array's field has every observation that gave it a value)."""
        if isinstance(name, list):
            return Markup(" ").join(self.id(kind, one, at) for one in name)
        if not name:
            return Markup("")
        target = self.href(kind, name, at)
        if target is None:
            return self.plain(name)
        # escaped by hand rather than by Markup.format: a busy entity's page shows thousands of ids
        return Markup(f'<a class="id" href="{escape(target)}">{breakable(name)}</a>')


    def search(self, **given: str) -> str:
        """The search page narrowed by `given` filters, at the page's commit."""
        return "/search?" + urlencode({**given, **dict(parse_qsl(self.keep.removeprefix("?")))})

    def identities(self, request: Any = None, offset: int = 0) -> str:
        """The identity review page (its filters kept, from `offset`), at the page's commit."""
        given = {} if request is None else {k: v for k, v in (("type", request.entity_type), ("min", request.min_score))
                                            if v is not None}
        query = {**{k: str(v) for k, v in given.items()}, **({"offset": str(max(offset, 0))} if offset else {}),
                 **dict(parse_qsl(self.keep.removeprefix("?")))}
        return "/identities" + ("?" + urlencode(query) if query else "")

    def review(self, commit: str) -> str | None:
        """The review page of the one commit `commit` (against its first parent)."""
        return f"/diff/{commit}~1..{commit}"

    @staticmethod
    def plain(name: str) -> Markup:
        """The id, monospaced, no link (a page that does not exist: a deleted belief, say)."""
        return Markup(f'<span class="id">{breakable(name)}</span>')


class FileLinks(Links):
    """The static preview's links, relative from a page `depth` folders below the preview's root,
    to the pages `written` ((kind, name) pairs): `entity/company/acme.html`."""

    searchable = False

    def __init__(self, depth: int, written: Collection[tuple[str, str]]) -> None:
        super().__init__("")
        self.up = "../" * depth
        self.written = written
        self.style = self.up + "style.css"
        self.icon = self.up + "icon.svg"

    @property
    def home(self) -> str:
        return self.up + "index.html"

    def review(self, commit: str) -> str | None:
        return None  # the preview holds one review, its index.html

    def href(self, kind: str, name: str, at: str | None = None) -> str | None:
        if (kind, name) not in self.written:
            return None
        return self.up + link_path(file_name(kind, name))


def breakable(name: str) -> str:
    """The id escaped, a line may break only after its `-` and `/` (the style sheet keeps an id
    whole otherwise): `obs-20260213-…` never splits inside a number."""
    return str(escape(name)).replace("-", "-<wbr>").replace("/", "/<wbr>")


def file_name(kind: str, name: str) -> str:
    """The page's file below the preview's root: `KIND/NAME.html`, each segment of the name
    percent-encoded to ASCII letters, digits and `_.-~%` (safe on every file system, and no
    segment `.` or `..`: nothing leaves the folder; a name with an empty, `.` or `..` segment is
    one file, its `/` encoded too). A link to it is `link_path` of this name."""
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"{kind}/{quote(name, safe='').replace('.', '%2E')}.html"
    return f"{kind}/{'/'.join(quote(part, safe='') for part in parts)}.html"


def link_path(file: str) -> str:
    """The relative URL of a file `file_name` gave: its `%` encoded, so a browser that decodes
    the link finds the file by its name exactly."""
    return quote(file, safe="/")
