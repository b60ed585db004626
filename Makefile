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
export PYTHONDONTWRITEBYTECODE := 1
# py/ holds the browser-side package `firsttoken`, which the gateway uses too (exact
# prompt counts in the built-in model's usage).
export PYTHONPATH := $(CURDIR)/py:$(CURDIR)

.PHONY: run test deps browser lock clean bench-%

# ---- set-up -----------------------------------------------------------------
$(VENV)/.stamp: requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@touch $@

# npm ci honours package-lock.json exactly; node_modules/.package-lock.json is its own stamp.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The install-time snapshot of the interpreter (gateway/bake.py): a first visit restores
# it instead of booting Python. Baked again when the package, the snapshot code or the
# npm packages change; the gateway serves it only while it matches the package.
SNAPSHOT_INPUTS := $(shell find py/firsttoken -name '*.py') js/boot/make-snapshot.js js/boot/bake-snapshot.js js/boot/snapshot.js gateway/static.py
build/snapshot/firsttoken.snapshot.json: $(VENV)/.stamp node_modules/.package-lock.json $(SNAPSHOT_INPUTS)
	$(PY) -m gateway.bake

deps: $(VENV)/.stamp node_modules/.package-lock.json build/snapshot/firsttoken.snapshot.json

# Debian's Chromium: Playwright cannot download its own browser here (no CDN), so tests drive this one.
browser:
	@test -x $(CHROMIUM) || { \
	  echo "installing Debian chromium"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; }

# Re-pin the Python tree from requirements.in (needs the registry).
lock:
	rm -rf /tmp/firsttoken-lock && $(PYTHON) -m venv /tmp/firsttoken-lock
	/tmp/firsttoken-lock/bin/pip install --quiet -r requirements.in
	/tmp/firsttoken-lock/bin/pip freeze --exclude-editable > requirements.lock

# ---- the two commands ---------------------------------------------------------
run: deps
	$(PY) -m gateway --host $(HOST) --port $(PORT) $(if $(UPSTREAM),--upstream $(UPSTREAM))

test: deps browser
	$(PY) -m pytest

# `make bench-sse` runs bench/sse.py, and so on; each prints one JSON line last.
bench-%: deps browser
	$(PY) bench/$*.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache .hypothesis build
