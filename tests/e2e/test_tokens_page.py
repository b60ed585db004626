"""The page's tokenizer in real Chromium: ids equal tiktoken's, through firsttoken.tokens.

Python runs in a worker of bench/tokens_page.html (Pyodide without PyScript, the same
files the app serves, the app's headers and CSP), with `firsttoken.browser.tokenizer`
installed as the app installs it, in the same thread (js/tokenizer/python-module.js). Texts go
in from CPython, ids come back, and tiktoken on CPython is the reference: the golden
corpus, Hypothesis-generated text, a seeded random corpus aimed at the characters where
JavaScript and Rust regexes differ, every code point of planes 0–3 (sampled beyond), and
every rank of both vocabularies.
"""

from __future__ import annotations

import hashlib
import json
import random
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from playwright.sync_api import Browser

from bench.tokens_page import TokensPage, open_page, serve
from firsttoken.browser.tokenizer import SPECIAL_TOKENS
from tests.corpus.tokens.golden import (
    ENCODINGS,
    assert_same_ids,
    corpus_texts,
    load_golden,
    reference_encoding,
    reference_ranks,
)

pytestmark = pytest.mark.e2e

ENCODE_ALL = """
import json
from firsttoken import tokens
json.dumps([[tokens.encode(t, enc), tokens.count(t, enc)] for enc, t in json.loads(ARG)])
"""
ENCODE_ONLY = """
import json
from firsttoken import tokens
json.dumps([tokens.encode(t, enc) for enc, t in json.loads(ARG)])
"""


@cache
def reference(encoding: str) -> Any:
    return reference_encoding(encoding)


@pytest.fixture(scope="module")
def tokens_page(browser: Browser) -> Iterator[TokensPage]:
    with serve() as url, open_page(browser, url) as page:
        requests: list[str] = []
        console: list[str] = []
        errors: list[str] = []
        page.page.on("request", lambda r: requests.append(r.url))
        page.page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.page.on("pageerror", lambda e: errors.append(str(e)))
        state = page.run_json("""
import json
from firsttoken import tokens
from firsttoken.browser import tokenizer as bt
from firsttoken.errors import TokenizerError
try:
    tokens.count("hi", "o200k_base")
    before = "counted"
except TokenizerError as exc:
    before = str(exc)
json.dumps({"backend": tokens.backend_name(), "before": before})
""")
        # Installed and active, and nothing loaded or fetched until asked for.
        assert state["backend"] == "js"
        assert "ensure_encoder" in state["before"]
        assert not [u for u in requests if "/vendor/tiktoken/" in u or u.endswith("/js/tokenizer/bpe.js")]
        page.run("""
from firsttoken.browser import tokenizer as bt
await bt.ensure_encoder("gpt-4o")
await bt.ensure_encoder("cl100k_base")
"ok"
""")
        # The vocabulary as the gateway decoded it (gateway/vocabulary.py), not tiktoken's.
        assert any(u.endswith("/vendor/tiktoken/o200k_base.decoded.json") for u in requests)
        assert not any(u.endswith("/vendor/tiktoken/o200k_base.json") for u in requests)
        yield page
        print("\n".join(["--- page console ---", *console]))
        assert not errors, f"uncaught errors in the page: {errors}"
        assert not [m for m in console if "Content Security Policy" in m], "the page broke its CSP"


def encode_in_page(page: TokensPage, encoding: str, texts: list[str], count: bool = True) -> list[list[int]]:
    """The page's ids for `texts`; with `count`, its counts are checked against them."""
    if not count:
        return page.run_json(ENCODE_ONLY, [[encoding, t] for t in texts])
    answers = page.run_json(ENCODE_ALL, [[encoding, t] for t in texts])
    for (ids, n), text in zip(answers, texts):
        assert n == len(ids), f"count {n} != len(encode) {len(ids)} for {text[:40]!r}"
    return [ids for ids, _ in answers]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_golden_corpus(tokens_page: TokensPage, encoding: str) -> None:
    cases = load_golden()
    got = dict(zip([c.text for c in cases], encode_in_page(tokens_page, encoding, [c.text for c in cases])))
    assert_same_ids(got.__getitem__, cases, encoding)


