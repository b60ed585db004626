"""Error objects, in the shape each API's clients parse.

One error, `APIError` (a status, a message, OpenAI's `type`/`param`/`code`, headers),
goes out in one of two shapes, chosen by the route's vendor (gateway/dialects,
`error_response`):

- OpenAI's (every route but Anthropic's): `{"error": {"message", "type", "param",
  "code"}}` with the HTTP status. The official `openai` client maps the status to an
  exception class and reads the object.
- Anthropic's (`/v1/messages`): `{"type": "error", "error": {"type", "message"},
  "request_id"}` with a `request-id` header (Anthropic API reference, "Errors"). The
  `error.type` follows from the status, as Anthropic's table has it; the official
  `anthropic` client maps the status to its exception class. The gateway's own `code`
  goes in `error.details.error_code`, where Anthropic puts a finer code (the client
  reads it there to pick a subclass; none of ours names one of its).
"""

from __future__ import annotations

import secrets

from starlette.responses import JSONResponse

__all__ = ["ANTHROPIC", "OPENAI", "APIError", "anthropic_type", "invalid", "new_request_id"]

#: The two vendors whose error shapes the gateway speaks.
OPENAI = "openai"
ANTHROPIC = "anthropic"

# Anthropic's error types by HTTP status (Anthropic API reference, "Errors", "HTTP
# errors"); any other 4xx is an invalid request, any other 5xx an api_error.
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class APIError(Exception):
    """An error to be answered as an error object (see the module's docstring)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def __reduce__(self):
        # Raised in the offload worker process (gateway/offload.py) and re-raised here.
        return (type(self), (self.status, self.message), self.__dict__.copy())

    def body(self) -> dict:
        """OpenAI's error object."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def anthropic_body(self, request_id: str) -> dict:
        """Anthropic's error object."""
        error: dict = {"type": anthropic_type(self.status), "message": self.message}
        if self.code is not None:
            error["details"] = {"error_code": self.code}
        return {"type": "error", "error": error, "request_id": request_id}

    def response(self, vendor: str = OPENAI) -> JSONResponse:
        """This error as `vendor`'s clients expect it."""
        if vendor == ANTHROPIC:
            request_id = new_request_id()
            return JSONResponse(self.anthropic_body(request_id), status_code=self.status,
                                headers={**self.headers, "request-id": request_id})
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def anthropic_type(status: int) -> str:
    """Anthropic's `error.type` for an HTTP status."""
    return _ANTHROPIC_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def new_request_id() -> str:
    """A fresh id in the place of Anthropic's `request-id` (`req_` and 96 random bits)."""
    return "req_" + secrets.token_hex(12)


def invalid(message: str, *, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)
