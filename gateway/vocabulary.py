"""The page's tokenizer vocabularies, decoded here once instead of in every page.

npm tiktoken's `encoders/<name>.json` holds each token as base64 (`bpe_ranks`). Read
as it is, the page decodes 1.9 million base64 characters and checks each token's
UTF-8 in JavaScript, on the thread that runs Python: about half of what a first count
waited for (`make bench-tokens`, page_init_ms). Served as

    {"format": "firsttoken-vocabulary/1", "encoding": "o200k_base", "ranks": 199998,
     "text": "<the tokens that are text, in rank order, joined>",
     "lengths": "<a character per rank: 0x20 + its length in UTF-16 units in `text`,
                 or 0x20 alone for a token kept as bytes>",
     "bytes": {"<rank>": "<base64>", ...}}

the page slices one string that JSON.parse has already made (js/tokenizer/data.js).
A token is text when its bytes are well-formed UTF-8 that does not begin with a BOM,
the rule the page applied itself before (a lone continuation byte, say, stays bytes).

Built from the same data tiktoken is built from, through `firsttoken.tokens.bpe_data`,
which checks it against its pinned hash; once per version of the file, and served like
the other static files (an ETag, `no-cache`). `make` precompresses it: gateway/build/bundle.py
lists it among the files of a first visit.
"""

from __future__ import annotations

import base64
import json
from functools import partial
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from firsttoken.tokens.bpe_data import load_encoding_data

from .conditional import BuiltBody, cached_response, file_version
from .offload import Run, in_thread

__all__ = ["ENCODINGS", "FORMAT", "URL_PATTERN", "PageVocabularies", "page_vocabulary", "url_path"]

FORMAT = "firsttoken-vocabulary/1"
#: The encodings the page counts with (js/tokenizer/bpe.js ENCODINGS).
ENCODINGS = ("o200k_base", "cl100k_base")
#: Where the page finds one (js/tokenizer/python-module.js DATA_URL + data.js).
URL_PATTERN = "/vendor/tiktoken/{name}.decoded.json"
_BOM = b"\xef\xbb\xbf"
# A rank's length is one character: 0x20 + units. A token of 1,000 bytes would still be
# far below the surrogates (U+D800), which a JSON string may not hold alone.
_LENGTH_BASE = 0x20


def url_path(name: str) -> str:
    return URL_PATTERN.format(name=name)


def _as_text(token: bytes) -> str | None:
    if token.startswith(_BOM):
        return None
    try:
        # Python's strict UTF-8 is Unicode's well-formed UTF-8 (no overlong form, no
        # surrogate, nothing past U+10FFFF): what a fatal TextDecoder accepts.
        return token.decode("utf-8")
    except UnicodeDecodeError:
        return None


def page_vocabulary(name: str, directory: Path) -> bytes:
    """The page's form of `<directory>/<name>.json` (see the module's docstring)."""
    data = load_encoding_data(name, directory)
    by_rank = sorted((rank, token) for token, rank in data.mergeable_ranks.items())
    if [rank for rank, _ in by_rank] != list(range(len(by_rank))):
        # The page's table is indexed by rank; o200k_base and cl100k_base have no gap.
        raise ValueError(f"{name}: ranks are not 0..{len(by_rank) - 1} without a gap")
    text: list[str] = []
    lengths: list[str] = []
    raw: dict[str, str] = {}
    for rank, token in by_rank:
        as_text = _as_text(token)
        if as_text is None:
            raw[str(rank)] = base64.b64encode(token).decode("ascii")
            lengths.append(chr(_LENGTH_BASE))
        else:
            text.append(as_text)
            lengths.append(chr(_LENGTH_BASE + len(as_text.encode("utf-16-le")) // 2))
    document = {
        "format": FORMAT,
        "encoding": name,
        "ranks": len(by_rank),
        "text": "".join(text),
        "lengths": "".join(lengths),
        "bytes": raw,
    }
    # ensure_ascii=False: the text as UTF-8, at most half the size of \u escapes.
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class PageVocabularies:
    """Serves `page_vocabulary` for ENCODINGS, rebuilt when its source file changes."""

    def __init__(self, directory: Path, run: Run = in_thread) -> None:
        self.directory = directory
        self._run = run
        self._built = {
            name: BuiltBody(partial(file_version, directory / f"{name}.json"), partial(page_vocabulary, name, directory))
            for name in ENCODINGS
        }

    def _current(self, name: str) -> tuple[bytes, str]:
        return self._built[name].current()

    async def endpoint(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ENCODINGS:
            return Response("no such vocabulary", status_code=404, media_type="text/plain")
        # Built off the event loop: the first build takes a CPU second or so.
        body, etag = await self._run(self._current, name)
        return cached_response(request, body, media_type="application/json", etag=etag)
