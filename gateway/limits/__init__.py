"""Rate limits of the gateway (its flow control), per client and for the whole gateway.

Each decision lives in one module:

- `gcra`: the bucket arithmetic (GCRA), pure, over several buckets at once;
- `fairqueue`: who waits and who goes next (FIFO per key, round-robin across keys), pure;
- `buckets`: where bucket state lives, this process's memory or Redis (one Lua script);
- `limiter`: buckets + queue as an async service (the queue's adapter);
- `usage`: what an answer really cost, read as it passes, pure;
- `answers`: OpenAI's rate-limit headers and 429s;
- `dryrun`: `?dry_run=true`, the count and the outlook without spending;
- `concurrency`: answers in flight per client (`StreamsPerClient`), apart from rates;
- `middleware`: the ASGI piece composed in `gateway/app.py`.
"""

from .buckets import MemoryBuckets, RedisBuckets
from .concurrency import StreamsPerClient
from .middleware import Flow, FlowControl, FlowLimits

__all__ = ["Flow", "FlowControl", "FlowLimits", "MemoryBuckets", "RedisBuckets", "StreamsPerClient"]
