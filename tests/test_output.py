"""A file name is data an agent controls: no name can forge or break a line of a report."""

import json

from helpers import observation


def test_control_characters_in_paths_are_escaped_in_text_and_github_output(repo):
    good = observation("obs-20260213-102500-0001")
    repo.add(good)
    forged = "observations/2026/02/13/x\n::error file=README.md::forged\robs-20260213-102500-0002.md"
    repo.write(forged, str(observation("obs-20260213-102500-0002")))
    repo.commit("a hostile file name")

    text = repo.obsrepo("check")
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("observations/2026/02/13/x\\n::error file=README.md::forged\\r")
    assert "id-filename-mismatch" in lines[0]

    github = repo.obsrepo("check", "--format", "github")
    annotations = [line for line in github.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == 1 and "%0A" in annotations[0] and "%0D" in annotations[0]

    data = json.loads(repo.obsrepo("check", "--format", "json").stdout)
    assert [issue["path"] for issue in data["issues"]] == [forged]  # JSON carries the exact name

    warned = repo.obsrepo("index")
    warnings = [line for line in warned.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "x\\n::error" in warnings[0]