# Where JavaScript's regexes and tiktoken's (Rust) differ or might: \s vs White_Space
# (U+FEFF, U+0085, U+180E, U+200B), contractions with U+017F, BOM-led tokens, new letters
# (Unicode 17), a letter that changed category (U+0295), surrogates and astral characters.
TRICKY = [
    "\ufeff", "\ufeffusing", "\x85", "\u180e", "\u200b", " ", "\t", "\n", "\r\n", "\xa0", "\u3000",
    "'s", "'S", "'\u017f", "'ll", "'LL", "'Re", "it", "A", "a", "1", "٣", "é", "e\u0301", "\u0295",
    "\U000323b0", "\U0001e6c0", "\U0001f600", "\U0001f468\u200d\U0001f469", "<|endoftext|>", "/", "//",
    "ǅ", "ß", "İ", "\U000e0001", "\U00010000", "\ud800", "\udc00",
]


def seeded_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)

    def char() -> str:
        roll = rng.random()
        if roll < 0.5:
            return rng.choice(TRICKY)
        if roll < 0.7:
            return chr(rng.randrange(0x20, 0x7F))
        while True:  # any code point; lone surrogates included on purpose
            c = rng.randrange(0x110000)
            return chr(c)

    return ["".join(char() for _ in range(rng.randrange(1, 60))) for _ in range(n)]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_seeded_random_corpus(tokens_page: TokensPage, encoding: str) -> None:
    texts = seeded_texts(3000, seed=20261130)
    got = encode_in_page(tokens_page, encoding, texts)
    wrong = [t for t, ids in zip(texts, got) if ids != reference(encoding).encode_ordinary(t)]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ, e.g. {wrong[:3]!r}"


fragments = st.lists(
    st.sampled_from(sorted({w for t in corpus_texts().values() for w in t.split(" ") if w})), max_size=30
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(
        st.one_of(
            st.text(st.characters(), max_size=80),
            st.lists(st.sampled_from(TRICKY), max_size=40).map("".join),
            fragments,
        ),
        min_size=1,
        max_size=8,
    ),
    encoding=st.sampled_from(ENCODINGS),
)
def test_generated_text_matches_tiktoken(tokens_page: TokensPage, texts: list[str], encoding: str) -> None:
    got = encode_in_page(tokens_page, encoding, texts)
    for text, ids in zip(texts, got):
        assert ids == reference(encoding).encode_ordinary(text), text


def probe(c: int) -> str:
    """One code point in the contexts that decide how the split pattern classifies it:
    letter or not, upper or lower class, digit, white space, punctuation."""
    x = chr(c)
    return f"{x}'s a{x}A{x}b 1{x}2 {x}Ab x{x}{x}y {x}/\n"


def probed_code_points() -> list[int]:
    """Planes 0 and 1, the tags block and Unicode 17's additions in full; every 5th code
    point of planes 2 and 3 (CJK), every 97th elsewhere."""
    new_in_17 = range(0x323B0, 0x3347A)  # CJK Extension J, the bulk of them
    return [
        c
        for c in range(0x110000)
        if not 0xD800 <= c < 0xE000
        and (c < 0x20000 or 0xE0000 <= c < 0xE1000 or c in new_in_17 or c % (5 if c < 0x40000 else 97) == 0)
    ]


