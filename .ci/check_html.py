"""Fail when a page of the built book shows internal material or broken markup to a reader.

Usage: python .ci/check_html.py _build/html
Reads the text a reader sees (the article of each page, without scripts and styles) and
reports every page with one of FORBIDDEN: internal document references, machine-local
paths, Python tracebacks, and MyST roles or fences that were printed instead of rendered; and
every page whose MathJax is not the copy shipped with the book (formulas offline, LOCAL_MATHJAX);
and every image of a page's article whose alt text is missing, empty or a file path (a figure's
alt is its caption, set by tools/paththeory_tools/sphinxext/figure_alt.py); and every notebook download
that offers the MyST notebook instead of the plain one, or a file the site lacks.
Exits 1 and lists ``page: what`` for each problem; prints one summary line otherwise.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup

#: (name, pattern) pairs searched in the visible text of every page.
FORBIDDEN: tuple[tuple[str, re.Pattern], ...] = (
    ("internal spec reference", re.compile(r"\bspec\s*§")),
    ("temporary folder", re.compile(r"/tmp/")),
    ("project-local path", re.compile(r"shared/(checkpoints|data)|/work/")),
    ("Python traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("raw MyST role", re.compile(r"\{(doc|ref|cite|cite:t|cite:p|eq|math|numref|term)\}`")),
    ("raw MyST fence", re.compile(r"```\{|:::\{")),
    ("nbgrader solution marker", re.compile(r"### (BEGIN|END) SOLUTION")),
)

#: The MathJax every page must load: the copy in book/_static/mathjax (its README), not a CDN's.
LOCAL_MATHJAX = "_static/mathjax/tex-chtml-full.js"

#: Sphinx's generated pages, which hold no chapter text.
SKIP = {"genindex.html", "search.html", "py-modindex.html"}


def visible_text(html: str) -> str:
    """The article's text as a reader sees it (the whole body when there is no article), without
    the docstring examples of the API page, whose expected tracebacks and cell sources are meant."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript"]):
        tag.decompose()
    for tag in soup.select("div.doctest"):  # API examples: an expected exception is documentation
        tag.decompose()
    main = soup.find("article") or soup.body or soup
    return main.get_text(" ")


def mathjax_problem(page: Path, html: str) -> str | None:
    """What is wrong with the page's MathJax, if anything: loaded from elsewhere, or the local file missing."""
    soup = BeautifulSoup(html, "html.parser")
    sources = [tag["src"] for tag in soup.find_all("script", src=True) if "mathjax" in tag["src"].lower()]
    remote = [src for src in sources if "//" in src]
    if remote:
        return f"MathJax from {remote[0]} (not the shipped copy {LOCAL_MATHJAX})"
    for src in sources:
        if not (page.parent / src.split("?")[0]).is_file():
            return f"MathJax script {src} is not in the built site"
    return None


#: An alt text that is a file name or path, not words (as tools/paththeory_tools/sphinxext/figure_alt.py's PATH_LIKE).
PATH_LIKE_ALT = re.compile(r"^\S*[/\\]\S*$|\.(png|jpe?g|gif|svg|webp|pdf)$", re.IGNORECASE)


def alt_text_problems(html: str) -> list[str]:
    """One line per image of the page's article (the chapter text, not the theme's chrome) whose
    alt text tells a reader nothing: missing, empty, or a path such as ``../_images/45f9….png``."""
    soup = BeautifulSoup(html, "html.parser")
    main = soup.find("article") or soup.body or soup
    found = []
    for img in main.find_all("img"):
        alt = img.get("alt")
        if alt is None or not alt.strip():
            found.append(f"image {img.get('src', '?')} has no alt text")
        elif PATH_LIKE_ALT.search(alt.strip()):
            found.append(f"image alt text is a path ({alt[:60]!r})")
    return found


def download_problems(page: Path, html: str) -> list[str]:
    """The page's notebook download (the theme's ``.ipynb`` entry) must be the plain notebook copied into
    the site (``_notebooks/``, tools/paththeory_tools/sphinxext/colab_notebooks.py), not the MyST one
    under ``_sources``, and must exist."""
    soup = BeautifulSoup(html, "html.parser")
    found = []
    for link in soup.select("a.btn-download-notebook-button"):
        href = link.get("href", "")
        if "_sources/" in href:
            found.append(f"notebook download is the MyST notebook ({href})")
        elif not (page.parent / href.split("#")[0]).is_file():
            found.append(f"notebook download {href} is not in the built site")
    return found


def repeated_scripts(html: str) -> list[str]:
    """Every inline script the page carries more than once (the second copy of a ``const`` declaration
    fails in the browser)."""
    bodies = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    return sorted({f"inline script twice ({body[:50]!r})" for body in bodies if bodies.count(body) > 1})


def problems(site: Path) -> list[str]:
    """``"page: what (excerpt)"`` for every forbidden string, every page whose MathJax is not the
    shipped copy, every image whose alt text is empty or a path, and every inline script a page
    carries twice, in ``site``."""
    found = []
    pages = sorted(p for p in site.rglob("*.html") if p.name not in SKIP and "_static" not in p.parts
                   and "_sources" not in p.parts)
    for page in pages:
        html = page.read_text(errors="replace")
        if (problem := mathjax_problem(page, html)) is not None:
            found.append(f"{page.relative_to(site)}: {problem}")
        found += [f"{page.relative_to(site)}: {problem}"
                  for problem in alt_text_problems(html) + repeated_scripts(html) + download_problems(page, html)]
        text = visible_text(html)
        for name, pattern in FORBIDDEN:
            for match in pattern.finditer(text):
                excerpt = " ".join(text[max(0, match.start() - 40):match.end() + 40].split())
                found.append(f"{page.relative_to(site)}: {name} ({excerpt!r})")
    return found


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "_build/html")
    if not (site / "index.html").is_file():
        print(f"check_html: no built book in {site} (run make book first)", file=sys.stderr)
        return 2
    found = problems(site)
    for line in found:
        print(line, file=sys.stderr)
    n_pages = sum(1 for _ in site.rglob("*.html"))
    print(f"check_html: {n_pages} pages read, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
