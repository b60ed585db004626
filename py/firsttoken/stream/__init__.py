"""The streaming path of one chat request: bytes in, events out.

* `firsttoken.stream.sse`: the WHATWG Server-Sent Events decoder (bytes → events).
* `firsttoken.stream.completions`: OpenAI chat-completion chunks → typed updates, and
  the one assembler of an answer (`ChatStream`); `firsttoken.stream.types` holds the
  update and answer types.
* `firsttoken.stream.client`: the request built from a conversation and settings, sent
  through a `Transport` (the page's fetch, a socket in tests, canned chunks in unit
  tests) and decoded through the two above.
"""
