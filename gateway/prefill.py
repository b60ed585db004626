"""What reading a prompt costs the built-in model: prefill time and the prefix cache.

Pure and sans-IO: token ids and a clock in, numbers out. The simulator
(gateway/simulator.py) renders the prompt, asks here what it costs, and sleeps.

**The first token** waits for the server to read every prompt token it has not cached
(prefill), on top of a base cost (queueing, routing, the first decode step); a cached
token is not free, it costs what is left of its prefill after the cache's saving:

    first_token_ms = ttft_ms + (uncached_tokens + cached_tokens * (1 - cache_saving))
                               / prefill_tps * 1000

Defaults (`SimParams`, gateway/simulator.py): `ttft_ms` 1100 and `prefill_tps` 50,000,
the least-squares line through OpenAI's own binned means in "Prompt Caching 201"
(https://developers.openai.com/cookbook/examples/prompt_caching_201, figure 2 "TTFT vs
Prompt Tokens": 2,300 requests; uncached TTFT 1.44 s at ~14k tokens, 2.31 s at ~64k,
3.29 s at ~113k, 4.87 s at ~188k). The line gives 1.12 s at 1k tokens, 1.30 s at 10k,
3.10 s at 100k.

**What a cached token still costs** (`cache_saving`, default 0.82, `CACHE_SAVING`): the
same figure's cached requests, binned the same way (its teal line: 1.28 s at ~14k
tokens, 1.36 s at ~38k, 1.44 s at ~63k, 1.63 s at ~87k, 1.57 s at ~112k, 1.61 s at
~137k, 1.56 s at ~161k, 1.63 s at ~186k), are not flat: a cached token still costs
about 18% of an uncached one's prefill (least squares through those eight means with
the same 1.1 s base: 3.6 µs a token against 20). That is the cookbook's own headline
read as a rate: "at the longer end (150k+ tokens) we're seeing 67% faster TTFT", "7%
faster" at 1,024 tokens, "up to ~80%": the model gives 63% at 186k (measured 67%), 55%
at 112k (measured 52%). Why not 0.67 a token: the 67% is the whole first token's
saving, the base included; a token that kept a third of its prefill would make a cached
186k-token prompt 2.33 s, where OpenAI measured 1.63 s. Anthropic's figures
(below: 11.6 s → 2.4 s at 100k tokens) give 0.83 for its own rate and base, the same
within a point. Before issue 45 a cached token cost nothing (`cache_saving=1`), which
flattered whichever client's prompts were cached more.

**The prefix cache**, one store, bounded (`max_entries`, least recently used out
first) and forgetting what sat idle `idle_s`, with two disciplines:

- automatic, as OpenAI caches (Chat Completions and Responses): prompts of
  `min_tokens` (1,024) or more are cached; a hit is the longest cached prefix in
  `step` (128) token increments, and counts only from `min_tokens` up. OpenAI, "Prompt
  Caching in the API" (https://openai.com/index/api-prompt-caching/): "The API caches
  the longest prefix of a prompt that has been previously computed, starting at 1,024
  tokens and increasing in 128-token increments"; "Caches are typically cleared after
  5-10 minutes of inactivity and are always removed within one hour of the cache's
  last use" (https://platform.openai.com/docs/guides/prompt-caching says the same).
  Blocks are keyed by a hash chained over the blocks before them, so a block's key
  stands for the whole prefix up to its end (the idea of vLLM's automatic prefix
  caching);
- explicit, as Anthropic caches (Messages): only at blocks marked `cache_control`,
  prefixes of `min_tokens` (1,024, Sonnet-class) or more; a read is the longest prefix
  cached at one of the 20 block boundaries up to a breakpoint, a write is what the
  last breakpoint adds to it. Anthropic, "Prompt caching"
  (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching): the minimum
  cacheable prompt length is 1,024 tokens for Sonnet-class models (longer for some
  others); the cache lives 5 minutes, refreshed on each use; the system checks for
  hits at earlier block boundaries, up to about 20 blocks before an explicit
  breakpoint. Anthropic's "Prompt caching with Claude"
  (https://www.anthropic.com/news/prompt-caching) measured its first token slower than
  OpenAI's: 1.6 s at a 10k-token prompt, 11.5 s at 100k (2.4 s cached): about 9,000
  prompt tokens a second over a 0.5 s base, for whoever models Claude
  (`prefill_tps=9000,ttft_ms=500`).

Both are per scope (`scope_of`: the client's API key and the model), so one key never
reads what another wrote, nor one model another's.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

__all__ = [
    "ANTHROPIC_LOOKBACK_BLOCKS",
    "Breakpoint",
    "CACHE_SAVING",
    "CacheRules",
    "CacheUse",
    "DEFAULT_CACHE_ENTRIES",
    "PrefixCache",
    "RenderedPrompt",
    "block_keys",
    "boundary_keys",
    "cache_use",
    "first_token_ms",
    "render_prompt",
    "rough_encode",
    "scope_of",
]

#: Prefixes (blocks) a cache holds at most by default: about 13 MB (see `PrefixCache`),
#: 8.4M tokens at 128 a block, a few hundred long conversations of a benchmark's size.
DEFAULT_CACHE_ENTRIES = 65_536
#: The share of a token's prefill the prefix cache saves: OpenAI's cached first tokens
#: in "Prompt Caching 201", figure 2, fitted (the module's docstring).
CACHE_SAVING = 0.82
#: Block boundaries an explicit breakpoint looks back over for an earlier write
#: (Anthropic, "Prompt caching": "about 20 blocks before" a breakpoint).
ANTHROPIC_LOOKBACK_BLOCKS = 20

Encode = Callable[[str], Sequence[int]]
#: A block marked for caching: (index of the message in the prompt, index of the
#: content part in it), as Anthropic's `cache_control` marks one.
Breakpoint = tuple[int, int]


def first_token_ms(base_ms: float, prompt_tokens: int, cached_tokens: int, prefill_tps: float,
                   cache_saving: float = CACHE_SAVING) -> float:
    """Milliseconds from the request to the first token: the base, plus the prompt
    tokens the cache did not hold read at `prefill_tps`, plus the cached ones at
    `1 - cache_saving` of that cost each (the module's docstring: OpenAI's measured
    rate; 1 makes a cached token free). `prefill_tps` 0 makes reading free: the base
    alone, as the built-in model was before prefill was modelled."""
    if prefill_tps <= 0:
        return base_ms
    cached = min(max(cached_tokens, 0), prompt_tokens)
    uncached = max(prompt_tokens - cached, 0)
    return base_ms + (uncached + cached * (1.0 - cache_saving)) * 1000.0 / prefill_tps


@dataclass(frozen=True, slots=True)
class CacheRules:
    """How the prefix cache behaves for one request (see the module's docstring)."""

    enabled: bool = True
    min_tokens: int = 1024
    step: int = 128
    idle_s: float = 300.0


@dataclass(frozen=True, slots=True)
class CacheUse:
    """What one request took from the cache (`read`) and added to it (`written`, as
    Anthropic reports it; OpenAI reports reads only)."""

    read: int = 0
    written: int = 0


# ---- the prompt as token ids ------------------------------------------------------------

# Frame tokens around each message, outside every vocabulary (o200k_base has ~200k
# ids), so that no text encodes to them: "<start>role<sep>content<end>", the chat frame
# OpenAI's models read (3 tokens a message, 3 priming the reply, as firsttoken.tokens
# counts them), so the ids number what `count_chat` counts for plain messages.
_START, _SEP, _END = 0xFFFF_FF00, 0xFFFF_FF01, 0xFFFF_FF02


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A prompt as the server reads it: its token `ids` in order, and where each part
    of each message ends among them (`ends[m][p]`, an offset into `ids`)."""

    ids: array
    ends: tuple[tuple[int, ...], ...]


def render_prompt(messages: Sequence[dict[str, Any]], encode: Encode) -> RenderedPrompt:
    """`messages` (Chat Completions' form, as every dialect's request is read) as token
    ids: each message framed, its role, then each content part encoded on its own (a
    string content is one part; a part other than text, its canonical JSON), then the
    reply's priming."""
    ids = array("I")
    ends: list[tuple[int, ...]] = []
    for message in messages:
        ids.append(_START)
        ids.extend(encode(str(message.get("role", ""))))
        ids.append(_SEP)
        content = message.get("content")
        parts = [content] if isinstance(content, str) or content is None else content
        message_ends = []
        for part in parts if isinstance(parts, list) else [parts]:
            ids.extend(encode(_part_text(part)))
            message_ends.append(len(ids))
        ids.append(_END)
        ends.append(tuple(message_ends))
    ids.append(_START)
    ids.extend(encode("assistant"))
    ids.append(_SEP)
    return RenderedPrompt(ids, tuple(ends))


def _part_text(part: Any) -> str:
    if part is None:
        return ""
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return part["text"]
    return json.dumps(part, sort_keys=True, ensure_ascii=False, default=str)


def rough_encode(text: str) -> list[int]:
    """Stand-in ids where no tokenizer is at hand: one per 4 characters (the ratio
    `firsttoken.tokens.rough_count_chat` assumes), each a hash of its characters, so
    equal texts still give equal ids."""
    return [int.from_bytes(hashlib.blake2b(text[i:i + 4].encode("utf-8", "replace"), digest_size=4).digest(), "big")
            for i in range(0, len(text), 4)]


# ---- keys ---------------------------------------------------------------------------------


def scope_of(who: str, model: str, discipline: str) -> bytes:
    """The root of a scope's keys: whose cache (an API key's hash, else an address),
    for which model, under which discipline ("automatic/128", "explicit")."""
    return hashlib.sha256(json.dumps(["firsttoken.prefix/1", who, model, discipline]).encode()).digest()


def _chain(previous: bytes, ids: array) -> bytes:
    return hashlib.blake2b(previous + ids.tobytes(), digest_size=16).digest()


def block_keys(ids: array, step: int, scope: bytes) -> list[bytes]:
    """One key per whole `step`-token block of `ids`, each hashed over the key before
    it: key k stands for the prefix `ids[:(k + 1) * step]`, and nothing shorter. A
    trailing partial block has no key (it can never be a hit)."""
    keys = []
    key = scope
    for start in range(0, len(ids) - step + 1, step):
        key = _chain(key, ids[start:start + step])
        keys.append(key)
    return keys


def boundary_keys(ids: array, boundaries: Sequence[int], scope: bytes) -> list[bytes]:
    """One key per boundary (ascending offsets into `ids`), standing for the prefix
    `ids[:boundary]`."""
    keys = []
    key, start = scope, 0
    for end in boundaries:
        key = _chain(key, ids[start:end])
        keys.append(key)
        start = end
    return keys


# ---- the store ---------------------------------------------------------------------------


class PrefixCache:
    """Cached prefixes by key, with when each was last used: at most `max_entries`
    (the least recently used go first), none older than a request's `idle_s` counted.

    Thread-safe: the gateway prepares answers in a thread pool (gateway/offload.py).
    Memory: an entry is a 16-byte key and a float in an ordered dict, about 200 bytes.
    """

    def __init__(self, max_entries: int = DEFAULT_CACHE_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self.clock = clock
        self._used: OrderedDict[bytes, float] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._used)

    def automatic(self, prompt_tokens: int, keys: Sequence[bytes], rules: CacheRules) -> CacheUse:
        """OpenAI's discipline for a prompt of `prompt_tokens` whose whole blocks have
        `keys` (`block_keys`): read the longest run of cached blocks from the start,
        counted from `rules.min_tokens` up, then cache every block."""
        if not rules.enabled or prompt_tokens < rules.min_tokens:
            return CacheUse()
        with self._lock:
            now = self.clock()
            self._expire(now, rules.idle_s)
            hit = 0
            for key in keys:
                if key not in self._used:  # `_expire` just dropped the stale ones
                    break
                hit += 1
            self._put(keys, now)
        read = min(hit * rules.step, prompt_tokens)
        return CacheUse(read=read if read >= rules.min_tokens else 0)

    def explicit(self, boundaries: Sequence[int], keys: Sequence[bytes], breakpoints: Iterable[int],
                 rules: CacheRules, lookback: int = ANTHROPIC_LOOKBACK_BLOCKS) -> CacheUse:
        """Anthropic's discipline: `boundaries` are where blocks end (ascending token
        offsets), `keys` their `boundary_keys`, `breakpoints` the indices of the blocks
        marked `cache_control`. Read the longest prefix cached at a boundary up to
        `lookback` blocks before a breakpoint; write (and refresh) each breakpoint's
        prefix of `rules.min_tokens` or more."""
        marks = sorted(set(breakpoints))
        if not rules.enabled or not marks:
            return CacheUse()
        with self._lock:
            now = self.clock()
            self._expire(now, rules.idle_s)
            read = 0
            for mark in marks:
                for i in range(mark, max(mark - lookback, -1), -1):
                    if boundaries[i] <= read:
                        break
                    if keys[i] in self._used:
                        read = boundaries[i]
                        self._put([keys[i]], now)
                        break
            written_to = [m for m in marks if boundaries[m] >= rules.min_tokens and boundaries[m] > read]
            self._put([keys[m] for m in written_to], now)
        end = boundaries[marks[-1]]
        return CacheUse(read=read, written=end - read if written_to and end > read else 0)

    def _put(self, keys: Sequence[bytes], now: float) -> None:
        # Deepest block first, so a prefix's first block is its most recently used: the
        # bound evicts chains from their tails, never leaving a tail no lookup reaches.
        used = self._used
        for key in reversed(keys):
            used[key] = now
            used.move_to_end(key)
        while len(used) > self.max_entries:
            used.popitem(last=False)

    def _expire(self, now: float, idle_s: float) -> None:
        # Entries stand in the order they were last used, so the idle ones are all at
        # the front; after this, every entry left is fresh for this request.
        used = self._used
        while used:
            key, last = next(iter(used.items()))
            if now - last < idle_s:
                break
            del used[key]


def cache_use(cache: PrefixCache, render: Callable[[], RenderedPrompt], model: str, prompt_tokens: int, who: str,
              breakpoints: Sequence[Breakpoint] | None, rules: CacheRules) -> CacheUse:
    """What a prompt of `prompt_tokens` for `model` reads from and writes to `who`'s
    cache: automatically when `breakpoints` is None (OpenAI), else only at those blocks
    (Anthropic). `render` is called only when the cache could be used (the prompt's
    encoding is most of the cost)."""
    if not rules.enabled:
        return CacheUse()
    if breakpoints is None:
        if prompt_tokens < rules.min_tokens:
            return CacheUse()
        rendered = render()
        keys = block_keys(rendered.ids, rules.step, scope_of(who, model, f"automatic/{rules.step}"))
        return cache.automatic(prompt_tokens, keys, rules)
    if not breakpoints:
        return CacheUse()
    rendered = render()
    boundaries: list[int] = []
    index: dict[Breakpoint, int] = {}
    for m, ends in enumerate(rendered.ends):
        for p, end in enumerate(ends):
            index[(m, p)] = len(boundaries)
            boundaries.append(end)
    marks = [index[b] for b in breakpoints if b in index]
    keys = boundary_keys(rendered.ids, boundaries, scope_of(who, model, "explicit"))
    return cache.explicit(boundaries, keys, marks, rules)
