# Two commands do all the set-up on a fresh machine:
#   make exam   - run the example exam (banks/ x runs/) offline and write reports/
#   make test   - lint (ruff), type-check (mypy --strict) and run the test suite
#   make test-fast - lint (ruff) and the tests not marked slow: the inner loop (no mypy)
# Both create .venv on first use; torch is pinned to the CPU build by constraints.txt.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: exam test test-fast bench clean lock

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# Regenerates the lock from a scratch venv: every package the dev extras resolve to today, torch kept
# on its CPU build. Review the diff of constraints.txt before committing it.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet torch==2.13.0 -e '.[dev]'
	{ sed -n '1,/^# torch/p' constraints.txt; .lock-venv/bin/python -m pip freeze --exclude-editable \
	  | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt && rm -rf .lock-venv

exam: $(STAMP)
	$(BIN)/pytest banks $(PYTEST_ARGS)

# The suite runs exams in-process (pytester), which imports and assertion-rewrites the plugin's modules
# afresh each time: without bytecode caching (PYTHONDONTWRITEBYTECODE set) that is ~7x slower; an
# empty value lets Python write bytecode.
test test-fast: export PYTHONDONTWRITEBYTECODE =

# The suite runs on every core (pytest-xdist; TEST_WORKERS=0 runs it in one process, e.g. to debug).
TEST_WORKERS ?= auto

# pytest's exit code 5 (no tests collected, e.g. a -k that matches nothing) is said loudly and not a
# failure; make itself would turn any failing recipe into exit 2, so it is handled here.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest tests -n $(TEST_WORKERS) $(PYTEST_ARGS) || { rc=$$?; if [ $$rc -eq 5 ]; then \
	  echo "make test: pytest collected no tests (exit 5)" >&2; exit 0; fi; exit $$rc; }

# The inner loop: the tests not marked slow (pytest.mark.slow; make test runs those too), without mypy.
test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest tests -m "not slow" -n $(TEST_WORKERS) $(PYTEST_ARGS) || { rc=$$?; if [ $$rc -eq 5 ]; then \
	  echo "make test-fast: pytest collected no tests (exit 5)" >&2; exit 0; fi; exit $$rc; }

bench: $(STAMP)
	$(BIN)/python benchmarks/grading_throughput.py --pairs 300

clean:
	rm -rf reports/*.json reports/*.qrels .exam-cache
