"""OpenAI-style error objects.

OpenAI answers errors as `{"error": {"message", "type", "param", "code"}}` with an HTTP
status; clients such as the official `openai` package map the status to an exception
class and read the object. We mirror that shape so any OpenAI client understands us.
"""

from __future__ import annotations

from starlette.responses import JSONResponse


class APIError(Exception):
    """An error to be answered as an OpenAI-style error object."""

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
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def invalid(message: str, *, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)
