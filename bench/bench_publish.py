"""Benchmark `obsrepo publish` (Apache Iceberg tables, a SQL catalog on SQLite) on a repository
from bench/generate.py. Works on a `git clone` of REPO in a temporary folder (it commits).

    python bench/generate.py /tmp/obs-100k --count 100000
    python bench/bench_publish.py /tmp/obs-100k [--increments 50] [--runs 1]

Reports, with the baseline measured in the same run (whole processes, wall and CPU):
  index --full          the baseline
  first publish         the whole first-parent history into an empty catalog, ≤ 2× index --full
  incremental           `obsrepo publish` after a commit of 10 observations, ≤ 1.5 s; and, for five
                        more such commits, `obsrepo index` alone and then the publish (the index's share)
  50 increments         the 1st and the 50th of 50 such publishes, and how the observations
                        table's metadata grew (snapshots, metadata.json bytes), 50th ≤ 1.5× 1st
  DuckDB as of X        one entity's snapshot as of an old commit, the SQL of docs/guide/publication.md
                        over iceberg_scan: cold (a new connection) and warm medians
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent / "docs" / "guide" / "publication.md"


def run(cmd: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd}: exit {proc.returncode}: {proc.stderr.decode()[-1500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def add_commit(repo: str, serial: int, env: dict[str, str]) -> str:
    """Ten valid observations (two entities' fields among them), one commit; its sha."""
    day = f"2027-01-{1 + serial % 28:02d}"
    for i in range(10):
        obs_id = f"obs-{day.replace('-', '')}-{serial % 24:02d}{i:02d}00-{serial:04d}"
        path = Path(repo, "observations", *day.split("-"), f"{obs_id}.md")
        path.parent.mkdir(parents=True, exist_ok=True)
        entity = f"entity: company/bench-{serial % 7}\nfields: {{\"name\": \"Bench {serial}-{i}\"}}\n" if i < 2 else ""
        path.write_text(f"---\nspec: observation/v1\nid: {obs_id}\ntimestamp: {day}T{serial % 24:02d}:{i:02d}:00Z\n"
                        f"source: agent/bench\nevent: \"bench increment {serial}-{i}\"\ntype: bench.added\n{entity}---\n\n"
                        f"Increment {serial}, observation {i}.\n", encoding="utf-8")
    subprocess.run(["git", "add", "observations"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"bench increment {serial}"], cwd=repo, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def metadata(folder: Path, table: str) -> tuple[int, int]:
    """(snapshots, bytes of the current metadata.json) of one table of the catalog."""
    import json
    import sqlite3

    with sqlite3.connect(folder / "catalog.db") as con:
        location = con.execute("SELECT metadata_location FROM iceberg_tables WHERE table_name = ?", [table]).fetchone()[0]
    path = Path(location.removeprefix("file://"))
    return len(json.loads(path.read_text())["snapshots"]), path.stat().st_size


def duckdb_as_of(folder: Path, sha: str, reps: int) -> tuple[str, float, float]:
    """(entity, cold, warm median seconds) of "the snapshot of an entity as of X" through
    DuckDB, for the entity whose snapshot changed most often up to X."""
    import sqlite3

    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg

    query = DOCS.read_text("utf-8").split("\n## DuckDB\n", 1)[1].split("```sql\n")[3].split("\n```", 1)[0]
    with sqlite3.connect(folder / "catalog.db") as con:
        locations = dict(con.execute("SELECT table_name, metadata_location FROM iceberg_tables").fetchall())

    def connect() -> Any:
        con = duckdb.connect()
        for package, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):
            extension = Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
            con.execute(f"LOAD '{extension.as_posix()}'")
        con.execute("CREATE SCHEMA obsrepo")
        for name, location in locations.items():
            con.execute(f"CREATE VIEW obsrepo.{name} AS SELECT * FROM iceberg_scan('{location.removeprefix('file://')}')")
        con.execute("SET VARIABLE repo = (SELECT any_value(repo) FROM obsrepo.commits)")
        con.execute(f"SET VARIABLE sha = '{sha}'")
        con.execute(f"SET VARIABLE entity = '{entity}'")
        return con

    entity = ""
    entity = connect().execute("SELECT entity_id FROM obsrepo.entity_snapshots WHERE from_seq <= (SELECT seq FROM "
                               f"obsrepo.commits WHERE sha = '{sha}') GROUP BY entity_id ORDER BY count(*) DESC, entity_id "
                               "LIMIT 1").fetchone()[0]
    start = time.perf_counter()
    con = connect()
    row = con.execute(query).fetchone()
    cold = time.perf_counter() - start
    assert row is not None, "no snapshot"
    warm = []
    for _ in range(reps):
        start = time.perf_counter()
        con.execute(query).fetchone()
        warm.append(time.perf_counter() - start)
    return entity, cold, statistics.median(warm)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--increments", type=int, default=50)
    parser.add_argument("--runs", type=int, default=1, help="runs of index --full and of the first publish")
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-publish-")
    repo, folder = os.path.join(work, "repo"), Path(work, "catalog")
    subprocess.run(["git", "clone", "-q", os.path.abspath(args.repo), repo], check=True)
    folder.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="b@x", PYICEBERG_CATALOG__BENCH__TYPE="sql",
               PYICEBERG_CATALOG__BENCH__URI=f"sqlite:///{folder}/catalog.db",
               PYICEBERG_CATALOG__BENCH__WAREHOUSE=f"file://{folder}")
    obsrepo = [sys.executable, "-m", "obsrepo"]
    publish = [*obsrepo, "publish", "--catalog", "bench"]
    commits = int(subprocess.run(["git", "rev-list", "--first-parent", "--count", "HEAD"], cwd=repo, capture_output=True,
                                 text=True, check=True).stdout)
    old = subprocess.run(["git", "rev-list", "--first-parent", "HEAD"], cwd=repo, capture_output=True, text=True,
                         check=True).stdout.split()[commits // 2]

    def say(line: str) -> None:
        print(line, flush=True)  # each as it is measured: a long run's first lines survive a late failure

    say(f"first-parent commits: {commits}   (whole processes: wall s / CPU s)")
    index = [run([*obsrepo, "index", "--full", "--quiet"], repo, env) for _ in range(args.runs)]
    index_wall, index_cpu = statistics.median(w for w, _ in index), statistics.median(c for _, c in index)
    say(f"index  --full                        : {index_wall:7.2f} / {index_cpu:7.2f}")
    first = []
    for attempt in range(args.runs):
        if attempt:
            subprocess.run(["rm", "-rf", str(folder)], check=True)
            folder.mkdir()
        first.append(run(publish, repo, env))
    first_wall, first_cpu = statistics.median(w for w, _ in first), statistics.median(c for _, c in first)
    say(f"publish, first (every commit)        : {first_wall:7.2f} / {first_cpu:7.2f}   "
        f"{first_wall / index_wall:.2f}x / {first_cpu / index_cpu:.2f}x index --full (target <= 2x)")
    increments, grown = [], []
    for serial in range(args.increments):
        add_commit(repo, serial, env)
        increments.append(run(publish, repo, env))
        if serial in (0, args.increments - 1):
            grown.append(metadata(folder, "observations"))
    one, last = increments[0], increments[-1]
    say(f"publish after +10 observations       : {statistics.median(w for w, _ in increments):7.2f} / "
        f"{statistics.median(c for _, c in increments):7.2f}   median of {len(increments)} (target <= 1.5 s)")
    say(f"publish, 1st and {len(increments)}th increment       : {one[0]:7.2f} / {one[1]:7.2f}  and  {last[0]:.2f} / "
        f"{last[1]:.2f}   {last[0] / one[0]:.2f}x / {last[1] / one[1]:.2f}x (target <= 1.5x)")
    (s1, b1), (s2, b2) = grown[0], grown[-1]
    say(f"observations metadata                : {s1} -> {s2} snapshots, metadata.json {b1:,} -> {b2:,} bytes "
        f"({(b2 - b1) / max(1, s2 - s1):,.0f} bytes per publish)")
    split = []  # the same increment, the index brought to the commit first: what the update costs alone
    for serial in range(args.increments, args.increments + 5):
        add_commit(repo, serial, env)
        split.append((run([*obsrepo, "index", "--quiet"], repo, env), run(publish, repo, env)))
    say(f"  of it, obsrepo index alone         : {statistics.median(i[0] for i, _ in split):7.2f} / "
        f"{statistics.median(i[1] for i, _ in split):7.2f}   then publish: {statistics.median(p[0] for _, p in split):.2f} / "
        f"{statistics.median(p[1] for _, p in split):.2f}   median of {len(split)}")
    entity, cold, warm = duckdb_as_of(folder, old, args.reps)
    say(f"DuckDB snapshot of {entity} as of {old[:10]}: {cold:.3f} s cold (connect, load, scan), {warm * 1000:.1f} ms warm")

if __name__ == "__main__":
    main()
