"""Forwarding to a real API: OpenAI's, or Anthropic's for `/v1/messages`.

The request body goes upstream unchanged, to the upstream's route of the same name,
and the answer comes back unchanged, streamed byte for byte (errors mid-stream
included), with the upstream's status and the headers a client needs (content type,
rate limits, retry hints, request ids: OpenAI's and Anthropic's).

The key goes the way the route's API wants it: `Authorization: Bearer` for OpenAI's
routes; `x-api-key` for Anthropic's, with `anthropic-version` (the client's, else
`DEFAULT_ANTHROPIC_VERSION`: Anthropic refuses a request without one) and the client's
`anthropic-beta` flags. Anthropic's key is `anthropic_key` when the gateway has one
(`$ANTHROPIC_API_KEY`), else the upstream key: one host, one credential, when an
upstream serves both.

The upstream key comes from the gateway's environment and is added here, on the way out.
It never reaches the page, a log line or an error message: errors we make ourselves name
the upstream host only, and httpx's own exception text (which may carry the URL, never
headers) is not passed through. An upstream that echoes the request cannot send it back
either: every relayed body and header goes through a `Redactor` of the upstream key and
the gateway's own client key. The gateway's own client key is for the gateway: it is
never passed on (`forward_client_auth=False`), so without an upstream key the upstream
gets no authorization rather than the gateway's. Otherwise, without a key of its own
for the route, the gateway passes on what the client sent (its Authorization, and on
Anthropic's route its `x-api-key` too).
"""

from __future__ import annotations

import logging
from typing import AsyncIterator

import httpx
from starlette.background import BackgroundTask
from starlette.datastructures import Headers
from starlette.responses import Response, StreamingResponse

from .errors import APIError
from .redact import Redactor
from .simulator import SIM_HEADER

log = logging.getLogger("firsttoken.gateway.upstream")

# Response headers worth passing back; hop-by-hop and length/encoding headers are ours to set.
PASSED_HEADERS = ("content-type", "retry-after", "retry-after-ms", "x-should-retry", "x-request-id",
                  "openai-processing-ms", "request-id")
# ... and every header with one of these prefixes: OpenAI's and Anthropic's rate limits.
PASSED_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
#: The Messages API version sent when the client names none (Anthropic API reference,
#: "Versions": the current one).
DEFAULT_ANTHROPIC_VERSION = "2023-06-01"


class Upstream:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        anthropic_key: str | None = None,
        timeout: float = 600.0,
        forward_client_auth: bool = True,
        secrets: tuple[str | None, ...] = (),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._anthropic_key = anthropic_key
        self._forward_client_auth = forward_client_auth
        self._secrets = (api_key, anthropic_key, *secrets)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=15.0),
            # Compression would make us re-encode; we want the stream as it comes.
            headers={"accept-encoding": "identity"},
            follow_redirects=False,
        )

    @property
    def host(self) -> str:
        return httpx.URL(self.base_url).host

    async def aclose(self) -> None:
        await self._client.aclose()

    def _headers(self, incoming: Headers, *, anthropic: bool = False) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        # Our own simulator header travels on, so that a chain of gateways (and the
        # tests of this one) can steer a built-in model at the far end; real APIs ignore it.
        sim = incoming.get(SIM_HEADER)
        if sim:
            headers[SIM_HEADER] = sim
        # The gateway's key wins; without one, what the client sent is passed on.
        if anthropic:
            headers["anthropic-version"] = incoming.get("anthropic-version") or DEFAULT_ANTHROPIC_VERSION
            beta = incoming.get("anthropic-beta")
            if beta:
                headers["anthropic-beta"] = beta
            key = self._anthropic_key or self._api_key
            if key:
                headers["x-api-key"] = key
                return headers
            passed: tuple[str, ...] = ("authorization", "x-api-key")
        elif self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
            return headers
        else:
            passed = ("authorization",)
        if self._forward_client_auth:
            headers.update((name, incoming[name]) for name in passed if incoming.get(name))
        return headers

    async def forward(self, path: str, body: bytes, incoming: Headers, *, anthropic: bool = False) -> Response:
        """POST `body` to `path` with the headers its API wants (`anthropic`: Anthropic's),
        and relay the answer, redacted."""
        url = f"{self.base_url}{path}"
        request = self._client.build_request("POST", url, content=body, headers=self._headers(incoming, anthropic=anthropic))
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TimeoutException:
            raise APIError(504, f"The upstream API at {self.host} did not answer in time.", type="upstream_error", code="upstream_timeout") from None
        except httpx.HTTPError as exc:
            log.warning("upstream %s unreachable: %s", self.host, type(exc).__name__)
            raise APIError(502, f"The upstream API at {self.host} could not be reached.", type="upstream_error", code="upstream_unreachable") from None

        redactor = Redactor(self._secrets)
        return StreamingResponse(
            self._relay(response, redactor),
            status_code=response.status_code,
            headers=_passed_headers(response, redactor),
            background=BackgroundTask(response.aclose),
        )

    async def get(self, path: str, incoming: Headers) -> Response:
        """`GET` a path (`/models`, `/models/{id}`, OpenAI's headers) and relay the answer, redacted."""
        try:
            response = await self._client.get(f"{self.base_url}{path}", headers=self._headers(incoming))
        except httpx.HTTPError:
            raise APIError(502, f"The upstream API at {self.host} could not be reached.", type="upstream_error", code="upstream_unreachable") from None
        redactor = Redactor(self._secrets)
        body = redactor.feed(response.content) + redactor.flush()
        return Response(body, status_code=response.status_code, headers=_passed_headers(response, redactor))

    async def _relay(self, response: httpx.Response, redactor: Redactor) -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_raw():
                safe = redactor.feed(chunk)
                if safe:
                    yield safe
            rest = redactor.flush()
            if rest:
                yield rest
        except httpx.HTTPError as exc:
            # The upstream cut the stream: cut ours too, so the client sees a truncated
            # stream rather than a clean end it would mistake for a complete answer.
            log.warning("upstream %s stream broke: %s", self.host, type(exc).__name__)
            raise


def _passed_headers(response: httpx.Response, redactor: Redactor) -> dict[str, str]:
    return {
        k: redactor.text(v)
        for k, v in response.headers.items()
        if k.lower() in PASSED_HEADERS or k.lower().startswith(PASSED_PREFIXES)
    }
