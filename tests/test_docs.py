"""Every command is explained in a written page of the documentation (the generated reference
lists them anyway: this holds the written pages to it), and the facade the guide shows is real."""

from pathlib import Path

from obsrepo.cli import main

DOCS = Path(__file__).resolve().parent.parent / "docs"
# the pages people write, not the generated reference (it names every command by construction)
WRITTEN = "\n".join(path.read_text(encoding="utf-8") for path in sorted(DOCS.rglob("*.md"))
                    if path.relative_to(DOCS).parts[0] != "reference")


def test_every_command_is_documented():
    for name in main.commands:
        assert f"obsrepo {name}" in WRITTEN, f"`obsrepo {name}` is not explained in a page of docs/"


def test_facade_is_importable_from_the_package():
    from obsrepo import Repository

    for method in ("index", "query", "sql", "snapshot", "provenance", "entities", "find", "observations",
                   "relationships", "related", "timeline", "history"):
        assert callable(getattr(Repository, method))
