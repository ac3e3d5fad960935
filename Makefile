# The two commands of README.md:
#   make book   create .venv, install paththeory with [book,test], build the book strictly
#               (every chapter executed, any warning or cell error fails) into _build/html
#   make test   create .venv, install paththeory with [book,test], run the tests
# `make install` alone sets up .venv; it reinstalls only when pyproject.toml changes.
# `make pdf` builds the whole book as one HTML page and prints it to _build/paththeory.pdf with
# headless Chromium (CHROMIUM=...; the mathematics needs internet for MathJax).

PYTHON ?= python3
CHROMIUM ?= chromium
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.paththeory-installed

.PHONY: install book test pdf clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e ".[book,test]"
	touch $(STAMP)

book: install
	rm -rf _build/html _build/jupyter_execute
	$(BIN)/jupyter-book build . -W --keep-going --all

pdf: install
	rm -rf _build/singlehtml
	$(BIN)/jupyter-book build . --builder singlehtml -W --keep-going
	$(CHROMIUM) --headless=new --no-sandbox --disable-gpu --no-pdf-header-footer --virtual-time-budget=60000 \
	  --print-to-pdf=_build/paththeory.pdf _build/singlehtml/index.html
	@echo "The book as one PDF: _build/paththeory.pdf"

test: install
	$(BIN)/pytest

clean:
	rm -rf _build
