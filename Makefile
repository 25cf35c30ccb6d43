# Two commands for a new checkout: `make demo` and `make test`. Both bootstrap .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench lint typecheck pytest chaos clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

# The suite in two parts: everything but the chaos suite on two pytest-xdist workers (each with its own
# emulator and Prefect server), then the chaos suite alone (its runs measure the rate limits in real time).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy .
	$(BIN)/pytest -q -n 2 -m "not chaos"
	$(BIN)/pytest -q -m chaos

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy .

pytest: $(STAMP)
	$(BIN)/pytest -q -n 2 -m "not chaos"
	$(BIN)/pytest -q -m chaos

chaos: $(STAMP)
	VIDEOFERRY_CHAOS_SEEDS=$${VIDEOFERRY_CHAOS_SEEDS:-20} $(BIN)/pytest -q -m chaos

demo: $(STAMP)
	$(BIN)/videoferry demo

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
