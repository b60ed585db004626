"""Counting each text once: the one place `firsttoken.prepare` counts tokens."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

__all__ = ["TextCounts", "texts_of"]


class TextCounts:
    """Token counts of texts, each counted once: a memo over an exact counter, for one
    prepare. Compression's report, fitting and the count as written all ask it, so a
    text that several of them see is tokenized once.

    `known` seeds it with counts known already (the cache's, the last prepare's), which
    then cost nothing. `counted` says how many texts reached the counter.

    Everything `prepare` counts goes through here, which is where a counter that has to
    be awaited (the page's tokenizer without shared memory) would plug in: by counting
    a batch of texts ahead and seeding the memo with it.
    """

    __slots__ = ("_count", "_known", "counted")

    def __init__(self, count: Callable[[str], int], known: dict[str, int] | None = None) -> None:
        self._count = count
        self._known: dict[str, int] = known if known is not None else {}
        self.counted = 0

    def __call__(self, text: str) -> int:
        n = self._known.get(text)
        if n is None:
            n = self._known[text] = self._count(text)
            self.counted += 1
        return n

    def remember(self, text: str, n: int) -> None:
        """A count known already: `text` will cost nothing."""
        self._known.setdefault(text, n)

    def of(self, texts: Iterable[str]) -> dict[str, int]:
        """The counts known of `texts` (those counted or remembered)."""
        return {t: self._known[t] for t in texts if t in self._known}


def texts_of(message: Mapping[str, Any]) -> list[str]:
    """The texts of a chat message: its string content, or its text parts."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    return []
