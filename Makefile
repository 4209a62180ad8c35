# `make test` and `make demo` set everything up from nothing, then run; both skip work already done.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: setup test demo bench clean

setup: $(INSTALLED) graphviz

$(PY):
	$(PYTHON) -m venv $(VENV)

$(INSTALLED): $(PY) setup.cfg pyproject.toml requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -e '.[test]'
	touch $@

graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq graphviz >/dev/null; \
	  else echo "Graphviz 'dot' is missing; install it with:  sudo apt-get install -y graphviz"; fi; }

test: setup
	$(PY) -m pytest -q

demo: setup
	$(VENV)/bin/gradcheck-l2c demo

bench: setup
	$(PY) benchmarks/l2c_quality.py
	$(PY) benchmarks/l2c_scale.py
	$(PY) benchmarks/trace_overhead.py
	$(PY) benchmarks/render_scale.py

clean:
	rm -rf $(VENV) gradcheck-out .pytest_cache
