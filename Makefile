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

.PHONY: run test fuzz lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '*-$(SUM)' -delete
	touch $@

$(TEST_STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,trace]'
	touch $@

run: $(RUN_STAMP)
	$(BIN)/python -m streamlit run app.py --server.address=127.0.0.1 --server.port=$(PORT)

test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy planner
	$(BIN)/python -m pytest

# The hypothesis tests again, with random seeds and FUZZ_FACTOR (default 10) times the examples (tests/ci.py).
fuzz: $(TEST_STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -m hypothesis tests

format: $(TEST_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(RUN_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV)
