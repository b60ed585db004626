# firsttoken: every target installs what it needs, idempotently (stamps make a re-run take seconds).
# `make run` serves the app on its built-in model; `make test` runs the whole suite.
SHELL := /bin/bash
PORT ?= 8000
HOST ?= 127.0.0.1
UPSTREAM ?=
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CHROMIUM ?= /usr/bin/chromium
HEADLESS_SHELL ?= /usr/bin/chromium-headless-shell
REDIS_SERVER ?= /usr/bin/redis-server
# Bytecode is written (`__pycache__/`, ignored by git; the page's package zip, the
# bundle and the tests' copies of the tree leave it out), even where the environment
# asks otherwise: every test worker, gateway subprocess and benchmark imports the same
# modules, and without the cache each compiled them again, and pytest rewrote the
# asserts of every test module in every worker on every run.
unexport PYTHONDONTWRITEBYTECODE
# py/ holds the browser-side package `firsttoken`, which the gateway uses too (exact
# prompt counts in the built-in model's usage).
export PYTHONPATH := $(CURDIR)/py:$(CURDIR)

.PHONY: run test test-fast lint deps protocol browser redis webkit fonts lock clean bundle screenshots inline bench-% report

# ---- set-up -----------------------------------------------------------------
$(VENV)/.stamp: requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@touch $@

# npm ci honours package-lock.json exactly; node_modules/.package-lock.json is its own stamp.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The page's copy of the message protocol, generated from its one definition,
# py/firsttoken/protocol.py (gateway/build/protocol_js.py). Committed, so the page is
# served as it is; tests/unit/test_protocol_js.py fails while it is stale.
js/link/protocol.js: py/firsttoken/protocol.py py/firsttoken/settings.py py/firsttoken/tokens/models.py py/firsttoken/stream/dialects.py gateway/build/protocol_js.py | $(VENV)/.stamp
	$(PY) -m gateway.build.protocol_js
protocol: js/link/protocol.js

# The install-time snapshot of the interpreter (gateway/build/bake.py): a first visit restores
# it instead of booting Python. Baked again when the package, the snapshot code or the
# npm packages change; the gateway serves it only while it matches the package.
SNAPSHOT_INPUTS := $(shell find py/firsttoken -name '*.py') js/boot/make-snapshot.js js/boot/bake-snapshot.js js/boot/snapshot.js js/link/protocol.js gateway/static.py gateway/stdlib.py
build/snapshot/firsttoken.snapshot.json: $(VENV)/.stamp node_modules/.package-lock.json $(SNAPSHOT_INPUTS)
	$(PY) -m gateway.build.bake

# Brotli and gzip variants of what a first visit downloads (gateway/build/encode.py), served
# by gateway/precompressed.py when a browser accepts them. Incremental: only files whose
# served bytes changed are compressed again (the snapshot takes ~1 min at brotli 11).
ENCODED_INPUTS := $(SNAPSHOT_INPUTS) index.html pyscript.toml py/boot.py $(shell find js bridge/page -type f) gateway/build/encode.py gateway/build/bundle.py gateway/precompressed.py
build/encoded/index.json: $(VENV)/.stamp node_modules/.package-lock.json build/snapshot/firsttoken.snapshot.json $(ENCODED_INPUTS)
	$(PY) -m gateway.build.encode

deps: $(VENV)/.stamp node_modules/.package-lock.json js/link/protocol.js build/snapshot/firsttoken.snapshot.json build/encoded/index.json

# Debian's Chromium: Playwright cannot download its own browser here (no CDN), so tests drive this one.
# Debian's Chromium: the full browser (benchmarks, and the tests of its own layer) and
# its headless shell, the same release, which the browser tests drive (harness/servers.py).
browser: fonts
	@test -x $(CHROMIUM) -a -x $(HEADLESS_SHELL) || { \
	  echo "installing Debian chromium and chromium-headless-shell"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-headless-shell) >/dev/null; }

# Debian's redis-server, for the tests and benchmarks of gateways sharing limits and cache
# references (`--redis`); they start their own instance on a free port, never a service.
redis:
	@test -x $(REDIS_SERVER) || { \
	  echo "installing Debian redis-server"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null; }

# WebKitGTK 6.0 (the engine of iOS's WKWebView) for the host bridge's tests
# (bridge/hosts/gtk/): Debian's PyGObject runs it with the system Python, under Xvfb.
WEBKIT_PACKAGES := gir1.2-webkit-6.0 gir1.2-gtk-4.0 python3-gi xvfb
webkit: fonts
	@/usr/bin/python3 -c "import gi; gi.require_version('WebKit', '6.0'); gi.require_version('Gtk', '4.0')" 2>/dev/null \
	  && command -v Xvfb >/dev/null || { \
	  echo "installing WebKitGTK 6.0 and Xvfb"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(WEBKIT_PACKAGES)) >/dev/null; }

# Debian's Noto CJK fonts (issue 44, item 6), for both engines (a prerequisite of each,
# so that make installs them once): without them Chinese and
# Japanese show as empty boxes in Chromium's and WebKitGTK's screenshots, and text is
# measured with a fallback font no phone uses. Checked by the file, not by apt, so a
# second run asks nothing.
CJK_FONT := /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
fonts:
	@test -f $(CJK_FONT) || { \
	  echo "installing Debian fonts-noto-cjk"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk) >/dev/null; }

