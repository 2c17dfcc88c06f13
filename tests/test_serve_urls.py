"""The inspector answers every URL (docs/design.md §8b): whatever a path or a query parameter
holds — a NUL, a bad percent-encoding, `..`, 8 KB, non-ASCII, reserved characters — the answer
is a page or a 4xx, never a 5xx. Every route of the application is asked in process (as uvicorn
would hand it the request: tests/inspector_asgi.py); one real server is asked the same over a
socket, raw bytes that no client library would send included.
"""

from __future__ import annotations

import socket

import pytest
from helpers import Server, comprehension, hermetic, obs_id, observation
from inspector_asgi import get, inspector

pytest.importorskip("starlette")

LONG = "x" * 8192
# path arguments, written as sent (percent-encoded where a client would encode)
SEGMENTS = ["%00", "obs-a%00", "a%00b", "%ff", "%zz", "%", "%e9", "caf%C3%A9", "%E2%80%A8", "..", "../..", "%2e%2e",
            "a/../b", "a/./b", "a//b", "%2F", LONG, "x/" + LONG, "%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D", "@:!$&'()*+,;=",
            ".json", "a..b", "..HEAD", "HEAD..", "%00..HEAD", "HEAD~1..HEAD%00", "HEAD..%ff", "o%27brien", "100%25"]
PARAMETERS = ["at", "q", "scope", "type", "limit", "offset", "order", "after", "before", "entity", "org", "source", "%00",
              "%ff", "caf%C3%A9", LONG[:3000]]
VALUES = ["%00", "%ff", "%zz", "..", LONG, "caf%C3%A9", "%26%3D%3F%23", "", "-1", "9" * 40, "HEAD..HEAD", "org%3Db"]


@pytest.fixture(scope="module")
def repo(make_module_repo):
    repo = make_module_repo()
    first = observation(obs_id(1), entity="company/acme", fields={"name": "Acme"}, tenant={"org": "a"})
    repo.add(first, observation(obs_id(2), entity="company/café", fields={"name": "Café"}, tenant={"org": "a"}),
             comprehension("comp-a", [first.id]))
    repo.commit("first")
    repo.add(observation(obs_id(3), retracts=[obs_id(2)], tenant={"org": "a"}))
    repo.commit("second")
    return repo


@pytest.fixture(scope="module")
def app(repo):
    from obsrepo.ops import Binding, Session

    with hermetic(repo.env):
        session = Session(str(repo.path), binding=Binding.of({"org": "a"}))
        session.keep_open()  # as `obsrepo serve` keeps it: each page reads the open index
        yield inspector(session)
        session.close()


def routes(app) -> list[str]:
    """Every route of the application, as its path pattern."""
    return [route.path for route in app.app.routes]


def test_every_route_with_a_hostile_path_argument_is_a_page_or_a_4xx(app):
    patterns = routes(app)
    assert {"/entity/{name:path}", "/observation/{name:path}", "/diff/{name:path}", "/search"} <= set(patterns)
    asked = 0
    for pattern in patterns:
        for segment in SEGMENTS:
            for suffix in ("", ".json"):
                target = pattern.replace("{name:path}", segment) if "{" in pattern else f"{pattern.rstrip('/')}/{segment}"
                status, _, body = get(app, target + suffix)
                asked += 1
                assert status < 500, (target[:120], status, body[:300])
    assert asked > 500


def test_every_route_with_hostile_query_parameters_is_a_page_or_a_4xx(app):
    for pattern in routes(app):
        path = pattern.replace("{name:path}", {"/diff/{name:path}": "HEAD~1..HEAD", "/entity/{name:path}": "company/acme",
                                              "/history/{name:path}": "company/acme"}.get(pattern, obs_id(1)))
        # what no value may hold, in any parameter of any route; and every value in the one every page reads
        asked = [(name, value) for name in PARAMETERS for value in VALUES[:2] + VALUES[4:5]] + [("at", v) for v in VALUES]
        if pattern == "/search.json":  # the page that reads every parameter
            asked += [(name, value) for name in PARAMETERS for value in VALUES]
        for name, value in asked:
            status, _, body = get(app, f"{path}?{name}={value}")
            assert status < 500, (pattern, name[:20], value[:20], status, body[:300])


def test_a_nul_or_a_bad_encoding_is_a_400_naming_the_part_of_the_url(app):
    for target, part in ((f"/observation/{obs_id(1)}%00.json", "path"), ("/entity/%ff.json", "path"),
                         ("/search.json?q=%00", "q"), ("/search.json?type=%ff", "type"), (f"/history/{LONG}.json", "path"),
                         ("/.json?at=%00", "at")):
        status, _, body = get(app, target)
        assert status == 400 and f'"parameter":"{part}"' in body, (target[:60], status, body[:300])
    assert get(app, "/entity/company/caf%C3%A9")[0] == 200  # non-ASCII that is UTF-8 is a name like any other
    assert get(app, "/entity/company/acme/../acme")[0] == 404  # `..` is part of a name, never a walk


def _raw(port: int, target: bytes) -> int:
    """The status line's code of one request sent as these bytes (0: the server closed without one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode() + b"\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def test_a_real_server_answers_raw_hostile_requests_without_a_5xx(repo):
    server = Server(repo, "--tenant", "org=a")
    try:
        for target in (f"/observation/{obs_id(1)}%00".encode(), b"/observation/obs-a%00", b"/entity/%ff", b"/entity/%zz",
                       b"/entity/../../etc/passwd", "/entity/company/café".encode(), b"/entity/caf\xe9",
                       b"/search?q=%00&at=%ff", b"/search?q=\xff", b"/history/" + LONG.encode(), b"/diff/%00..HEAD"):
            status = _raw(server.port, target)
            assert 400 <= status < 500 or status == 200, (target[:60], status)
        assert _raw(server.port, b"/entity/company/acme") == 200  # and it still serves
    finally:
        server.close()
