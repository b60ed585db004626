"""firsttoken.compress: deterministic, meaning-preserving prompt compression.

Fewer input tokens mean less quota, less time in a token-rate queue and less to
upload. `compress_text` and `compress_messages` remove what a model does not read as
meaning, pass by pass, and report what each pass saved:

========== ============================================================================
pass       what goes
========== ============================================================================
json       whitespace in pretty JSON (fenced, a whole message, or a `{`/`[` block in
           prose); tokens stay byte-identical, duplicates and number spellings too
code       comments that are remarks, licence headers, commented-out code or
           decoration, trailing whitespace and blank lines in fenced code of a
           known language, and indentation where the language ignores it (Python
           keeps one space per block level); TODOs and questions stay; string
           literals stay byte-identical, YAML keeps its indentation
docs       Python docstrings, Rust doc comments, and the comments `code` keeps:
           TODO, FIXME, XXX, HACK, BUG, NOTE and questions
tables     padding in GFM tables, and long delimiter rows
whitespace trailing spaces, runs of spaces, extra blank lines in prose; never inside
           code or inline code
repeats    a template pasted again from an earlier message (a system prompt in a
           user turn), when it stands in the same context and takes whole
           elements and sections with it
========== ============================================================================

Levels: ``safe`` = json, tables, whitespace; ``balanced`` (default) adds code and
repeats; ``max`` adds docs, and so drops every comment but directives. `passes`
switches single passes on or off on top of a level.

Guarantees (tested with Hypothesis and on a corpus, see tests/unit/test_compress*):

* idempotent: compressing the output again changes nothing;
* deterministic and byte-stable: no dict/set iteration order, locale, clock or
  platform reaches the output. Line endings are kept (CRLF stays CRLF). The one
  outside input is the Python grammar: a block that only a newer Python parses is
  compressed there and left as it is on an older one; `COMPRESSION_VERSION` therefore
  names the interpreter, and changes whenever any output could (the golden test,
  tests/unit/test_compress_golden.py, fails when corpus output changes under it);
* safe: Python blocks give the same `ast.dump`; JSON gives the same `json.loads`
  (with duplicate keys and number literals); outside code the sequence of words is
  unchanged except for dropped repeats; string literals are byte-identical. What
  cannot be parsed, or a language we do not know, stays untouched: every language
  step has a self-check and falls back to the original block, and no input raises;
* structure-safe: compression never leaves an XML-ish tag (`<example>`) or a fence
  unbalanced, nor an element or markdown section holding less than it did while its
  tags or heading stay (checked by tests/unit/compress_invariants.py);
* prefix-stable: a message's output depends only on it and the messages before it,
  and what the earlier messages contribute is one serialisable value, `RepeatState`.

Compressing in two steps (the prepare pipeline keeps the leading system messages
compressed in a cache and compresses only the rest):

    head = compress_messages(messages[:k], level=level)
    state = RepeatState.from_json(head.state.to_json())    # e.g. kept beside the cache entry
    rest = compress_messages(messages[k:], level=level, prior=state)
    # head.messages + rest.messages, head.reports + rest.reports: exactly what
    # compress_messages(messages, level=level) gives (a Hypothesis test checks every k)

A state belongs to one `COMPRESSION_VERSION` and one set of passes, and holds at most
`repeats.MAX_STATE_KEYS` (4096) 16-byte digests of what the repeats pass has seen,
about 22 characters of JSON each. Past that bound it is *unknown*
(`state.known` is false, `to_json` keeps only that): `compress_messages` refuses an
unknown or foreign `prior` with `LocalProtocolError`, and the caller compresses from
the first message instead. Exactness never depends on the bound, and compressing in
one call uses the same digests, so both ways agree even on a digest collision.

Messages (OpenAI chat format): only text is touched, meaning string `content` or the
`text` of `{"type": "text"}` parts. Roles, names, `tool_calls`, `tool_call_id` and
non-text parts are copied as they are. Assistant `tool_calls[].function.arguments`
are left alone: they are the model's own output, usually compact already, and some
servers validate them. Tool results (role `tool`) are compressed like any text; their
pretty JSON is where minifying pays most.

Tool schemas (the request's `tools` list) are objects, not text: how many bytes they
take is a matter of serialising the request body, for which `compact_json` gives the
compact form. Providers render schemas into the prompt their own way, so this saves
upload bytes rather than prompt tokens.

The report counts characters always and tokens when a `count(text) -> int` callable is
given (the page passes its exact tokenizer; this module imports none). Each text is
counted at most twice, before and after; a pass's `tokens` is its share of the saving
in proportion to the characters it saved, and adds up exactly to the total.
`count_passes=True` counts after every pass instead (exact per pass, up to six counts
a text; for tuning). `Report.to_dict` keeps its fields either way.

Decisions, with the module that implements each:

* What the levels keep (`code`, `code_comments`): code pasted into a chat is usually
  a question about it, and a TODO or a question in a comment is often the question
  (issue 45: a prompt asking why its code fails lost ``# TODO: collisions? two users
  uploading "me.jpg" overwrite each other``). So ``balanced`` keeps intent: a
  comment with TODO, FIXME, XXX, HACK, BUG or NOTE, or asking a question, with the
  rest of its comment paragraph; it drops remarks, licence headers, commented-out
  code (Python: it parses, `ast.parse`; elsewhere a documented shape heuristic) and
  rules and banners. ``max`` drops intent too. Python docstrings and Rust doc
  comments are part of the program (`__doc__`, `#[doc]`), so only ``max`` drops
  them; Javadoc, JSDoc and Doxygen comments are ordinary comments to their compilers
  and go at ``balanced``. Directives tools act on (`# noqa`, `//go:build`,
  `/// <reference>`, `@ts-ignore`, HTML conditional comments, ...) always stay. The
  report counts what went by kind (`Report.removed`).
* Where we refuse (`fences`, `code_*`): unknown languages, code `ast` cannot parse,
  JSX, SQL whose dialect matters (backslashes in strings, `--x`, `#`), nested block
  comments, C line comments continued by a backslash, cgo, terminal sessions in shell
  fences, server-side code in HTML, and fences inside block quotes or lists. Refusal
  keeps the block byte-for-byte and names the reason in `Report.untouched`.
* Spaces inside code lines collapse between tokens (alignment padding) in every
  language we lex except YAML, where unquoted scalars keep their inner spaces.
* Indentation (`code`, `fences`): it goes entirely in C/C++, Java, Go, Rust,
  JavaScript/TypeScript, CSS/SCSS/Less, SQL, TOML, HTML/XML, shell and Dockerfile,
  whose grammars read leading whitespace as a mere separator (Go and JavaScript end
  statements at line breaks, which stay). It stays in YAML, where its width is
  syntax; Python's becomes one space per block level (`code_python`: 2326 -> 2263
  tokens on the corpus's Python blocks, one tab per level 2289). In o200k a run of spaces is a token of its own and only one space or one
  tab merges with the word after it, so most indented lines pay a token for their
  indentation. On the corpus's code blocks in those languages, with comments and
  blank lines already gone, the count was 8489 tokens with indentation as written,
  8446 with one tab per level, 8182 with one space per level, 7756 with any
  indentation cut to one space and 7680 with none: none it is. What keeps its bytes:
  a line that starts inside a string literal (a multi-line string, template or raw
  string, a heredoc body, a dollar-quoted SQL body, `<pre>`, `<textarea>`,
  `<script>`, `<style>`) or inside a kept multi-line comment, and the indentation
  before a directive comment (Go's `//go:` lines act only in column 0). A line
  continued by a backslash keeps one space, since C, shell and Dockerfile join it to
  the line before. A tag written over several lines loses the indentation of its
  attribute lines; the values stay.
* Prose (`prose`): indentation is never touched, lines indented four columns or by a
  tab keep their inner spacing (indented code), tabs inside a line stay (TSV), inline
  code spans are byte-identical, CRLF stays CRLF. Next to CJK text no space appears
  or goes and no lines are joined; full-width spaces and punctuation stay as written.
* Repeats (`repeats`): units are paragraphs and whole blocks; a unit repeats when
  the same words stood in the same context (open tags, heading path) in an *earlier
  instruction-giving message*; a dropped run must hold 64 visible characters, sit
  between blank lines, start or end the text, start outside every tag and balance its
  own tags, keep markdown sections whole, hold no stray fence line, and leave the text
  non-empty. Assistant and tool messages are never changed by it nor count as a first
  occurrence. Why across messages only: a system prompt showing a "bad" and a "good"
  example with the same code lost the second copy and the example's closing tag
  (issue 17); inside one text a second copy is deliberate. What each choice cost, in
  tokens the pass saved on the corpus at ``balanced``: the old rules (any earlier
  text, no context) saved 1063 on the 60 original prompts and 964 on the 7
  example-pair cases; across messages only, with contexts, whole elements and
  sections and the edge rule, 1063 and 480. The 484 given up are exactly the drops
  that broke an example or a tag; nothing was lost on real template pastes.
* JSON (`json_pass`): token-level minification, never `json.dumps`, so duplicate keys,
  `1.0e2` and `\u00e9` reach the model as written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LocalProtocolError
from .code import CODE_PASS, DOCS_PASS
from .fences import compress_fence_body
from .json_pass import JSON_LANGS, minify, minify_region, parse_container
from .markdown import FENCE, JSON, PROSE, Block, split_blocks
from . import report as _report_module
from .prose import compress_prose, strip_final_newlines
from .repeats import RepeatState, drop_repeats, units_of
from .report import PassSaving, Report, make_report, sum_reports
from .tables import compress_tables

__all__ = [
    "COMPRESSION_VERSION",
    "LEVELS",
    "PASSES",
    "PassSaving",
    "Report",
    "Compressed",
    "CompressedMessages",
    "RepeatState",
    "OFF",
    "Compressor",
    "compress_text",
    "compress_messages",
    "compact_json",
]

#: Changes whenever the output for some input could change; caches key on it. The
#: Python minor version is part of it (see the module docstring).
COMPRESSION_VERSION = f"5+py{sys.version_info[0]}.{sys.version_info[1]}"
_report_module.VERSION = COMPRESSION_VERSION

#: Pass names, in the order they run.
PASSES: tuple[str, ...] = ("json", "code", "docs", "tables", "whitespace", "repeats")

#: Level name → the passes it enables.
LEVELS: Mapping[str, frozenset[str]] = {
    "safe": frozenset({"json", "tables", "whitespace"}),
    "balanced": frozenset({"json", "code", "tables", "whitespace", "repeats"}),
    "max": frozenset(PASSES),
}

#: The `compress` setting that leaves prompts as written (`Compressor`).
OFF = "off"

#: Roles whose text may lose repeats and counts as a first occurrence.
_INSTRUCTIVE = frozenset({"system", "developer", "user"})


@dataclass(frozen=True, slots=True)
class Compressed:
    """The result of `compress_text`."""

    text: str
    report: Report


@dataclass(frozen=True, slots=True)
class CompressedMessages:
    """The result of `compress_messages`: new messages, a total and one report each."""

    messages: list[dict[str, Any]]
    report: Report
    reports: tuple[Report, ...]
    #: what the repeats pass has seen after the last message: pass it as `prior` to
    #: compress the messages that follow (see `RepeatState`)
    state: RepeatState | None = None


def _enabled(level: str, passes: Mapping[str, bool] | None) -> frozenset[str]:
    if level not in LEVELS:
        raise LocalProtocolError(f"unknown compression level {level!r}; expected one of {sorted(LEVELS)}")
    on = set(LEVELS[level])
    for name, flag in (passes or {}).items():
        if name not in PASSES:
            raise LocalProtocolError(f"unknown compression pass {name!r}; expected one of {list(PASSES)}")
        if flag:
            on.add(name)
        else:
            on.discard(name)
    return frozenset(on)


def _config(on: frozenset[str]) -> str:
    # What a RepeatState depends on: the units it hashed come out of these passes.
    return f"{COMPRESSION_VERSION}/{','.join(p for p in PASSES if p in on)}"


def compact_json(value: Any) -> str:
    """`value` as compact JSON (no spaces after separators, UTF-8 rather than `\\u`
    escapes), for request bodies such as the `tools` list. Key order is kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


