"""What the project ships loads where it is used.

Every YAML file the project ships parses; the Action and the workflows satisfy GitHub's schemas
(the copies check-jsonschema vendors, so this runs offline); the hook manifest and this
repository's hook configuration load with pre-commit's own rules; the published hook prints each
problem once and covers entity schemas; the gate never imports the index extra (tests/test_extras.py
runs it without the extras).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import observation

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
ENTITY_SCHEMAS = sorted((ROOT / "schemas" / "entities").glob("*.y*ml"))
INIT_TEMPLATES = sorted((ROOT / "tooling" / "obsrepo" / "templates" / "init").glob("*.y*ml"))  # tests/test_init.py runs them
# mkdocs.yml: the documentation site's configuration (tests/test_site.py builds the site with it)
SHIPPED_YAML = [ROOT / "action.yml", ROOT / ".pre-commit-hooks.yaml", ROOT / ".pre-commit-config.yaml", ROOT / "mkdocs.yml",
                *WORKFLOWS, *ENTITY_SCHEMAS, *INIT_TEMPLATES]


def test_the_shipped_yaml_files_are_all_listed():
    tracked = subprocess.run(["git", "ls-files", "*.yml", "*.yaml"], cwd=ROOT, capture_output=True, text=True, check=False)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    listed = {p.relative_to(ROOT).as_posix() for p in SHIPPED_YAML}
    shipped = {p for p in tracked.stdout.splitlines() if not p.startswith("tests/")}
    assert shipped <= listed, f"YAML files no test parses: {sorted(shipped - listed)}"
    assert WORKFLOWS and ENTITY_SCHEMAS and INIT_TEMPLATES


@pytest.mark.parametrize("path", SHIPPED_YAML, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_shipped_yaml_parses(path: Path):
    value = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(value, (dict, list)) and value


@pytest.mark.parametrize(
    ("schema", "paths"),
    [("vendor.github-actions", [ROOT / "action.yml"]), ("vendor.github-workflows", WORKFLOWS)],
    ids=["action", "workflows"],
)
def test_github_files_match_githubs_schemas(schema: str, paths: list[Path]):
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_yaml_error_fails_the_github_schema_check(tmp_path: Path):
    """The check above is not vacuous: the unquoted `: ` that once broke action.yml fails it."""
    broken = tmp_path / "action.yml"
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    broken.write_text(re.sub(r'description: "(.*default): (.*)"', r"description: \1: \2", text), encoding="utf-8")
    assert broken.read_text(encoding="utf-8") != text
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions",
                           str(broken)], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "Failed to parse" in proc.stdout + proc.stderr


def test_hook_manifest_and_config_load_with_pre_commits_rules():
    from pre_commit import clientlib

    hooks = clientlib.load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    config = clientlib.load_config(str(ROOT / ".pre-commit-config.yaml"))
    assert [h["id"] for h in hooks] == ["obsrepo-check"]
    assert [h["id"] for r in config["repos"] for h in r["hooks"]] == ["obsrepo-check"]


def _hooks() -> list[dict]:
    return yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def test_the_hook_runs_on_documents_and_entity_schemas_and_installs_the_plain_package():
    (hook,) = _hooks()
    files = re.compile(hook["files"])
    for path in ("observations/2026/02/13/obs-a.md", "observations/x.md", "comprehension/comp-a.md",
                 "schemas/entities/company.yaml"):
        assert files.search(path), path
    for path in ("README.md", "schemas/observation.v1.schema.json", "docs/observations/x.md"):
        assert not files.search(path), path
    assert hook["language"] == "python" and not hook.get("additional_dependencies")
    assert hook["always_run"] is True  # a deletion or a rename names no file pre-commit would pass


def test_the_action_installs_only_what_check_needs():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    installs = [s for s in steps if "pip install" in s.get("run", "")]
    assert installs[0]["run"] == 'python -m pip install --quiet "${{ github.action_path }}"'
    check = next(i for i, s in enumerate(steps) if "obsrepo check" in s.get("run", ""))
    # the index extra only for the review, the serve extra only for the preview: after the check, only when asked
    for later, extra in zip(installs[1:], ("index", "serve")):
        assert steps.index(later) > check and f"[{extra}]" in later["run"]
        assert f"inputs.{'review' if extra == 'index' else 'preview'} == 'true'" in later["if"]
    review = next(s for s in steps if "obsrepo diff" in s.get("run", ""))
    assert "GITHUB_STEP_SUMMARY" in review["run"] and action["outputs"]["diff-json"]["value"] == "${{ steps.review.outputs.json }}"


def test_the_action_uploads_the_static_preview_beside_the_summary():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    assert action["inputs"]["preview"]["default"] == "false"  # the serve extra only for those who ask
    preview = next(s for s in steps if s.get("id") == "preview")
    assert 'obsrepo serve --static "$out" "$BASE..$(git rev-parse HEAD)"' in preview["run"]
    assert "GITHUB_STEP_SUMMARY" in preview["run"] and "dir=$out" in preview["run"]
    upload = steps[steps.index(preview) + 1]
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "${{ steps.preview.outputs.dir }}" and "steps.preview.outputs.dir" in upload["if"]
    assert action["outputs"]["preview-dir"]["value"] == "${{ steps.preview.outputs.dir }}"


def test_the_action_keeps_the_checks_facts_between_runs_by_the_base_commit():
    """docs/ci-cache.md: a pull request's check reads only its own documents when the facts of
    its base's tree are restored before it."""
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    check = next(s for s in steps if "obsrepo check" in s.get("run", ""))
    assert steps.index(cache) < steps.index(check)
    where = next(s for s in steps if s.get("id") == "facts")
    assert "--git-common-dir" in where["run"] and where["run"].startswith('echo "dir=') and "/obsrepo\"" in where["run"]
    # the facts and the base tree's lookup store (gate/lookup.py names it lookup-<tree id>.sqlite)
    assert cache["with"]["path"].splitlines() == ["${{ steps.facts.outputs.dir }}/facts.marshal",
                                            "${{ steps.facts.outputs.dir }}/lookup-*.sqlite"]
    assert cache["with"]["key"] == "obsrepo-facts-${{ inputs.base || github.event.pull_request.base.sha || github.sha }}"
    assert cache["with"]["restore-keys"] == "obsrepo-facts-"


