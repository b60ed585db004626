"""What a prompt costs the built-in model (gateway/prefill.py): the first-token formula,
the defaults against the measurements they come from, and the prefix cache's rules
(OpenAI's automatic one, Anthropic's explicit one), its scopes, idle eviction on an
injected clock, and its bound."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.prefill import (
    CACHE_SAVING,
    CacheRules,
    PrefixCache,
    block_keys,
    boundary_keys,
    first_token_ms,
    render_prompt,
    rough_encode,
    scope_of,
)
from gateway.simulator import SimParams

RULES = CacheRules()  # OpenAI's: 1,024 tokens at least, 128-token steps, 300 s idle
SCOPE = scope_of("k-alice", "firsttoken-sim", "automatic/128")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ids(n: int, start: int = 0) -> array:
    return array("I", range(start, start + n))


def ask(cache: PrefixCache, prompt: array, rules: CacheRules = RULES, scope: bytes = SCOPE) -> int:
    return cache.automatic(len(prompt), block_keys(prompt, rules.step, scope), rules).read


# ---- the first token ------------------------------------------------------------------------


def test_the_first_token_is_the_base_plus_the_uncached_tokens_at_the_prefill_rate() -> None:
    assert first_token_ms(1100, 50_000, 0, 50_000) == 2100
    assert first_token_ms(300, 2_000, 0, 1_000) == 2300
    # A cache that saved a token's whole prefill (before issue 45): cached tokens free.
    assert first_token_ms(1100, 50_000, 40_000, 50_000, cache_saving=1.0) == 1300
    assert first_token_ms(1100, 1024, 1024, 50_000, cache_saving=1.0) == 1100


def test_a_cached_token_costs_what_its_prefill_keeps_after_the_saving() -> None:
    # 40,000 cached at 0.8 saved: 8,000 tokens' worth of prefill, plus the 10,000 uncached.
    assert first_token_ms(1100, 50_000, 40_000, 50_000, cache_saving=0.8) == pytest.approx(1460)
    assert first_token_ms(1100, 50_000, 40_000, 50_000, cache_saving=0.0) == 2100  # a cache that saves nothing
    # The default is OpenAI's measured rate: a cached token is cheaper, and not free.
    default = first_token_ms(1100, 50_000, 40_000, 50_000)
    assert first_token_ms(1100, 50_000, 40_000, 50_000, cache_saving=1.0) < default < first_token_ms(1100, 50_000, 0, 50_000)
    assert default == pytest.approx(1100 + (10_000 + 40_000 * (1 - CACHE_SAVING)) / 50)


def test_a_prefill_rate_of_zero_makes_reading_free() -> None:
    assert first_token_ms(300, 1_000_000, 0, 0) == 300


def test_more_cached_than_prompt_is_the_whole_prompt_cached() -> None:
    assert first_token_ms(300, 100, 500, 1_000, cache_saving=1.0) == 300
    assert first_token_ms(300, 100, 500, 1_000) == first_token_ms(300, 100, 100, 1_000) > 300


def test_the_defaults_reproduce_openais_measured_first_tokens() -> None:
    """The binned means of "Prompt Caching 201", figure 2 (gateway/prefill.py), within
    15%, uncached and cached; a long cached prompt is faster by OpenAI's "67% at
    150k+", "up to 80%"; a short one by less than its "7%"."""
    p = SimParams()
    assert p.cache_saving == CACHE_SAVING

    def ttft(tokens: int, cached: int) -> float:
        return first_token_ms(p.ttft_ms, tokens, cached, p.prefill_tps, p.cache_saving)

    for tokens, measured_ms in ((38_614, 1880), (63_570, 2314), (113_482, 3286), (163_394, 4418), (188_351, 4872)):
        assert ttft(tokens, 0) == pytest.approx(measured_ms, rel=0.15)
    for tokens, measured_ms in ((38_173, 1363), (62_835, 1442), (112_159, 1573), (136_819, 1612), (186_144, 1626)):
        assert ttft(tokens, tokens) == pytest.approx(measured_ms, rel=0.15)
    cold, warm = ttft(188_000, 0), ttft(188_000, 188_000 - 100)
    assert 0.6 <= 1 - warm / cold <= 0.7  # 67% measured: the cache's saving is not the whole prefill
    assert 1 - ttft(1024, 1024) / ttft(1024, 0) < 0.07  # "7% faster" at 1,024


# ---- OpenAI's automatic cache -------------------------------------------------------------


def test_a_prompt_under_the_minimum_is_neither_cached_nor_stored() -> None:
    cache = PrefixCache(clock=Clock())
    assert ask(cache, ids(1023)) == 0
    assert ask(cache, ids(1023)) == 0
    assert len(cache) == 0


