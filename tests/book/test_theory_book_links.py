"""Every public function and class of the theory modules names, in its docstring, the book section
that explains it: a line ``Book: <title> (<BOOK_URL>/book/<chapter>.html#<label>)`` whose chapter is
in ``_toc.yml`` and whose label is defined in that chapter (a ``(label)=`` line or a ``:label:``
option)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml

from paththeory_tools.notebooks import BOOK_URL

from tests.conftest import toc_entries

ROOT = Path(__file__).resolve().parents[2]
THEORY_MODULES = ("model", "kernels", "action", "solve", "hessian", "predict", "one_path", "pruning")
#: The public objects of the seven modules when this test was written (one_path came later) (65 functions and classes,
#: and the two custom-derivative functions ``action.sqrtm_pd`` and ``action.energy``).
MIN_OBJECTS = 62
PREFIX = BOOK_URL + "/book/"
#: ``Book: <title> (<url>)``; the URL may be wrapped onto the next line of the docstring.
BOOK_LINE = re.compile(r"^[ \t]*Book:[ \t]+(?P<title>\S.*?)\s*\((?P<url>https?://[^\s()]+)\)[ \t]*$", re.M | re.S)


def public_objects() -> list[tuple[str, object]]:
    """``(module.name, object)`` for every public function and class defined in a theory module
    (custom-derivative functions such as ``jax.custom_jvp`` objects included)."""
    found = []
    for short in THEORY_MODULES:
        module = importlib.import_module(f"paththeory.{short}")
        for name, obj in vars(module).items():
            if not name.startswith("_") and callable(obj) and getattr(obj, "__module__", None) == module.__name__:
                found.append((f"{short}.{name}", obj))
    return found


def toc_chapters() -> set[str]:
    """The chapters ``<name>`` of every ``book/<name>`` entry of ``_toc.yml``, at any depth."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return {f.split("/", 1)[1] for f in toc_entries(toc) if f.startswith("book/")}


def chapter_labels(text: str) -> set[str]:
    """Labels defined in a chapter: ``(label)=`` target lines and ``:label:`` directive options."""
    targets = re.findall(r"^\(([\w.:-]+)\)=[ \t]*$", text, re.M)
    options = re.findall(r"^:label:[ \t]*([\w.:-]+)[ \t]*$", text, re.M)
    return set(targets) | set(options)


def book_link_problems(doc: str | None, chapters: set[str] | None = None, book: Path | None = None) -> list[str]:
    """What is wrong with the ``Book:`` line of a docstring (empty when it is right)."""
    chapters = toc_chapters() if chapters is None else chapters
    book = ROOT / "book" if book is None else book
    matches = list(BOOK_LINE.finditer(doc or ""))
    if len(matches) != 1:
        return [f"expected one 'Book: <title> (<url>)' line, found {len(matches)}"]
    title, url = matches[0]["title"], matches[0]["url"]
    if not url.startswith(PREFIX):
        return [f"the URL {url} does not start with {PREFIX}"]
    page, _, label = url[len(PREFIX):].partition("#")
    if not page.endswith(".html") or "/" in page:
        return [f"the URL {url} does not name a chapter page book/<chapter>.html"]
    chapter = page[: -len(".html")]
    source = book / f"{chapter}.md"
    problems = []
    if "\n" in title.strip():
        problems.append(f"the title {title!r} spans several lines (wrap before the URL only)")
    if not source.exists():
        return problems + [f"book/{chapter}.md does not exist"]
    if chapter not in chapters:
        problems.append(f"book/{chapter} is not listed in _toc.yml")
    if "#" in url and label not in chapter_labels(source.read_text()):
        problems.append(f"#{label} is not a label of book/{chapter}.md")
    return problems


OBJECTS = public_objects()


def test_every_public_object_is_checked():
    assert len(OBJECTS) >= MIN_OBJECTS, f"only {len(OBJECTS)} public objects found: {[n for n, _ in OBJECTS]}"


@pytest.mark.parametrize("name, obj", OBJECTS, ids=[name for name, _ in OBJECTS])
def test_docstring_links_its_book_section(name, obj):
    problems = book_link_problems(obj.__doc__)
    assert not problems, f"{name}: " + "; ".join(problems)


def test_book_lines_fit_the_line_length():
    for short in THEORY_MODULES:
        for number, line in enumerate((ROOT / "paththeory" / f"{short}.py").read_text().splitlines(), 1):
            if "Book:" in line or PREFIX in line:
                assert len(line) <= 120, f"paththeory/{short}.py:{number} is {len(line)} characters long"


def test_checker_accepts_a_wrapped_line_and_rejects_wrong_links():
    good = f"""Summary.

    Book: The architecture
    ({PREFIX}model.html#model-architecture)

    Example:
      >>> 1
      1
    """
    assert book_link_problems(good) == []
    assert book_link_problems(f"Summary.\n\nBook: Path-path kernels ({PREFIX}model.html#model-path-kernels)\n") == []
    assert book_link_problems(f"Book: The model ({PREFIX}model.html)") == []
    wrong_label = f"Summary.\n\n    Book: The architecture ({PREFIX}model.html#no-such-section)\n    "
    assert book_link_problems(wrong_label) == ["#no-such-section is not a label of book/model.md"]
    assert book_link_problems("Summary without a link.")
    assert book_link_problems(f"Summary.\n\n    Book: ({PREFIX}model.html)\n    ")  # no title
    assert book_link_problems("Book: Elsewhere (https://example.org/book/model.html#model-architecture)")
    assert book_link_problems(f"Book: Missing ({PREFIX}no_such_chapter.html)") == [
        "book/no_such_chapter.md does not exist"]
    assert book_link_problems(f"Book: Not in the toc ({PREFIX}model.html)", chapters={"solver"}) == [
        "book/model is not listed in _toc.yml"]
    two = f"Book: A ({PREFIX}model.html)\n\nBook: B ({PREFIX}solver.html)"
    assert book_link_problems(two)
