"""Every command is documented in the README, and the README's commands are real."""

from pathlib import Path

from obsrepo.cli import main

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_command_is_documented():
    for name in main.commands:
        assert f"obsrepo {name}" in README, f"`obsrepo {name}` is not in the README"


def test_facade_is_importable_from_the_package():
    from obsrepo import Repository

    for method in ("index", "query", "sql", "snapshot", "provenance", "entities", "find", "observations",
                   "relationships", "related", "timeline", "history"):
        assert callable(getattr(Repository, method))
