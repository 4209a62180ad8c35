# `make test` and `make demo` set everything up from nothing, then run; both skip work already done.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
ECOSYSTEM_INSTALLED := $(VENV)/.installed-ecosystem
PIP_INSTALL = -m pip install --quiet --disable-pip-version-check

# test-compat: the oldest torch this machine has as a CPU wheel, in a venv of its own.
COMPAT_TORCH ?= 2.13.0+cpu
COMPAT_VENV := .venv-compat
COMPAT_PY := $(COMPAT_VENV)/bin/python
COMPAT_INSTALLED := $(COMPAT_VENV)/.installed-$(COMPAT_TORCH)
# The [test] extra less torchvision, whose wheels are built for one torch release each (the reference
# imports it only to download CIFAR-10), and less build/twine (the wheel test runs in `make test`).
COMPAT_DEPS := '.[notebook,fix]' numpy tqdm scikit-learn pytest 'pytest-xdist>=3.5' nbclient nbformat jsonschema
# The wheel test installs its own torch; the notebook and the reference's multi-process runs test the
# reference, not the tracer, and are the slowest files: they run in `make test` only, to keep CI short.
# So do the files whose subject torch does not touch: the CLI's arguments, exit codes and report files
# (what it records runs under both torches in tests/judge and tests/record), output paths checked before
# the script starts, which files are library code, and which modules an import loads. The realworld programs
# run in `make test` only as well: the tracer's torch-facing parts they exercise run under both torches in
# tests/judge, tests/record and the case corpus.
COMPAT_SKIP := --ignore=tests/packaging/test_wheel.py --ignore=tests/test_notebook.py \
	--ignore=tests/reference/test_l2c_distributed.py --ignore=tests/ecosystem \
	--ignore=tests/test_cli.py --ignore=tests/hostile/test_output_paths.py \
	--ignore=tests/record/test_installed_packages.py --ignore=tests/packaging/test_lean_imports.py \
	--ignore=tests/realworld

.PHONY: setup test test-compat test-ecosystem demo bench clean graphviz chromium

setup: $(INSTALLED) graphviz chromium

$(PY):
	$(PYTHON) -m venv $(VENV)

$(INSTALLED): $(PY) setup.cfg pyproject.toml requirements.txt
	$(PY) $(PIP_INSTALL) -r requirements.txt -e '.[test,bench]'
	touch $@

# The [ecosystem] extra (timm, transformers, Lightning, ...) goes into the dev venv beside its torch.
$(ECOSYSTEM_INSTALLED): $(INSTALLED) setup.cfg
	$(PY) $(PIP_INSTALL) -e '.[ecosystem]'
	touch $@

$(COMPAT_PY):
	$(PYTHON) -m venv $(COMPAT_VENV)

$(COMPAT_INSTALLED): $(COMPAT_PY) setup.cfg pyproject.toml Makefile
	rm -f $(COMPAT_VENV)/.installed-*
	$(COMPAT_PY) $(PIP_INSTALL) 'torch==$(COMPAT_TORCH)' -e $(COMPAT_DEPS)
	touch $@

graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq graphviz >/dev/null; \
	  else echo "Graphviz 'dot' is missing; install it with:  sudo apt-get install -y graphviz"; fi; }

# The HTML report's browser test (tests/present/html/test_html_browser.py) drives Debian's Chromium through
# chromedriver; it skips, saying why, where they are missing.
chromium:
	@command -v chromedriver >/dev/null 2>&1 && { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "Chromium is missing (the HTML report's browser test skips); install it with:  sudo apt-get install -y chromium chromium-driver"; fi; }

# The suite runs on every core (pytest-xdist), a test file to a worker: a file's module-scoped fixtures (the
# realworld programs' runs, the built wheel) are made once. TEST_WORKERS=0 runs it in this one process.
TEST_WORKERS ?= auto
SPREAD := -n $(TEST_WORKERS) --dist loadfile

# tests/ecosystem needs the [ecosystem] extra and runs in `make test-ecosystem` only.
test: setup
	GRADCHECK_L2C_OTHER_TORCH='$(COMPAT_TORCH)' $(PY) -m pytest -q $(SPREAD) --ignore=tests/ecosystem

# Correct programs on the libraries people train with, and their buggy twins (tests/ecosystem/README.md).
test-ecosystem: setup $(ECOSYSTEM_INSTALLED)
	$(PY) -m pytest -q -rx tests/ecosystem

test-compat: $(COMPAT_INSTALLED) graphviz
	$(COMPAT_PY) -m pytest -q -rs $(SPREAD) $(COMPAT_SKIP)
	@$(COMPAT_PY) -c 'import sys, torch; print(f"test-compat: passed with torch {torch.__version__}, Python {sys.version.split()[0]}")'

demo: setup
	$(VENV)/bin/gradcheck-l2c demo

bench: setup
	$(PY) benchmarks/l2c_quality.py
	$(PY) benchmarks/l2c_scale.py
	$(PY) benchmarks/trace_overhead.py
	$(PY) benchmarks/render_scale.py
	$(PY) benchmarks/fix_corpus.py

clean:
	rm -rf $(VENV) $(COMPAT_VENV) gradcheck-out .pytest_cache
