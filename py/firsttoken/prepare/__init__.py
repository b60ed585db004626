"""firsttoken.prepare: what a conversation becomes before it leaves — compressed,
counted, fitted.

`prepare` is the one pipeline. `Core` runs it for `chat.send` (what is sent) and for
`tokens.count` (the composer's live count, which is therefore the count of what a send
would report as `prompt_tokens`). It takes the conversation as the user wrote it and
returns the messages to send, the `chat.prepared` fields it decides, the cache entries
of the leading system messages (for gateway references) and the count as written.

Its walk visits each module once (ARCHITECTURE.md lists the stops). The preparer
(`preparer`) decides first, once, what everything after depends on: the API dialect,
the encoding, the budget (`preparer.Decided`, carried on `Prepared` with the estimate
of a prompt that could not be counted, for the request to read). The conversation
memory wraps the rest: looked up before it (`ConversationMemory.recall`), and given
what to keep after it (`ConversationMemory.store`); the pipeline itself (`pipeline`)
never consults it:

0. **Replay** (`firsttoken.replay`): each message's `replay` comes off; the parts that
   go back (same API and model) ride on their message from here on, so that they are
   counted and fitted with it, and never compressed.
1. **Compress** (`firsttoken.compress.Compressor`; level "off" is the compressor that
   returns its input) in pieces: the leading plain system/developer
   messages one at a time (`lead`), then the rest, each piece with `prior=` the
   repeats state the pieces before it left. Every decision about repeats is
   `compress`'s: this package only carries its `RepeatState` from piece to piece.
2. **Count** each distinct text once (`counts.TextCounts`): compression's report counts
   each text before and after, fitting counts what is kept, the live count wants the
   text as written. All of them ask one memo, the one place where counting happens.
3. **Fit** (`tokens.fit_messages`) into the budget: system messages and the newest turn
   are kept, older turns dropped or cut. Counts are of the prompt in the dialect it is
   sent in (decided by the preparer: `firsttoken.stream.dialects.api_for`): exact only
   where that is verified.

Two speed-ups serve step 1, and neither is a second path: the **cache**
(`firsttoken.cache`, across sessions) holds each leading system message's result
(compressed text, exact count, report, repeats state after it); the **memory**
(`memory.ConversationMemory`, this session, recalled before the pipeline and stored
after it) holds the rest of the conversations prepared last, by message prefix, and
the counts, for the live count while typing. Either gives
byte-identical results to preparing from scratch, for these reasons:

* Compression's repeats pass is a fold over messages with an explicit state:
  compressing messages[:k], then messages[k:] with `prior=` the state after k, gives
  exactly what compressing all of them gives (`compress` guarantees and tests this).
  Compressing in pieces is therefore the same as compressing the whole, and a kept
  piece replays it: it holds the text, report and state that compressing it gave, and
  it is found only under a key naming everything those depend on (the messages up to
  it, chained; the tokenizer; compressor version and level).
* Counts are exact counts of the same texts. A kept count goes into the memo, where
  fitting finds it as it would have found its own.
* The cache verifies entries before use (digests, key, types), and `compress` is asked
  whether a stored state is one it can resume from; an entry that fails is a miss, so
  a corrupt store can cost time but never change what is sent.

A repeats state that grew past its bound (`RepeatState.known` false) cannot be resumed
from; the conversation is then compressed whole, from its first message, and nothing
is kept.

tests/unit/test_prepare.py compares the pipeline (without either speed-up, cold, warm,
and through a conversation growing turn by turn and keystroke by keystroke) with
compressing and fitting the whole conversation directly, on the compression corpus and
on generated conversations, and checks that no text is counted twice.
"""

from __future__ import annotations

from .counts import TextCounts
from .lead import compression_id, leading_system_count
from .memory import ConversationMemory
from .pipeline import Prepared
from .preparer import prepare

__all__ = ["ConversationMemory", "Prepared", "TextCounts", "prepare", "leading_system_count", "compression_id"]
