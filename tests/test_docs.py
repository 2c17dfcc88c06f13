"""Every command is documented in the README or a page of docs/, and the README's commands are real."""

from pathlib import Path

from obsrepo.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = README + "".join(page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").glob("*.md")))


def test_every_command_is_documented():
    for name in main.commands:
        assert f"obsrepo {name}" in DOCS, f"`obsrepo {name}` is in neither the README nor a page of docs/"


def test_facade_is_importable_from_the_package():
    from obsrepo import Repository

    for method in ("index", "query", "sql", "snapshot", "provenance", "entities", "find", "observations",
                   "relationships", "related", "timeline", "history"):
        assert callable(getattr(Repository, method))