# ---- one document --------------------------------------------------------------------


class _Doc:
    """One text going through the passes before `repeats`."""

    __slots__ = ("blocks", "snapshots", "untouched", "keep_text", "removed")

    def __init__(self, text: str, on: frozenset[str], keep_text: bool) -> None:
        self.untouched: list[str] = []
        #: what the code passes removed, by kind (`code.rebuild`'s tally)
        self.removed: dict[str, int] = {}
        # (pass, text after it) when tokens are counted, else (pass, length after it):
        # joining the text after every pass would cost more than some passes.
        self.keep_text = keep_text
        self.snapshots: list[tuple[str, str | int]] = [("", text if keep_text else len(text))]
        self.blocks: list[Block] = split_blocks(text, json_regions="json" in on)
        if "json" in on:
            self._json()
            self._snap("json")
        if "code" in on:
            self._code(CODE_PASS, squeeze=True)
            self._snap("code")
        if "docs" in on:
            self._code(DOCS_PASS, squeeze=False)
            self._snap("docs")
        if "tables" in on:
            for b in self.blocks:
                if b.kind == PROSE:
                    b.text = compress_tables(b.text)
            self._snap("tables")
        if "whitespace" in on:
            self._whitespace()
            self._snap("whitespace")

    def text(self) -> str:
        return "".join(b.full() for b in self.blocks)

    def _snap(self, name: str) -> None:
        if self.keep_text:
            self.snapshots.append((name, self.text()))
        else:
            self.snapshots.append((name, sum(len(b.full()) for b in self.blocks)))

    def _json(self) -> None:
        for b in self.blocks:
            if b.kind == JSON:
                b.text = minify_region(b.text)
            elif b.kind == FENCE and b.lang in JSON_LANGS:
                body = b.body.strip(" \t\r\n")
                if body[:1] not in ("{", "[") or parse_container(body) is None:
                    continue
                out = minify(body)
                if out is None:
                    continue
                ending = "\r\n" if b.body.endswith("\r\n") else "\n"
                b.body = " " * b.indent + out + ending

    def _code(self, remove: frozenset[str], squeeze: bool) -> None:
        for b in self.blocks:
            if b.kind != FENCE or not b.lang:
                continue
            try:
                out, why = compress_fence_body(b.lang, b.body, b.indent, b.marker, remove, squeeze, self.removed)
            except Exception as exc:  # noqa: BLE001 - the safety net "never an exception"
                out, why = None, f"{b.lang}: internal error {type(exc).__name__}"
            if out is None:
                if why and why not in self.untouched:
                    self.untouched.append(why)
            else:
                b.body = out

    def _whitespace(self) -> None:
        blocks = self.blocks
        last = len(blocks) - 1
        for i, b in enumerate(blocks):
            if b.kind == PROSE:
                b.text = compress_prose(b.text, first=i == 0, last=i == last)
            elif b.kind == FENCE:
                b.opener = _rstrip_line(b.opener)
                b.closer = _rstrip_line(b.closer)
        # Drop prose blocks that became empty, so the block list stays canonical, and
        # only then take the line ending off whatever ends the document.
        blocks = self.blocks = [b for b in blocks if b.kind != PROSE or b.text]
        if blocks:
            end = blocks[-1]
            if end.kind == FENCE:
                end.closer = end.closer.rstrip("\r\n")
            elif end.kind in (JSON, PROSE):
                end.text = strip_final_newlines(end.text)


