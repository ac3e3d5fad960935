# The two commands of README.md:
#   make book   create .venv, install paththeory with [test,widgets] and the repository tooling (tools/), build the book strictly
#               (every chapter executed, any warning, cell error or stderr output fails) into _build/html, and
#               check what a reader sees (.ci/check_html.py);
#               BOOK_JOBS chapters execute at once (tools/paththeory_tools/build.py; BOOK_JOBS=1: serial)
#   make test   create .venv, install paththeory with [test,widgets] and the repository tooling (tools/), lint the
#               code (make lint), then run the tests in TEST_WORKERS processes (pytest-xdist, one test file per process
#               at a time)
#   make lint   ruff (pinned in tools/pyproject.toml) with the rules of pyproject.toml's [tool.ruff]
#   make student   the web book without solutions into _build/student/html (builds the book first if needed)
# `make install` alone sets up .venv; it reinstalls only when pyproject.toml or tools/pyproject.toml changes.
# `make pdf` builds the whole book as one HTML page and prints it to _build/paththeory.pdf with
# headless Chromium (CHROMIUM=...; MathJax ships with the book, book/_static/mathjax: no internet needed).

PYTHON ?= python3
CHROMIUM ?= chromium
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.paththeory-installed
BOOK_JOBS ?= 2
TEST_WORKERS ?= 2

.PHONY: install book student lint test pdf clean

install: $(STAMP)

$(STAMP): pyproject.toml tools/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e ".[test,widgets]" -e tools
	touch $(STAMP)

book: install
	rm -rf _build/html _build/jupyter_execute
	BOOK_JOBS=$(BOOK_JOBS) $(BIN)/python -m paththeory_tools.build . -W --keep-going --all
	$(BIN)/python .ci/check_html.py _build/html

# The student edition (no solutions) from the full build's executed notebooks: _build/student/html.
student: install
	test -f _build/html/index.html || $(MAKE) book
	$(BIN)/paththeory-tools student

pdf: install
	rm -rf _build/singlehtml
	$(BIN)/jupyter-book build . --builder singlehtml -W --keep-going
	$(CHROMIUM) --headless=new --no-sandbox --disable-gpu --no-pdf-header-footer --virtual-time-budget=60000 \
	  --print-to-pdf=_build/paththeory.pdf _build/singlehtml/index.html
	@echo "The book as one PDF: _build/paththeory.pdf"

lint: install
	$(BIN)/ruff check --no-cache .

test: lint
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --durations=15

clean:
	rm -rf _build