def test_a_repeated_prompt_is_read_back_in_whole_128_token_blocks() -> None:
    cache = PrefixCache(clock=Clock())
    assert ask(cache, ids(2006)) == 0
    assert ask(cache, ids(2006)) == 1920  # OpenAI's own example: 2,006 prompt tokens, 1,920 cached
    assert ask(cache, ids(1024)) == 1024  # exactly the minimum, all of it


def test_a_hit_is_the_longest_shared_prefix_rounded_down_to_the_step() -> None:
    cache = PrefixCache(clock=Clock())
    ask(cache, ids(3000))
    changed = ids(3000)
    changed[1500] = 999_999
    assert ask(cache, changed) == 1408  # 11 whole blocks before token 1,500
    longer = ids(5000)
    assert ask(cache, longer) == 2944  # the first prompt's 23 whole blocks


def test_a_shared_prefix_under_the_minimum_is_no_hit() -> None:
    cache = PrefixCache(clock=Clock())
    ask(cache, ids(3000))
    changed = ids(3000)
    changed[900] = 999_999
    assert ask(cache, changed) == 0


@settings(max_examples=200)
@given(n=st.integers(0, 4000), shared=st.integers(0, 4000), step=st.sampled_from([16, 64, 128, 256]),
       minimum=st.sampled_from([1, 512, 1024, 2048]))
def test_the_read_is_the_shared_prefix_in_whole_steps_from_the_minimum_up(n: int, shared: int, step: int,
                                                                       minimum: int) -> None:
    rules = CacheRules(min_tokens=minimum, step=step)
    cache = PrefixCache(clock=Clock())
    first = ids(n)
    second = ids(n)
    for i in range(min(shared, n), n):
        second[i] = 10_000_000 + i
    ask(cache, first, rules)
    read = ask(cache, second, rules)
    expected = min(shared, n) // step * step if n >= minimum else 0
    assert read == (expected if expected >= minimum else 0)
    assert read % step == 0 and read <= n


def test_prompts_are_cached_per_api_key_and_per_model() -> None:
    cache = PrefixCache(clock=Clock())
    ask(cache, ids(2048))
    assert ask(cache, ids(2048), scope=scope_of("k-bob", "firsttoken-sim", "automatic/128")) == 0
    assert ask(cache, ids(2048), scope=scope_of("k-alice", "firsttoken-sim-mini", "automatic/128")) == 0
    assert ask(cache, ids(2048)) == 2048


def test_a_prefix_idle_past_the_eviction_time_is_gone() -> None:
    clock = Clock()
    cache = PrefixCache(clock=clock)
    ask(cache, ids(2048))
    clock.now += RULES.idle_s - 0.001
    assert ask(cache, ids(2048)) == 2048  # just in time: and the hit refreshes it
    clock.now += RULES.idle_s - 0.001
    assert ask(cache, ids(2048)) == 2048
    clock.now += RULES.idle_s
    assert ask(cache, ids(2048)) == 0
    assert len(cache) == 2048 // 128  # the expired blocks dropped, the new ones stored


def test_idle_eviction_follows_the_requests_setting() -> None:
    clock = Clock()
    cache = PrefixCache(clock=clock)
    short = CacheRules(idle_s=5)
    ask(cache, ids(2048), short)
    clock.now += 6
    assert ask(cache, ids(2048), short) == 0


def test_a_disabled_cache_reads_and_stores_nothing() -> None:
    cache = PrefixCache(clock=Clock())
    off = CacheRules(enabled=False)
    ask(cache, ids(2048), off)
    assert ask(cache, ids(2048), off) == 0 and len(cache) == 0


def test_the_cache_is_bounded_and_drops_the_least_recently_used_first() -> None:
    cache = PrefixCache(max_entries=20, clock=Clock())
    a, b, c = ids(1280), ids(1280, 100_000), ids(1280, 200_000)  # 10 blocks each
    ask(cache, a)
    ask(cache, b)
    assert ask(cache, a) == 1280  # a is now the most recently used
    ask(cache, c)
    assert len(cache) == 20
    assert ask(cache, a) == 1280
    assert ask(cache, b) == 0  # b went; and coming back, it pushed c out
    assert ask(cache, c) == 0


def test_a_prompt_longer_than_the_bound_keeps_its_first_blocks() -> None:
    """The bound cuts chains from their tails: what stays is still reachable."""
    cache = PrefixCache(max_entries=10, clock=Clock())
    ask(cache, ids(128 * 30))
    assert len(cache) == 10
    assert ask(cache, ids(128 * 30)) == 1280


def test_the_bound_must_hold_something() -> None:
    with pytest.raises(ValueError):
        PrefixCache(max_entries=0)


