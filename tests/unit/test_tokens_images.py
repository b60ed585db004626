"""Image token rules against the providers' own worked examples, every family; the size
each model keeps; image parts counted in messages of all three dialects."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firsttoken import tokens
from firsttoken.errors import ImageTooLarge, InvalidImage
from firsttoken.tokens.images import count_image_part, image_rule, max_image_tokens
from tests.unit.image_files import data_url, image_part, jpeg, png, webp_vp8x

# OpenAI, "Images and vision", "Calculating costs" (and the measurements cited in
# firsttoken/tokens/images.py).
OPENAI_EXAMPLES = [
    ("gpt-4o", 1024, 1024, "high", 765, (768, 768)),
    ("gpt-4o", 2048, 4096, "high", 1105, (768, 1536)),
    ("gpt-4o", 4096, 8192, "low", 85, (256, 512)),
    ("gpt-4o-2024-08-06", 128, 64, "high", 255, (128, 64)),  # no upscaling: one tile
    ("gpt-4.1", 2049, 513, "high", 85 + 170 * 8, (2048, 513)),  # rounded to the nearest pixel
    ("gpt-4.1", 2050, 513, "high", 85 + 170 * 4, (2048, 512)),
    ("gpt-4o-mini", 128, 64, "low", 2833, (128, 64)),
    ("gpt-4o-mini", 128, 64, "high", 2833 + 5667, (128, 64)),
    ("gpt-4o-mini", 1024, 1024, "high", 2833 + 5667 * 4, (768, 768)),
    ("gpt-5", 1024, 1024, "high", 70 + 140 * 4, (768, 768)),
    ("o3", 1024, 1024, "high", 75 + 150 * 4, (768, 768)),
    ("o3", 1024, 1024, "low", 75, (512, 512)),
    ("computer-use-preview", 1024, 1024, "high", 65 + 129 * 4, (768, 768)),
    # Patches: 1024 × 1024 → 1024 patches; 1800 × 2400 → 1056 × 1408 → 1452 patches.
    ("gpt-4.1-mini", 1024, 1024, None, round(1024 * 1.62), (1024, 1024)),
    ("gpt-4.1-mini", 1800, 2400, "high", 2352, (1056, 1408)),
    ("gpt-4.1-nano", 1800, 2400, None, round(1452 * 2.46), (1056, 1408)),
    ("o4-mini", 1024, 1024, "low", round(1024 * 1.72), (1024, 1024)),  # low changes nothing
    ("o4-mini", 128, 64, "low", 14, (128, 64)),  # 8 patches × 1.72
    ("gpt-4.1-mini", 4000, 1474, None, round(1449 * 1.62), (1997, 736)),  # the guide's scale-down
]


@pytest.mark.parametrize(("model", "width", "height", "detail", "expected", "kept"), OPENAI_EXAMPLES)
def test_openai_rules_give_the_documented_counts(model: str, width: int, height: int, detail: str | None,
                                                  expected: int, kept: tuple[int, int]) -> None:
    count = tokens.image_tokens(model, width, height, detail)
    assert count.tokens == expected
    assert (count.width, count.height) == kept == tokens.image_target_size(model, width, height, detail)


@pytest.mark.parametrize(("size", "expected"), [((200, 200), 54), ((1000, 1000), 1334), ((1092, 1092), 1590)])
def test_anthropic_rule_gives_its_table(size: tuple[int, int], expected: int) -> None:
    # Anthropic's vision guide, "Calculate image costs": ~54, ~1334, ~1590 tokens.
    count = tokens.image_tokens("claude-sonnet-4-5", *size)
    assert (count.tokens, (count.width, count.height), count.exact) == (expected, size, False)
    assert "estimate" in count.note


@pytest.mark.parametrize("size", [(4032, 3024), (3024, 4032), (1568, 784), (8000, 200), (2000, 2000)])
def test_anthropic_keeps_at_most_1568_on_the_long_edge_and_about_1600_tokens(size: tuple[int, int]) -> None:
    w, h = tokens.image_target_size("claude-opus-4", *size)
    assert max(w, h) <= 1568 and w * h <= 1_200_000
    assert abs(w / h - size[0] / size[1]) < 0.02 * (size[0] / size[1])  # the aspect ratio is kept
    assert tokens.image_tokens("claude-opus-4", *size).tokens <= 1600


def test_exactness_follows_what_is_documented_and_not_contradicted() -> None:
    assert tokens.image_tokens("gpt-4o", 800, 600, "high").exact
    assert tokens.image_tokens("gpt-4o", 800, 600, "low").exact
    auto = tokens.image_tokens("gpt-4o", 800, 600, "auto")
    assert not auto.exact and auto.tokens == tokens.image_tokens("gpt-4o", 800, 600, "high").tokens
    assert not tokens.image_tokens("gpt-4o", 800, 600).exact and "'high'" in tokens.image_tokens("gpt-4o", 800, 600).note
    assert tokens.image_tokens("firsttoken-sim", 800, 600).exact  # the built-in model: "auto" is "high"
    assert tokens.image_tokens("gpt-4.1-mini", 1024, 1024).exact
    assert not tokens.image_tokens("gpt-4.1-mini", 1800, 2400).exact  # past the cap: scaled by the guide's rule
    for model in ("gpt-5-mini", "gpt-5-nano", "gpt-5.2", "gpt-5.4-mini", "o1", "o3-pro", "llama-3-vision",
                  "claude-3-haiku"):
        assert not tokens.image_tokens(model, 800, 600, "high").exact, model
    assert image_rule("openai/gpt-4o-mini-2024-07-18").base == 2833
    assert image_rule("gpt-5-chat-latest").per_tile == 140


MODELS = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o4-mini", "gpt-5", "gpt-5-mini",
          "o3", "computer-use-preview", "claude-sonnet-4", "firsttoken-sim", "someones-model"]


@given(st.sampled_from(MODELS), st.integers(1, 20_000), st.integers(1, 20_000),
       st.sampled_from([None, "low", "high", "auto"]))
def test_an_image_resized_to_its_target_costs_what_the_original_does(model: str, width: int, height: int,
                                                                      detail: str | None) -> None:
    count = tokens.image_tokens(model, width, height, detail)
    assert 1 <= count.width <= width and 1 <= count.height <= height
    again = tokens.image_tokens(model, count.width, count.height, detail)
    assert (again.tokens, again.width, again.height) == (count.tokens, count.width, count.height)
    assert count.tokens <= max_image_tokens(model, detail)
    # Every rule is symmetric: a photo's EXIF rotation changes no count.
    assert tokens.image_tokens(model, height, width, detail).tokens == count.tokens


def test_sizes_must_be_positive_ints() -> None:
    for bad in ((0, 5), (5, -1)):
        with pytest.raises(ValueError):
            tokens.image_tokens("gpt-4o", *bad)
    with pytest.raises(TypeError):
        tokens.image_tokens("gpt-4o", 5.0, 5)  # type: ignore[arg-type]


# ---- in messages ------------------------------------------------------------------------------


def _chat(part: dict) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": "hi"}, part]}]


def test_image_parts_count_by_their_pixels_in_a_message() -> None:
    text_only = tokens.count_chat([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "gpt-4o")
    detail = tokens.count_chat_detailed(_chat(image_part(1024, 1024, "high")), "gpt-4o")
    assert detail.total == text_only + 765 and detail.exact and detail.notes == ()
    assert tokens.count_chat(_chat(image_part(4096, 8192, "low")), "gpt-4o") == text_only + 85
    mini = tokens.count_chat_detailed(_chat(image_part(1800, 2400)), "gpt-4.1-mini")
    assert mini.total == text_only + 2352 and not mini.exact
    # Byte length does not matter: a 1024 × 1024 PNG and a header-only one cost the same.
    header_only = {"type": "image_url", "image_url": {"url": data_url(png(1024, 1024, pixels=False)), "detail": "high"}}
    assert tokens.count_chat(_chat(header_only), "gpt-4o") == text_only + 765


def test_the_three_dialects_image_parts_count_alike() -> None:
    raw = jpeg(2048, 4096)
    b64 = base64.b64encode(raw).decode()
    chat = {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{b64}", "detail": "high"}}
    responses = {"type": "input_image", "image_url": f"data:image/jpeg;base64,{b64}", "detail": "high"}
    anthropic = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64}}
    for part in (chat, responses):
        assert count_image_part(part, "gpt-4o").tokens == 1105
    assert count_image_part(anthropic, "gpt-4o").tokens == 1105  # no detail: "auto", counted as "high"
    claude = [count_image_part(p, "claude-sonnet-4").tokens for p in (chat, responses, anthropic)]
    assert claude == [claude[0]] * 3 and claude[0] == tokens.image_tokens("claude-sonnet-4", 2048, 4096).tokens
    assert count_image_part({"type": "text", "text": "x"}, "gpt-4o") is None


def test_the_page_counts_an_image_for_messages_as_it_will_be_sent() -> None:
    # The page's chat-form part keeps its detail; on Anthropic's Messages it is dropped.
    low = _chat(image_part(2000, 1000, "low"))
    assert tokens.count_chat(low, "firsttoken-sim") < tokens.count_chat(low, "firsttoken-sim", api="anthropic_messages")


def test_an_image_given_by_url_counts_at_its_most() -> None:
    by_url = {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg", "detail": "high"}}
    detail = tokens.count_chat_detailed(_chat(by_url), "gpt-4o")
    assert detail.total - tokens.count_chat(_chat({"type": "text", "text": ""}), "gpt-4o") >= 85 + 170 * 8 - 1
    assert not detail.exact and any("URL" in n for n in detail.notes)
    assert max_image_tokens("gpt-4o", "low") == 85 and max_image_tokens("gpt-4.1-mini") == round(1536 * 1.62)
    file_block = {"type": "image", "source": {"type": "file", "file_id": "file_1"}}
    assert count_image_part(file_block, "claude-sonnet-4").tokens == 1600


def test_bad_images_in_a_message_raise_typed_errors() -> None:
    corrupt = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAAAAAA"}}
    with pytest.raises(InvalidImage):
        tokens.count_chat(_chat(corrupt), "gpt-4o")
    bomb = {"type": "input_image", "image_url": data_url(webp_vp8x(50_000, 50_000), "image/webp")}
    with pytest.raises(ImageTooLarge):
        tokens.count_chat(_chat(bomb), "gpt-4o")
    # Not swallowed by the encoder-less fallback either.
    with pytest.raises(ImageTooLarge):
        tokens.estimate_tokens(_chat(bomb), "gpt-4o")
    with pytest.raises(InvalidImage):
        tokens.rough_count_chat(_chat(corrupt), "gpt-4o")


def test_the_rough_count_counts_images_by_the_same_rule() -> None:
    messages = _chat(image_part(1024, 1024, "high"))
    assert tokens.rough_count_chat(messages, "gpt-4o") == 3 + 3 + 1 + 765
    assert tokens.rough_count_chat(messages, "claude-sonnet-4") == 3 + 3 + 1 + 1399  # 1024² / 750, rounded up


def test_a_count_says_how_many_of_its_tokens_are_images() -> None:
    detail = tokens.count_chat_detailed(_chat(image_part(1024, 1024, "high")) + _chat(image_part(100, 100, "low")), "gpt-4o")
    assert detail.images == 765 + 85
    assert tokens.count_chat_detailed([{"role": "user", "content": "hi"}], "gpt-4o").images == 0
