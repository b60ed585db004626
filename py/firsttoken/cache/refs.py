"""When the core may send a system message as a reference (bridge/PROTOCOL.md, "Cache
references"). Pure bookkeeping, one instance per core; no I/O.

The rules, each for a reason:

* A reference goes only to a base URL that answered, in this session, with
  ``x-firsttoken-gateway: cache-refs=1``. Any other OpenAI-compatible server gets the
  full text, always: it would not know the reference, and a server may change behind a
  URL between sessions, so the capability is not kept across reloads.
* A reference goes only for a text this session sent in full, with our client id, to
  that base URL, and got a 2xx for: the gateway stores a system message it receives in
  full from an identified client, so that is when it is known to hold it.
* Our client id (``x-firsttoken-client``) goes to the same base URLs, and to base URLs
  of the page's own origin (the gateway that served the page is the usual server, and a
  same-origin request with a custom header needs no CORS preflight). Elsewhere a custom
  header would make the browser ask the server's CORS policy first, which a foreign API
  would refuse.
* An unknown reference (409, ``cache_ref_unknown``: the gateway restarted or evicted
  it) is forgotten and the request is sent again once, in full.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from . import Entry

__all__ = [
    "ADVERTISED",
    "REQUEST_GZIP",
    "CLIENT_HEADER",
    "GATEWAY_HEADER",
    "REF_FIELD",
    "UNKNOWN_REF_CODE",
    "RefPlan",
    "GatewayRefs",
    "is_unknown_ref",
]

# The wire names of the extension, defined here once: the gateway (gateway/cache_refs.py)
# imports them, so its two ends cannot drift apart.
#: Response header by which a firsttoken gateway says it takes references ...
GATEWAY_HEADER = "x-firsttoken-gateway"
#: ... and its value (one of a comma-separated list of capabilities).
ADVERTISED = "cache-refs=1"
#: The capability of taking a gzipped request body (`Content-Encoding: gzip`, RFC 9110
#: §8.4), which cuts a phone's upload of a chat's JSON 4–6×.
REQUEST_GZIP = "request-gzip=1"
#: Request header naming the client whose stored texts references resolve against.
CLIENT_HEADER = "x-firsttoken-client"
#: The message field that replaces `content` with `sha256:<hex>`.
REF_FIELD = "x_firsttoken_ref"
#: `error.code` of the 409 answering a reference the gateway does not hold.
UNKNOWN_REF_CODE = "cache_ref_unknown"
#: A reference costs ~90 bytes of JSON; below this a text is cheaper sent as it is.
MIN_REF_CHARS = 256


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _capabilities(headers: Mapping[str, str]) -> list[str]:
    for name, value in headers.items():
        if name.lower() == GATEWAY_HEADER:
            return [p.strip() for p in value.replace(";", ",").split(",")]
    return []


def _advertises_refs(headers: Mapping[str, str]) -> bool:
    return ADVERTISED in _capabilities(headers)


@dataclass
class RefPlan:
    """How one request carries its leading system messages: `refs` maps message index
    to reference; `full` are the references of texts sent in full; `headers` are added
    to the request."""

    refs: dict[int, str] = field(default_factory=dict)
    full: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


class GatewayRefs:
    """What this session knows of each base URL: whether it takes references, and which
    texts it holds for us."""

    def __init__(self, page_origin: str | None = None) -> None:
        self.page_origin = page_origin.lower() if page_origin else None
        self._capable: set[str] = set()
        self._held: dict[str, set[str]] = {}
        self._gzip: set[str] = set()  # said `request-gzip=1`
        self._no_gzip: set[str] = set()  # answered a gzipped body with 415

    def takes_gzip(self, base_url: str) -> bool:
        """Whether to gzip request bodies to `base_url`: one that said it takes them, and
        the page's own origin (a firsttoken gateway, most likely, so that even the first
        request of a session, the largest, is small), unless it refused one (415, RFC
        9110 §15.5.16: the core then sends it plain again, and plain from then on). Any
        other server gets what every API takes: a plain body."""
        if base_url in self._no_gzip:
            return False
        return base_url in self._gzip or (self.page_origin is not None and _origin(base_url) == self.page_origin)

    def refuse_gzip(self, base_url: str) -> None:
        """`base_url` refused a gzipped body."""
        self._no_gzip.add(base_url)
        self._gzip.discard(base_url)

    def capable(self, base_url: str) -> bool:
        return base_url in self._capable

    def identifies(self, base_url: str) -> bool:
        """Whether requests to `base_url` may carry our client id."""
        return base_url in self._capable or (self.page_origin is not None and _origin(base_url) == self.page_origin)

    def plan(self, base_url: str, lead: Sequence[Entry], client_id: str | None, *, full: bool = False) -> RefPlan:
        """References for `lead` (the leading system messages, in order) to `base_url`;
        with `full`, none (the re-send after an unknown reference)."""
        plan = RefPlan()
        if client_id and self.identifies(base_url):
            plan.headers[CLIENT_HEADER] = client_id
        held = self._held.get(base_url, set())
        for i, entry in enumerate(lead):
            ref = entry.ref
            if ref is None or len(entry.text) < MIN_REF_CHARS:
                continue
            if not full and base_url in self._capable and ref in held and plan.headers:
                plan.refs[i] = ref
            else:
                plan.full.append(ref)
        return plan

    def observe(self, base_url: str, status: int, headers: Mapping[str, str], plan: RefPlan | None) -> None:
        """Learn from a response to a request sent with `plan`."""
        if not 200 <= status < 300:
            return
        if REQUEST_GZIP in _capabilities(headers) and base_url not in self._no_gzip:
            self._gzip.add(base_url)
        if not _advertises_refs(headers):
            # A 2xx without the header: not (or no longer) a gateway that takes refs.
            self._capable.discard(base_url)
            self._held.pop(base_url, None)
            return
        self._capable.add(base_url)
        if plan is not None and CLIENT_HEADER in plan.headers:
            self._held.setdefault(base_url, set()).update(plan.full)

    def forget(self, base_url: str, refs: Sequence[str]) -> None:
        """The gateway said it does not know `refs`."""
        held = self._held.get(base_url)
        if held:
            held.difference_update(refs)


def is_unknown_ref(error: Any) -> bool:
    """Whether an `HTTPStatusError` is the gateway's "unknown reference" answer."""
    return getattr(error, "status", None) == 409 and (getattr(error, "error", None) or {}).get("code") == UNKNOWN_REF_CODE
