"""The compression report: characters (and tokens, given a counter) saved per pass.

Counting is what the report costs, so a text is counted at most twice: before and
after compression. What each pass saved in tokens is then the total saving shared out
in proportion to the characters each pass saved (largest remainders, so the shares add
up exactly); `count_passes` instead counts the text after every pass, which is exact
per pass and costs up to six counts a text (for benchmarks and tuning, not the page).
Characters are always exact per pass.

`removed` says what kind of text the code passes took out, counted as a person would
count it: comments by kind (a run of whole-line comments of one kind on consecutive
lines is one comment), docstrings, blank lines. `to_dict` gives it as

    "removed": {"comments": 12,
                "comment_kinds": {"remark": 7, "license": 1, "commented_out_code": 3,
                                  "decorative": 1},
                "docstrings": 0, "blank_lines": 5}

(kinds with a zero count left out; `intent`, TODOs and questions, appears only at
``max``), which the page's compression note shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PassSaving", "Report", "make_report", "sum_reports", "COMMENT_KINDS"]

#: set by the package to its COMPRESSION_VERSION
VERSION = ""

#: comment category (`code`) → the name the report gives its kind, in report order
COMMENT_KINDS: dict[str, str] = {
    "plain": "remark",
    "license": "license",
    "code": "commented_out_code",
    "decorative": "decorative",
    "intent": "intent",
}
_DOCSTRING = "doc"
_BLANK_LINE = "blank_line"
_ORDER = [*COMMENT_KINDS, _DOCSTRING, _BLANK_LINE]


def _removed(tally: Mapping[str, int] | None) -> tuple[tuple[str, int], ...]:
    """A tally (category → count) in report order, zero counts left out."""
    if not tally:
        return ()
    return tuple((k, tally[k]) for k in _ORDER if tally.get(k))


@dataclass(frozen=True, slots=True)
class PassSaving:
    """What one pass saved: characters, and tokens when a counter was given."""

    name: str
    chars: int
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Report:
    """What compression did to one text, or summed over messages."""

    level: str
    passes: tuple[PassSaving, ...]
    chars_before: int
    chars_after: int
    tokens_before: int | None = None
    tokens_after: int | None = None
    #: why code blocks were left as they were (e.g. "python: does not parse ...")
    untouched: tuple[str, ...] = ()
    version: str = ""
    #: what kind of text the code passes removed: (category, count), in a fixed order
    #: (`code` categories, "doc" for docstrings and doc comments, "blank_line")
    removed: tuple[tuple[str, int], ...] = ()

    @property
    def saved_chars(self) -> int:
        return self.chars_before - self.chars_after

    @property
    def saved_tokens(self) -> int | None:
        if self.tokens_before is None or self.tokens_after is None:
            return None
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for the message protocol."""
        return {
            "level": self.level,
            "version": self.version,
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "saved_chars": self.saved_chars,
            "saved_tokens": self.saved_tokens,
            "passes": [{"name": p.name, "chars": p.chars, "tokens": p.tokens} for p in self.passes],
            "untouched": list(self.untouched),
            "removed": self.removed_dict(),
        }

    def removed_dict(self) -> dict[str, Any]:
        """`removed` as the protocol carries it (see the module docstring)."""
        counts = dict(self.removed)
        kinds = {name: counts[cat] for cat, name in COMMENT_KINDS.items() if counts.get(cat)}
        return {
            "comments": sum(kinds.values()),
            "comment_kinds": kinds,
            "docstrings": counts.get(_DOCSTRING, 0),
            "blank_lines": counts.get(_BLANK_LINE, 0),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """The report `to_dict` gave (as a cache entry stores it); `removed` may be
        missing, as in entries stored before it existed."""
        removed = data.get("removed") or {}
        names = {name: cat for cat, name in COMMENT_KINDS.items()}
        tally = {names[k]: int(v) for k, v in (removed.get("comment_kinds") or {}).items() if k in names}
        tally[_DOCSTRING] = int(removed.get("docstrings") or 0)
        tally[_BLANK_LINE] = int(removed.get("blank_lines") or 0)
        return cls(
            level=data["level"],
            passes=tuple(PassSaving(p["name"], p["chars"], p.get("tokens")) for p in data["passes"]),
            chars_before=data["chars_before"],
            chars_after=data["chars_after"],
            tokens_before=data.get("tokens_before"),
            tokens_after=data.get("tokens_after"),
            untouched=tuple(data.get("untouched") or ()),
            version=data.get("version", ""),
            removed=_removed(tally),
        )


def _len(snap: str | int) -> int:
    return snap if isinstance(snap, int) else len(snap)


def _shares(total: int, weights: Sequence[int]) -> list[int]:
    """`total` split in proportion to `weights` (largest remainders, first wins ties)."""
    if not weights:
        return []
    w = [max(0, x) for x in weights]
    whole = sum(w)
    if whole == 0:
        # Tokens moved without characters moving: give them to the last pass.
        return [0] * (len(w) - 1) + [total]
    sign, left = (1, total) if total >= 0 else (-1, -total)
    exact = [left * x / whole for x in w]
    out = [int(e) for e in exact]
    order = sorted(range(len(w)), key=lambda k: (-(exact[k] - out[k]), k))
    for k in order[: left - sum(out)]:
        out[k] += 1
    return [sign * x for x in out]


def make_report(
    level: str,
    snapshots: Sequence[tuple[str, str | int]],
    count: Callable[[str], int] | None,
    untouched: Sequence[str],
    ends: tuple[str, str] | None = None,
    removed: Mapping[str, int] | None = None,
) -> Report:
    """The report of one text from its snapshots: (pass, text or length after it).

    With `count` and texts as snapshots, every pass is counted exactly. With `count`,
    lengths as snapshots and `ends` (the text before and after), only the two ends are
    counted and the token saving is shared out by characters (see the module
    docstring). `removed` is the code passes' tally (category → count).
    """
    savings = []
    chars = [_len(snapshots[i - 1][1]) - _len(snapshots[i][1]) for i in range(1, len(snapshots))]
    names = [snapshots[i][0] for i in range(1, len(snapshots))]
    tokens: list[int | None] = [None] * len(names)
    before = after = None
    if count is not None and ends is not None:
        before = count(ends[0])
        after = before if ends[1] == ends[0] else count(ends[1])
        tokens = list(_shares(before - after, chars))
    elif count is not None:
        counts: list[int] = []
        prev_text: str | int | None = None
        for _, text in snapshots:
            assert isinstance(text, str)
            counts.append(counts[-1] if text == prev_text else count(text))
            prev_text = text
        before, after = counts[0], counts[-1]
        tokens = [counts[i - 1] - counts[i] for i in range(1, len(counts))]
    for name, c, t in zip(names, chars, tokens):
        savings.append(PassSaving(name, c, t))
    return Report(
        level=level,
        passes=tuple(savings),
        chars_before=_len(snapshots[0][1]),
        chars_after=_len(snapshots[-1][1]),
        tokens_before=before,
        tokens_after=after,
        untouched=tuple(untouched),
        version=VERSION,
        removed=_removed(removed),
    )


def sum_reports(level: str, reports: Sequence[Report]) -> Report:
    """Reports of several texts added up, pass by pass."""
    if len(reports) == 1:
        return reports[0]
    names: list[str] = []
    chars: dict[str, int] = {}
    tokens: dict[str, int | None] = {}
    for r in reports:
        for p in r.passes:
            if p.name not in chars:
                names.append(p.name)
                chars[p.name] = 0
                tokens[p.name] = 0
            chars[p.name] += p.chars
            t = tokens[p.name]
            tokens[p.name] = None if t is None or p.tokens is None else t + p.tokens
    tally: dict[str, int] = {}
    for r in reports:
        for kind, n in r.removed:
            tally[kind] = tally.get(kind, 0) + n
    have_tokens = all(r.tokens_before is not None for r in reports)
    untouched: list[str] = []
    for r in reports:
        for u in r.untouched:
            if u not in untouched:
                untouched.append(u)
    return Report(
        level=level,
        passes=tuple(PassSaving(n, chars[n], tokens[n] if have_tokens else None) for n in names),
        chars_before=sum(r.chars_before for r in reports),
        chars_after=sum(r.chars_after for r in reports),
        tokens_before=sum(r.tokens_before or 0 for r in reports) if have_tokens else None,
        tokens_after=sum(r.tokens_after or 0 for r in reports) if have_tokens else None,
        untouched=tuple(untouched),
        version=VERSION,
        removed=_removed(tally),
    )
