"""The firsttoken gateway: serves the page, and an API endpoint in three dialects
(OpenAI's Chat Completions and Responses, Anthropic's Messages).

Pieces, each one idea, composed in `app.create_app` (the middleware from the outside in):

- `static`      the page and its runtime assets (Pyodide, PyScript, tokenizer data), locally;
                its table of URLs is what the offline manifest, bundle and build derive from
- `conditional` ETags and 304s (RFC 9110 §13) for every body the gateway builds
- `headers`     COOP/COEP/CSP and friends on every response (an ASGI middleware)
- `boundary`    anything that escapes: one log line and a JSON 500
- `keepalive`   `: keep-alive` comments on every event stream that falls silent
- `guard`       who may ask from a browser: Host, Origin and Content-Type checks
- `access`      the gateway's key, and who the client is, decided once per request
- `chat_body`   a request's body read, parsed and its references expanded, once per request
- `dialects`    each API dialect defined once: its request, refusals, wire format, usage;
                `dialects.reasoning`: the built-in model's thinking (effort, length, seals)
- `validation`  reading request bodies (bounded in bytes and depth, strict JSON), what every
                dialect's checks share
- `cache_refs`  system texts sent once, then named by hash (memory or Redis)
- `limits`      rate limits on every /v1 request: GCRA buckets, a fair queue, dry runs;
                answers in flight per client
- `counting`    how prompts are counted: the counter probed once, each prompt counted once
- `backends`    what answers: the built-in model (`simulator`) or an `upstream` API
- `simulator`   the built-in deterministic model, with pacing and fault injection
- `upstream`    a proxy to a real API (OpenAI's, or Anthropic's for `/v1/messages`)
- `redact`      secrets cut out of whatever an upstream sends back
- `streams`     resumable streams: a firsttoken client's answer (any dialect) outlives its connection
- `errors`      error objects, in OpenAI's shape or Anthropic's
- `shared`      the Redis connection gateway processes share (`--redis`)
- `offload`     CPU work off the event loop (bounded threads, one worker process)
- `server`      uvicorn with header/body timeouts and a connection cap
- `options`     command-line flags declared on the configuration fields they set
- `report`      `/report/`, the last benchmark report (`--report` only)
- `build`       what `make` runs: the snapshot (`bake`), compressed variants (`encode`),
                the page as one folder (`bundle`)
"""

from .app import GatewayConfig, create_app

__all__ = ["GatewayConfig", "create_app"]