# Re-pin the Python tree from requirements.in (needs the registry).
lock:
	rm -rf /tmp/firsttoken-lock && $(PYTHON) -m venv /tmp/firsttoken-lock
	/tmp/firsttoken-lock/bin/pip install --quiet -r requirements.in
	/tmp/firsttoken-lock/bin/pip freeze --exclude-editable > requirements.lock

# ---- the two commands ---------------------------------------------------------
run: deps
	$(PY) -m gateway --host $(HOST) --port $(PORT) $(if $(UPSTREAM),--upstream $(UPSTREAM)) $(if $(REPORT),--report)

# Test files run in parallel, each file whole in one worker (`--dist loadfile`: module
# fixtures such as a booted page or a gateway are made once). Three workers on this
# 2-core machine: the suite is bound by CPU (Chromium's renderers, Python boots), and
# with the files longest first the machine stays busy with three; a fourth only adds
# contention (2026-12-07, quiet machine, the same tree: 792 s with three against 830-962 s
# with four, bench/RESULTS.md).
# The files go out longest first (`--no-loadscope-reorder` keeps the order
# tests/conftest.py gives them), so that no long file is left to run alone at the end.
# The slowest tests are listed at the end of every run (CI's output too), so a test that
# grows slow is seen.
TEST_WORKERS ?= 3
test: deps browser redis webkit lint
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25

# The gate (issue 47), first in `make test-fast` and `make test`: cheap, and it fails on
# the first finding. Ruff for what is surely a bug (syntax, undefined and unused names,
# bugbear's likely bugs) over every Python file; mypy over the two packages and the test
# harness (harness/, what tests and benchmarks share), untyped
# functions checked too (both configured in pyproject.toml, pinned in requirements.lock);
# ESLint's recommended rules over every JavaScript file of the page and the benchmarks
# (eslint.config.mjs), and tsc over the JSDoc types of the modules that say `// @ts-check`
# (tsconfig.json; npm devDependencies, pinned in package-lock.json).
lint: $(VENV)/.stamp node_modules/.package-lock.json
	$(PY) -m ruff check py gateway harness bench tests
	$(PY) -m mypy
	node_modules/.bin/eslint js bridge/page sw.js bench tests/js
	node_modules/.bin/tsc -p tsconfig.json

# The inner loop: the pure Python core and the gateway, no browser (`-m "not e2e"`:
# tests/unit, tests/gateway), on three workers: the gateway's tests wait on sockets,
# subprocesses and Redis, and a third worker fills those waits on two cores. Quiet
# machine, 2026-12-04, with bytecode kept: 89.4 and 94.5 s on two workers, 81.3, 82.2
# and 84.3 s on three, 85.6 s on four.
test-fast: deps redis lint
	$(PY) -m pytest -m "not e2e" -n 3 --dist loadfile -q --durations=10

# The page as one folder for an app to ship (gateway/build/bundle.py, README "Embedding").
bundle: deps
	$(PY) -m gateway.build.bundle --out build/bundle

# index.html's inline copy of js/boot/first-send.js (its comments stripped: docs/boot.md,
# "Send with the HTML alone"), made again after that file changes; the gateway's tests
# fail on a stale copy and say to run this.
inline: node_modules/.package-lock.json
	node gateway/build/inline.mjs

# The README's screenshots: tests/e2e/test_shell.py saves each state it checks with
# axe-core to build/screenshots/ (tests/e2e/test_images_page.py, a photo sent;
# tests/e2e/test_i18n.py, a Chinese conversation); a phone's and a desktop's answer, the
# photo and the Chinese conversation on a phone, are kept in docs/.
screenshots: deps browser
	$(PY) -m pytest tests/e2e/test_shell.py -q -k "axe and (phone-light or desktop-dark)"
	mkdir -p docs/screenshots
	cp build/screenshots/answer-phone-light.png docs/screenshots/phone.png
	cp build/screenshots/answer-desktop-dark.png docs/screenshots/desktop.png
	$(PY) -m pytest tests/e2e/test_images_page.py -q -k "axe and phone-light"
	cp build/screenshots/photo-phone-light.png docs/screenshots/photo.png
	$(PY) -m pytest tests/e2e/test_i18n.py -q -k photographed
	cp build/screenshots/chinese-phone-light.png docs/screenshots/chinese.png

# `make bench-sse` runs bench/sse.py, and so on; each prints one JSON line last.
bench-%: deps browser redis
	$(PY) bench/$*.py

# The shaped link (bench/shaper.py) needs Python only: no browser, no Redis, no build.
bench-link: bench-%: $(VENV)/.stamp
	$(PY) bench/$*.py

# These drive WebKitGTK as well as Chromium.
bench-bridge bench-webkit_boot bench-boot_probe bench-native: bench-%: deps browser redis webkit
	$(PY) bench/$*.py

# build/report/index.html with its plots (bench/report.py): the scenario runner's results
# (build/bench/e2e.json; a short run if absent), native renderers' (build/bench/native.json,
# if `make bench-native` ran), and the page's boot and replies measured now in Chromium.
# A gateway started with --report serves it at /report/ (`make run REPORT=1`).
report: deps browser
	$(PY) bench/report.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache .hypothesis build