# ---- Anthropic's explicit cache -----------------------------------------------------------


EXPLICIT = scope_of("k-alice", "claude-sonnet", "explicit")


def explicit(cache: PrefixCache, prompt: array, boundaries: list[int], marks: list[int], rules: CacheRules = RULES):
    return cache.explicit(boundaries, boundary_keys(prompt, boundaries, EXPLICIT), marks, rules)


def test_a_breakpoint_writes_its_prefix_then_reads_it() -> None:
    cache = PrefixCache(clock=Clock())
    prompt = ids(3000)
    first = explicit(cache, prompt, [1500, 2990], [0])
    assert (first.read, first.written) == (0, 1500)
    second = explicit(cache, prompt, [1500, 2990], [0])
    assert (second.read, second.written) == (1500, 0)


def test_no_breakpoint_no_cache() -> None:
    cache = PrefixCache(clock=Clock())
    prompt = ids(3000)
    explicit(cache, prompt, [1500, 2990], [])
    assert explicit(cache, prompt, [1500, 2990], []).read == 0 and len(cache) == 0


def test_a_prefix_under_the_minimum_is_not_written() -> None:
    cache = PrefixCache(clock=Clock())
    prompt = ids(3000)
    assert explicit(cache, prompt, [1000, 2990], [0]).written == 0
    assert explicit(cache, prompt, [1000, 2990], [0]).read == 0


def test_a_moved_breakpoint_reads_the_earlier_write_and_writes_the_rest() -> None:
    """A conversation marks its last turn each time: the turn before is read back."""
    cache = PrefixCache(clock=Clock())
    turn1 = ids(2000)
    explicit(cache, turn1, [1200, 2000], [1])
    turn2 = ids(2600)
    use = explicit(cache, turn2, [1200, 2000, 2300, 2600], [3])
    assert (use.read, use.written) == (2000, 600)


@pytest.mark.parametrize(("mark", "read"), [(19, 1100), (20, 0)])
def test_a_breakpoint_looks_back_twenty_blocks_and_no_further(mark: int, read: int) -> None:
    cache = PrefixCache(clock=Clock())
    prompt = ids(5000)
    boundaries = [1100 + 100 * i for i in range(25)]
    explicit(cache, prompt, boundaries, [0])
    assert explicit(cache, prompt, boundaries, [mark]).read == read


# ---- the prompt as ids --------------------------------------------------------------------


def test_the_rendered_prompt_has_as_many_ids_as_the_prompt_has_tokens() -> None:
    from firsttoken.tokens import count_chat
    from gateway.simulator import render_ids

    messages = [{"role": "system", "content": "Be brief. " * 50}, {"role": "user", "content": "what is a frame?"},
                {"role": "assistant", "content": "A unit of paint."}, {"role": "user", "content": "and a budget?"}]
    rendered = render_ids(messages, "firsttoken-sim")
    assert len(rendered.ids) == count_chat(messages, "firsttoken-sim")
    assert [len(e) for e in rendered.ends] == [1, 1, 1, 1]


def test_each_part_ends_where_the_next_begins_to_be_read() -> None:
    messages = [{"role": "system", "content": [{"type": "text", "text": "abcdefgh"}, {"type": "text", "text": "ijkl"}]},
                {"role": "user", "content": "mnop"}]
    rendered = render_prompt(messages, rough_encode)
    (a, b), (c,) = rendered.ends
    assert a < b < c <= len(rendered.ids)
    assert b - a == 1  # "ijkl": one stand-in id


def test_changing_a_late_message_keeps_the_early_blocks_keys() -> None:
    head = [{"role": "system", "content": "same rules " * 300}]
    one = render_prompt(head + [{"role": "user", "content": "first"}], rough_encode)
    two = render_prompt(head + [{"role": "user", "content": "second"}], rough_encode)
    k1, k2 = block_keys(one.ids, 128, SCOPE), block_keys(two.ids, 128, SCOPE)
    shared = one.ends[0][0] // 128
    assert k1[:shared] == k2[:shared] and shared > 0


def test_the_prompt_is_rendered_only_when_the_cache_could_use_it() -> None:
    from gateway.prefill import cache_use

    def render():  # type: ignore[no-untyped-def]
        raise AssertionError("rendered for nothing")

    cache = PrefixCache(clock=Clock())
    assert cache_use(cache, render, "m", 1023, "k", None, RULES).read == 0  # too short
    assert cache_use(cache, render, "m", 5000, "k", None, CacheRules(enabled=False)).read == 0
    assert cache_use(cache, render, "m", 5000, "k", [], RULES).read == 0  # Messages without cache_control
