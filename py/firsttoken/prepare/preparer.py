"""The preparer: what a prompt's preparation depends on, decided once, and the one
pipeline (`pipeline.run`) wrapped by the conversation memory, with what a session
keeps for it, so that the core only dispatches.

A send (`chat.send`, through the request's `Session.prepare`) and the composer's live
count (`tokens.count`) both go through `Preparer.prepare`, with the same counter, cache
and conversation memory: the count a user sees is the count that is sent.

Decided here and nowhere else on a prompt's way (`Decided`, carried on `Prepared`, where
the request and the live count read them): the API dialect (`stream.dialects.api_for`),
which shapes the count and the replay; the token encoding (`tokens.encoding_for_model`),
which the counter, the cache keys and the memory share; the budget (`tokens.budget_for`);
and the estimate of a prompt that could not be counted (`Prepared.estimate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Sequence

from .. import tokens
from ..cache import Cache
from ..errors import ContextBudgetExceeded
from ..notices import Notices, TokensEstimated, counting_notice
from ..settings import ChatSettings
from ..stream.dialects import api_for
from .lead import compression_id
from .memory import ConversationMemory, Recalled
from .pipeline import Decided, Prepared, run

__all__ = ["Decided", "LiveCount", "Preparer", "decide", "prepare"]


def decide(settings: ChatSettings, budget: int | None = None) -> Decided:
    """What `settings` decide for a preparation; `budget` overrides the settings' one."""
    default_budget, window_known = tokens.budget_for(settings)
    encoding, _ = tokens.encoding_for_model(settings.model)
    return Decided(
        model=settings.model,
        level=settings.compress,
        api=api_for(settings),
        encoding=encoding,
        budget=default_budget if budget is None else budget,
        window_known=window_known,
    )


async def prepare(
    messages: Sequence[Mapping[str, Any]],
    settings: ChatSettings,
    *,
    budget: int | None = None,
    counter: Callable[[str], int] | None,
    clock: Callable[[], float],
    cache: Cache | None = None,
    memory: ConversationMemory | None = None,
    live: bool = False,
    decided: Decided | None = None,
) -> Prepared:
    """Compress, count and fit `messages` into `budget` prompt tokens (by default the
    settings' budget: `tokens.budget_for`), as `decided` (by default `decide(settings,
    budget)`).

    `counter` counts one text exactly in the model's encoding, or is None (no encoder
    yet: the messages are compressed but neither counted nor fitted, savings are in
    characters, and the counts are estimates). `cache` makes the leading system
    messages cheap after the first time (used only with a counter: an entry holds an
    exact count); `memory` does the same for the rest of a conversation prepared
    again: it is looked up before the pipeline and given what to keep after it.
    Neither changes the result. `live`: a live count, which runs on every pause in
    typing, so it reads only the cache's memory tier and writes nothing (no storage
    I/O beside a send's). `clock` gives milliseconds (for `prepare_ms` and entries'
    creation times). Raises `ContextBudgetExceeded` when the system messages and the
    newest turn cannot fit, `LocalProtocolError` for an unknown compression level.
    """
    started = clock()
    if decided is None:
        decided = decide(settings, budget)
    recalled = Recalled(encoding=decided.encoding)
    if memory is not None:
        context = (compression_id(decided.level), counter is not None, decided.api, decided.model)
        recalled = memory.recall(messages, decided.encoding, context)
    prepared, kept = await run(
        messages, decided, counter=counter, clock=clock, started=started, cache=cache, recalled=recalled, live=live
    )
    if memory is not None:
        memory.store(recalled, kept)
    return prepared


@dataclass(frozen=True, slots=True)
class LiveCount:
    """The composer's count (`tokens.counted`, without the calibration, which is the
    core's): what a send would carry, compressed and fitted, beside it as written."""

    tokens: int
    budget: int
    exact: bool
    uncompressed: int
    dropped: list[int]
    #: The tokens of images within `tokens` (the calibration corrects them apart).
    image_tokens: int = 0


class Preparer:
    """Prepares conversations for one session. `load_encoder` loads a tokenizer before
    counting (the page's, lazily); `cache` keeps prepared system messages; `notices`
    hears, once a session, that counts became estimates; `clock` gives milliseconds."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        notices: Notices,
        cache: Cache | None = None,
        load_encoder: Callable[[str], Awaitable[Any]] | None = None,
    ) -> None:
        self.clock = clock
        self.notices = notices
        self.cache = cache
        self.load_encoder = load_encoder
        #: The conversation's compression, kept between live counts and sends.
        self.memory = ConversationMemory()
        self._estimating = False  # counting failed and the user was told (once a session)
        self._told_estimated: set[str] = set()  # models told to have no public tokenizer

    async def counter(self, encoding: str) -> Callable[[str], int] | None:
        """An exact counter in `encoding`, or None when none can be had (the page loads
        its encoder on first use, and tries again on the next if that failed). Without
        one, counts are estimates and the cache is off (its entries hold exact counts):
        never silently, a `tokens_estimated` notice says so once a session."""
        try:
            if self.load_encoder is not None:
                await self.load_encoder(encoding)
            tokens.count("", encoding)
        except Exception as exc:  # noqa: BLE001 - counting is an aid: sending must not fail on it
            if not self._estimating:
                self._estimating = True
                self.notices.add(counting_notice(exc, cache=self.cache is not None))
            return None
        return lambda text: tokens.count(text, encoding)

    async def prepare(
        self, messages: list[dict[str, Any]], settings: ChatSettings, decided: Decided | None = None,
        *, live: bool = False,
    ) -> Prepared:
        """Compress, count and fit the conversation before it leaves the device, with this
        session's counter, cache and memory, as `decided` (`decide(settings)`: a request
        decides it once, when it is made, and hands it here). `live`: for the live count
        (no storage I/O). A model without a public tokenizer (Claude) is counted all the
        same, and its counts are estimates: a `tokens_estimated` notice says so, once a
        session."""
        return await self._prepare(messages, settings, decided or decide(settings), live=live)

    async def _prepare(
        self, messages: list[dict[str, Any]], settings: ChatSettings, decided: Decided, *, live: bool
    ) -> Prepared:
        model = decided.model
        if not tokens.public_tokenizer(model) and model not in self._told_estimated and len(self._told_estimated) < 64:
            self._told_estimated.add(model)
            self.notices.add(TokensEstimated(
                reason="no_public_tokenizer",
                message=f"Token counts for {model} are estimates: its maker publishes no tokenizer. They are"
                        " counted with OpenAI's o200k_base and corrected by what the server reports.",
            ))
        return await prepare(
            messages, settings, counter=await self.counter(decided.encoding), clock=self.clock,
            cache=self.cache, memory=self.memory, live=live, decided=decided,
        )

    async def count(self, messages: list[dict[str, Any]], settings: ChatSettings) -> LiveCount:
        """The live count of a conversation whose last user message is the draft. One
        that cannot fit even fitted counts the least it needs (over the budget); other
        firsttoken errors (an unknown compression level) are raised."""
        decided = decide(settings)
        try:
            done = await self._prepare(messages, settings, decided, live=True)
        except ContextBudgetExceeded as exc:
            return LiveCount(tokens=exc.required, budget=decided.budget, exact=False, uncompressed=exc.required, dropped=[])
        return LiveCount(
            tokens=done.estimate, budget=done.budget, exact=done.exact, uncompressed=done.uncompressed,
            dropped=done.dropped, image_tokens=done.image_tokens if done.prompt_tokens is not None else 0,
        )
