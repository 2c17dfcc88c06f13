"""A body as HTML a browser may show (docs/design.md §17): CommonMark through markdown-it-py
with raw HTML off (a `<script>` in a body is text), images off (nothing is fetched from
elsewhere), and only http, https and mailto links (a `javascript:` link stays text)."""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urlsplit

LINK_SCHEMES = ("http", "https", "mailto")


def allowed_link(url: str) -> bool:
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return False
    return scheme in LINK_SCHEMES


@cache
def _renderer() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    md.validateLink = allowed_link  # type: ignore[method-assign]  # markdown-it-py's documented hook
    return md


def render(body: str) -> str:
    """The body's HTML; everything it holds that is not Markdown is escaped."""
    return str(_renderer().render(body))
