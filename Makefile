VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint bench clean flink-venv

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m splitstream serve --host 127.0.0.1 --port 5433 --data-dir ./data

# The query suites again with each executor backend forced (issue: identical
# results on the vectorised and the LLVM backend).
BACKEND_SUITE := tests/sql tests/cv/test_property.py tests/cv/test_aim_and_thesis.py \
	tests/cv/test_tpch_views.py tests/integration/test_diff_basic.py

test: install
	$(PY) -m pytest -q -x tests
	SPLITSTREAM_FORCE_BACKEND=vector $(PY) -m pytest -q -x $(BACKEND_SUITE)
	SPLITSTREAM_FORCE_BACKEND=llvm $(PY) -m pytest -q -x $(BACKEND_SUITE)

# mypy resolves splitstream.* from a tree of symlinks (the rooms are top-level
# folders mapped into the package at install time; mypy cannot follow that map).
LINT_ROOT := build/lint
# Modules held to mypy --strict (issue 13): the protocol and server rooms, the
# engine API, the catalog's type system and storage (the WAL, its records, the
# on-disk codec, checkpoint files and the stream hooks storage calls).
STRICT := -p splitstream.protocol -p splitstream.server -m splitstream.executor.api \
	-p splitstream.catalog.datatypes -p splitstream.catalog.storage -m splitstream.catalog.objects.model

lint: install
	$(PY) -m ruff check .
	rm -rf $(LINT_ROOT) && mkdir -p $(LINT_ROOT)/splitstream
	cp splitstream/*.py $(LINT_ROOT)/splitstream/
	for room in protocol server catalog executor connectors; do ln -s ../../../$$room $(LINT_ROOT)/splitstream/$$room; done
	cd $(LINT_ROOT) && ../../$(PY) -m mypy --config-file ../../pyproject.toml -p splitstream
	cd $(LINT_ROOT) && ../../$(PY) -m mypy --config-file ../../pyproject.toml --strict $(STRICT)

bench: install
	$(PY) -m bench

# PyFlink, the peer of bench/ysb.py, in its own virtualenv: apache-flink pins
# its own numpy/pyarrow, so it must not share the project's.  Needs Java 11+.
# Not a dependency of `test` or `bench`; bench/ysb.py skips the peer without it.
FLINK_VENV ?= .venv-flink
flink-venv:
	test -x $(FLINK_VENV)/bin/python || python3 -m venv $(FLINK_VENV)
	$(FLINK_VENV)/bin/python -m pip install -q --upgrade pip
	$(FLINK_VENV)/bin/python -m pip install -q 'apache-flink>=2.0,<3'

clean:
	rm -rf $(VENV) data build *.egg-info
