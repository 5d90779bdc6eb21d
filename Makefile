# Entry points. Each target runs ./setup.sh first (idempotent: installs Debian
# packages and the .venv only when missing), so a fresh machine needs nothing else.
PY := .venv/bin/python
PYTEST_ARGS ?=

.PHONY: setup demo test bench clean

setup:
	@./setup.sh

# The main job end to end on the embedded default runtime.
demo: setup
	@.venv/bin/railonly demo

# The whole test suite. pytest exits 5 when it collects no test, which fails here too.
# (.venv/bin/pytest, not `python -m pytest`: -m puts the repo root on sys.path,
# where the folder fabric/ would shadow the Fabric SSH library.)
test: setup
	@.venv/bin/pytest $(PYTEST_ARGS)

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf .venv build *.egg-info .pytest_cache
