"""Chunk→paint latency of one stamped stream in five renderers (issue 16, items 1 and 2).

- `gtk_renderer.py`: the native baseline, a GTK 4 text view (run by Debian's Python);
- `renderers.py`: one driver per renderer, each running one reply and returning its
  per-chunk latencies: the native view, the page in WebKitGTK (through the GTK host),
  the page in Chromium (Playwright), and the plain-text peer page in both browsers;
- `bench/native.py` runs them all against one gateway (`make bench-native`);
  `tests/webkit/test_native_smoke.py` runs a few chunks of each engine.
"""
