"""A user's photo as the page sends it, through the core (`chat.send`: prepare, then the
dialect's request) to each API: the image part arrives as that API's own image part,
byte for byte, whatever the compression level; the text beside it is compressed as any
text; the system-message cache never holds an image; and `chat.prepared` counts it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firsttoken.tokens import image_tokens
from tests.unit.fakes import SSE, Canned, CannedTransport, FakeTime, run_core
from tests.unit.image_files import data_url, jpeg, png
from tests.unit.stream_feed import chat_body, messages_body, responses_body

BASE = "http://api.test/v1"
PNG_URL = data_url(png(300, 200))
# A JPEG's start with 40 KB of APPn (EXIF) segments: the header reader walks past them.
JPEG_URL = data_url(jpeg(1600, 1200, app_bytes=40_000), "image/jpeg")
PRETTY = '{\n  "total":   12.5,\n  "items": [1, 2]\n}'


def photo_prompt(url: str = PNG_URL, detail: str | None = "high") -> dict[str, Any]:
    image: dict[str, Any] = {"url": url}
    if detail:
        image["detail"] = detail
    return {"role": "user", "content": [{"type": "text", "text": "What does this receipt say?\n\n" + PRETTY},
                                        {"type": "image_url", "image_url": image}]}


def sent(model: str, messages: list[dict], **settings: Any) -> tuple[dict, list[dict]]:
    """The request body the core sent for `messages`, and the events it posted."""
    body = {"chat_completions": chat_body, "responses": responses_body, "anthropic_messages": messages_body}
    api = settings.get("api") or ("anthropic_messages" if model.startswith("claude") else "chat_completions")
    transport = CannedTransport(Canned(200, SSE, body[api]("ok")))
    _, events = run_core(transport, FakeTime(), {
        "type": "chat.send", "id": "a", "messages": messages,
        "settings": {"base_url": BASE, "model": model, **settings}})
    assert events[-1]["type"] == "chat.done", events[-1]
    return json.loads(transport.sent[0].body), events


@pytest.mark.parametrize("level", ["off", "safe", "balanced", "max"])
def test_chat_completions_sends_the_part_as_it_is(level: str) -> None:
    prompt = photo_prompt()
    body, _ = sent("gpt-4o", [prompt], compress=level)
    text, image = body["messages"][0]["content"]
    assert image == prompt["content"][1]
    if level != "off":  # the text beside the image is compressed like any text
        assert text["type"] == "text" and '"total":12.5' in text["text"]


@pytest.mark.parametrize("level", ["off", "max"])
def test_responses_sends_input_text_and_input_image(level: str) -> None:
    body, _ = sent("gpt-4o", [photo_prompt(JPEG_URL, "low")], api="responses", compress=level)
    content = body["input"][0]["content"]
    assert [p["type"] for p in content] == ["input_text", "input_image"]
    # Responses' image part: the URL is a string on the part, beside `detail`
    # (platform.openai.com/docs/api-reference/responses/create, input_image).
    assert content[1] == {"type": "input_image", "image_url": JPEG_URL, "detail": "low"}


def test_responses_without_a_detail_asks_for_auto() -> None:
    body, _ = sent("gpt-4o", [photo_prompt(detail=None)], api="responses")
    assert body["input"][0]["content"][1]["detail"] == "auto"


@pytest.mark.parametrize("url, media_type", [(PNG_URL, "image/png"), (JPEG_URL, "image/jpeg")])
def test_anthropic_messages_sends_a_base64_source(url: str, media_type: str) -> None:
    body, _ = sent("claude-sonnet-4-5", [photo_prompt(url)], compress="max")
    text, image = body["messages"][0]["content"]
    assert text["type"] == "text"
    # Messages' image block: a base64 source with its media type, no data: prefix
    # (platform.claude.com/docs/en/build-with-claude/vision, "Base64-encoded image example").
    # (The conversation's last block also carries the prompt cache's breakpoint.)
    image.pop("cache_control", None)
    assert image == {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                                 "data": url.partition(";base64,")[2]}}


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
def test_prepared_counts_the_image_by_its_pixels(api: str) -> None:
    text_only = {"role": "user", "content": [{"type": "text", "text": "What does this receipt say?\n\n" + PRETTY}]}
    _, plain = sent("gpt-4o", [text_only], api=api, compress="off")
    _, events = sent("gpt-4o", [photo_prompt()], api=api, compress="off")
    prepared = next(e for e in events if e["type"] == "chat.prepared")
    before = next(e for e in plain if e["type"] == "chat.prepared")
    assert prepared["prompt_tokens"] - before["prompt_tokens"] == image_tokens("gpt-4o", 300, 200, "high").tokens


def test_a_system_message_with_an_image_is_sent_whole_and_not_cached_as_text() -> None:
    system = {"role": "system", "content": [{"type": "text", "text": "Read receipts."},
                                            {"type": "image_url", "image_url": {"url": PNG_URL}}]}
    lead = {"role": "system", "content": "Be terse."}
    body, _ = sent("gpt-4o", [lead, system, photo_prompt()], base_url=BASE)
    assert body["messages"][1] == system  # the cache keeps system text only: this one goes whole
    assert "x_firsttoken_ref" not in body["messages"][1]
