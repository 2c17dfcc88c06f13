"""Benchmark the inspector (`obsrepo serve`, docs/design.md §17): server time of its pages, and
the static preview of a pull request.

    python bench/bench_serve.py REPO [--runs 40] [--static-runs 5]

REPO is a repository from generate.py (the 100k one); it is left alone: the benchmark works in a
`git clone` of it in a temporary folder, indexed at its HEAD, with the pull request of
bench_diff.py (100 observations over 30 busy entities) as a branch. Measured in one process
over one kept-open session (as the server runs), each request through the whole web
application (routing, the door, the templates):

* the entity page of busy entities, p95 (target ≤ 50 ms);
* the search page with a scope filter, p95 (target ≤ 100 ms);
* the review page of the 100-observation change, p95 (target ≤ 1 s);
* `obsrepo serve --static DIR BASE..HEAD`, the whole command, median (target ≤ 3 s), through an
  overlay (the pull request not checked out: HEAD is off the indexed chain) and with the pull
  request checked out as in CI.

Each line gives CPU beside wall: on a loaded machine the CPU time is the steadier figure. The
targets are judged on server time: from the moment the application is called until it hands
over the last of the response, measured by a wrapper around the application (the test client's
own work around it, a thread and an event loop per request, is the client's, and is shown as
the round trip).

Baselines, in the same run: each page's questions asked of the door directly (no web, no
template), and `obsrepo diff --format json BASE HEAD` for the static preview.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_diff import BRANCH, git, make_pull_request, obsrepo, timed  # noqa: E402 - the same pull request as bench_diff


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


Samples = tuple[list[float], list[float], list[float]]  # wall seconds, CPU seconds of this process, server seconds


class ServerTime:
    """An ASGI wrapper that keeps how long the application took with each request: from its
    call to the hand-over of the response's last body part."""

    def __init__(self, app: object) -> None:
        self.app = app
        self.times: list[float] = []

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # type: ignore[operator]
            return
        start = time.perf_counter()

        async def timed(message: dict) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.times.append(time.perf_counter() - start)
            await send(message)

        await self.app(scope, receive, timed)  # type: ignore[operator]


def measure(call: Callable[[], object], runs: int, server: ServerTime | None = None) -> Samples:
    call()  # warm: the first request of a kind loads its code and templates
    walls, cpus = [], []
    if server is not None:
        server.times.clear()
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return walls, cpus, list(server.times) if server is not None else walls


def line(name: str, page: Samples, door: Samples, target: float) -> str:
    (wall, cpu, served), (door_wall, door_cpu, _) = page, door
    return (f"{name:<34} server p95 {p95(served) * 1000:7.1f} ms  median {statistics.median(served) * 1000:7.1f} ms "
            f"(round trip p95 {p95(wall) * 1000:7.1f} ms, median {statistics.median(wall) * 1000:7.1f} ms; "
            f"CPU p95 {p95(cpu) * 1000:7.1f} ms, median {statistics.median(cpu) * 1000:7.1f} ms)  "
            f"(door alone: median {statistics.median(door_wall) * 1000:7.1f} ms, CPU {statistics.median(door_cpu) * 1000:7.1f} ms, "
            f"x{statistics.median(served) / statistics.median(door_wall):.2f}); "
            f"target p95 <= {target * 1000:.0f} ms: {'ok' if p95(served) <= target else 'MISSED'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--static-runs", type=int, default=5, help="runs of serve --static in each setting")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        repo = os.path.join(tmp, "repo")
        subprocess.run(["git", "clone", "--quiet", os.path.abspath(args.repo), repo], check=True)
        base = git(repo, "rev-parse", "HEAD")
        proc = obsrepo(repo, "index")
        assert proc.returncode == 0, proc.stderr
        head = make_pull_request(repo, base)
        return run(repo, base, head, args.runs, args.static_runs, tmp)


