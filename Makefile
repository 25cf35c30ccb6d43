# Two commands for a new checkout: `make demo` and `make test`. Both bootstrap .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test package-check demo docs docs-check bench bench-alone bench-scale lint typecheck pytest chaos clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

# The suite in two parts at once: everything but the chaos suite on four pytest-xdist workers, and beside it
# the chaos suite on two (each worker with its own emulator and Prefect server). Most of the suite waits (rate
# limits, processes starting, the service's processing), so the two cores run six workers: 9.8 min here for
# both parts once (1787 tests, 15 chaos seeds; the cores 65 % busy); 14.4 and 15.9 min on 2026-12-02, a slower
# day (1804 tests, 15 seeds; the cores 85-88 % busy over the whole make test: more workers would not help).
# --dist worksteal: an idle worker takes tests still queued on another; with xdist's default (load) each
# worker kept the queue it was dealt, and the last 5-9 minutes of a run went on one worker while three sat
# idle (18.7 min, the cores 37 % busy). The longest
# modules are collected first (tests/fixtures/order.py), so they are not left to the end. The chaos seeds are
# long runs that mostly wait on the rate limits; each checks the service's own request log, and the limiter
# counts a call until its answer, so a loaded machine delays calls but never puts two inside the limits'
# windows. The chaos suite's output goes to .pytest-logs/chaos.log: its last line is printed, the whole log
# when it failed.
PYTEST_BOTH = mkdir -p .pytest-logs; \
	$(BIN)/pytest -q -n 2 --dist worksteal -m chaos > .pytest-logs/chaos.log 2>&1 & chaos=$$!; \
	$(BIN)/pytest -q -n 4 --dist worksteal -m "not chaos and not long"; suite=$$?; \
	wait $$chaos; chaos_status=$$?; \
	if [ $$chaos_status -ne 0 ]; then cat .pytest-logs/chaos.log; fi; \
	echo "chaos suite (beside the rest): $$(tail -n 1 .pytest-logs/chaos.log)"; \
	[ $$suite -eq 0 ] && [ $$chaos_status -eq 0 ]

# mypy runs beside the suite too (about 50 s on one core from a fresh clone, its cache empty): its last line
# is printed at the end, the whole log when it failed.
test: $(STAMP)
	$(BIN)/ruff check .
	@$(MAKE) --no-print-directory docs-check
	@mkdir -p .pytest-logs; $(BIN)/mypy . > .pytest-logs/mypy.log 2>&1 & types=$$!; \
	$(BIN)/python .ci/wheel_check.py > .pytest-logs/package.log 2>&1 & package=$$!; \
	( $(PYTEST_BOTH) ); tests=$$?; \
	wait $$types; types_status=$$?; \
	if [ $$types_status -ne 0 ]; then cat .pytest-logs/mypy.log; fi; \
	echo "mypy (beside the suite): $$(tail -n 1 .pytest-logs/mypy.log)"; \
	wait $$package; package_status=$$?; \
	if [ $$package_status -ne 0 ]; then cat .pytest-logs/package.log; fi; \
	grep '^package-check:' .pytest-logs/package.log || true; \
	[ $$tests -eq 0 ] && [ $$types_status -eq 0 ] && [ $$package_status -eq 0 ]

# The package as a user installs it (.ci/wheel_check.py): the sdist and the wheel built, the wheel installed
# with its emulator extra into a clean venv (a few minutes: pip resolves and installs Prefect's tree, mostly
# waiting, so make test runs it beside the suite), then `videoferry --version`, `videoferry emulator` and a
# migration of three clips run from it, in an empty folder with nothing of the repository on the path.
package-check: $(STAMP)
	$(BIN)/python .ci/wheel_check.py

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy .

pytest: $(STAMP)
	@$(PYTEST_BOTH)

chaos: $(STAMP)
	VIDEOFERRY_CHAOS_SEEDS=$${VIDEOFERRY_CHAOS_SEEDS:-20} $(BIN)/pytest -q -n 2 -m "chaos or long"

demo: $(STAMP)
	$(BIN)/videoferry demo

# The documentation site (mkdocs.yml, docs/). docs-check (in make test, a few seconds): the command-line
# reference is what `python -m videoferry.flows.cli.reference` writes today, and the site builds with --strict (a broken
# link or anchor, a missing included file fails; not --quiet: mkdocs then counts no warnings and passes).
# docs: serve it at http://127.0.0.1:8000, reloading on edits.
DOCS_ENV = NO_MKDOCS_2_WARNING=1 PYTHONPATH=$(CURDIR)

docs-check: $(STAMP)
	$(DOCS_ENV) $(BIN)/python -m videoferry.flows.cli.reference --check
	$(DOCS_ENV) $(BIN)/mkdocs build --strict --site-dir $(CURDIR)/site

docs: $(STAMP)
	$(DOCS_ENV) $(BIN)/mkdocs serve

# The benchmarks (bench/README.md). bench: all but the timing-sensitive ones, with the sleepy ones in the
# background (under 10 minutes); bench-alone: every benchmark of bench, then the timing-sensitive ones in
# turn with nothing beside them, writing the whole of bench/RESULTS.md from this one run (24-30 minutes here);
# bench-scale: CPU per item at 1k and 20k items in 3 rounds (VIDEOFERRY_BENCH_CPU_100K=N adds N 100k runs), written
# whole to bench/RESULTS-scale.md (the CPU targets RESULTS.md shows as not measured).
# bench-scale also runs platform_listing at issue 49's sizes (PLATFORM_SCALE: 100,000 videos listed, 10,000
# migrated by URL import at the target's limits x5; about 25 minutes).
PLATFORM_SCALE = VIDEOFERRY_BENCH_PLATFORM_LISTED=100000 VIDEOFERRY_BENCH_PLATFORM_MIGRATED=10000 \
	VIDEOFERRY_BENCH_PLATFORM_SCALE=5
# BENCH_ARGS is passed on, e.g. BENCH_ARGS="--results /tmp/r.md" to write a results file of that run.
bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

bench-alone: $(STAMP)
	$(BIN)/python -m bench --alone --results bench/RESULTS.md $(BENCH_ARGS)

bench-scale: $(STAMP)
	$(PLATFORM_SCALE) $(BIN)/python -m bench cpu_per_item platform_listing --results bench/RESULTS-scale.md $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
