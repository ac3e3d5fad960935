# The two commands of README.md:
#   make book   create .venv, install paththeory with [book,test], build the book strictly
#               (every chapter executed, any warning or cell error fails) into _build/html
#   make test   create .venv, install paththeory with [book,test], run the tests
# `make install` alone sets up .venv; it reinstalls only when pyproject.toml changes.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.paththeory-installed

.PHONY: install book test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e ".[book,test]"
	touch $(STAMP)

book: install
	rm -rf _build/html _build/jupyter_execute
	$(BIN)/jupyter-book build . -W --keep-going --all

test: install
	$(BIN)/pytest

clean:
	rm -rf _build
