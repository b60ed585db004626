"""Images on the built-in model, over real sockets, through the official `openai` and
`anthropic` clients: an image part in each dialect is billed by the same rule firsttoken
counts with, so `usage` equals the page's count for the same messages; an image that
does not read, or declares a decompression bomb's size, is a 400 with its typed code."""

from __future__ import annotations

import base64
from typing import Any, Iterator

import anthropic
import openai
import pytest

from firsttoken import tokens
from gateway.app import GatewayConfig, create_app
from gateway.simulator import SimParams
from harness.servers import serve_app
from tests.unit.image_files import data_url, gif, jpeg, png, webp_vp8x

MODEL = "firsttoken-sim"
FAST = {"x-firsttoken-sim": "ttft_ms=0,tps=100000,tokens=20"}
QUESTION = "What is on this receipt?"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_app(create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=100_000, tokens=20)))) as url:
        yield url


@pytest.fixture
def oai(url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, default_headers=FAST) as client:
        yield client


@pytest.fixture
def claude(url: str) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0, default_headers=FAST) as client:
        yield client


def _page_messages(image_url: str, detail: str | None = "high") -> list[dict[str, Any]]:
    """The conversation as the page keeps it (Chat Completions form)."""
    image: dict[str, Any] = {"url": image_url}
    if detail is not None:
        image["detail"] = detail
    return [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}, {"type": "image_url", "image_url": image}]}]


@pytest.mark.parametrize(("image", "detail"), [(png(1024, 1024), "high"), (png(3000, 200), "high"),
                                               (jpeg(4032, 3024), "low"), (gif(40, 30), None)])
def test_chat_completions_bills_an_image_as_firsttoken_counts_it(oai: openai.OpenAI, image: bytes,
                                                                 detail: str | None) -> None:
    media = {b"\x89P": "image/png", b"\xff\xd8": "image/jpeg", b"GI": "image/gif"}[image[:2]]
    messages = _page_messages(data_url(image, media), detail)
    answer = oai.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]
    expected = tokens.count_chat(messages, MODEL)
    assert answer.usage is not None and answer.usage.prompt_tokens == expected
    text_only = tokens.count_chat([messages[0], {"role": "user", "content": [{"type": "text", "text": QUESTION}]}], MODEL)
    size = tokens.image_tokens(MODEL, *_size(image), detail).tokens
    assert expected == text_only + size  # the image is in it, by its pixels


def _size(image: bytes) -> tuple[int, int]:
    from firsttoken.image_header import read_image_header

    header = read_image_header(image)
    return header.width, header.height


def test_a_streamed_answer_reports_the_same_usage(oai: openai.OpenAI) -> None:
    messages = _page_messages(data_url(png(2048, 4096, pixels=False)))
    stream = oai.chat.completions.create(model=MODEL, messages=messages, stream=True,  # type: ignore[arg-type]
                                         stream_options={"include_usage": True})
    usage = [chunk.usage for chunk in stream if chunk.usage is not None]
    assert usage[-1].prompt_tokens == tokens.count_chat(messages, MODEL)
    assert tokens.image_tokens(MODEL, 2048, 4096, "high").tokens == 1105


def test_responses_bills_an_input_image_as_the_page_counts_it(oai: openai.OpenAI) -> None:
    image = data_url(jpeg(1800, 2400), "image/jpeg")
    answer = oai.responses.create(model=MODEL, instructions="Be brief.", input=[{"role": "user", "content": [
        {"type": "input_text", "text": QUESTION}, {"type": "input_image", "image_url": image, "detail": "high"}]}])
    assert answer.usage is not None
    assert answer.usage.input_tokens == tokens.count_chat(_page_messages(image), MODEL, api="responses")


def test_messages_bills_an_image_block_as_the_page_counts_it(claude: anthropic.Anthropic) -> None:
    raw = png(1200, 900)
    answer = claude.messages.create(model=MODEL, max_tokens=64, system="Be brief.", messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(raw).decode()}},
        {"type": "text", "text": QUESTION}]}])
    page = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(raw), "detail": "low"}}, {"type": "text", "text": QUESTION}]}]
    # The page's "low" does not reach Messages, and is not counted for it.
    assert answer.usage.input_tokens == tokens.count_chat(page, MODEL, api="anthropic_messages")


BAD = [
    ("data:image/png;base64,AAAAAAAA", "invalid_image"),
    ("data:image/png;base64,iVBORw0KGgo=", "invalid_image"),  # the signature, then nothing
    (data_url(webp_vp8x(60_000, 60_000), "image/webp"), "image_too_large"),
    (data_url(png(2**31 - 1, 2**31 - 1, pixels=False)), "image_too_large"),
]


@pytest.mark.parametrize(("image_url", "code"), BAD)
def test_a_bad_image_is_a_400_with_its_code_on_chat_completions(oai: openai.OpenAI, image_url: str, code: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model=MODEL, messages=_page_messages(image_url))  # type: ignore[arg-type]
    assert info.value.code == code
    assert info.value.param == "messages[1].content[1]"


def test_a_bad_image_is_a_400_on_responses_and_messages(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model=MODEL, input=[{"role": "user", "content": [
            {"type": "input_image", "image_url": BAD[2][0]}]}])
    assert (info.value.code, info.value.param) == ("image_too_large", "input[0].content[0]")
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAAAAAA"}}]}])
    error = refused.value.body["error"]  # type: ignore[index]
    assert error["details"]["error_code"] == "invalid_image"
    assert error["message"].startswith("messages.0.content.0: ")


def test_an_image_by_url_is_billed_at_its_most(oai: openai.OpenAI) -> None:
    messages = _page_messages("https://example.com/receipt.jpg", "high")
    answer = oai.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]
    assert answer.usage is not None and answer.usage.prompt_tokens == tokens.count_chat(messages, MODEL)
