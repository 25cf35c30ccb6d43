# Two commands for a new checkout: `make demo` and `make test`. Both bootstrap .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench bench-alone bench-scale lint typecheck pytest chaos clean

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

# The benchmarks (bench/README.md). bench: all but the timing-sensitive ones, with the sleepy ones in the
# background (under 10 minutes); bench-alone: the timing-sensitive ones in turn, nothing beside them;
# bench-scale: CPU per item at 1k and 20k items (VIDEOFERRY_BENCH_CPU_100K=1 adds 100k). BENCH_ARGS is passed
# on, e.g. BENCH_ARGS="--results bench/RESULTS.md" to write their sections of RESULTS.md.
bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

bench-alone: $(STAMP)
	$(BIN)/python -m bench --alone $(BENCH_ARGS)

bench-scale: $(STAMP)
	$(BIN)/python -m bench cpu_per_item $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