def _run_hooks(repo, files: list[str]) -> list[tuple]:
    """Run every published hook as pre-commit would (its entry, then the matching staged files
    when it takes file names); every problem printed, one entry per printing."""
    printed = []
    for hook in _hooks():
        argv = hook["entry"].split()
        assert argv[0] == "obsrepo"
        names = [f for f in files if re.search(hook.get("files", ""), f)] if hook.get("pass_filenames", True) else []
        if not names and not hook.get("always_run"):
            continue
        proc = repo.obsrepo(*argv[1:], "--format", "json", *names)
        assert proc.returncode in (0, 1), proc.stderr
        printed += [(i["path"], i["line"], i["col"], i["rule"]) for i in json.loads(proc.stdout)["issues"]]
    return printed


def test_the_hooks_print_each_problem_once(repo):
    kept = observation("obs-20260213-102500-0001")
    repo.add(kept, observation("obs-20260213-102500-0002"))
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields: {}\n")
    repo.commit("base")
    repo.write(kept.path, kept.replace("event:", "event: changed"))               # modified
    repo.git("rm", "-q", "observations/2026/02/13/obs-20260213-102500-0002.md")  # deleted
    bad = observation("obs-20260213-102500-0003", colour="red")
    repo.add(bad)                                                                 # invalid
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields: {tags: {policy: bogus}}\n")
    repo.git("add", "-A")
    staged = repo.git("diff", "--staged", "--name-only", "--diff-filter=ACMRTUXB").splitlines()

    printed = _run_hooks(repo, staged)
    assert len(printed) == len(set(printed)), printed
    assert {(p, r) for p, _l, _c, r in printed} == {
        (kept.path, "modified"),
        ("observations/2026/02/13/obs-20260213-102500-0002.md", "deleted"),
        (bad.path, "unknown-key"),
        ("schemas/entities/company.yaml", "entity-schema"),
    }
    # a commit that only deletes names no file: the hook still runs and refuses it
    repo.git("reset", "-q", "--hard")
    repo.git("rm", "-q", kept.path)
    assert {(p, r) for p, _l, _c, r in _run_hooks(repo, [])} == {(kept.path, "deleted")}


def test_an_entity_schema_named_to_check_is_read_as_an_entity_schema(repo):
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields: {}\n")
    assert repo.check("schemas/entities/company.yaml").issues == []
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields: {tags: {policy: x}}\n")
    result = repo.check("schemas/entities/company.yaml")
    assert result.returncode == 1 and result.issues == [("VALIDATION_ERROR", "entity-schema", "schemas/entities/company.yaml")]