def _rstrip_line(line: str) -> str:
    body = line.rstrip("\r\n")
    return body.rstrip(" \t") + line[len(body) :]


def compress_text(
    text: str,
    *,
    level: str = "balanced",
    passes: Mapping[str, bool] | None = None,
    count: Callable[[str], int] | None = None,
    count_passes: bool = False,
) -> Compressed:
    """Compress one text (markdown-ish: prose with fenced code, JSON, tables).

    `passes` switches passes on or off on top of `level` (e.g. ``{"repeats": False}``);
    `count` makes the report count tokens too: the text before and after, with each
    pass's share of the saving by characters, or after every pass with
    `count_passes` (see `report`). Raises `LocalProtocolError` only for an
    unknown level or pass name, never because of the text.
    """
    on = _enabled(level, passes)
    exact = count is not None and count_passes
    doc = _Doc(text, on, keep_text=exact)
    snapshots = list(doc.snapshots)
    out = doc.text()
    if "repeats" in on:
        # Repeats are dropped across messages only (see `repeats`): one text has no
        # earlier message, so the pass keeps it whole. It stays in the report so that
        # every text's report lists the same passes.
        snapshots.append(("repeats", out if exact else len(out)))
    ends = None if exact else (text, out)
    return Compressed(out, make_report(level, snapshots, count, doc.untouched, ends, doc.removed))


