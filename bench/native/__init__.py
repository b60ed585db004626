"""Chunk→paint latency of one stamped stream in five renderers (issue 16, items 1 and 2).

- `gtk_renderer.py`: the native baseline, a GTK 4 text view (run by Debian's Python);
- `renderers.py`: the native view's driver, and what all drivers share (`Reply`, the
  model's pacing, percentiles); `pages.py`: the page's drivers, in WebKitGTK (through
  the GTK host) and in Chromium (Playwright), and the plain-text peer page for both.
  Each runs one reply at a time and returns its per-chunk latencies;
- `bench/native.py` runs them all against one gateway (`make bench-native`);
  `tests/webkit/test_native_smoke.py` runs a few chunks of each engine.
"""
