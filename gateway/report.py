"""`/report/`: the last benchmark report `make report` wrote (build/report/), when there is one,
on a gateway started with `--report` (`make run REPORT=1`; `GatewayConfig.report_dir`):
off by default, since a gateway serves its page and its API, not a benchmark's figures
about the machine it ran on.

The report is a flat folder: `index.html`, its stylesheet and PNG plots, and the JSON it
was made from. Only such files are served, by name, from that one folder: no
subdirectories, no dot files, no listing, so nothing else under build/ can be reached
through it (a `..` never gets past the name check, whatever the router decoded). A
missing report, or a file not in it, is the gateway's JSON 404 like any unknown URL.

The security headers and the Content-Security-Policy of every other answer apply (the
middleware adds them): the report therefore has no inline script or style, and its
images come from this origin.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["MEDIA_TYPES", "report_routes"]

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".json": "application/json",
}
# One plain name with a known extension: letters, digits, `-`, `_`, inner dots.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$")


def report_routes(directory: Path) -> list[BaseRoute]:
    """Routes serving `directory` at `/report/` (404 while it holds no index.html)."""

    def file_response(name: str) -> Response:
        suffix = Path(name).suffix.lower()
        if not _NAME.match(name) or suffix not in MEDIA_TYPES:
            raise HTTPException(404)
        path = directory / name
        if not path.is_file():
            raise HTTPException(404)
        # A report is rewritten by the next `make report`: revalidate every time.
        return FileResponse(path, media_type=MEDIA_TYPES[suffix], headers={"cache-control": "no-cache"})

    async def index(request: Request) -> Response:
        return file_response("index.html")

    async def bare(request: Request) -> Response:
        # Relative links in the report (its plots) resolve against `/report/`.
        if not (directory / "index.html").is_file():
            raise HTTPException(404)
        return RedirectResponse("/report/", status_code=308)

    async def item(request: Request) -> Response:
        return file_response(request.path_params["name"])

    return [
        Route("/report", bare, methods=["GET", "HEAD"]),
        Route("/report/", index, methods=["GET", "HEAD"]),
        Route("/report/{name:path}", item, methods=["GET", "HEAD"]),
    ]
