# Both targets build .venv on first use, so a fresh clone needs only Python 3.11 and pip.
# `make run` installs the runtime dependencies only; `make test` adds the test tools (pytest, ruff, mypy,
# hypothesis, Playwright) and the trace extra (torch CPU build, transformers, peft), so CI runs the trace
# tests. Each has its own stamp, named after pyproject.toml's checksum, so `make run` after `make test`
# installs nothing and `make test` after `make run` only adds the test extras.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cksum < pyproject.toml | cut -d' ' -f1)
RUN_STAMP := $(VENV)/.installed-run-$(SUM)
TEST_STAMP := $(VENV)/.installed-test-$(SUM)
PORT ?= 8501
# The installer of the runtime dependencies: uv (pip puts it into .venv first), which resolves and installs them
# in parallel: a fresh clone's `make run` answered in 22.3 s with uv against 87.4 s with pip, one after the other
# on the same machine (load average 6-7 on 2 cores; both installers' caches warm). `UV=0 make run` uses pip.
# The test extras stay with pip, so the trace extra's torch comes from pip's own configuration (the CPU build
# on the project's machines), as before.
UV ?= 1
ifeq ($(UV),0)
RUN_INSTALL := $(BIN)/python -m pip install --quiet -e .
INSTALLER :=
else
# uv when pip could install it; pip otherwise (an index without uv, an offline mirror), so `make run` never fails
# for want of the faster installer.
RUN_INSTALL := if [ -x $(BIN)/uv ]; then $(BIN)/uv pip install --quiet --python $(BIN)/python -e .; \
	else echo "uv is not available: pip installs instead"; $(BIN)/python -m pip install --quiet -e .; fi
INSTALLER := $(BIN)/uv
endif

# `make test-exports`: the frameworks' own code loads every export of a fixed set of plans (framework_checks/).
# The frameworks live in their own environment, .venv-exports, pinned package by package in
# framework_checks/requirements.txt and installed without dependency resolution; the planner writes the files
# from .venv, the frameworks read them from .venv-exports, so neither environment constrains the other.
EXPORTS_VENV := .venv-exports
# Megatron-LM (a Python 3.12 wheel) and torchtitan's previous release go to folders of their own inside it, each put
# on the path of one subprocess of its check only.
EXPORTS_REQS := framework_checks/requirements.txt
EXPORTS_MEGATRON_LM := framework_checks/requirements-megatron-lm.txt
EXPORTS_TORCHTITAN_02 := framework_checks/requirements-torchtitan-0.2.txt
EXPORTS_ALL_REQS := $(EXPORTS_REQS) $(EXPORTS_MEGATRON_LM) $(EXPORTS_TORCHTITAN_02)
EXPORTS_STAMP := $(EXPORTS_VENV)/.installed-$(shell cat $(EXPORTS_ALL_REQS) | cksum | cut -d' ' -f1)
EXPORTS_DIR ?= build/exports

.PHONY: run test test-exports fuzz lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(if $(INSTALLER),,$(BIN)/python -m pip install --quiet --upgrade pip)

$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv || echo "uv could not be installed: pip installs instead"

$(RUN_STAMP): pyproject.toml | $(BIN)/python $(INSTALLER)
	$(RUN_INSTALL)
	find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '*-$(SUM)' -delete
	touch $@

# pip is upgraded here rather than with the venv: `make run` with uv never uses it, and the upgrade was 6 s of
# a fresh clone's first answer.
$(TEST_STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,trace]'
	touch $@

run: $(RUN_STAMP)
	$(BIN)/python -m ui.serve app.py --server.address=127.0.0.1 --server.port=$(PORT)

test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy planner
	$(BIN)/python -m pytest

$(EXPORTS_STAMP): $(EXPORTS_ALL_REQS)
	rm -rf $(EXPORTS_VENV)
	$(PYTHON) -m venv $(EXPORTS_VENV) || python3 -m venv $(EXPORTS_VENV)
	$(EXPORTS_VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch first: the CPU build on the machines' disk (a plain `torch` would download the CUDA one), and
	# DeepSpeed's source build imports it.
	$(EXPORTS_VENV)/bin/python -m pip install --quiet torch==2.13.0 setuptools wheel packaging ninja py-cpuinfo
	$(EXPORTS_VENV)/bin/python -m pip install --quiet --no-deps --no-build-isolation -r $(EXPORTS_REQS)
	$(EXPORTS_VENV)/bin/python -m pip install --quiet --no-deps --target $(EXPORTS_VENV)/megatron-lm \
		--python-version 3.12 --only-binary=:all: -r $(EXPORTS_MEGATRON_LM)
	$(EXPORTS_VENV)/bin/python -m pip install --quiet --no-deps --target $(EXPORTS_VENV)/torchtitan-0.2 \
		-r $(EXPORTS_TORCHTITAN_02)
	touch $@

test-exports: $(RUN_STAMP) $(EXPORTS_STAMP)
	rm -rf $(EXPORTS_DIR)
	$(BIN)/python -m framework_checks.plans $(EXPORTS_DIR)
	DS_ACCELERATOR=cpu EXPORTS_DIR=$(EXPORTS_DIR) $(EXPORTS_VENV)/bin/python -m pytest framework_checks \
		-p no:cacheprovider --tb=short -W ignore::DeprecationWarning -W ignore::FutureWarning

# The hypothesis tests again, with random seeds and FUZZ_FACTOR (default 10) times the examples (tests/ci.py).
fuzz: $(TEST_STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -m hypothesis tests

format: $(TEST_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(RUN_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(EXPORTS_VENV) $(EXPORTS_DIR)