def compress_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    level: str = "balanced",
    passes: Mapping[str, bool] | None = None,
    count: Callable[[str], int] | None = None,
    prior: RepeatState | None = None,
    count_passes: bool = False,
) -> CompressedMessages:
    """Compress the text of OpenAI-style chat messages (see the module docstring).

    Returns new message dicts (the input is not modified), a total report, one report
    per message (for showing the saving beside each message) and the repeat `state`
    after the last message. `prior` is the state left by compressing the messages
    before these; it must come from the same version, level and passes, and be
    `known`, or `LocalProtocolError` is raised.
    """
    on = _enabled(level, passes)
    config = _config(on)
    seen = prior._seen(config) if prior is not None else set()
    # Every text in order: (message index, part index or None, text, instructive).
    slots: list[tuple[int, int | None, str, bool]] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        instructive = role in _INSTRUCTIVE
        content = m.get("content")
        if isinstance(content, str):
            slots.append((i, None, content, instructive))
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
                    slots.append((i, j, part["text"], instructive))
    keep = count is not None and count_passes
    docs = [_Doc(text, on, keep) for _, _, text, _ in slots]
    snaps = [list(d.snapshots) for d in docs]
    if "repeats" in on:
        json_regions = "json" in on
        ends = [k + 1 == len(slots) or slots[k + 1][0] != s[0] for k, s in enumerate(slots)]
        outs = drop_repeats(
            [(units_of(d.blocks), s[3], e) for d, s, e in zip(docs, slots, ends)],
            lambda text: units_of(split_blocks(text, json_regions=json_regions)),
            seen,
        )
        for sn, out in zip(snaps, outs):
            sn.append(("repeats", out if keep else len(out)))
    else:
        outs = [d.text() for d in docs]
    per_slot = [
        make_report(level, sn, count, d.untouched, None if keep else (s[2], out), d.removed)
        for sn, d, s, out in zip(snaps, docs, slots, outs)
    ]

    new: list[dict[str, Any]] = [dict(m) for m in messages]
    by_message: dict[int, list[Report]] = {}
    for (i, at, _, _), out, rep in zip(slots, outs, per_slot):
        if at is None:
            new[i]["content"] = out
        else:
            if new[i]["content"] is messages[i]["content"]:
                new[i]["content"] = list(messages[i]["content"])
            part = dict(new[i]["content"][at])
            part["text"] = out
            new[i]["content"][at] = part
        by_message.setdefault(i, []).append(rep)
    empty = make_report(level, [("", "")], None, ())
    reports = tuple(sum_reports(level, by_message.get(i, [empty])) for i in range(len(messages)))
    state = RepeatState(config, seen)  # unknown past MAX_STATE_KEYS
    return CompressedMessages(new, sum_reports(level, list(reports) or [empty]), reports, state)


