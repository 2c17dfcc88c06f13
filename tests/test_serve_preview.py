"""The static preview's links resolve for every key (docs/design.md §8b): non-ASCII, reserved
characters, `%` and `..` included. A file is named by `file_name`, and a link is that name with
its `%` encoded, so a browser that decodes the link finds the file; nothing is written outside
the preview's folder.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from helpers import obs_id, observation

pytest.importorskip("jinja2")

KEYS = ["company/café", "person/o'brien", "x/a+b", "x/100%", "x/a#b?c", "x/a&b=c", "x/a/../b", "x/%41", "x/a:b@c",
        "x/ünï/cödé", "x/..", "x/.hidden"]


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [value for name, value in attrs if name in ("href", "src") and value]


def preview(repo, out: Path) -> tuple[str, str]:
    base = repo.commit("empty", allow_empty=True)
    docs = [observation(obs_id(n + 1), entity=key, fields={"name": key},
                        relations=[{"type": "REFERS_TO", "target": KEYS[(n + 1) % len(KEYS)]}]) for n, key in enumerate(KEYS)]
    repo.add(*docs)
    head = repo.commit("every key")
    proc = repo.obsrepo("serve", "--static", str(out), f"{base}..{head}")
    assert proc.returncode == 0, proc.stderr
    return base, head


def test_every_link_of_every_preview_page_resolves_to_a_file_inside_the_preview(make_repo, tmp_path):
    repo = make_repo()
    out = tmp_path / "preview"
    preview(repo, out)
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 1 + 2 * len(KEYS)  # the review, each entity, each observation
    linked: set[Path] = set()
    for page in pages:
        assert page.resolve().is_relative_to(out.resolve()), page
        parser = Links()
        parser.feed(page.read_text("utf-8"))
        for href in parser.hrefs:
            parts = urlsplit(href)
            if parts.scheme:
                continue
            assert not parts.query and not parts.fragment, (page, href)  # a `?` or `#` of a key stays encoded
            target = (page.parent / unquote(parts.path)).resolve()
            assert target.is_file() and target.is_relative_to(out.resolve()), (page.relative_to(out), href)
            linked.add(target)
    entity_pages = {p.resolve() for p in (out / "entity").rglob("*.html")}
    assert entity_pages <= linked  # every entity's page is reached from some page
    review = (out / "index.html").read_text("utf-8")
    assert 'href="entity/company/caf%25C3%25A9.html"' in review  # the file's name, its `%` encoded
    assert (out / "entity" / "company" / "caf%C3%A9.html").is_file()


def test_file_names_and_links_agree_for_any_name():
    """For any name: the file stays below its kind's folder, and the link decodes to it."""
    import random
    import string

    from obsrepo.serve.links import file_name, link_path

    chance = random.Random(5)
    alphabet = string.printable + "é✓\u2028%?#&<>\"'./"
    names = [*KEYS, "a/..", "../x", "a//b", "a/", "/a", ".", "..", "a/./b",
             *("".join(chance.choice(alphabet) for _ in range(chance.randint(1, 16))) for _ in range(3000))]
    seen: dict[str, str] = {}
    for name in names:
        file = file_name("entity", name)
        assert file.isascii() and file.startswith("entity/") and file.endswith(".html"), name
        assert not {".", ".."} & set(file.split("/")) and "" not in file.split("/"), (name, file)
        assert unquote(link_path(file)) == file, name
        assert seen.setdefault(file, name) == name, (name, seen[file])  # two names never share a file