#: A digest of an id list, the same on CPython and in the page's Pyodide: SHA-256 of the
#: ids as little-endian 32-bit words (every rank fits). Defined once, run in both.
IDS_DIGEST = """
def ids_digest(ids):
    import hashlib, sys
    from array import array
    words = array("I", ids)
    if sys.byteorder == "big":
        words.byteswap()
    return hashlib.sha256(words.tobytes()).hexdigest()
"""
DIGESTS_ONLY = IDS_DIGEST + """
import json
from firsttoken import tokens
json.dumps([ids_digest(tokens.encode(t, enc)) for enc, t in json.loads(ARG)])
"""
_digest_scope: dict[str, Any] = {}
exec(IDS_DIGEST, _digest_scope)
ids_digest = _digest_scope["ids_digest"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_code_point_splits_like_tiktoken(tokens_page: TokensPage, encoding: str) -> None:
    points = probed_code_points()
    batches = ["".join(probe(c) for c in points[i : i + 8192]) for i in range(0, len(points), 8192)]
    groups = [batches[start : start + 8] for start in range(0, len(batches), 8)]

    def want(group: list[str]) -> list[str]:
        return [ids_digest(reference(encoding).encode_ordinary(text)) for text in group]

    # The page's ids come back as one digest per batch, compared with tiktoken's ids'
    # digest: the same exact check of every id, without 10 MB of JSON per group made in
    # Pyodide, carried through postMessage and CDP and parsed here (measured: 4 s of each
    # 15 s group), and tiktoken's side (which lets go of the GIL) runs in a thread while
    # the page encodes. Only a batch whose digest differs has its ids fetched, to say where.
    with ThreadPoolExecutor(max_workers=1) as pool:
        wanted = [pool.submit(want, group) for group in groups]
        for group, expected in zip(groups, wanted):
            # Ids only: a count is the same split and merges again (checked on every other
            # corpus here), and this one is 5.6 million characters per encoding.
            got = tokens_page.run_json(DIGESTS_ONLY, [[encoding, t] for t in group])
            for text, digest, digest_wanted in zip(group, got, expected.result(), strict=True):
                if digest != digest_wanted:
                    fail_where_ids_differ(tokens_page, encoding, text)


def fail_where_ids_differ(tokens_page: TokensPage, encoding: str, text: str) -> None:
    """Fail with the text around the first id where the page and tiktoken differ."""
    [ids] = encode_in_page(tokens_page, encoding, [text], count=False)
    want = reference(encoding).encode_ordinary(text)
    at = next((k for k, (g, w) in enumerate(zip(ids + [-1], want + [-1])) if g != w), None)
    if at is None:
        pytest.fail(f"{encoding}: the page's ids had another digest than tiktoken's, and equal them when asked again")
    context = reference(encoding).decode(want[max(0, at - 8) : at + 4])
    pytest.fail(f"{encoding}: ids differ near {context!r}")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_rank_and_special_decodes_to_tiktokens_bytes(tokens_page: TokensPage, encoding: str) -> None:
    document, ranks = reference_ranks(encoding)
    by_rank = sorted(ranks.items(), key=lambda item: item[1])
    assert SPECIAL_TOKENS[encoding] == document["special_tokens"]
    specials = sorted(document["special_tokens"].items(), key=lambda item: item[1])
    ids = [rank for _, rank in by_rank] + [rank for _, rank in specials]
    want = b"".join(token for token, _ in by_rank) + "".join(text for text, _ in specials).encode()
    got = tokens_page.run_json(
        """
import json
from firsttoken import tokens
enc, ids = json.loads(ARG)
json.dumps(tokens.get_encoder(enc).decode_bytes(ids).hex())
""",
        [encoding, ids],
    )
    assert bytes.fromhex(got) == want


def test_large_text_and_long_id_lists(tokens_page: TokensPage) -> None:
    """Megabytes in and out of JavaScript in one call: nothing is lost."""
    text = "".join(corpus_texts().values()) * 70
    assert len(text.encode()) > 2_500_000
    answer = tokens_page.run_json(
        """
import json, hashlib
from firsttoken import tokens
ids = tokens.encode(ARG, "o200k_base")
back = tokens.decode(ids, "o200k_base")
json.dumps([len(ids), tokens.count(ARG, "o200k_base"), hashlib.sha256(json.dumps(ids).encode()).hexdigest(), back == ARG])
""",
        text,
    )
    want = reference("o200k_base").encode_ordinary(text)
    assert answer == [len(want), len(want), hashlib.sha256(json.dumps(want).encode()).hexdigest(), True]


def test_truncate_and_errors_through_the_page_backend(tokens_page: TokensPage) -> None:
    answer = tokens_page.run_json("""
import json
from firsttoken import tokens
from firsttoken.browser import tokenizer as bt
from firsttoken.errors import TokenizerError
out = {}
text = "Hello, world! \\ufeff" * 50 + "お誕生日おめでとう" * 20
cut = tokens.truncate(text, 37, "gpt-4o")
out["truncate"] = [text.startswith(cut), tokens.count(cut, "gpt-4o") <= 37, len(cut) > 0]
for name, call in [
    ("bad_id", lambda: tokens.decode([10**9], "o200k_base")),
    ("not_loaded", lambda: tokens.count("x", "p50k_base")),
]:
    try:
        call()
        out[name] = "no error"
    except TokenizerError as exc:
        out[name] = str(exc)
try:
    await bt.ensure_encoder("p50k_base")
    out["unsupported"] = "no error"
except TokenizerError as exc:
    out["unsupported"] = str(exc)
out["cookbook"] = tokens.encode("お誕生日おめでとう", "o200k_base")
json.dumps(out)
""")
    assert answer["truncate"] == [True, True, True]
    assert "1000000000 is not a token id" in answer["bad_id"]
    assert "ensure_encoder" in answer["not_loaded"]
    assert "not p50k_base" in answer["unsupported"]
    # Published in the OpenAI cookbook (independent of our data and golden.json).
    assert answer["cookbook"] == [8930, 9697, 243, 128225, 8930, 17693, 4344, 48669]


def test_javascript_failures_become_tokenizer_errors_in_the_same_thread(tokens_page: TokensPage) -> None:
    """The tokenizer runs in Python's thread: no worker of its own, no shared memory;
    what JavaScript throws arrives as `TokenizerError`, and a failed load is tried again."""
    answer = tokens_page.run_json("""
import json
from firsttoken.browser import tokenizer as bt
from firsttoken.errors import TokenizerError
out = {}
async def attempt(name, call):
    try:
        out[name] = ["no error", await call()]
    except TokenizerError as exc:
        out[name] = [str(exc)]
async def sync(call):
    return call()
bridge = bt._Page.bridge
await attempt("load", lambda: bridge.load("p50k_base"))
await attempt("count", lambda: sync(lambda: bridge.count("p50k_base", "x")))
await attempt("reload", lambda: bridge.load("o200k_base"))
out["counted"] = bridge.count("o200k_base", "hello world, again")
json.dumps(out)
""")
    assert "could not load p50k_base: unsupported encoding p50k_base" in answer["load"][0]
    assert "p50k_base is not loaded" in answer["count"][0]
    assert answer["reload"][0] == "no error"  # built once: a later load returns at once
    assert answer["counted"] == 4
    assert len(tokens_page.page.workers) == 1  # Python's, and no other


INDEX_CHECKS = """async () => {
  const { indexVocabulary, loadEncoding } = await import('/js/tokenizer/data.js');
  const NO_RANK = 0x7fffffff;
  // Three ranks: 'a', 'bcd', and the byte 0xFF (not UTF-8, so kept as bytes).
  const good = () => ({ format: 'firsttoken-vocabulary/1', encoding: 'o200k_base', ranks: 3,
                        text: 'abcd', lengths: '\\u0021\\u0023\\u0020', bytes: { 2: '/w==' } });
  const cases = {
    whole: () => {},
    other_encoding: (d) => { d.encoding = 'cl100k_base'; },
    text_short: (d) => { d.text = 'abc'; },
    text_long: (d) => { d.text = 'abcde'; },
    a_rank_without_length: (d) => { d.lengths = '\\u0021\\u0023'; },
    bytes_missing: (d) => { d.bytes = {}; },
    bytes_not_base64: (d) => { d.bytes = { 2: '!!!!' }; },
    bytes_for_text: (d) => { d.bytes = { 1: 'YQ==', 2: '/w==' }; },
  };
  const out = {};
  for (const [name, change] of Object.entries(cases)) {
    const doc = good();
    change(doc);
    try {
      const index = await indexVocabulary(doc, 'o200k_base');
      out[name] = { a: index.rank('a', 0, 1), bcd: index.rank('xbcdx', 1, 4), bc: index.rank('bc', 0, 2),
                    none: index.rank('zz', 0, 2) === NO_RANK, byte: [...index.bytesOf(2)], out: index.bytesOf(3) };
    } catch (e) {
      out[name] = e.message;
    }
  }
  // The real vocabularies: every rank that is text is found from its text, in place
  // and as a string of its own (the table's collisions probed past), and decodes to it.
  out.misses = {};
  for (const name of ['o200k_base', 'cl100k_base']) {
    const { index } = await loadEncoding(name, new URL('/vendor/tiktoken/', location.href));
    let misses = 0, texts = 0;
    for (let rank = 0; rank < index.size; rank++) {
      const units = index.units[rank];
      if (units === 0) continue;
      texts++;
      const at = index.start[rank];
      const own = index.text.slice(at, at + units);
      if (index.rank(index.text, at, at + units) !== rank || index.rank(`<${own}>`, 1, units + 1) !== rank
          || new TextDecoder().decode(index.bytesOf(rank)) !== own) misses++;
    }
    out.misses[name] = [misses, texts];
  }
  return out;
}"""


def test_the_vocabulary_index_finds_every_rank_and_refuses_a_vocabulary_that_is_not_whole(tokens_page: TokensPage) -> None:
    out = tokens_page.page.evaluate(INDEX_CHECKS)
    assert out["whole"] == {"a": 0, "bcd": 1, "bc": 0x7FFFFFFF, "none": True, "byte": [255], "out": None}
    assert out["other_encoding"] == "o200k_base vocabulary: it is cl100k_base's"
    assert out["text_short"] == "o200k_base vocabulary: rank 1 runs past its text"
    assert out["text_long"] == "o200k_base vocabulary: its lengths cover 4 of 5 characters of text"
    assert out["a_rank_without_length"] == "o200k_base vocabulary: its ranks, text, lengths or bytes are missing"
    assert out["bytes_missing"] == out["bytes_not_base64"] == "o200k_base vocabulary: rank 2 has neither text nor bytes"
    assert out["bytes_for_text"] == "o200k_base vocabulary: it has bytes for ranks that are text"
    for name, (misses, texts) in out["misses"].items():
        assert texts > 90_000 and misses == 0, (name, misses, texts)
