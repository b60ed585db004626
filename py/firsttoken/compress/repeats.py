"""Repeats pass: a paragraph or block pasted again is kept once.

Units are prose paragraphs (runs of non-blank lines) and whole blocks (a fence, a
JSON region); blank lines separate them. A unit repeats when the same words
(whitespace ignored) appeared before, earlier in the same text or in an earlier
instruction-giving message (system, developer, user). Assistant and tool messages
neither lose repeats nor count as a first occurrence: a user quoting the assistant
quotes it on purpose.

A maximal run of repeated units is dropped only when all of these hold, each for a
reason:

* it holds at least `MIN_RUN_CHARS` visible characters, so "Thanks!" or a bare
  heading is never taken for a pasted template;
* a blank line or the text's edge bounds it on both sides, so dropping it never joins
  two neighbours into one paragraph (which would also break idempotence);
* something else remains in the text: an API may refuse an empty message, and a turn
  that is only the template again still says "again".

Decisions depend only on earlier text, so compressing a conversation and then the same
conversation with one more message gives the same earlier messages: the provider's
prompt cache keeps its prefix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .markdown import PROSE, Block, is_blank, split_lines

__all__ = ["MIN_RUN_CHARS", "Unit", "units_of", "drop_repeats"]

MIN_RUN_CHARS = 64
_WS = re.compile(r"[ \t\r\n\f\v]+")


@dataclass(slots=True)
class Unit:
    text: str
    key: str  # "" for a separator (blank lines)


def _key(text: str) -> str:
    return " ".join(_WS.split(text.strip(" \t\r\n\f\v")))


def units_of(blocks: Sequence[Block]) -> list[Unit]:
    """The units of a document, in order; their texts concatenate to the document."""
    units: list[Unit] = []
    for b in blocks:
        if b.kind != PROSE:
            text = b.full()
            if text:
                units.append(Unit(text, _key(text) or text))
            continue
        para: list[str] = []
        for line in split_lines(b.text):
            if is_blank(line):
                if para:
                    t = "".join(para)
                    units.append(Unit(t, _key(t)))
                    para = []
                units.append(Unit(line, ""))
            else:
                para.append(line)
        if para:
            t = "".join(para)
            units.append(Unit(t, _key(t)))
    return units


def drop_repeats(docs: Sequence[tuple[list[Unit], bool]]) -> list[str]:
    """New texts for `docs`, each given as (units, instruction-giving?)."""
    seen: set[str] = set()
    out: list[str] = []
    for units, instructive in docs:
        if not instructive:
            out.append("".join(u.text for u in units))
            continue
        rep = [False] * len(units)
        for i, u in enumerate(units):
            if u.key:
                rep[i] = u.key in seen
                seen.add(u.key)
        out.append(_drop(units, rep))
    return out


def _drop(units: list[Unit], rep: list[bool]) -> str:
    n = len(units)
    drop = [False] * n
    i = 0
    while i < n:
        if not (units[i].key and rep[i]):
            i += 1
            continue
        # Extend over repeated units and the separators between them.
        j = i
        last = i
        size = 0
        while j < n and (not units[j].key or rep[j]):
            if units[j].key:
                last = j
                size += len(units[j].key)
            j += 1
        before_ok = i == 0 or not units[i - 1].key
        after_ok = last == n - 1 or not units[last + 1].key
        if size >= MIN_RUN_CHARS and before_ok and after_ok:
            for k in range(i, last + 1):
                drop[k] = True
            k = last + 1
            if i == 0 or last + 1 < n:
                # Take the separators after the run (or, at the very end, before it).
                while k < n and not units[k].key:
                    drop[k] = True
                    k += 1
        i = last + 1
    if not any(drop):
        return "".join(u.text for u in units)
    if all(drop[k] or not units[k].key for k in range(n)):
        return "".join(u.text for u in units)
    kept = [k for k in range(n) if not drop[k]]
    text = "".join(units[k].text for k in kept)
    if drop[n - 1]:
        # The run ended the text: drop the separators before it too, and end the text
        # without a line ending, as the whitespace pass ends every text.
        while kept and not units[kept[-1]].key:
            kept.pop()
        text = "".join(units[k].text for k in kept)
        if text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text
