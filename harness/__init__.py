"""What tests (tests/) and benchmarks (bench/) share to drive the real thing: servers,
browsers and the GTK host. A benchmark imports from here, never from a test module, and
tests/**/conftest.py holds only the pytest fixtures over it.

- `servers`: gateway processes awaited on their readiness line, an ASGI app served in a
  thread, Debian's redis-server, a copy of the tree; how Chromium is started here; the
  built-in model's stalls that a test holds and releases (`hold_at`, `release`);
- `chromium`: Playwright's Chromium: device profiles, warm contexts, a watched page,
  what a user and a test do with the page;
- `stored`: what the page keeps in IndexedDB, read back;
- `protocol_spy`: the page's protocol handed to a test or a benchmark;
- `gtk`: Xvfb and the one driver of a GTK program over JSON lines (the WebKitGTK host,
  bench/native's GTK view);
- `webkit`: the page in WebKitGTK through that host: boot, waits, what it keeps; a first
  visit's gateway that holds requests until the test lets them go (`HoldingGateway`);
- `node`: the page's JavaScript tests under `node --test`, with what Python computed for a
  cross-check handed over as a JSON fixture;
- `socket_transport`: the core's transport over real sockets;
- `bench_page`: the gateway plus bench-only files, for in-page benchmarks.
"""
