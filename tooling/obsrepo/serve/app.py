"""The web application: routes → a page of pages.py → a template, or its JSON twin.

Errors of the door name request fields; here they are renamed to the URL's query parameters
(`text` → `q`) and answered with the envelope: 400 for a bad value, 404 for anything not found
(another tenant's id answers exactly like a missing one, because the door cannot tell them
apart), 503 when git or the index fails, 500 for a bug (the traceback goes to the server's log,
never to the page).

Every URL is answered (docs/design.md §8b): what no id, name or revision can hold — a NUL, a
character a bad percent-encoding left (U+FFFD), a path or value over `LONGEST` characters — is a
400 naming the part of the URL, before anything reads; nothing of it reaches git or the index.
"""

from __future__ import annotations

import sys
import traceback
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..errors import EnvironmentFault, NotFoundError, ObsrepoError, UsageError
from ..ops import Session
from .identity import identity_review
from .links import Links
from .pages import PAGES, QUERY_NAMES, Ask
from .words import FILTERS

HERE = Path(__file__).resolve().parent
WITH_ARGUMENT = ("entity", "history", "observation", "comprehension", "diff")
LONGEST = 2048  # characters of a path's argument or of a query value: ids and names are far shorter
UNREADABLE = ("\0", "\ufffd")  # a NUL; what `%ff` or `%zz`-like bytes decode to


def refuse_unreadable(argument: str, params: dict[str, list[str]]) -> None:
    """A UsageError (400) naming the part of the URL no id, name or revision can be."""
    parts = [("path", argument), *((name, name) for name in params),
             *((name, value) for name, values in params.items() for value in values)]
    for name, text in parts:
        if any(mark in text for mark in UNREADABLE):
            raise UsageError(f"{name} holds a NUL or bytes that are not UTF-8 text", parameter=name)
        if len(text) > LONGEST:
            raise UsageError(f"{name} is longer than {LONGEST} characters", parameter=name)


def status_of(exc: ObsrepoError) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, UsageError) or exc.code == "VALIDATION_ERROR":
        return 400
    if isinstance(exc, EnvironmentFault):
        return 503
    return 500


def templates() -> Any:
    from jinja2 import Environment, FileSystemLoader

    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    return env


def settle() -> None:
    """Before a long-running server's first request: what is alive now (the modules, the open
    index, the templates' environment) is frozen out of the garbage collector's way, so its full
    passes walk only what the requests make. They come every few pages of a busy entity (its
    thousands of rows are many short-lived objects), and walking everything made each a spike
    of tens of milliseconds."""
    import gc

    gc.collect()
    gc.freeze()


def application(session: Session, at: str | None = None) -> Any:
    """The Starlette application over `session` (kept open: many reads, several threads);
    `at`: the commit every page shows unless its URL says `?at=`."""
    from starlette.applications import Starlette
    from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    env = templates()
    pages = {**PAGES, "identities": identity_review}

    def answer(page: str, request: Any) -> Response:
        argument = request.path_params.get("name", "")
        as_json = request.url.path.endswith(".json")
        if as_json and page in WITH_ARGUMENT:
            argument = argument.removesuffix(".json")
        params = {key: request.query_params.getlist(key) for key in request.query_params.keys()}
        given_at = params["at"][-1] if "at" in params else None
        ask = Ask(argument, params, given_at if given_at is not None else at)
        keep = ""
        try:
            refuse_unreadable(argument, params)
            keep = "?" + urlencode({"at": given_at}) if given_at is not None else ""
            shown = pages[page](session, ask)
        except ObsrepoError as exc:
            return failure(exc.renamed(QUERY_NAMES), as_json, keep)
        except Exception as exc:  # noqa: BLE001 - a bug: one envelope, the traceback in the server's log
            traceback.print_exception(exc, file=sys.stderr)
            return failure(ObsrepoError(f"internal error (a bug in obsrepo): {type(exc).__name__}", code="INTERNAL_ERROR"),
                           as_json, keep)
        if as_json:
            return JSONResponse(shown.json)
        twin = (request.url.path.rstrip("/") or "/") + ".json" + (("?" + request.url.query) if request.url.query else "")
        html = env.get_template(shown.template).render(**shown.context, keep=keep, links=Links(keep), twin=twin,
                                                            query=params)
        return HTMLResponse(html)

    def failure(exc: ObsrepoError, as_json: bool, keep: str) -> Response:
        status = status_of(exc)
        if as_json:
            return JSONResponse(exc.envelope(), status_code=status)
        html = env.get_template("error.html").render(error=exc.envelope()["error"], status=status, keep=keep,
                                                     links=Links(keep), twin=None, query={})
        return HTMLResponse(html, status_code=status)

    def asset(name: str, media_type: str) -> Route:
        return Route(f"/static/{name}", lambda request: FileResponse(HERE / "static" / name, media_type=media_type),
                     methods=["GET", "HEAD"])

    def route(path: str, page: str) -> Route:
        return Route(path, lambda request: answer(page, request), methods=["GET", "HEAD"])

    routes = [route("/", "home"), route("/.json", "home"), route("/search", "search"), route("/search.json", "search"),
              route("/entity/{name:path}", "entity"), route("/history/{name:path}", "history"),
              route("/observation/{name:path}", "observation"),
              route("/comprehension/{name:path}", "comprehension"), route("/diff/{name:path}", "diff"),
              route("/identities", "identities"), route("/identities.json", "identities"),
              asset("style.css", "text/css"), asset("icon.svg", "image/svg+xml"),
              # browsers ask for it whatever the page says: an answer, not a 404 in the console
              Route("/favicon.ico", lambda request: FileResponse(HERE / "static" / "icon.svg", media_type="image/svg+xml"),
                    methods=["GET", "HEAD"])]
    app = Starlette(routes=routes)
    app.add_exception_handler(404, partial(_not_a_page, JSONResponse))
    return app


async def _not_a_page(json_response: Any, request: Any, exc: Exception) -> Any:
    return json_response({"error": {"code": "REF_NOT_FOUND", "message": f"no page at {request.url.path}",
                                    "details": {}}}, status_code=404)
