"""Resumable streams on the client side, with canned responses and a fake clock: the
assembler takes each numbered event once, and the core takes a lost stream up again
from its last event instead of sending the prompt again (bridge/PROTOCOL.md,
"Resumable streams"). The same against a real gateway: tests/gateway/test_streams.py
and the browser tests."""

from __future__ import annotations

import asyncio
import json

from firsttoken.core import Core
from firsttoken.errors import Offline, TransportError
from firsttoken.protocol import InvalidMessage, parse_request
from firsttoken.ratelimit import Governor
from firsttoken.stream.client import AbortSignal, HTTPRequest
from firsttoken.stream.completions import ChatStream, ContentDelta
from firsttoken.stream.resume import events_url, stream_id_of
from tests.unit.fakes import SSE, Broken, Canned, FakeTime, Script

import pytest

BASE = "http://api.test/v1"
STREAM = {**SSE, "x-firsttoken-stream": "fts_abc"}


def event(n: int, text: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(chunk).encode() + b"\nid: %d\n\n" % n


def end(n: int) -> bytes:
    stop = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return b"data: " + json.dumps(stop).encode() + b"\nid: %d\n\ndata: [DONE]\nid: %d\n\n" % (n, n + 1)


WORDS = ["One", " two", " three", " four", " five"]
WHOLE = b"".join(event(i + 1, w) for i, w in enumerate(WORDS)) + end(len(WORDS) + 1)


def send(i: str = "a", **extra) -> dict:
    return {"type": "chat.send", "id": i, "messages": [{"role": "user", "content": "hello"}],
            "settings": {"base_url": BASE, "model": "gpt-4o"}, **extra}


def run(transport, time_: FakeTime, *messages, between=None) -> list[dict]:
    events: list[dict] = []

    async def sleep(seconds: float) -> None:
        await time_.sleep(seconds)
        await asyncio.sleep(0)  # as a real sleep does: other messages get handled

    core = Core(post=lambda t: events.append(json.loads(t)), transport=transport, clock=time_.clock,
                sleep=sleep, governor=lambda: Governor(rng=__import__("random").Random(1)))

    async def main():
        for m in messages:
            await core.handle(json.dumps(m))

    if between is not None:
        time_.on_sleep = lambda: between(core)
    asyncio.run(main())
    return [e for e in events if e["type"] != "chat.prepared"]


def text_of(events: list[dict]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "chat.delta")


# ---- the assembler ---------------------------------------------------------------------


def test_a_numbered_event_is_taken_once_across_a_reconnect() -> None:
    stream = ChatStream()
    stream.sequenced = True
    first = stream.feed(event(1, "One") + event(2, " two"))
    assert [u.text for u in first if isinstance(u, ContentDelta)] == ["One", " two"]
    stream.reconnect()
    # A replay from an older point (a resume with a stale `after`) doubles nothing.
    again = stream.feed(event(1, "One") + event(2, " two") + event(3, " three") + end(4))
    assert [u.text for u in again if isinstance(u, ContentDelta)] == [" three"]
    assert stream.last_event == 5 and stream.close().content == "One two three"


def test_a_reconnect_drops_the_half_event_the_lost_connection_left() -> None:
    stream = ChatStream()
    stream.sequenced = True
    stream.feed(event(1, "One") + event(2, " two")[:20])  # cut mid-event
    stream.reconnect()
    stream.feed(event(2, " two") + end(3))
    assert stream.close().content == "One two"


def test_a_plain_server_s_ids_mean_nothing() -> None:
    # Per the SSE spec an event without `id:` repeats the last one: a server that set
    # an id once must not have its later events skipped.
    stream = ChatStream()
    body = event(7, "a") + b'data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\n' + end(7)
    stream.feed(body)
    assert stream.close().content == "ab"


def test_a_resumed_assembly_starts_from_the_text_shown() -> None:
    stream = ChatStream(prefix="One two", after=2)
    stream.feed(event(2, " two") + event(3, " three") + end(4))
    assert stream.partial == "One two three"


def test_a_stream_resumed_inside_inline_reasoning_goes_on_as_reasoning() -> None:
    # The page showed "<think>Hmm," as reasoning only, then reloaded: the rest of the
    # thinking must not land in the answer (nor its closing tag).
    stream = ChatStream(prefix="", after=2, thinking=True)
    updates = stream.feed(event(3, " let me see.</thi") + event(4, "nk>\n\nYes.") + end(5)) + stream.finish()
    shown = [(type(u).__name__, u.text) for u in updates if hasattr(u, "text") and u.text]
    assert shown == [("ReasoningDelta", " let me see."), ("ContentDelta", "Yes.")]
    assert stream.close().content == "Yes."


def test_a_stream_resumed_mid_reasoning_in_a_field_keeps_its_content_as_answer() -> None:
    # Same page state, but the server parses reasoning into a field: content is answer.
    chunks = [{"choices": [{"index": 0, "delta": {"reasoning_content": " more"}}]},
              {"choices": [{"index": 0, "delta": {"content": "Yes."}, "finish_reason": "stop"}]}]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\nid: %d\n\n" % (i + 3) for i, c in enumerate(chunks))
    stream = ChatStream(after=2, thinking=True)
    stream.feed(body + b"data: [DONE]\nid: 5\n\n")
    stream.finish()
    completion = stream.close()
    assert (completion.reasoning, completion.content) == (" more", "Yes.")


def test_a_resume_says_whether_the_page_was_inside_reasoning() -> None:
    request = parse_request(send(resume={"stream": "s", "after": 2, "text": "", "thinking": True}))
    assert request.resume is not None and request.resume.thinking is True
    assert parse_request(send(resume={"stream": "s", "after": 2, "text": "Hi"})).resume.thinking is False


@pytest.mark.parametrize("value", ["fts_abc", "  fts_abc "])
def test_the_stream_header_is_read_in_any_case(value: str) -> None:
    assert stream_id_of({"X-Firsttoken-Stream": value}) == "fts_abc"


@pytest.mark.parametrize("value", ["", "a b", "x" * 129, "é"])
def test_a_strange_stream_header_is_not_taken(value: str) -> None:
    assert stream_id_of({"x-firsttoken-stream": value}) is None


@pytest.mark.parametrize("resume, says", [
    ({"after": 1, "text": ""}, "resume.stream"),
    ({"stream": "s", "after": -1, "text": ""}, "resume.after"),
    ({"stream": "s", "after": "1", "text": ""}, "resume.after"),
    ({"stream": "s", "after": 1, "text": 5}, "resume.text"),
    ({"stream": "s", "after": 1, "text": "", "thinking": "yes"}, "resume.thinking"),
    ("s", "'resume' must be an object"),
])
def test_a_bad_resume_says_what_is_wrong(resume, says: str) -> None:
    with pytest.raises(InvalidMessage, match=says):
        parse_request(send(resume=resume))


# ---- the core ----------------------------------------------------------------------------


def test_a_connection_lost_mid_answer_is_resumed_not_sent_again() -> None:
    t = FakeTime()
    cut = event(1, "One") + event(2, " two")
    rest = event(3, " three") + event(4, " four") + event(5, " five") + end(6)
    transport = Script(Broken(STREAM, cut, TransportError("reset")), Canned(200, STREAM, rest))
    events = run(transport, t, send())
    kinds = [e["type"] for e in events]
    assert kinds[0] == "chat.stream" and events[0]["stream"] == "fts_abc"
    assert "chat.reconnecting" in kinds and kinds[-1] == "chat.done"
    reconnecting = next(e for e in events if e["type"] == "chat.reconnecting")
    assert reconnecting["after"] == 2 and reconnecting["wait_s"] == 0 and reconnecting["reason"] == "network"
    assert text_of(events) == "One two three four five"
    assert [r.method for r in transport.sent] == ["POST", "GET"]
    assert transport.sent[1].url == events_url(BASE, "fts_abc", 2)
    deltas = [e for e in events if e["type"] == "chat.delta"]
    assert deltas[0]["event"] == 2 and deltas[-1]["event"] == 7  # its chunk ran to [DONE]


def test_a_resume_replaying_from_an_older_event_doubles_nothing() -> None:
    t = FakeTime()
    transport = Script(Broken(STREAM, event(1, "One") + event(2, " two"), TransportError("reset")),
                       Canned(200, STREAM, WHOLE))
    events = run(transport, t, send())
    assert text_of(events) == "One two three four five"


def test_a_stream_the_gateway_no_longer_has_ends_as_gone_with_the_whole_partial() -> None:
    t = FakeTime()
    gone = Canned(404, {"content-type": "application/json"},
                  b'{"error": {"message": "No such stream.", "code": "stream_not_found"}}')
    transport = Script(Broken(STREAM, event(1, "One"), TransportError("reset")), gone)
    events = run(transport, t, send())
    assert events[-1]["type"] == "chat.error"
    error = events[-1]["error"]
    assert error["code"] == "stream_gone" and error["status"] == 404 and error["partial"] == "One"
    assert [r.method for r in transport.sent] == ["POST", "GET"]


def test_an_unreachable_gateway_is_tried_with_a_backoff_then_given_up() -> None:
    t = FakeTime()
    from firsttoken.reconnect import RESUME_BACKOFF_S

    failures = [TransportError("refused")] * len(RESUME_BACKOFF_S)
    transport = Script(Broken(STREAM, event(1, "One"), TransportError("reset")), *failures)
    events = run(transport, t, send())
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "network"
    assert events[-1]["error"]["partial"] == "One"
    waits = [e["wait_s"] for e in events if e["type"] == "chat.reconnecting"]
    assert waits == list(RESUME_BACKOFF_S)
    assert sum(1 for r in transport.sent if r.method == "POST") == 1


class StandingTime(FakeTime):
    """Fake time that stands still through a wait as long as the offline retry's: only
    something else (the page's nudge) can end that wait. (A guard of 5 real seconds
    lets a wait nothing ends fail the test instead of hanging it.)"""

    async def sleep(self, seconds: float) -> None:
        from firsttoken.reconnect import OFFLINE_RETRY_S

        if seconds < OFFLINE_RETRY_S:
            return await super().sleep(seconds)
        if self.on_sleep:
            self.on_sleep()
        try:
            await asyncio.wait_for(asyncio.get_running_loop().create_future(), 5)
        except asyncio.TimeoutError:
            await super().sleep(seconds)


def test_offline_waits_for_the_page_s_reconnect() -> None:
    t = StandingTime()
    transport = Script(Broken(STREAM, event(1, "One"), Offline("offline")),
                       Canned(200, STREAM, WHOLE))
    nudged = []

    def between(core):
        # The first sleep of the wait: the page says the device is back online.
        if not nudged:
            nudged.append(True)
            asyncio.ensure_future(core.handle(json.dumps({"type": "chat.reconnect", "id": "a"})))

    events = run(transport, t, send(), between=between)
    reconnecting = next(e for e in events if e["type"] == "chat.reconnecting")
    assert reconnecting["reason"] == "offline" and reconnecting["wait_s"] == 30
    assert events[-1]["type"] == "chat.done"
    assert sum(t.slept) < 1, "the nudge ended the wait at once"
    assert text_of(events) == "One two three four five"


def test_stop_cancels_the_stream_on_the_gateway() -> None:
    t = FakeTime()
    cancelled: list[HTTPRequest] = []

    class Slow:
        """One event, then nothing until the fetch is aborted (as fetch does)."""

        status, headers = 200, STREAM

        def bind(self, abort: AbortSignal) -> None:
            self.aborted = asyncio.Event()
            abort.on_abort(self.aborted.set)

        async def chunks(self):
            yield event(1, "One")
            await self.aborted.wait()
            raise TransportError("aborted")

        async def read(self, limit):
            return b""

    def cancel(request):
        cancelled.append(request)
        return Canned(200, {"content-type": "application/json"}, b'{"status": "cancelled"}')

    async def no_time_passes(seconds: float) -> None:
        await asyncio.sleep(0)  # the stall watch must not time out before Stop

    transport = Script(Slow(), cancel)
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=no_time_passes)

    async def main():
        chat = asyncio.ensure_future(core.handle(json.dumps(send())))
        while not any(e["type"] == "chat.delta" for e in events):
            await asyncio.sleep(0)
        await core.handle(json.dumps({"type": "chat.abort", "id": "a"}))
        await chat
        while not cancelled:
            await asyncio.sleep(0)

    asyncio.run(asyncio.wait_for(main(), 10))
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "aborted"
    assert cancelled[0].method == "POST" and cancelled[0].url == f"{BASE}/streams/fts_abc/cancel"


