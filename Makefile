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

test: install
	$(PY) -m pytest -q -x tests

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) data build *.egg-info
