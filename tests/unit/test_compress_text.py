"""Prose, tables, JSON and repeats passes; the public API and its report."""

from __future__ import annotations

import json

import pytest

import firsttoken.compress as compress
from firsttoken.compress import (
    COMPRESSION_VERSION,
    LEVELS,
    PASSES,
    compact_json,
    compress_messages,
    compress_text,
)
from firsttoken.errors import LocalProtocolError


def test_public_surface() -> None:
    assert sorted(compress.__all__) == sorted(
        ["COMPRESSION_VERSION", "LEVELS", "PASSES", "PassSaving", "Report", "Compressed",
         "CompressedMessages", "RepeatState", "OFF", "Compressor", "compress_text", "compress_messages",
         "compact_json"]
    )
    for name in compress.__all__:
        assert hasattr(compress, name)
    assert COMPRESSION_VERSION.startswith("5+py3.")
    assert PASSES == ("json", "code", "docs", "tables", "whitespace", "repeats")
    assert LEVELS["safe"] < LEVELS["balanced"] < LEVELS["max"]


def test_off_is_the_compressor_that_returns_its_input() -> None:
    messages = [{"role": "system", "content": "Hello   world\n\n\n"},
                {"role": "user", "content": [{"type": "text", "text": "x   y"}]}]
    off = compress.Compressor(compress.OFF, count=len)
    done = off(messages)
    assert done.messages == messages and done.messages[0] is not messages[0]  # copies, as written
    assert done.reports == () and done.state is None  # nothing compressed, nothing to carry
    assert off.resumes(None) and off.restore(None, {}) == (None, None)
    on = compress.Compressor("balanced", count=len)
    compressed = on(messages)
    assert compressed.messages != messages and len(compressed.reports) == 2
    assert not on.resumes(None)
    # What a cache entry keeps comes back as it was: the state, and the report from its
    # one serialised form.
    assert compressed.state is not None
    assert on.restore(compressed.state.to_json(), compressed.reports[0].to_dict()) == (
        compressed.state, compressed.reports[0])
    with pytest.raises(LocalProtocolError):
        on.restore(None, compressed.reports[0].to_dict())
    with pytest.raises(LocalProtocolError):
        compress.Compressor("bogus")


def test_pieces_give_what_one_call_gives_and_stop_where_a_state_cannot_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = "## Rules\n\nAnswer in English, in short sentences, and never invent a source or a quote."
    messages = [{"role": "system", "content": rules}, {"role": "user", "content": "Hi   there.\n\n" + rules},
                {"role": "assistant", "content": "Hello."}, {"role": "user", "content": rules + "\n\nAnd?"}]
    on = compress.Compressor("balanced", count=len)
    whole = compress_messages(messages, level="balanced", count=len)
    done = on.pieces([messages[:1], messages[1:3], messages[3:]])
    assert [m for d in done for m in d.messages] == whole.messages
    assert [r for d in done for r in d.reports] == list(whole.reports)
    assert done[-1].state == whole.state and whole.messages[1]["content"] != messages[1]["content"]
    import firsttoken.compress.repeats as repeats

    monkeypatch.setattr(repeats, "MAX_STATE_KEYS", 0)  # every state is past its bound
    assert len(on.pieces([messages[:1], messages[1:3], messages[3:]])) == 1
    off = compress.Compressor(compress.OFF)
    assert [d.messages for d in off.pieces([messages[:1], messages[1:]])] == [messages[:1], messages[1:]]


# ---- whitespace ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, compressed",
    [
        ("\n\n  Hello   there,  world.   \n\n\n\nNext  para.\t\n\n", "  Hello there, world.\n\nNext para."),
        ("Use `a  b` and ``x ` y  z`` here  now.\n\n    indented   code  \n",
         "Use `a  b` and ``x ` y  z`` here now.\n\n    indented   code"),
        ("a \\`  b  `c  d`", "a \\` b `c  d`"),
        ("a\t\tb  c", "a\t\tb c"),
        ("a  b  \r\n\r\n\r\n\r\nc\r\n", "a b\r\n\r\nc"),
    ],
    ids=["prose", "inline-and-indented-code-keep-their-spaces", "an-escaped-backtick-opens-no-code-span",
         "tabs-inside-a-line-stay", "crlf-line-endings-are-kept"],
)
def test_whitespace(text: str, compressed: str) -> None:
    assert compress_text(text).text == compressed


# ---- tables -------------------------------------------------------------------------


def test_table_padding_alignment_and_escaped_pipes() -> None:
    text = "| Name     | Note          |  N |\n|:---------|:-------------:|---:|\n| a \\| b   | `x  |  y`     |  1 |\n"
    assert compress_text(text).text == "| Name | Note | N |\n|:--|:-:|--:|\n| a \\| b | `x  |  y` | 1 |"


