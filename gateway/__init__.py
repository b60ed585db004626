"""The firsttoken gateway: serves the page and an OpenAI-compatible endpoint.

Pieces, each one idea, composed in `app.create_app`:

- `static`     the page and its runtime assets (Pyodide, PyScript, tokenizer data), locally
- `headers`    COOP/COEP/CSP and friends on every response (an ASGI middleware)
- `validation` reading and validating chat-completion requests (bounded body, typed errors)
- `errors`     OpenAI-style error objects
- `simulator`  the built-in deterministic model, with pacing and fault injection
- `upstream`   a proxy to a real OpenAI-compatible API
- `streams`    resumable streams: a firsttoken client's answer outlives its connection
- `limits`     rate limits on every /v1 request: GCRA buckets, a fair queue, dry runs
- `cache_refs` system messages sent once, then named by hash (memory or Redis)
- `shared`     the Redis connection gateway processes share (`--redis`)
- `redact`     secrets cut out of whatever an upstream sends back
- `guard`      who may ask from a browser: Host, Origin and Content-Type checks
- `boundary`   anything that escapes: one log line and a JSON 500
- `offload`    CPU work off the event loop (bounded threads, one worker process)
- `server`     uvicorn with header/body timeouts, a connection cap, streams per client
"""

from .app import GatewayConfig, create_app

__all__ = ["GatewayConfig", "create_app"]
