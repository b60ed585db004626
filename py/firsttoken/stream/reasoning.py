"""What each API is asked of a model's reasoning, and whether a 400 refused it.

The decisions are `firsttoken.stream.dialects`' (its docstring, "Reasoning"); the
family facts are the table's (`firsttoken.tokens.models.reasoning_model`), the room by
effort the budget's (`firsttoken.tokens.budget.THINKING_RESERVE`). Pure: settings in,
body fields out.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..replay import about_replay
from ..settings import APIS, ChatSettings
from ..tokens.budget import THINKING_RESERVE, reply_reserve
from ..tokens.models import EFFORTS, reasoning_model, thinking_effort

__all__ = ["MIN_ANSWER_ROOM", "MIN_THINKING_BUDGET", "anthropic_thinking", "reasoning_fields", "reasoning_refused"]

CHAT, RESPONSES, MESSAGES = APIS

#: Anthropic's least `budget_tokens` (AP `thinking_config_enabled_param.py`: "Must be
#: ≥1024 and less than `max_tokens`"), and the room kept for the answer above it.
MIN_THINKING_BUDGET = 1024
MIN_ANSWER_ROOM = 1024
#: The body fields each API's reasoning is asked with: what a 400 that names one is
#: about (`reasoning_refused`).
_REASONING_PARAMS = {
    CHAT: ("reasoning_effort", "thinking"),
    RESPONSES: ("reasoning", "include"),
    MESSAGES: ("thinking", "output_config"),
}


def _off_effort(settings: ChatSettings) -> str | None:
    info = reasoning_model(settings.model)
    return info.off_effort if info is not None else "none"


def anthropic_thinking(
    settings: ChatSettings, reasoning: bool = True
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int]:
    """Messages' `(thinking, output_config, max_tokens)` for the settings."""
    max_tokens = reply_reserve(settings)
    if not reasoning:
        return None, None, max_tokens
    info = reasoning_model(settings.model)
    kind = info.anthropic if info is not None else None
    setting = settings.reasoning
    if kind is None:
        if info is not None or setting not in EFFORTS:
            return None, None, max_tokens  # no thinking on Messages, and none asked for
        kind = "budget"  # an unknown model with a set effort: the form every one takes
    display = {"display": "summarized" if settings.reasoning_summary else "omitted"}
    if setting == "off":
        if kind == "adaptive_only":
            # Cannot be switched off (both `enabled` and `disabled` are refused): lowest effort.
            return {"type": "adaptive", **display}, {"effort": "low"}, max_tokens
        return {"type": "disabled"}, None, max_tokens
    effort = setting if setting in EFFORTS else None
    if effort is None and not (info is not None and info.thinks_by_default):
        return None, None, max_tokens  # auto, on a model that does not think unasked
    if kind in ("adaptive_only", "adaptive"):
        return {"type": "adaptive", **display}, ({"effort": effort} if effort else None), max_tokens
    budget = THINKING_RESERVE[effort or thinking_effort(settings.model, setting) or "medium"]
    budget = max(MIN_THINKING_BUDGET, min(budget, max_tokens - MIN_ANSWER_ROOM))
    return {"type": "enabled", "budget_tokens": budget, **display}, None, max(max_tokens, budget + MIN_ANSWER_ROOM)


def reasoning_fields(settings: ChatSettings, api: str) -> dict[str, Any]:
    """The body fields that ask `api` for the settings' reasoning (module docstring).
    Messages' are in `request_body`, with the `max_tokens` they need."""
    setting = settings.reasoning
    info = reasoning_model(settings.model)
    if api == CHAT:
        if setting == "auto":
            return {}
        if info is not None and info.off_effort is None:  # DeepSeek's switch
            if setting == "off":
                return {"thinking": {"type": "disabled"}}
            return {"thinking": {"type": "enabled"}, "reasoning_effort": setting}
        return {"reasoning_effort": _off_effort(settings) if setting == "off" else setting}
    if api == RESPONSES:
        if info is None and setting == "auto":
            return {}
        effort = (_off_effort(settings) or "none") if setting == "off" else setting if setting in EFFORTS else None
        config: dict[str, Any] = {"effort": effort} if effort else {}
        thinks = thinking_effort(settings.model, setting) is not None or (info is None and setting in EFFORTS)
        if settings.reasoning_summary and thinks:
            config["summary"] = "auto"
        fields: dict[str, Any] = {"reasoning": config} if config else {}
        if thinks:
            fields["include"] = ["reasoning.encrypted_content"]
        return fields
    thinking, output_config, _ = anthropic_thinking(settings)
    fields = {}
    if thinking is not None:
        fields["thinking"] = thinking
    if output_config is not None:
        fields["output_config"] = output_config
    return fields


def reasoning_refused(error: Mapping[str, Any], api: str, body_fields: Mapping[str, Any]) -> bool:
    """Whether a 400's error object is about a reasoning field the request sent
    (`body_fields`: `reasoning_fields`' result). OpenAI names it in `param`; Anthropic
    and most compatible servers only in the message. An error about what went back
    (a path into `messages`/`input`, a signature, encrypted content) is not a refusal
    of the parameter: dropping the parameter would not mend it."""
    sent = [name for name in _REASONING_PARAMS[api] if name in body_fields]
    if not sent:
        return False
    param = error.get("param")
    if isinstance(param, str) and param:
        return any(param == name or param.startswith(name + ".") or param.startswith(name + "[") for name in sent)
    message = str(error.get("message") or "")
    if about_replay(error) or any(path in message for path in ("messages.", "input[")):
        return False
    return any(name in message for name in sent)
