"""Every section of the design that the code, the tests, the tools or the documentation cite
exists: `docs/design.md §N` (and `§N.M`, `§Na`) names a heading of a page under docs/design/,
and the index page docs/design.md keeps a heading for it that links to that page. A citation
that names a point too (`§8b "A kept-open writer heals"`, `docs/design.md, "The door"`) finds it
written there. So a section can move between pages, but never silently disappear."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design"
INDEX = ROOT / "docs" / "design.md"
CITING = ("tooling", "tests", "tools", "docs", "bench")
SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".html", ".txt"}

HEADING = re.compile(r"^#+ (\d+[a-z]?(?:\.\d+)?)\.? ", re.M)
# a section, optionally a range's end (`§2–3`, `§14–§18`), optionally a quoted point of it
CITATION = re.compile(r"§ ?(\d+[a-z]?(?:\.\d+)?)(?:[–-]§?(\d+[a-z]?(?:\.\d+)?))?(?:,? \"([^\"\n]+)\")?")
NAMED = re.compile(r"design\.md, \"([^\"\n]+)\"")


def _sources() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in CITING:
        files += [p for p in sorted((ROOT / top).rglob("*")) if p.suffix in SUFFIXES and p.is_file()
                  and "__pycache__" not in p.parts]
    return files


def _pages() -> dict[str, str]:
    return {page.name: page.read_text("utf-8") for page in sorted(DESIGN.glob("*.md"))}


def _sections(pages: dict[str, str]) -> dict[str, str]:
    """Section number → the page whose heading it is."""
    found: dict[str, str] = {}
    for name, text in pages.items():
        for number in HEADING.findall(text):
            assert number not in found, f"§{number} is a heading of both {found[number]} and {name}"
            found[number] = name
    return found


def _citations() -> list[tuple[str, str, str | None]]:
    """(where, section, the point it names or None) for every citation of a section."""
    cited = []
    for path in _sources():
        text = path.read_text("utf-8", errors="replace")
        where = str(path.relative_to(ROOT))
        for match in CITATION.finditer(text):
            cited.append((where, match.group(1), match.group(3)))
            if match.group(2):
                cited.append((where, match.group(2), None))
    return cited


def test_the_pages_hold_the_sections_and_the_index_names_each() -> None:
    pages = _pages()
    sections = _sections(pages)
    index = INDEX.read_text("utf-8")
    for number in (str(n) for n in range(1, 21)):
        assert number in sections, f"§{number} has no page under docs/design/"
    for number, page in sections.items():
        if "." in number:
            continue  # a subsection: the index links it under its section
        assert re.search(rf"^#+ {re.escape(number)}\. ", index, re.M), f"docs/design.md has no heading for §{number}"
        assert f"(design/{page}" in index, f"docs/design.md does not link {page}"


def test_every_cited_section_exists() -> None:
    pages = _pages()
    sections = _sections(pages)
    citations = _citations()
    assert len(citations) > 200  # the code cites the design everywhere; none found means the pattern broke
    missing = sorted({f"{where}: §{number}" for where, number, _ in citations if number not in sections})
    assert not missing, "cited sections that no design page holds:\n" + "\n".join(missing)


def test_every_named_point_is_written_in_its_section() -> None:
    pages = _pages()
    sections = _sections(pages)
    wrong = []
    for where, number, point in _citations():
        if point and number in sections:
            words = " ".join(point.split()).lower()
            if words not in " ".join(pages[sections[number]].split()).lower():
                wrong.append(f'{where}: §{number} "{point}"')
    for path in _sources():
        for point in NAMED.findall(path.read_text("utf-8", errors="replace")):
            if not any(point.lower() in text.lower() for text in pages.values()):
                wrong.append(f'{path.relative_to(ROOT)}: "{point}"')
    assert not wrong, "named points the design does not hold:\n" + "\n".join(sorted(set(wrong)))


@pytest.mark.parametrize("example", ["docs/design.md §2.7", "§8b", "§14–§18", '§8b "A kept-open writer heals"'])
def test_the_pattern_reads_each_form_of_citation(example: str) -> None:
    assert CITATION.search(example)
