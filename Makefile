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

# The suite in two parts, each on two pytest-xdist workers (each with its own emulator and Prefect server):
# everything but the chaos suite, then the chaos suite (its seeds are long runs that mostly wait on the rate
# limits; each checks the service's own request log, and the limiter counts a call until its answer, so a
# loaded machine delays calls but never puts two inside the limits' windows: 7 min on 2 workers, 13 alone).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy .
	$(BIN)/pytest -q -n 2 -m "not chaos"
	$(BIN)/pytest -q -n 2 -m chaos

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy .

pytest: $(STAMP)
	$(BIN)/pytest -q -n 2 -m "not chaos"
	$(BIN)/pytest -q -n 2 -m chaos

chaos: $(STAMP)
	VIDEOFERRY_CHAOS_SEEDS=$${VIDEOFERRY_CHAOS_SEEDS:-20} $(BIN)/pytest -q -n 2 -m chaos

demo: $(STAMP)
	$(BIN)/videoferry demo

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
