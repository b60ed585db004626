"""The built-in model's seed is the digest of its prompt as one JSON text; computed in
slices (so a huge prompt never holds the GIL for one long call), it must not change."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import gateway.simulator as simulator
from gateway.simulator import prompt_digest
from gateway.validation import message_text

texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=300) | st.sampled_from(
    ['"quoted"\\ and \n\t control \x00\x1f', "\u2028\u2029 é 東京 🙂", ""])
messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"]),
                           "content": texts | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": texts}), max_size=3)}),
    min_size=1, max_size=4)


def whole(ms: list[dict]) -> bytes:
    return hashlib.sha256(
        json.dumps([[m.get("role"), message_text(m)] for m in ms], ensure_ascii=False).encode("utf-8", "replace")).digest()


@settings(max_examples=300)
@given(ms=messages, cut=st.integers(min_value=1, max_value=40))
def test_the_sliced_digest_is_the_digest_of_the_whole_json(ms: list[dict], cut: int) -> None:
    saved = simulator._DIGEST_SLICE
    simulator._DIGEST_SLICE = cut  # small slices, so that many cuts fall inside texts
    try:
        assert prompt_digest(ms) == whole(ms)
    finally:
        simulator._DIGEST_SLICE = saved
    assert prompt_digest(ms) == whole(ms)