def test_a_send_with_resume_takes_up_the_stream_without_preparing_or_posting() -> None:
    t = FakeTime()
    transport = Script(Canned(200, STREAM, event(3, " three") + event(4, " four") + event(5, " five") + end(6)))
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep)
    message = send(resume={"stream": "fts_abc", "after": 2, "text": "One two"})
    asyncio.run(core.handle(json.dumps(message)))
    kinds = [e["type"] for e in events]
    assert "chat.prepared" not in kinds and kinds[-1] == "chat.done"
    assert [r.method for r in transport.sent] == ["GET"]
    assert transport.sent[0].url == events_url(BASE, "fts_abc", 2)
    assert text_of(events) == " three four five"


def test_a_plain_server_s_dropped_connection_is_not_resumed() -> None:
    t = FakeTime()
    transport = Script(Broken(SSE, event(1, "One"), TransportError("reset")))
    events = run(transport, t, send())
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "network"
    assert "chat.reconnecting" not in [e["type"] for e in events]


def test_a_stream_that_failed_on_the_gateway_ends_truncated_without_a_minute_of_retries() -> None:
    # The gateway's stream itself ended without the answer's end (its source broke):
    # the resume replays what is left and ends cleanly; asking again would get the same.
    t = FakeTime()
    transport = Script(Broken(STREAM, event(1, "One"), TransportError("reset")),
                       Canned(200, STREAM, event(1, "One") + event(2, " two")))
    events = run(transport, t, send())
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "truncated"
    assert events[-1]["error"]["partial"] == "One two"
    assert [r.method for r in transport.sent] == ["POST", "GET"]
