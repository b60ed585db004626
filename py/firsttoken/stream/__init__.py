"""The streaming path of one chat request: bytes in, events out.

* `firsttoken.stream.sse`: the WHATWG Server-Sent Events decoder (bytes → events).
* `firsttoken.stream.answer`: what every dialect's stream shares: the bounded framing,
  the numbered events of a resumable stream, the checks of wire fields;
  `firsttoken.stream.assembly`: the one assembler of an answer; `firsttoken.stream.types`
  holds the update and answer types.
* One module per API dialect, each an `AnswerStream` that says what its events mean as
  those same updates: `completions` (OpenAI Chat Completions chunks, and the servers
  that copy them), `responses` (the OpenAI Responses API), `messages` (Anthropic
  Messages).
* `firsttoken.stream.dialects`: which dialect a request speaks (the settings, else the
  model), the request each one sends, and the stream that reads its answer.
* `firsttoken.stream.client`: the request sent through a `Transport` (the page's fetch,
  a socket in tests, canned chunks in unit tests) and decoded through the above.
* `firsttoken.stream.resume`: the wire names of a firsttoken gateway's resumable streams.
"""
