VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m server serve --host 127.0.0.1 --port 5433 --data-dir ./data

# The query suites again with each executor backend forced (issue: identical
# results on the vectorised and the LLVM backend).
BACKEND_SUITE := tests/sql tests/cv/test_property.py tests/cv/test_aim_and_thesis.py \
	tests/cv/test_tpch_views.py tests/integration/test_diff_basic.py

test: install
	$(PY) -m pytest -q -x tests
	SPLITSTREAM_FORCE_BACKEND=vector $(PY) -m pytest -q -x $(BACKEND_SUITE)
	SPLITSTREAM_FORCE_BACKEND=llvm $(PY) -m pytest -q -x $(BACKEND_SUITE)

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) data build *.egg-info
