"""Forwarding to a real OpenAI-compatible API.

The request body goes upstream unchanged and the answer comes back unchanged, streamed
byte for byte (errors mid-stream included), with the upstream's status and the headers a
client needs (content type, rate limits, retry hints, request id).

The upstream key comes from the gateway's environment and is added here, on the way out.
It never reaches the page, a log line or an error message: errors we make ourselves name
the upstream host only, and httpx's own exception text (which may carry the URL, never
headers) is not passed through. An upstream that echoes the request cannot send it back
either: every relayed body and header goes through a `Redactor` of the upstream key and
the gateway's own client key. The gateway's own client key is for the gateway: it is
never passed on (`forward_client_auth=False`), so without an upstream key the upstream
gets no authorization rather than the gateway's.
"""

from __future__ import annotations

import logging
from typing import AsyncIterator

import httpx
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from .errors import APIError
from .redact import Redactor
from .simulator import SIM_HEADER

log = logging.getLogger("firsttoken.gateway.upstream")

# Response headers worth passing back; hop-by-hop and length/encoding headers are ours to set.
PASSED_HEADERS = ("content-type", "retry-after", "retry-after-ms", "x-request-id", "openai-processing-ms")


class Upstream:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float = 600.0,
        forward_client_auth: bool = True,
        secrets: tuple[str | None, ...] = (),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._forward_client_auth = forward_client_auth
        self._secrets = (api_key, *secrets)
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

    def _headers(self, client_auth: str | None, sim: str | None = None) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        # Our own simulator header travels on, so that a chain of gateways (and the
        # tests of this one) can steer a built-in model at the far end; real APIs ignore it.
        if sim:
            headers[SIM_HEADER] = sim
        # The gateway's key wins; without one, a key the client sent is passed on.
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        elif client_auth and self._forward_client_auth:
            headers["authorization"] = client_auth
        return headers

    async def forward(self, path: str, body: bytes, client_auth: str | None, sim: str | None = None) -> Response:
        url = f"{self.base_url}{path}"
        request = self._client.build_request("POST", url, content=body, headers=self._headers(client_auth, sim))
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

    async def get(self, path: str, client_auth: str | None) -> Response:
        """`GET` a path (`/models`, `/models/{id}`) and relay the answer, redacted."""
        try:
            response = await self._client.get(f"{self.base_url}{path}", headers=self._headers(client_auth))
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
        if k.lower() in PASSED_HEADERS or k.lower().startswith("x-ratelimit-")
    }
