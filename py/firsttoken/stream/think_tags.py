"""Inline reasoning tags in answer text: `<think>…</think>` split from the answer as it streams.

Servers that run a reasoning model without a reasoning parser (Ollama, llama.cpp with
`--reasoning-format none`, vLLM and SGLang without `--reasoning-parser`, LM Studio,
many distills) put the model's thinking inline in `content`, between tags
(../shared/RESEARCH-REASONING.md §1a; Open WebUI's `DEFAULT_REASONING_TAGS` in
`backend/open_webui/utils/middleware.py` lists the tags met in practice, all in
`TAGS`). `ThinkTagSplitter` takes the content as it arrives, in pieces cut anywhere (a
tag may be cut mid-`<thi`), and gives back `(reasoning, text)` pieces. Sans-IO: text
in, pieces out; it holds back only what it cannot decide yet, and that is bounded.

The rules, and why:

* **Only at the start.** A tag opens reasoning only at the very start of the content,
  after whitespace: models that think inline do it first. A `<think>` later in an
  answer (a model explaining the tags, an HTML example) is answer text, shown as sent.
  Until the start is decided the splitter holds leading whitespace and anything that
  may still become a tag (at most `MAX_LEADING_SPACE` + the longest tag), so a plain
  answer is held for at most its first few characters.
* **Closing only.** DeepSeek-R1 and models whose template already put `<think>` in the
  prompt (R1 distills, QwQ, Qwen3 "-thinking" models) send no opening tag, only
  `</think>` after the reasoning (docs.sglang.io "separate_reasoning"; ItzCrazyKns/Vane
  PR#1034). Text before such a tag can only be called reasoning once the tag comes,
  and holding every answer back until then would cost every plain model its first
  token, which is what firsttoken exists to show at once. So: with `implicit` (the
  caller knows the model opens its reasoning this way: `tokens.models`), text from the
  start is reasoning, shown as it comes, up to the first closing tag; without it, only
  a closing tag at the very start (nothing shown yet: "`</think>`answer", as sent by a
  model asked not to think) is taken off, and any later one is answer text.
* **After the closing tag**, whitespace before the answer is dropped (models put a
  blank line there; it is not the answer).
* **Unclosed.** The stream ends inside the reasoning. The answer must never be lost
  (openclaw/openclaw PR#37703: an unclosed `<think>` dropped a whole reply): if the
  model says it finished (`finish(cut=False)`: a `stop`), the reasoning was its answer
  too, and it is given again as answer text; if it was cut (`cut=True`: `length`), it
  stays reasoning and the answer is empty, which the page shows as an answer cut
  while thinking, with "Continue with more room".
"""

from __future__ import annotations

__all__ = ["MAX_LEADING_SPACE", "TAGS", "ThinkTagSplitter"]

#: Opening and closing tags, as Open WebUI's `DEFAULT_REASONING_TAGS` has them (case
#: as sent: `<Thought>` is its own entry there).
TAGS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reason>", "</reason>"),
    ("<reasoning>", "</reasoning>"),
    ("<thought>", "</thought>"),
    ("<Thought>", "</Thought>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("◁think▷", "◁/think▷"),
)
_CLOSES = tuple(close for _, close in TAGS)
_ALL = tuple(tag for pair in TAGS for tag in pair)
_LONGEST = max(map(len, _ALL))
#: Whitespace held at the start while a tag may follow; past it, the start is answer.
MAX_LEADING_SPACE = 256

_START, _REASONING, _AFTER, _ANSWER = range(4)

Piece = tuple[bool, str]  # (is reasoning, text)


def _held_suffix(text: str, tags: tuple[str, ...]) -> int:
    """How many characters at the end of `text` may begin one of `tags`."""
    for k in range(min(len(text), _LONGEST - 1), 0, -1):
        tail = text[-k:]
        if any(tag.startswith(tail) for tag in tags):
            return k
    return 0