# --- the gate without the index extra -------------------------------------------------------

def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_gate_depends_on_click_pydantic_and_pyyaml_only():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert _names(project["dependencies"]) == {"click", "pydantic", "pyyaml"}
    extras = project["optional-dependencies"]
    # numpy ranks recall's vectors whichever provider made them (docs/design.md §15)
    assert _names(extras["index"]) == {"duckdb", "duckdb-extension-fts", "pyarrow", "numpy"}
    assert "obsrepo[index]" in extras["test"]  # `pip install ".[test]"` (the README, .ci/run) sets up everything
    assert 'pip install --quiet ".[test]"' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


INDEX_MODULES = ("duckdb", "duckdb_extension_fts", "pyarrow")


def _imported(stderr: str) -> set[str]:
    """Top-level module names from `python -X importtime` output."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


@pytest.mark.parametrize("argv", [("check",), ("check", "--staged"), ("check", "--base", "HEAD"),
                                  ("new", "--source", "agent/t", "--event", "seen", "--format", "json"),
                                  ("new", "--source", "agent/t", "--event", "seen", "--commit")],
                         ids=" ".join)
def test_the_gate_never_imports_the_index(repo, argv):
    repo.add(observation("obs-20260213-102500-0001"))
    repo.commit("base")
    proc = repo.run(sys.executable, "-X", "importtime", "-m", "obsrepo", *argv, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    imported = _imported(proc.stderr)
    assert "pydantic" in imported and "obsrepo" in imported  # the measurement sees imports at all
    assert not imported & set(INDEX_MODULES), sorted(imported & set(INDEX_MODULES))


# --- packaging and release (docs/design.md §18) ------------------------------------------------

RELEASE_WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
VERSION_FILE = ROOT / "tooling" / "obsrepo" / "version.py"


def _project() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _release() -> str:
    return re.search(r'__version__ = "(.+)"', VERSION_FILE.read_text(encoding="utf-8"))[1]


def test_the_version_is_written_once_and_obsrepo_version_prints_it(repo):
    project = _project()
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == VERSION_FILE.relative_to(ROOT).as_posix()
    proc = repo.obsrepo("--version")
    assert proc.returncode == 0 and proc.stdout == f"obsrepo, version {_release()}\n", proc
    assert f"## {_release()}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_project_url_is_one_address_everywhere():
    urls = _project()["project"]["urls"]
    url = urls["Repository"]
    assert url == urls["Homepage"] and f'PROJECT_URL = "{url}"' in VERSION_FILE.read_text(encoding="utf-8")
    assert all(u.startswith(url) for u in urls.values()), urls
    templates = ROOT / "tooling" / "obsrepo" / "templates" / "init"
    hook = (templates / "pre-commit-config.yaml").read_text(encoding="utf-8")
    assert "repo: local\n" in hook and "repo: http" not in hook  # runs where init ran: nothing to fetch
    owner_name = url.removeprefix("https://github.com/")
    assert f"uses: {owner_name}@v@version@" in (templates / "observations.yml").read_text(encoding="utf-8")
    # the README's install before the package is on PyPI names the current release's tag
    assert f"pip install 'obsrepo @ git+{url}@v{_release()}'" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_release_workflow_builds_on_version_tags_and_publishes_with_trusted_publishing():
    workflow = yaml.safe_load(RELEASE_WORKFLOW.read_text(encoding="utf-8"))
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as true
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    runs = "\n".join(s.get("run", "") for s in build["steps"])
    assert "python -m build" in runs and "dist/*.whl" in runs  # sdist and wheel, the wheel tried
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert publish["steps"][-1] == {"uses": "pypa/gh-action-pypi-publish@release/v1"}  # no token: trusted publishing
    assert not [s for s in publish["steps"] if "with" in s and "password" in s["with"]]


@pytest.mark.parametrize(("tag", "code"), [("v{release}", 0), ("v{release}.1", 1), ("{release}", 1)])
def test_the_release_refuses_a_tag_that_is_not_the_version(tag: str, code: int):
    steps = yaml.safe_load(RELEASE_WORKFLOW.read_text(encoding="utf-8"))["jobs"]["build"]["steps"]
    (script,) = [s["run"] for s in steps if s.get("name") == "the tag is the release's version"]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "GITHUB_REF_NAME": tag.format(release=_release())}
    proc = subprocess.run(["bash", "-e", "-c", script.replace("python ", f"{sys.executable} ")], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
