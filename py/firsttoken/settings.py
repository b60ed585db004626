"""What the page says about where and how to send: `ChatSettings`.

Its own module because both the page protocol (`firsttoken.protocol`, which validates
`chat.send` and `tokens.count`) and the transport layer (`firsttoken.stream.client`,
which builds the request) read it: neither should have to import the other for it.
The wire form is bridge/PROTOCOL.md, "settings".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["APIS", "REASONING", "ChatSettings"]

#: The API dialects a request may speak (`ChatSettings.api`; `firsttoken.stream.dialects`).
APIS = ("chat_completions", "responses", "anthropic_messages")
#: The `reasoning` setting's values: "auto" leaves it to the model (the default),
#: "off" asks it not to think where it can stop, the others are its effort.
REASONING = ("auto", "off", "low", "medium", "high")


@dataclass
class ChatSettings:
    """Where and how to send. `api_key` is sent as the API wants it (a bearer token;
    Anthropic's `x-api-key`) and never logged."""

    base_url: str = "/v1"
    model: str = "firsttoken-sim"
    api_key: str = field(default="", repr=False)
    headers: dict[str, str] = field(default_factory=dict)
    max_tokens: int | None = None
    #: Compression level for outgoing prompts ("safe", "balanced", "max"), or "off".
    compress: str = "balanced"
    #: The model's context window, when the user knows better than our table.
    context_window: int | None = None
    #: Seconds without text (answer or reasoning) after which the reply says it is still
    #: waiting (`chat.stall`, `connected` when bytes such as keep-alives came meanwhile).
    stall_notice_s: float = 10.0
    #: Seconds without a byte after which the request ends with `timeout`.
    stall_timeout_s: float = 60.0
    #: The API dialect (one of `APIS`); None: the one the model is served on only, else
    #: Chat Completions (`firsttoken.stream.dialects.api_for`).
    api: str | None = None
    #: How hard the model should think (one of `REASONING`; anything else is "auto"):
    #: mapped per API and model family by `firsttoken.stream.dialects`.
    reasoning: str = "auto"
    #: Ask for a summary of the reasoning where the API hides it otherwise (Responses'
    #: `reasoning.summary: "auto"`, Anthropic's `thinking.display: "summarized"`). A
    #: summary can delay the first answer token by 0.5-2 s (bolna-ai/bolna PR#891),
    #: hence a setting; on by default, since without it a reasoning model shows nothing.
    reasoning_summary: bool = True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ChatSettings":
        """Settings from their JSON form; a value of the wrong type counts as absent."""
        headers = data.get("headers") or {}
        max_tokens = data.get("max_tokens")
        return cls(
            base_url=str(data.get("base_url") or cls.base_url),
            model=str(data.get("model") or cls.model),
            api_key=str(data.get("api_key") or ""),
            headers={str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {},
            max_tokens=max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else None,
            compress=str(data.get("compress") or cls.compress),
            context_window=_positive_int(data.get("context_window")),
            stall_notice_s=_positive_number(data.get("stall_notice_s")) or cls.stall_notice_s,
            stall_timeout_s=_positive_number(data.get("stall_timeout_s")) or cls.stall_timeout_s,
            api=data.get("api") if data.get("api") in APIS else None,
            reasoning=data["reasoning"] if data.get("reasoning") in REASONING else "auto",
            reasoning_summary=data.get("reasoning_summary") is not False,
        )


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _positive_number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf"):
        return float(value)
    return None
