"""Reading a gateway's SSE body in tests: its own framing (LF line ends, one `data:` line
an event, an optional `event:` name), so a plain split says what was sent."""

from __future__ import annotations


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) of each event of an SSE body the gateway wrote."""
    out = []
    for block in text.split("\n\n"):
        name = data = None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        if data is not None:
            out.append((name, data))
    return out