def run(repo: str, base: str, head: str, runs: int, static_runs: int, tmp: str) -> int:
    from obsrepo.ops import Diff, Facets, Query, Related, Relations, Session, Snapshot, Timeline
    from obsrepo.ops import run as ask
    from obsrepo.serve.app import application, settle
    from starlette.testclient import TestClient

    session = Session(repo)
    session.keep_open()
    server = ServerTime(application(session))
    client = TestClient(server, base_url="http://127.0.0.1:8765")
    session.read(lambda scope: None, scoped=False)
    settle()  # as `obsrepo serve` does before it listens
    busy = [row["entity"] for row in json.loads(obsrepo(repo, "sql", "--format", "json",
            "SELECT entity, count(*) AS n FROM observations WHERE entity IS NOT NULL GROUP BY entity "
            "ORDER BY n DESC, entity LIMIT 10").stdout)]
    scopes = [row["scope_id"] for row in json.loads(obsrepo(repo, "sql", "--format", "json",
              "SELECT scope_id, count(*) AS n FROM observation_scopes GROUP BY scope_id ORDER BY n DESC, scope_id LIMIT 10").stdout)]
    turn = iter(range(10**9))

    def entity_page() -> None:
        response = client.get(f"/entity/{busy[next(turn) % len(busy)]}")
        assert response.status_code == 200, response.text[:500]

    def entity_door() -> None:
        name = busy[next(turn) % len(busy)]
        for request in (Snapshot(name, explain=True), Relations(name), Related(name, hops=2, limit=24),
                        Timeline(entity=name, limit=100)):
            ask(session, request)

    def search_page() -> None:
        response = client.get("/search", params={"scope": scopes[next(turn) % len(scopes)]})
        assert response.status_code == 200, response.text[:500]

    def search_door() -> None:
        request = Query(scopes=(scopes[next(turn) % len(scopes)],))
        ask(session, request)
        ask(session, Facets(request))

    def review_page() -> None:
        response = client.get(f"/diff/{base}..{head}")
        assert response.status_code == 200, response.text[:500]

    def review_door() -> None:
        ask(session, Diff(base, head))

    print(f"{len(busy)} busy entities, {len(scopes)} scopes; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"{runs} requests a page (the review: {max(5, runs // 4)})")
    print(line("entity page", measure(entity_page, runs, server), measure(entity_door, runs), 0.050))
    print(line("search page (scope filter)", measure(search_page, runs, server), measure(search_door, runs), 0.100))
    review_runs = max(5, runs // 4)
    print(line("review page (100 observations)", measure(review_page, review_runs, server), measure(review_door, review_runs), 1.0))
    session.close()

    print(static_line("serve --static through an overlay", repo, base, head, static_runs, tmp))
    # as in CI, where the pull request is checked out: the index follows HEAD, so HEAD's pages
    # are read from the index rather than from an overlay
    git(repo, "checkout", "--quiet", BRANCH.removeprefix("refs/heads/"))
    obsrepo(repo, "index")
    print(static_line("serve --static, checked out", repo, base, head, static_runs, tmp))
    return 0


def static_line(name: str, repo: str, base: str, head: str, runs: int, tmp: str) -> str:
    """The whole `serve --static` command beside `obsrepo diff --format json`, `runs` times each."""
    static, static_cpu, diff, diff_cpu = [], [], [], []
    for _ in range(runs):
        out = tempfile.mkdtemp(prefix="preview-", dir=tmp)
        wall, cpu, proc = timed([sys.executable, "-m", "obsrepo", "serve", "--static", out, f"{base}..{head}"], repo)
        assert proc.returncode == 0, proc.stderr
        static.append(wall)
        static_cpu.append(cpu)
        wall, cpu, proc = timed([sys.executable, "-m", "obsrepo", "diff", "--format", "json", base, head], repo)
        diff.append(wall)
        diff_cpu.append(cpu)
    pages = sum(1 for _ in Path(out).rglob("*.html"))
    return (f"{name:<34} median {statistics.median(static):.2f} s ({statistics.median(static_cpu):.2f} s CPU), {pages} pages; "
            f"obsrepo diff --format json median {statistics.median(diff):.2f} s ({statistics.median(diff_cpu):.2f} s CPU), "
            f"x{statistics.median(static) / statistics.median(diff):.2f}; target <= 3 s: "
            f"{'ok' if statistics.median(static) <= 3 else 'MISSED'}")


if __name__ == "__main__":
    raise SystemExit(main())
