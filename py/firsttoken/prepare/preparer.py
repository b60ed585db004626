"""`Preparer`: the one pipeline (`firsttoken.prepare.prepare`) with what a session keeps
for it, so that the core only dispatches.

A send (`chat.send`, through the request's `Session.prepare`) and the composer's live
count (`tokens.count`) both go through `Preparer.prepare`, with the same counter, cache
and conversation memory: the count a user sees is the count that is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from .. import tokens
from ..cache import Cache
from ..errors import ContextBudgetExceeded
from ..notices import Notices, TokensEstimated, counting_notice
from ..settings import ChatSettings
from . import ConversationMemory, Prepared, prepare

__all__ = ["LiveCount", "Preparer"]


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

    async def counter(self, model: str) -> Callable[[str], int] | None:
        """An exact counter for `model`'s encoding, or None when none can be had (the
        page loads its encoder on first use, and tries again on the next if that failed).
        Without one, counts are estimates and the cache is off (its entries hold exact
        counts): never silently, a `tokens_estimated` notice says so once a session."""
        encoding, _ = tokens.encoding_for_model(model)
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

    async def prepare(self, messages: list[dict[str, Any]], settings: ChatSettings, *, live: bool = False) -> Prepared:
        """Compress, count and fit the conversation before it leaves the device, with this
        session's counter, cache and memory. `live`: for the live count (no storage I/O).
        A model without a public tokenizer (Claude) is counted all the same, and its
        counts are estimates: a `tokens_estimated` notice says so, once a session."""
        model = settings.model
        if not tokens.public_tokenizer(model) and model not in self._told_estimated and len(self._told_estimated) < 64:
            self._told_estimated.add(model)
            self.notices.add(TokensEstimated(
                reason="no_public_tokenizer",
                message=f"Token counts for {model} are estimates: its maker publishes no tokenizer. They are"
                        " counted with OpenAI's o200k_base and corrected by what the server reports.",
            ))
        return await prepare(
            messages, settings, counter=await self.counter(settings.model), clock=self.clock,
            cache=self.cache, memory=self.memory, live=live,
        )

    async def count(self, messages: list[dict[str, Any]], settings: ChatSettings) -> LiveCount:
        """The live count of a conversation whose last user message is the draft. One
        that cannot fit even fitted counts the least it needs (over the budget); other
        firsttoken errors (an unknown compression level) are raised."""
        budget, _ = tokens.budget_for(settings)
        try:
            done = await self.prepare(messages, settings, live=True)
        except ContextBudgetExceeded as exc:
            return LiveCount(tokens=exc.required, budget=budget, exact=False, uncompressed=exc.required, dropped=[])
        count, uncompressed = done.prompt_tokens, done.uncompressed
        if count is None:  # no encoder yet
            count = tokens.estimate_tokens(done.messages, settings.model)
            uncompressed = tokens.estimate_tokens(messages, settings.model)
        return LiveCount(
            tokens=count, budget=budget, exact=done.exact,
            uncompressed=uncompressed if uncompressed is not None else count, dropped=done.dropped,
            image_tokens=done.image_tokens if done.prompt_tokens is not None else 0,
        )