class ThinkTagSplitter:
    """One answer's content in, `(is_reasoning, text)` pieces out, whatever the cuts.

    >>> s = ThinkTagSplitter()
    >>> s.feed("<thi") + s.feed("nk>Hmm.</th") + s.feed("ink>\\n\\nYes.") + s.finish()
    [(True, 'Hmm.'), (False, 'Yes.')]

    A stream taken up after a cut (a reload: `chat.send.resume`) starts where the page
    was: `answering` once answer text was shown, `thinking` while only reasoning was
    (the tag that opened it went by before the cut):

    >>> s = ThinkTagSplitter(thinking=True)
    >>> s.feed("still thinking.</think>Yes.")
    [(True, 'still thinking.'), (False, 'Yes.')]
    """

    __slots__ = ("implicit", "_state", "_held", "_closes", "_reasoning", "closed")

    def __init__(self, *, implicit: bool = False, answering: bool = False, thinking: bool = False) -> None:
        #: Text from the start is reasoning until a closing tag (R1-style models).
        #: May be turned off until the start is decided (reasoning came in a field).
        self.implicit = implicit
        self._state = _ANSWER if answering else _REASONING if thinking else _START
        self._held = ""
        #: Resumed inside reasoning (`thinking`), the opening tag went by before the
        #: cut, so any closing tag closes it.
        self._closes: tuple[str, ...] = _CLOSES
        #: The reasoning so far, given again as the answer if it never closes and the
        #: model said it finished (bounded by the answer's own bound: each piece is
        #: counted there as it is assembled).
        self._reasoning: list[str] = []
        #: Whether a reasoning block opened and closed.
        self.closed = False

    @property
    def deciding(self) -> bool:
        """Whether the start is still undecided (something may be held)."""
        return self._state == _START

    def feed(self, text: str) -> list[Piece]:
        """More content; the pieces now decided."""
        out: list[Piece] = []
        if text:
            self._take(text, out)
        return out

    def _take(self, text: str, out: list[Piece]) -> None:
        state = self._state
        if state == _ANSWER:
            out.append((False, text))
        elif state == _AFTER:
            rest = text.lstrip()
            if rest:
                self._state = _ANSWER
                out.append((False, rest))
        elif state == _START:
            self._start(self._held + text, out)
        else:
            self._in_reasoning(self._held + text, out)

    def _start(self, buf: str, out: list[Piece]) -> None:
        self._held = ""
        stripped = buf.lstrip()
        space = len(buf) - len(stripped)
        if space <= MAX_LEADING_SPACE:
            if not stripped:
                self._held = buf
                return
            for opening, closing in TAGS:
                if stripped.startswith(opening):
                    self._state, self._closes = _REASONING, (closing,)
                    return self._in_reasoning(stripped[len(opening):], out)
            for closing in _CLOSES:
                if stripped.startswith(closing):
                    self._state = _AFTER
                    self.closed = True
                    return self._take(stripped[len(closing):], out)
            if any(tag.startswith(stripped) for tag in _ALL):
                self._held = buf
                return
        if self.implicit:
            self._state, self._closes = _REASONING, _CLOSES
            self._in_reasoning(stripped, out)
        else:
            self._state = _ANSWER
            out.append((False, buf))

    def _in_reasoning(self, buf: str, out: list[Piece]) -> None:
        self._held = ""
        found, at = "", -1
        for closing in self._closes:
            i = buf.find(closing)
            if i >= 0 and (at < 0 or i < at):
                found, at = closing, i
        if at >= 0:
            self._reason(buf[:at], out)
            self._state = _AFTER
            self.closed = True
            self._reasoning = []  # closed: never needed as the answer
            self._take(buf[at + len(found):], out)
            return
        keep = _held_suffix(buf, self._closes)
        self._held = buf[len(buf) - keep:] if keep else ""
        self._reason(buf[: len(buf) - keep], out)

    def _reason(self, text: str, out: list[Piece]) -> None:
        if text:
            self._reasoning.append(text)
            out.append((True, text))

    def finish(self, *, cut: bool = False) -> list[Piece]:
        """The content ended: what was held, decided. `cut`: the answer was cut short
        (`length`), so unclosed reasoning stays reasoning; else it is the answer too."""
        out: list[Piece] = []
        held, self._held = self._held, ""
        if self._state == _START:
            if held:
                out.append((False, held))  # whitespace, or a tag's beginning and no more
            self._state = _ANSWER
        elif self._state == _REASONING:
            self._reason(held, out)
            self._state = _ANSWER
            if not cut and self._reasoning:
                answer = "".join(self._reasoning).strip()
                if answer:
                    out.append((False, answer))
            self._reasoning = []
        return out
