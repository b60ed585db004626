#!/usr/bin/python3
"""The native baseline: a GTK 4 text view painting a streamed answer as it arrives.

What the article's "native" chunk delay means: a platform text widget, no web engine.
Run by Debian's `/usr/bin/python3` (PyGObject lives there, not in the virtualenv), under
an X server (bench/native.py starts Xvfb):

    /usr/bin/python3 bench/native/gtk_renderer.py --url http://127.0.0.1:8000 [--markdown]

Driven by JSON lines on stdin, reporting JSON lines on stdout (as bridge/hosts/gtk/host.py):

    in:  {"cmd": "stream", "sim": "<x-firsttoken-sim>", "prompt": "..."}  one reply
         {"cmd": "close"}
    out: {"event": "started", "gtk": "4.8.3", "refresh_interval_ms": 16.7}  window on screen
         {"event": "reply", "samples_ms": [...], "chunks": N, "frames": N, "chars": N, ...}
         {"event": "error", "error": "..."}

The stream is the gateway's, over real HTTP (libsoup, on GTK's main loop, as a native
app reads it): `POST /v1/chat/completions` with `stream: true`, Server-Sent Events,
each chunk stamped by the gateway with its send time (`stamp=1`:
`x_firsttoken_sent_ms`, epoch ms from CPython's `time.time()`). Each chunk's text is
appended to a Gtk.TextView as soon as it is read (chunks read together, in one insert).

Latency of a chunk: from its stamp to the end of the frame that painted it. GTK draws
in frames driven by the window's GdkFrameClock (update → layout → paint); a buffer
change only queues a redraw, so the text reaches the screen in the next frame's paint
phase. The frame clock's `after-paint` signal ends that phase: every chunk appended
before the frame began is in it (the main loop runs one source at a time, so no chunk
lands mid-frame). The time taken there is `time.time()`, the same CLOCK_REALTIME on
the same machine as the gateway's stamp, so the two subtract directly; the page does
the same with `performance.timeOrigin + now()` (js/render/reply-metrics.js).

`--markdown`: the same text styled as markdown with TextTags (headings, emphasis, inline
code, fences, lists, tables), restyling only the open line and what a chunk touched:
what a native markdown view costs over plain text.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Any

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Soup", "3.0")
from gi.repository import Gio, GLib, Gtk, Pango, Soup  # noqa: E402

PROMPT = "Explain frame pacing with code and a table"
EMPHASIS = re.compile(r"\*\*[^*\n]+\*\*")
INLINE_CODE = re.compile(r"`[^`\n]+`")
READ_SIZE = 64 * 1024


class MarkdownTags:
    """Markdown styled in place with text tags: the markers stay in the text (as in an
    editor's highlighting), the open line is restyled after each chunk, closed lines
    never again. A fence's state carries from line to line."""

    def __init__(self, buffer: Gtk.TextBuffer) -> None:
        self.buffer = buffer
        self.tags = {
            "heading": buffer.create_tag("heading", weight=Pango.Weight.BOLD, scale=1.3),
            "strong": buffer.create_tag("strong", weight=Pango.Weight.BOLD),
            "code": buffer.create_tag("code", family="monospace", background="#f0f0f0"),
            "fence": buffer.create_tag("fence", family="monospace", background="#f0f0f0", left_margin=16),
            "item": buffer.create_tag("item", left_margin=16),
            "table": buffer.create_tag("table", family="monospace"),
        }
        self.open_line = 0  # character offset where the open (last) line starts
        self.in_fence = False

    def restyle(self) -> None:
        buffer = self.buffer
        start = buffer.get_iter_at_offset(self.open_line)
        text = buffer.get_text(start, buffer.get_end_iter(), False)
        buffer.remove_all_tags(start, buffer.get_end_iter())
        offset = self.open_line
        lines = text.split("\n")
        for i, line in enumerate(lines):
            self._style_line(offset, line)
            if i < len(lines) - 1:  # closed: its fence marker counts from now on
                if line.startswith("```"):
                    self.in_fence = not self.in_fence
                offset += len(line) + 1
        self.open_line = offset

    def _apply(self, name: str, start: int, end: int) -> None:
        buffer = self.buffer
        buffer.apply_tag(self.tags[name], buffer.get_iter_at_offset(start), buffer.get_iter_at_offset(end))

    def _style_line(self, offset: int, line: str) -> None:
        end = offset + len(line)
        if self.in_fence or line.startswith("```"):
            self._apply("fence", offset, end)
            return
        if line.startswith("#"):
            self._apply("heading", offset, end)
        elif line.startswith("|"):
            self._apply("table", offset, end)
        elif line.startswith(("- ", "* ")):
            self._apply("item", offset, end)
        for match in EMPHASIS.finditer(line):
            self._apply("strong", offset + match.start(), offset + match.end())
        for match in INLINE_CODE.finditer(line):
            self._apply("code", offset + match.start(), offset + match.end())


class Reply:
    """One streamed answer: chunks waiting for a frame, and their latencies once painted."""

    def __init__(self) -> None:
        self.waiting: list[float] = []  # stamps of chunks in the buffer, not yet painted
        self.samples: list[float] = []
        self.frames = 0
        self.chunks = 0
        self.chars = 0
        self.unstamped = 0
        self.gaps: list[float] = []  # µs between consecutive frames (GdkFrameClock frame times)
        self.last_frame: tuple[int, int] | None = None
        self.ended = False
        self.started = time.time() * 1000.0


class Renderer:
    def __init__(self, url: str, markdown: bool, out: Any, size: tuple[int, int]) -> None:
        self.url = url.rstrip("/")
        self.out = out
        self.loop = GLib.MainLoop()
        self.session = Soup.Session()
        self.reply: Reply | None = None
        self.window = Gtk.Window(title="firsttoken native", default_width=size[0], default_height=size[1])
        self.view = Gtk.TextView(editable=False, cursor_visible=False, wrap_mode=Gtk.WrapMode.WORD_CHAR,
                                 left_margin=12, right_margin=12, top_margin=12, bottom_margin=12)
        self.buffer = self.view.get_buffer()
        self.markdown = MarkdownTags(self.buffer) if markdown else None
        # Follow the answer, as the page does: a mark at the end, kept on screen.
        self.end_mark = self.buffer.create_mark("end", self.buffer.get_end_iter(), False)
        scroller = Gtk.ScrolledWindow()
        scroller.set_child(self.view)
        self.window.set_child(scroller)
        self.window.connect("map", self._on_map)
        self.window.present()
        self.stdin = Gio.DataInputStream.new(Gio.UnixInputStream.new(sys.stdin.fileno(), False))
        self._read_command()

    # ---- out -----------------------------------------------------------------
    def emit(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    def _on_map(self, window: Gtk.Window) -> None:
        clock = window.get_frame_clock()
        clock.connect("after-paint", self._after_paint)
        self._clock = clock
        # The first painted frame tells the refresh interval GTK paces frames by.
        self._started_pending = True

    def _after_paint(self, clock: Any) -> None:
        painted = time.time() * 1000.0
        if getattr(self, "_started_pending", False):
            self._started_pending = False
            timings = clock.get_current_timings()
            interval = timings.get_refresh_interval() if timings is not None else 0
            version = f"{Gtk.get_major_version()}.{Gtk.get_minor_version()}.{Gtk.get_micro_version()}"
            self.emit({"event": "started", "gtk": version, "refresh_interval_ms": round(interval / 1000, 3)})
        reply = self.reply
        if reply is None:
            return
        # Frames that follow one another: their frame times show the pace GTK keeps.
        frame = (clock.get_frame_counter(), clock.get_frame_time())
        if reply.last_frame is not None and frame[0] == reply.last_frame[0] + 1:
            reply.gaps.append(frame[1] - reply.last_frame[1])
        reply.last_frame = frame
        if reply.waiting:
            reply.frames += 1
            reply.samples.extend(painted - stamp for stamp in reply.waiting)
            reply.waiting.clear()
        if reply.ended:
            self._finish()

    # ---- in ------------------------------------------------------------------
    def _read_command(self) -> None:
        self.stdin.read_line_async(GLib.PRIORITY_DEFAULT, None, self._on_line)

    def _on_line(self, stream: Gio.DataInputStream, result: Gio.AsyncResult) -> None:
        line, _length = stream.read_line_finish_utf8(result)
        if line is None:
            self.loop.quit()
            return
        try:
            cmd = json.loads(line)
            if cmd.get("cmd") == "stream":
                self.stream(cmd["sim"], cmd.get("prompt", PROMPT))
            elif cmd.get("cmd") == "close":
                self.loop.quit()
                return
            else:
                raise ValueError(f"unknown command {cmd.get('cmd')!r}")
        except Exception as exc:  # noqa: BLE001 - a bad command must not end the renderer
            self.emit({"event": "error", "error": f"{type(exc).__name__}: {exc}"})
        self._read_command()

    # ---- the stream ------------------------------------------------------------
    def stream(self, sim: str, prompt: str) -> None:
        if self.reply is not None:
            raise RuntimeError("a reply is already streaming")
        self.buffer.set_text("")
        if self.markdown is not None:
            self.markdown.open_line = 0
            self.markdown.in_fence = False
        self.reply = Reply()
        body = json.dumps({
            "model": "firsttoken-sim", "stream": True,
            "messages": [{"role": "user", "content": prompt}],
        }).encode()
        message = Soup.Message.new("POST", self.url + "/v1/chat/completions")
        message.set_request_body_from_bytes("application/json", GLib.Bytes.new(body))
        message.get_request_headers().append("x-firsttoken-sim", sim)
        message.get_request_headers().append("accept", "text/event-stream")
        self.session.send_async(message, GLib.PRIORITY_DEFAULT, None, self._on_response, message)

    def _on_response(self, session: Soup.Session, result: Gio.AsyncResult, message: Soup.Message) -> None:
        try:
            body = session.send_finish(result)
        except GLib.Error as exc:
            self._fail(f"request failed: {exc.message}")
            return
        if message.get_status() != 200:
            self._fail(f"HTTP {int(message.get_status())}")
            return
        self.body = body
        self.pending = b""
        body.read_bytes_async(READ_SIZE, GLib.PRIORITY_DEFAULT, None, self._on_bytes)

    def _on_bytes(self, stream: Gio.InputStream, result: Gio.AsyncResult) -> None:
        # Whatever has arrived is taken in one go, as the page takes what arrived between
        # two frames: a callback per line would run at the main loop's default priority,
        # above GTK's frames (GDK_PRIORITY_REDRAW), and at 500 chunks/s starve them.
        try:
            data = stream.read_bytes_finish(result).get_data() or b""
        except GLib.Error as exc:
            self._fail(f"stream broke: {exc.message}")
            return
        if not data:
            self._end()
            return
        *lines, self.pending = (self.pending + data).split(b"\n")
        texts: list[str] = []
        done = False
        for line in lines:
            # SSE (WHATWG HTML §9.2.6): only `data:` fields matter here; the gateway sends
            # one JSON object per event on one line, and `[DONE]` last.
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                done = True
                break
            text = self._chunk(json.loads(payload))
            if text:
                texts.append(text)
        if texts:
            self.buffer.insert(self.buffer.get_end_iter(), "".join(texts))
            if self.markdown is not None:
                self.markdown.restyle()
            self.view.scroll_mark_onscreen(self.end_mark)
        if done:
            self._end()
            return
        stream.read_bytes_async(READ_SIZE, GLib.PRIORITY_DEFAULT, None, self._on_bytes)

    def _chunk(self, event: dict[str, Any]) -> str | None:
        """A content chunk's text, its stamp noted as waiting for a frame."""
        reply = self.reply
        assert reply is not None
        choices = event.get("choices") or []
        text = (choices[0].get("delta") or {}).get("content") if choices else None
        if not text:
            return None
        reply.chunks += 1
        reply.chars += len(text)
        stamp = event.get("x_firsttoken_sent_ms")
        if isinstance(stamp, (int, float)):
            reply.waiting.append(float(stamp))
        else:
            reply.unstamped += 1
        return text

    def _end(self) -> None:
        reply = self.reply
        assert reply is not None
        reply.ended = True
        if not reply.waiting:
            self._finish()
        # else: the next after-paint reports it, once the last chunks are painted

    def _finish(self) -> None:
        reply = self.reply
        assert reply is not None
        self.reply = None
        self.emit({
            "event": "reply", "samples_ms": [round(s, 2) for s in reply.samples], "chunks": reply.chunks,
            "frames": reply.frames, "chars": reply.chars, "unstamped": reply.unstamped,
            "markdown": self.markdown is not None, "duration_ms": round(time.time() * 1000.0 - reply.started, 1),
            "text_chars": self.buffer.get_char_count(),
            "frame_interval_ms": round(sorted(reply.gaps)[len(reply.gaps) // 2] / 1000, 2) if reply.gaps else None,
        })

    def _fail(self, error: str) -> None:
        self.reply = None
        self.emit({"event": "error", "error": error})

    def run(self) -> None:
        self.loop.run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the gateway's base URL")
    parser.add_argument("--markdown", action="store_true", help="style the text as markdown (TextTags)")
    parser.add_argument("--size", default="1024x768")
    args = parser.parse_args()
    # Our lines get stdout to themselves; whatever GTK prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    width, height = (int(n) for n in args.size.split("x"))
    Renderer(args.url, args.markdown, out, (width, height)).run()


if __name__ == "__main__":
    main()
