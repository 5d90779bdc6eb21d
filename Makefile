# Entry points. Each target runs ./setup.sh first (idempotent: installs Debian
# packages and the .venv only when missing), so a fresh machine needs nothing else.
PY := .venv/bin/python
PYTEST_ARGS ?=

.PHONY: setup demo test test-fast docs bench clean

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

# The fast lane: no root, nothing slow (markers netns and slow; see docs/developer/testing.md).
# pytest prints the count ("N passed, M deselected in T s"); exit 5 (nothing collected) fails.
test-fast: setup
	@.venv/bin/pytest -q -m "not netns and not slow" $(PYTEST_ARGS)

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link.
# The design and job references are generated: a stale one fails here too.
docs: setup
	@.venv/bin/python tools/docs_reference.py --check
	@NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -q

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf .venv build dist site *.egg-info .pytest_cache
