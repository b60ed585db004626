"""The tokenizer vocabularies as the page reads them (gateway/vocabulary.py): the same
ranks as tiktoken's data, every token, served with a stable ETag. (That the page's
counts equal tiktoken's from them: tests/e2e/test_tokens_page.py.)"""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from firsttoken.tokens.bpe_data import data_dir, load_encoding_data
from gateway.vocabulary import ENCODINGS, FORMAT, page_vocabulary, url_path


def ranks_of(document: dict) -> dict[bytes, int]:
    """The ranks a page reads from `document`, read as js/tokenizer/data.js reads them."""
    # Lengths are in UTF-16 units, as JavaScript's slice() counts.
    text, at, ranks = document["text"].encode("utf-16-le"), 0, {}
    for rank, mark in enumerate(document["lengths"]):
        units = ord(mark) - 0x20
        if units:
            piece = text[2 * at : 2 * (at + units)].decode("utf-16-le")
            ranks[piece.encode("utf-8")] = rank
            at += units
        else:
            ranks[base64.b64decode(document["bytes"][str(rank)], validate=True)] = rank
    assert 2 * at == len(text)
    assert len(document["bytes"]) == sum(1 for mark in document["lengths"] if mark == " ")
    return ranks


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_rank_is_tiktokens_own(name: str) -> None:
    document = json.loads(page_vocabulary(name, data_dir()))
    assert (document["format"], document["encoding"]) == (FORMAT, name)
    expected = load_encoding_data(name).mergeable_ranks
    assert document["ranks"] == len(expected)
    assert ranks_of(document) == expected
    # What is not well-formed UTF-8 (or begins with a BOM) stays bytes; the rest is text.
    kept = {base64.b64decode(b) for b in document["bytes"].values()}
    assert kept and all(t.startswith(b"\xef\xbb\xbf") or not _utf8(t) for t in kept)


def _utf8(token: bytes) -> bool:
    try:
        token.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_it_is_served_with_a_stable_etag_and_unknown_names_are_not(gateway_url: str) -> None:
    with httpx.Client(base_url=gateway_url, timeout=60) as client:
        first = client.get(url_path("cl100k_base"))
        assert first.status_code == 200 and first.headers["content-type"] == "application/json"
        assert first.headers["cache-control"] == "no-cache"
        assert json.loads(first.content)["encoding"] == "cl100k_base"
        again = client.get(url_path("cl100k_base"), headers={"if-none-match": first.headers["etag"]})
        assert again.status_code == 304 and again.headers["etag"] == first.headers["etag"]
        assert client.get(url_path("p50k_base")).status_code == 404
        assert client.get(url_path("..%2Fpackage")).status_code == 404
        # tiktoken's own files are still served beside it.
        assert client.get("/vendor/tiktoken/cl100k_base.json").status_code == 200
