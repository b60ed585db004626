"""Reasoning, as the built-in model does it in every dialect: who thinks, for how long,
and the seals that let a thought come back on a later turn.

Pure: no clock, no socket. The one secret is the process's seal key, made at import
(`secrets`); a seal made by one gateway process does not verify in another, as a
signature from one vendor's model does not verify at another's (docs/gateway.md).

**Who thinks.** `THINKING_MODEL` (`firsttoken-sim-think`), unless the request turns it
off (`reasoning_effort: "none"`, Responses `reasoning.effort: "none"`, Messages
`thinking: {"type": "disabled"}`); the sim field `think=0|1` forces it either way.
The other built-in models refuse the reasoning parameters with the 400 a real model
without reasoning gives (each dialect's `check_supported`).

**How long.** `thinking_tokens`: the sim field `think_tokens=N` when given, else
`think_budget` (400 tokens by default) times the effort's share of it. The shares are
the published mapping from effort to a share of the reasoning budget, low 25 %,
medium 50 %, high 100 % (TypingMind's changelog, 2025-05-13, "Low uses 25%, Medium
uses 50%, and High uses 100% of max tokens for reasoning"); minimal (10 %), xhigh
(150 %) and max (200 %) are ours, extended the same way. So medium, the default,
thinks 200 tokens: 5 s at the default 40 tokens/s, the order of a small reasoning
model's medium effort on a short prompt (bolna-ai/bolna PR#891 saw 26–48 reasoning
tokens at *low* on gpt-5.4-mini). Anthropic's `budget_tokens` caps it.

**Seals.** Anthropic's thinking `signature` (`sign`/`signature_valid`) is an HMAC-SHA256
over the thinking text as sent (empty with `display: "omitted"`), with a random nonce;
Responses' `encrypted_content` (`seal_item`/`item_seal_valid`) an HMAC over the item's
id, its summary text and its token count. Neither hides anything (the built-in model's
thinking is no secret); both are authenticated, so an altered or foreign one is refused
with the vendor's own 400.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from typing import Any

__all__ = [
    "EFFORTS", "EFFORT_SHARE", "THINKING_MODEL", "Signer", "item_seal_valid", "seal_item", "signature_valid",
    "thinking_tokens",
]

THINKING_MODEL = "firsttoken-sim-think"

#: OpenAI's `reasoning_effort` values (openai-python `types/shared/reasoning_effort.py`).
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: Anthropic's `output_config.effort` values.
ANTHROPIC_EFFORTS = ("low", "medium", "high", "xhigh", "max")

#: Each effort's share of the thinking budget (the module's docstring says where from).
EFFORT_SHARE = {"none": 0.0, "minimal": 0.1, "low": 0.25, "medium": 0.5, "high": 1.0, "xhigh": 1.5, "max": 2.0}
DEFAULT_EFFORT = "medium"


def thinking_tokens(effort: str | None, *, budget: int, exact: int | None, cap: int | None) -> int:
    """How many tokens the model thinks: none for effort "none", else `exact` if given
    (the sim field `think_tokens`), else `budget` times the share of `effort` (None:
    medium); never past `cap` (Anthropic's `budget_tokens`)."""
    if effort == "none":  # the request turned thinking off: no sim field turns it back on
        return 0
    n = exact if exact is not None else round(budget * EFFORT_SHARE.get(effort or DEFAULT_EFFORT, 0.5))
    return max(0, min(n, cap) if cap is not None else n)


# A per-process key; FIRSTTOKEN_SEAL_KEY (any text) shares one between processes
# behind one address, so that a later turn may land on any of them.
_KEY = hashlib.sha256(os.environ["FIRSTTOKEN_SEAL_KEY"].encode()).digest() if os.environ.get(
    "FIRSTTOKEN_SEAL_KEY") else secrets.token_bytes(32)
_SIGNATURE_VERSION = b"\x01"
_NONCE = 12


class Signer:
    """Signs one thinking text as it streams: `update` each piece shown, `signature()`
    at the end. Incremental, so that a long thought is never held for its MAC."""

    def __init__(self) -> None:
        self._nonce = secrets.token_bytes(_NONCE)
        self._mac = hmac.new(_KEY, b"thinking\0" + self._nonce, hashlib.sha256)

    def update(self, text: str) -> None:
        self._mac.update(text.encode("utf-8", "surrogatepass"))

    def signature(self) -> str:
        return base64.b64encode(_SIGNATURE_VERSION + self._nonce + self._mac.digest()).decode()


def signature_valid(thinking: str, signature: str) -> bool:
    """Whether `signature` is one this process made over exactly `thinking`."""
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return False
    if len(raw) != 1 + _NONCE + 32 or raw[:1] != _SIGNATURE_VERSION:
        return False
    nonce, mac = raw[1 : 1 + _NONCE], raw[1 + _NONCE :]
    expected = hmac.new(_KEY, b"thinking\0" + nonce + thinking.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return hmac.compare_digest(mac, expected.digest())


def _item_mac(payload: bytes) -> bytes:
    return hmac.new(_KEY, b"reasoning-item\0" + payload, hashlib.sha256).digest()


def seal_item(item_id: str, summary: str, tokens: int) -> str:
    """The `encrypted_content` of the reasoning item `item_id`: its facts as JSON and
    their MAC, base64url, joined by a dot."""
    payload = json.dumps({"id": item_id, "summary": hashlib.sha256(summary.encode("utf-8", "surrogatepass")).hexdigest(),
                          "tokens": tokens}, separators=(",", ":")).encode()
    b64 = base64.urlsafe_b64encode
    return "ftk1." + b64(payload).decode() + "." + b64(_item_mac(payload)).decode()


def item_seal_valid(item: dict[str, Any]) -> bool:
    """Whether a reasoning item sent back holds an `encrypted_content` this process made
    for that item (its id)."""
    token = item.get("encrypted_content")
    if not isinstance(token, str):
        return False
    head, _, rest = token.partition(".")
    body, _, mac = rest.partition(".")
    if head != "ftk1" or not body or not mac:
        return False
    try:
        payload = base64.urlsafe_b64decode(body.encode("ascii"))
        given = base64.urlsafe_b64decode(mac.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False
    if not hmac.compare_digest(given, _item_mac(payload)):
        return False
    try:
        facts = json.loads(payload)
    except ValueError:
        return False
    return isinstance(facts, dict) and (item.get("id") is None or facts.get("id") == item.get("id"))
