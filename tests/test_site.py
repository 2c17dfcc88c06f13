"""The documentation site (mkdocs.yml, docs/): it builds with `mkdocs build --strict` (a page
missing from the nav, a broken link or anchor fails), its generated reference pages are what
the product says today, and the README stays a front door."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    # never --quiet: it silences the warnings before --strict counts them, and a broken link passes
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                            "-d", str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr, built.stderr[-3000:]
    for page in ("index.html", "reference/cli/index.html", "guide/review/index.html", "design/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_the_strict_build_refuses_what_a_reader_would_trip_on() -> None:
    """Every check mkdocs offers is a warning, and --strict turns warnings into a failed build."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))
    assert config["strict"] is True
    assert config["validation"] == {"omitted_files": "warn", "absolute_links": "warn", "unrecognized_links": "warn",
                                    "anchors": "warn"}


def test_the_generated_reference_is_fresh() -> None:
    """docs/reference/ is generated from the commands, the MCP tools, errors.py and the rule list,
    and the index's schema; run `python tools/docs_reference.py` after changing any of them."""
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_reference.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_the_adopt_page_shows_what_init_writes_at_this_release() -> None:
    """The pre-commit configuration and the workflow on docs/adopt.md are init's own files (their
    comments aside), pinned to this release, and so is the Action the README shows."""
    import re

    from obsrepo.ops.adopt import template
    from obsrepo.version import __version__

    shown = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "adopt.md").read_text("utf-8"),
                                                            flags=re.S)]
    assert shown == [yaml.safe_load(template("pre-commit-config.yaml")), yaml.safe_load(template("observations.yml"))]
    assert f"uses: obsrepo/obsrepo@v{__version__} " in (ROOT / "README.md").read_text("utf-8")


def test_the_readme_is_a_front_door() -> None:
    """README.md stays short (the reference lives in docs/), its first commands are the two a
    newcomer runs, and its links into docs/ work on GitHub (relative paths that exist)."""
    import re

    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 200
    first = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)[:2]
    assert "obsrepo check" in first[0] and "obsrepo query" in first[0] and "pytest" in first[1], first
    links = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", readme)
    assert {link for link in links if link.startswith("docs/")} >= {"docs/tutorial.md", "docs/adopt.md", "docs/reference/cli.md"}
    assert [link for link in links if not (ROOT / link).exists()] == []