def test_not_a_table_when_cell_counts_differ() -> None:
    text = "a | b\n--|--|--\n"
    assert compress_text(text, level="safe", passes={"whitespace": False}).text == text


# ---- JSON ---------------------------------------------------------------------------


def test_fenced_json_is_minified_token_for_token() -> None:
    text = '```json\n{\n  "a": 1.50,\n  "a": 1e400,\n  "big": 123456789012345678901234567890,\n  "s": "x  y \\u00e9"\n}\n```'
    out = compress_text(text).text
    assert out == '```json\n{"a":1.50,"a":1e400,"big":123456789012345678901234567890,"s":"x  y \\u00e9"}\n```'


def test_whole_message_json_and_unfenced_json_in_prose() -> None:
    assert compress_text('  [\n  1,\n  {"a": [true, null]}\n]\n').text == '[1,{"a":[true,null]}]'
    text = 'Response:\n{\n  "ok": true,\n  "msg": "a  b"\n}\nWhy?'
    assert compress_text(text).text == 'Response:\n{"ok":true,"msg":"a  b"}\nWhy?'


def test_not_json_stays() -> None:
    for text in ("```json\n{not json}\n```", "```json\n{\n  // c\n  \"a\": 1\n}\n```", "{not json}  x"):
        out = compress_text(text, passes={"whitespace": False}).text
        assert out == text


def test_compact_json() -> None:
    assert compact_json({"b": [1, 2], "é": None}) == '{"b":[1,2],"é":null}'


# ---- repeats ------------------------------------------------------------------------

TEMPLATE = (
    "You are a translator. Keep product names unchanged and use the formal register.\n\n"
    "Return only the translation, without notes or quotes."
)


def test_repeated_template_in_user_turns_is_kept_once() -> None:
    msgs = [
        {"role": "system", "content": TEMPLATE},
        {"role": "user", "content": TEMPLATE + "\n\nTent, 2 persons."},
        {"role": "assistant", "content": TEMPLATE},
        {"role": "user", "content": "Lamp, dimmable.\n\n" + TEMPLATE},
    ]
    out = compress_messages(msgs)
    assert [m["content"] for m in out.messages] == [TEMPLATE, "Tent, 2 persons.", TEMPLATE, "Lamp, dimmable."]
    assert out.reports[1].passes[-1].name == "repeats" and out.reports[1].passes[-1].chars > 0
    assert out.reports[2].saved_chars == 0  # assistant text never loses repeats


def test_short_repeats_and_whole_repeated_messages_stay() -> None:
    msgs = [{"role": "user", "content": "Thanks!"}, {"role": "user", "content": "Thanks!"}]
    assert compress_messages(msgs).messages == msgs
    msgs = [{"role": "system", "content": TEMPLATE}, {"role": "user", "content": TEMPLATE}]
    assert compress_messages(msgs).messages[1]["content"] == TEMPLATE


def test_a_repeat_within_one_text_stays() -> None:
    # Repeats count across messages only: inside one text a second copy is deliberate.
    para = "Always answer in English and cite the section of the policy you rely on."
    text = f"{para}\n\nQuestion one?\n\n{para}"
    assert compress_text(text).text == text
    assert compress_messages([{"role": "user", "content": text}]).messages[0]["content"] == text


def test_repeat_adjacent_to_a_paragraph_is_not_dropped() -> None:
    para = "Always answer in English and cite the section of the policy you rely on."
    text = f"{para}\n\nIntro line\n{para}"
    assert compress_text(text).text == text


# ---- messages and report ----------------------------------------------------------------


def test_messages_only_text_is_touched_and_input_is_not_modified() -> None:
    msgs = [
        {"role": "user", "name": "dana", "content": [
            {"type": "text", "text": "a  b"},
            {"type": "image_url", "image_url": {"url": "data:  x"}},
        ]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "f", "arguments": '{\n  "a": 1\n}'}}]},
        {"role": "tool", "tool_call_id": "1", "content": '{\n  "ok": true\n}'},
    ]
    snapshot = json.dumps(msgs)
    out = compress_messages(msgs).messages
    assert json.dumps(msgs) == snapshot
    assert out[0]["content"][0] == {"type": "text", "text": "a b"}
    assert out[0]["content"][1] is msgs[0]["content"][1] and out[0]["name"] == "dana"
    assert out[1] == msgs[1]
    assert out[2]["content"] == '{"ok":true}'


def test_report_counts_chars_and_tokens_per_pass() -> None:
    text = "```python\nx = 1  # c\n```\n\n\n\n| a   |\n|-----|\n"
    r = compress_text(text, count=lambda s: len(s.split())).report
    assert [p.name for p in r.passes] == ["json", "code", "tables", "whitespace", "repeats"]
    assert r.saved_chars == len(text) - len(compress_text(text).text) == sum(p.chars for p in r.passes)
    assert r.saved_tokens == sum(p.tokens for p in r.passes if p.tokens is not None)
    d = r.to_dict()
    assert d["version"] == COMPRESSION_VERSION and d["passes"][1]["name"] == "code"
    assert compress_text(text).report.tokens_before is None


