"""Memory is a behaviour: `obsrepo index --full` holds a slice of the documents, never all of
them, and DuckDB works within its limit (docs/design.md §5). One repository from the
benchmarks' generator (git fast-import) is indexed, in a process of its own each time, at a
commit halfway through its history (two slices of documents) and at its head (half as many
again: three); the peak resident memory may grow by little more than the plan's compact facts
per document. Holding every document's record, row or Arrow row until the end costs over
12 KB each (the build did, before it streamed)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import git_env, obs_id, observation

DOCUMENTS, COMMITS = 12_000, 20
# bytes of peak memory per added document between two and three slices (0 ± 1,900 measured,
# eight runs): the plan's (path, blob, commit) tuple passes; a record or a row held per document
# until the end (over 12,000) does not
GROWTH_PER_DOCUMENT = 6_000
MEMORY = "64MB"  # DuckDB's limit (OBSREPO_INDEX_MEMORY): small, so that what it caches stays flat

_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
if done.returncode:
    sys.exit(f"exit {done.returncode}: {done.stdout.decode()[-2000:]} {done.stderr.decode()[-2000:]}")
print(done.stdout.decode().strip())
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def _generator() -> Any:
    path = Path(__file__).resolve().parent.parent / "bench" / "generate.py"
    spec = importlib.util.spec_from_file_location("obsrepo_bench_generate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def peaks(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, int]]:
    """(documents, peak resident bytes) of `index --full` (the largest of its processes) at each size."""
    folder = tmp_path_factory.mktemp("memory")
    repo = folder / "repo"
    _generator().generate(str(repo), DOCUMENTS, COMMITS, 1, DOCUMENTS // 20, 3)
    # the cache `check` shares is off: the index's own memory. One malloc arena: with one per
    # thread, where DuckDB's threads happened to allocate moved a peak by ±10 MiB from run to run
    # (a flaky 4,560 bytes a document once), which says nothing about what the build holds
    env = git_env(folder / "home", folder) | {"OBSREPO_NO_CACHE": "1", "OBSREPO_INDEX_MEMORY": MEMORY,
                                              "MALLOC_ARENA_MAX": "1"}
    found = []
    for rev in (f"HEAD~{COMMITS // 2}", "HEAD"):
        done = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "obsrepo", "index", "--full",
                               "--rev", rev, "--format", "json"], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        answer, peak = done.stdout.strip().rsplit("\n", 1)
        found.append((json.loads(answer)["added"], int(peak)))
    assert found[1][0] == DOCUMENTS and found[0][0] < DOCUMENTS * 3 // 4  # every document was indexed
    return found


@pytest.mark.scale
def test_index_full_memory_grows_by_compact_facts_not_by_documents(peaks: list[tuple[int, int]]) -> None:
    (small, low), (large, high) = peaks
    growth = (high - low) / (large - small)
    assert growth < GROWTH_PER_DOCUMENT, (
        f"peak {low >> 20} MiB at {small} documents, {high >> 20} MiB at {large}: {growth:.0f} bytes a document")


def test_a_memory_limit_without_a_unit_is_refused_by_name(make_repo: Any) -> None:
    """OBSREPO_INDEX_MEMORY is DuckDB's limit for the writer: a value it would misread (or fail
    on with its own message) is an INDEX_ERROR naming the variable, never a traceback."""
    repo = make_repo()
    repo.add(observation(obs_id(1)))
    repo.commit("one")
    repo.env["OBSREPO_INDEX_MEMORY"] = "512"  # read once a process: the process is the subject
    proc = repo.process("index", "--format", "json")
    assert proc.returncode == 4, proc
    assert json.loads(proc.stdout)["error"]["code"] == "INDEX_ERROR"
    assert json.loads(proc.stdout)["error"]["message"].startswith("OBSREPO_INDEX_MEMORY is '512'"), proc.stdout
    repo.env["OBSREPO_INDEX_MEMORY"] = "96MB"
    assert repo.process("index", "--format", "json").returncode == 0
