"""`image.size` → `image.sized`: the size the page resizes a photo to, from the core's
image rules (`firsttoken.tokens.images`), and bad requests refused as typed errors."""

from __future__ import annotations

from typing import Any

import pytest

from firsttoken.tokens import image_target_size, image_tokens
from tests.unit.fakes import CannedTransport, FakeTime, run_core


def ask(**fields: Any) -> list[dict]:
    _, events = run_core(CannedTransport(), FakeTime(), {"type": "image.size", "id": "s", **fields})
    return events


@pytest.mark.parametrize("model, width, height, detail", [
    ("firsttoken-sim", 4032, 3024, "high"),
    ("gpt-4o", 4032, 3024, "low"),
    ("gpt-4o", 1024, 1024, None),
    ("gpt-4.1-mini", 1800, 2400, "high"),
    ("claude-sonnet-4-5", 4032, 3024, None),
    ("an-unknown-model", 300, 200, "high"),
])
def test_the_size_a_model_keeps(model: str, width: int, height: int, detail: str | None) -> None:
    fields = {"model": model, "width": width, "height": height} | ({"detail": detail} if detail else {})
    [event] = ask(**fields)
    kept = image_tokens(model, width, height, detail)
    assert event == {"v": 2, "type": "image.sized", "id": "s", "width": kept.width, "height": kept.height,
                     "tokens": kept.tokens, "exact": kept.exact}
    assert (event["width"], event["height"]) == image_target_size(model, width, height, detail)


def test_a_phone_photo_on_the_built_in_model() -> None:
    # OpenAI's guide: fit in 2048 × 2048, then the short side to 768: 1024 × 768, 6 tiles.
    [event] = ask(model="firsttoken-sim", width=4032, height=3024, detail="high")
    assert (event["width"], event["height"], event["tokens"], event["exact"]) == (1024, 768, 85 + 170 * 4, True)


@pytest.mark.parametrize("fields", [
    {"width": 10, "height": 10},
    {"model": "gpt-4o", "width": 0, "height": 10},
    {"model": "gpt-4o", "width": 10.5, "height": 10},
    {"model": "gpt-4o", "width": True, "height": 10},
    {"model": "gpt-4o", "width": 10, "height": 2**21},
    {"model": "gpt-4o", "width": 10, "height": 10, "detail": 3},
])
def test_bad_requests_are_invalid_messages(fields: dict) -> None:
    [event] = ask(**fields)
    assert event["type"] == "error" and event["error"]["code"] == "invalid_message"
