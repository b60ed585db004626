"""BPE vocabulary data: the compact rank format shipped by npm `tiktoken`, parsed and checked.

npm `tiktoken` ships each encoding as `encoders/<name>.json`:
`{"pat_str": …, "special_tokens": {…}, "bpe_ranks": "! 0 IQ== Ig== …"}`.
`bpe_ranks` is one or more groups separated by newlines. A group is
`! <first_rank> <b64 token> <b64 token> …`: the tokens of a group take consecutive
ranks starting at `first_rank`. Groups let a vocabulary skip a rank (p50k_base leaves
50256 to `<|endoftext|>`); cl100k_base and o200k_base are one group each.

This module is standard library only, so both the CPython backend (which hands the ranks
to tiktoken) and an in-page backend (which may only need `decode_bytes`) can use it.
Anything malformed raises `TokenizerError`: a tokenizer silently built from bad data
would miscount every prompt, which is worse than failing loudly.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from firsttoken.errors import TokenizerError

__all__ = [
    "DATA_ENV_VAR",
    "KNOWN_VOCABULARIES",
    "EncodingData",
    "KnownVocabulary",
    "data_dir",
    "load_encoding_data",
    "parse_bpe_ranks",
]

#: Environment variable naming the folder that holds `<encoding>.json` files.
DATA_ENV_VAR = "FIRSTTOKEN_TOKENIZER_DATA"


@dataclass(frozen=True, slots=True)
class KnownVocabulary:
    """What the pinned npm `tiktoken@1.0.22` data must look like for one encoding."""

    n_ranks: int
    #: SHA-256 of the `bpe_ranks` string (UTF-8). Structure checks cannot see two
    #: swapped tokens; the hash can.
    sha256: str


KNOWN_VOCABULARIES: Mapping[str, KnownVocabulary] = {
    "cl100k_base": KnownVocabulary(
        100_256, "3d687fd92cd8fa61f6e26453365e1678e1c35674dd3fcb3d686235c46d16e118"
    ),
    "o200k_base": KnownVocabulary(
        199_998, "46095c39ad133184da5315ac91dd491f39901e6d89a05f58f24717fd7cbf0523"
    ),
}


def parse_bpe_ranks(text: str) -> dict[bytes, int]:
    """Parse the compact `bpe_ranks` string into `{token bytes: rank}`.

    Checks that every group header is `! <int>`, that groups ascend without
    overlapping and the first starts at 0, that every token is strict, non-empty
    base64, that no token repeats, and that all 256 single bytes have a rank
    (byte-level BPE cannot encode arbitrary text without them).
    """
    ranks: dict[bytes, int] = {}
    next_free = 0
    n_tokens = 0
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) < 2 or parts[0] != "!":
            raise TokenizerError(f"bpe_ranks group {lineno}: expected '! <first_rank> …'")
        try:
            first = int(parts[1])
        except ValueError:
            raise TokenizerError(
                f"bpe_ranks group {lineno}: first rank {parts[1][:20]!r} is not an integer"
            ) from None
        if first < next_free or (lineno == 1 and first != 0):
            raise TokenizerError(
                f"bpe_ranks group {lineno}: first rank {first} breaks the rank order"
                f" (expected {'0' if lineno == 1 else f'>= {next_free}'})"
            )
        tokens = parts[2:]
        for rank, b64 in enumerate(tokens, start=first):
            try:
                token = binascii.a2b_base64(b64, strict_mode=True)
            except (binascii.Error, ValueError):
                raise TokenizerError(
                    f"bpe_ranks rank {rank}: {b64[:24]!r} is not valid base64"
                ) from None
            if not token:
                raise TokenizerError(f"bpe_ranks rank {rank}: empty token")
            ranks[token] = rank
        n_tokens += len(tokens)
        next_free = first + len(tokens)
    if len(ranks) != n_tokens:
        raise TokenizerError(
            f"bpe_ranks repeats {n_tokens - len(ranks)} token(s): ranks are ambiguous"
        )
    missing = [b for b in range(256) if bytes((b,)) not in ranks]
    if missing:
        raise TokenizerError(
            f"bpe_ranks lacks {len(missing)} single-byte token(s), e.g. byte {missing[0]}"
        )
    return ranks


@dataclass(frozen=True, slots=True, eq=False)
class EncodingData:
    """One BPE encoding: split pattern, mergeable ranks and special tokens.

    `decode_bytes` works from the ranks alone, so a backend whose encoder lives
    elsewhere (JavaScript in the page) can still decode and truncate exactly.
    """

    name: str
    pat_str: str
    mergeable_ranks: dict[bytes, int]
    special_tokens: dict[str, int]
    _by_id: dict[int, bytes] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def from_json(cls, name: str, document: str | bytes | Mapping[str, Any]) -> EncodingData:
        """Build from the npm JSON document (text or already-parsed mapping).

        For the encodings in `KNOWN_VOCABULARIES` the rank count and the hash of
        `bpe_ranks` must match too.
        """
        if isinstance(document, (str, bytes)):
            try:
                document = json.loads(document)
            except ValueError as exc:
                raise TokenizerError(f"{name}: tokenizer data is not JSON ({exc})") from None
        if not isinstance(document, Mapping):
            raise TokenizerError(f"{name}: tokenizer data is not a JSON object")
        pat_str = document.get("pat_str")
        bpe_ranks = document.get("bpe_ranks")
        special = document.get("special_tokens", {})
        if not isinstance(pat_str, str) or not pat_str:
            raise TokenizerError(f"{name}: 'pat_str' is missing or not a string")
        if not isinstance(bpe_ranks, str):
            raise TokenizerError(f"{name}: 'bpe_ranks' is missing or not a string")
        if not isinstance(special, Mapping) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in special.items()
        ):
            raise TokenizerError(f"{name}: 'special_tokens' must map strings to ranks")
        known = KNOWN_VOCABULARIES.get(name)
        if known is not None:
            digest = hashlib.sha256(bpe_ranks.encode("utf-8")).hexdigest()
            if digest != known.sha256:
                raise TokenizerError(
                    f"{name}: bpe_ranks hash {digest[:12]}… differs from the pinned"
                    f" {known.sha256[:12]}… (corrupt or different tiktoken data)"
                )
        ranks = parse_bpe_ranks(bpe_ranks)
        if known is not None and len(ranks) != known.n_ranks:
            raise TokenizerError(f"{name}: {len(ranks)} ranks, expected {known.n_ranks}")
        rank_values = set(ranks.values())
        clash = sorted(v for v in special.values() if v in rank_values)
        if clash:
            raise TokenizerError(f"{name}: special token id {clash[0]} is also a BPE rank")
        return cls(name, pat_str, ranks, dict(special))

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes that `ids` stand for (special tokens decode to their text)."""
        table = self._by_id
        if not table:
            # Built on first use: half the memory of the vocabulary, needed only to decode.
            table.update((rank, token) for token, rank in self.mergeable_ranks.items())
            table.update((rank, text.encode("utf-8")) for text, rank in self.special_tokens.items())
        try:
            return b"".join([table[i] for i in ids])
        except (KeyError, TypeError):
            bad = next(i for i in ids if not isinstance(i, int) or i not in table)
            raise TokenizerError(f"{self.name}: {bad!r} is not a token id") from None


def data_dir() -> Path:
    """The folder with `<encoding>.json`: `$FIRSTTOKEN_TOKENIZER_DATA`, else the repository's
    `node_modules/tiktoken/encoders` (found from this file: py/firsttoken/ → repo root)."""
    configured = os.environ.get(DATA_ENV_VAR)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / "node_modules" / "tiktoken" / "encoders"


def load_encoding_data(name: str, directory: Path | None = None) -> EncodingData:
    """Read and check `<directory>/<name>.json` (default: `data_dir()`)."""
    if not name.replace("_", "").isalnum():
        raise TokenizerError(f"{name!r} is not an encoding name")
    path = (directory or data_dir()) / f"{name}.json"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TokenizerError(
            f"{name}: cannot read tokenizer data {path} ({exc.strerror or exc});"
            f" set {DATA_ENV_VAR} to the folder holding {name}.json"
        ) from None
    return EncodingData.from_json(name, raw)
