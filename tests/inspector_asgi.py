"""The inspector asked in process, as uvicorn would ask it: a raw request target (bytes, exactly
as a client sent it, `%zz` and `%00` included) becomes the ASGI scope uvicorn builds from it
(the path percent-decoded, the query string raw), through the server's guard. No socket, no
client library that would tidy the URL first."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import unquote

HOST, PORT = "127.0.0.1", 8765


def inspector(session: Any) -> Any:
    """The application `obsrepo serve` runs over `session`, behind its guard (loopback, no token)."""
    from obsrepo.serve.app import application
    from obsrepo.serve.guard import Guard

    return Guard(application(session), HOST, PORT, None)


def get(app: Any, target: bytes | str, method: str = "GET") -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of one request; `target` is the path and query as sent."""
    raw = target.encode("ascii") if isinstance(target, str) else target
    raw_path, _, query = raw.partition(b"?")
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": unquote(raw_path.decode("ascii")), "raw_path": raw_path, "query_string": query, "root_path": "",
             "headers": [(b"host", f"{HOST}:{PORT}".encode())], "client": ("127.0.0.1", 40000), "server": (HOST, PORT)}
    sent: list[dict[str, Any]] = []
    asked: list[bool] = []

    async def receive() -> dict[str, Any]:
        if not asked:  # the (empty) body once; then, as a client that stays, nothing until the answer ends
            asked.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in start.get("headers", [])}
    return start["status"], headers, body.decode("utf-8")


def get_json(app: Any, target: str, status: int = 200) -> Any:
    code, headers, body = get(app, target)
    assert code == status and headers["content-type"].startswith("application/json"), (target, code, body[:500])
    return json.loads(body)