class Compressor:
    """`compress_messages` at one level with one counter, resumable piece by piece: what
    the prepare pipeline runs. Level `OFF` is the compressor that returns its input: a
    copy of each message, no reports (nothing was compressed, so `chat.prepared` says
    none) and no repeats state (there is nothing to carry from piece to piece, so every
    piece resumes). That is the one place "off" is told apart.

    Raises `LocalProtocolError` for an unknown level, before anything is compressed.
    """

    __slots__ = ("level", "count")

    def __init__(self, level: str, count: Callable[[str], int] | None = None) -> None:
        if level != OFF:
            _enabled(level, None)
        self.level = level
        self.count = count

    def __call__(self, messages: Sequence[Mapping[str, Any]], prior: RepeatState | None = None) -> CompressedMessages:
        """`messages` compressed after the messages that left `prior`. Off: `reports` is
        empty and `state` None."""
        if self.level == OFF:
            empty = make_report(OFF, [("", "")], None, ())
            return CompressedMessages([dict(m) for m in messages], empty, ())
        return compress_messages(messages, level=self.level, count=self.count, prior=prior)

    def pieces(
        self, pieces: Sequence[Sequence[Mapping[str, Any]]], prior: RepeatState | None = None
    ) -> list[CompressedMessages]:
        """Each piece compressed from the state the one before it left (the first from
        `prior`): together exactly what compressing them in one call gives, with the
        state after each piece (what a cache entry or the conversation memory keeps).
        Stops after a piece whose state cannot be resumed from (`resumes`): fewer
        results than pieces say that what follows must be compressed from the start."""
        out: list[CompressedMessages] = []
        state = prior
        for piece in pieces:
            done = self(piece, state)
            out.append(done)
            state = done.state
            if not self.resumes(state):
                break
        return out

    def resumes(self, state: RepeatState | None) -> bool:
        """Whether what follows can be compressed from `state` (a state past its bound
        cannot: see `RepeatState`). Off carries no state, and always resumes."""
        return self.level == OFF or (state is not None and state.known)

    def restore(self, state: str | None, report: Mapping[str, Any]) -> tuple[RepeatState | None, Report | None]:
        """A piece's result as it was kept (`RepeatState.to_json`, `Report.to_dict`, as
        a cache entry holds them): the state, checked to be one this compressor resumes
        from, and the report. Raises `LocalProtocolError` (or `KeyError`, `TypeError`,
        `ValueError` for a malformed report) if either cannot be used. Off: neither."""
        if self.level == OFF:
            return None, None
        if state is None:
            raise LocalProtocolError("no repeat state to resume from")
        prior = RepeatState.from_json(state)
        # Whether the state belongs to this version and level is `compress_messages`'s
        # to say: it refuses a state made under another, or one past its bound.
        compress_messages([], level=self.level, prior=prior)
        return prior, Report.from_dict(report)