def test_passes_switch_on_and_off() -> None:
    text = "```python\nx = 1  # c\n```\n\na  b"
    assert compress_text(text, passes={"code": False}).text == "```python\nx = 1  # c\n```\n\na b"
    assert compress_text(text, level="safe", passes={"code": True, "whitespace": False}).text == (
        "```python\nx = 1\n```\n\na  b"
    )


@pytest.mark.parametrize("kwargs", [{"level": "ultra"}, {"passes": {"gzip": True}}])
def test_bad_options_raise_local_protocol_error(kwargs: dict) -> None:
    with pytest.raises(LocalProtocolError):
        compress_text("x", **kwargs)


def test_report_counts_each_text_at_most_twice() -> None:
    text = "```python\nx = 1  # c\n```\n\n\n\n| a   |\n|-----|\n\n{\n  \"a\": 1\n}\n"
    counted: list[str] = []

    def count(s: str) -> int:
        counted.append(s)
        return len(s.split())

    r = compress_text(text, count=count).report
    assert counted == [text, compress_text(text).text]
    assert r.saved_tokens == sum(p.tokens for p in r.passes if p.tokens is not None)
    # The shares follow the characters: a pass that saved none gets no tokens.
    assert all(p.tokens == 0 for p in r.passes if p.chars == 0)
    counted.clear()
    exact = compress_text(text, count=count, count_passes=True).report
    assert len(counted) > 2 and exact.tokens_before == r.tokens_before and exact.tokens_after == r.tokens_after
    msgs = [{"role": "user", "content": text}, {"role": "user", "content": "plain"}]
    counted.clear()
    out = compress_messages(msgs, count=count)
    assert counted == [text, out.messages[0]["content"], "plain"]


def test_token_shares_add_up() -> None:
    from firsttoken.compress.report import _shares

    assert _shares(10, [1, 1, 1]) == [4, 3, 3]
    assert _shares(-5, [3, 0, 1]) == [-4, 0, -1]
    assert _shares(3, [0, 0]) == [0, 3]
    assert _shares(0, [5, 5]) == [0, 0]
    assert _shares(7, [-2, 4]) == [0, 7]


# ---- structure-safe repeats (issue 17) -----------------------------------------------

CODE = "```python\ndef total(prices):\n    return sum(p for p in prices if p is not None)\n```"
PAIR = (
    f'<example type="bad">\nA comment that names nothing:\n"Fix it."\n{CODE}\n</example>\n\n'
    f'<example type="good">\nA comment that names the problem and the fix:\n"Skip None explicitly."\n\n{CODE}\n</example>\n\n'
    "Reply with the review comments only."
)


def test_an_example_pair_keeps_both_code_blocks_and_its_tags() -> None:
    for msgs in ([{"role": "system", "content": PAIR}],
                 [{"role": "system", "content": PAIR}, {"role": "user", "content": PAIR + "\n\nNext file."}]):
        first = compress_messages(msgs).messages[0]["content"]
        assert first.count("```python") == 2 and first.count("</example>") == 2


def test_a_quoted_block_in_another_context_stays() -> None:
    system = "## Bad example\n\n" + CODE + "\n\n## Good example\n\nUse a generator and say why."
    for user in (CODE + "\n\nIs my code fine?",  # no heading above it: another context
                 "<mine>\n\n" + CODE + "\n\n</mine>\n\nIs my code fine?",  # inside a tag
                 "Like this?\n\n" + CODE + "\n\nThat is what I mean."):  # a quote, not at an edge
        out = compress_messages([{"role": "system", "content": system}, {"role": "user", "content": user}])
        assert out.messages[1]["content"] == compress_text(user).text  # every pass but repeats


def test_a_pasted_template_goes_with_its_whole_elements() -> None:
    system = "<rules>\nAnswer in English and cite the section of the policy you rely on.\n</rules>"
    out = compress_messages([{"role": "system", "content": system},
                             {"role": "user", "content": system + "\n\nMay I carry over vacation days?"}])
    assert out.messages[1]["content"] == "May I carry over vacation days?"
    # Half an element never goes: here only its closing part repeats.
    user = "<rules>\nAlso: be brief.\n\n" + system.split("\n", 1)[1] + "\n\nMay I carry over vacation days?"
    out = compress_messages([{"role": "system", "content": system}, {"role": "user", "content": user}])
    assert out.messages[1]["content"] == user


def test_tags_in_inline_code_are_not_markup() -> None:
    system = "Close every tag you open, as in `</example>`, and cite the policy section you rely on."
    out = compress_messages([{"role": "system", "content": system},
                             {"role": "user", "content": system + "\n\nMay I carry over vacation days?"}])
    assert out.messages[1]["content"] == "May I carry over vacation days?"
