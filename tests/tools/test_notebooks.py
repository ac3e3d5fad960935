"""The Colab notebooks (notebooks/<chapter>.ipynb, paththeory_tools.notebooks): plain Markdown that Colab
renders (no MyST role, directive or label survives), captions under their figures, links to the
web book, solutions kept, stable cell ids, up to date with the chapters; and the Colab button of a
page opens them (tools/paththeory_tools/sphinxext/colab_notebooks.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
jupytext = pytest.importorskip("jupytext")

from paththeory_tools import notebooks, plain_markdown  # noqa: E402
from paththeory_tools.student import BEGIN, figure_caption  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / notebooks.NOTEBOOKS_DIR
CHAPTERS = notebooks.toc_chapters(ROOT)

#: What Colab would show raw: a MyST role (the Python domain's ``{py:func}`` and others included), a
#: directive fence, a ``(label)=`` target, a MyST comment or block break.
MYST = re.compile(
    r"\{(?:doc|ref|numref|cite(?::\w+)?|footcite|prf:\w+|py:\w+|eq|math|term|abbr|glue(?::\w+)?|index|download|sup|sub)\}`"
    r"|^[ \t]*(?:`{3,}|~{3,}|:{3,})[ \t]*\{"
    r"|^[ \t]*\([^)\s]+\)=[ \t]*$"
    r"|^[ \t]*%"
    r"|^\+\+\+",
    re.MULTILINE,
)


#: The heading of a figure's caption cell: "**Figure 7.3.** " (the number as the web book shows it).
FIGURE_HEADING = re.compile(r"^\*\*Figure(?: ([\d.]+))?\.\*\* ")


def myst_left(nb) -> list[str]:
    """``"cell i: ...text..."`` for each piece of MyST markup in a Markdown cell of ``nb``."""
    return [f"cell {i}: {c.source[max(0, m.start() - 30):m.end() + 30]!r}"
            for i, c in enumerate(nb.cells) if c.cell_type == "markdown" for m in MYST.finditer(c.source)]


def read(chapter: str):
    return nbformat.read(OUT / f"{chapter}.ipynb", as_version=4)


def test_every_notebook_page_of_the_toc_has_a_colab_notebook():
    assert {"intro", "model", "markov", "omniglot", "many_outputs"} <= set(CHAPTERS)
    paired = {p.stem for p in (ROOT / "book").glob("*.ipynb")}
    assert set(CHAPTERS) == paired, "the pages with a paired notebook (a Colab button) and the Colab notebooks differ"
    assert sorted(p.stem for p in OUT.glob("*.ipynb")) == sorted(CHAPTERS)


def test_the_colab_notebooks_are_up_to_date():
    stale = notebooks.stale_notebooks(ROOT)
    assert not stale, ("the Colab notebooks differ from the chapters:\n  " + "\n  ".join(stale)
                       + f"\nrun `{notebooks.REGENERATE}` from the repository root and commit notebooks/")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_myst_markup_survives(chapter):
    nb = read(chapter)
    assert myst_left(nb) == []
    nbformat.validate(nb)


@pytest.mark.parametrize("snippet", [
    "See {doc}`model`.", "{cite:p}`tiberi2024dissecting`", "(sec-x)=", "```{admonition} Title", ":::{note}",
    "{prf:ref}`def-x`", "{eq}`action`", "% a comment", "{numref}`fig-x`",
    "{py:func}`paththeory.action.entropy`", "{py:class}`~paththeory.solve.Theory`",
])
def test_the_markup_check_sees_myst(snippet):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"Text\n{snippet}\nmore")])
    assert myst_left(nb)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figure_captions_sit_under_their_figures(chapter):
    source = jupytext.read(ROOT / "book" / f"{chapter}.md")
    captions = [figure_caption(c) for c in source.cells if c.cell_type == "code" and figure_caption(c)]
    cells = read(chapter).cells
    shown = [(cells[i - 1].cell_type, c.source) for i, c in enumerate(cells) if FIGURE_HEADING.match(c.source)]
    assert len(shown) == len(captions)
    assert all(kind == "code" for kind, _ in shown)
    number = plain_markdown.toc_numbers(ROOT / "_toc.yml")[f"book/{chapter}"]
    for i, (caption, (_, text)) in enumerate(zip(captions, shown), 1):
        # numbered as the web book numbers it: Figure 7.3 (the root page: Figure 1)
        assert FIGURE_HEADING.match(text).group(1) == (f"{number}.{i}" if number else str(i))
        text = FIGURE_HEADING.sub("", text)
        plain = [w for w in caption.split() if re.fullmatch(r"[A-Za-z,;:.'()-]+", w)]
        assert text.split()[0] == caption.split()[0] and all(w in text for w in plain[:5])


def test_every_figure_of_the_book_has_its_caption():
    total = sum(bool(FIGURE_HEADING.match(c.source)) for ch in CHAPTERS for c in read(ch).cells)
    assert total >= 30


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_code_cells_are_the_chapters_with_solutions_and_the_install_cell_first(chapter):
    source = [c for c in jupytext.read(ROOT / "book" / f"{chapter}.md").cells if c.cell_type == "code"]
    code = [c for c in read(chapter).cells if c.cell_type == "code"]
    assert [c.source for c in code] == [c.source for c in source]
    assert "google.colab" in code[0].source and "remove-cell" in code[0].metadata.get("tags", [])
    assert code[0].metadata["cellView"] == "form" and code[0].metadata["jupyter"]["source_hidden"] is True
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert not any("NotImplementedError" in c.source for c in code if BEGIN in c.source)


def test_exercises_keep_their_solutions_and_say_so():
    nb = read("markov")
    exercises = [c for c in nb.cells if c.cell_type == "code" and BEGIN in c.source]
    assert len(exercises) == 3 and all("exercise" in c.metadata["tags"] for c in exercises)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "each exercise cell holds a worked solution" in text and "solution is a stub" not in text
    assert "> **Exercise: " in text  # the task: a block quote, not a code block


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_cross_references_link_to_the_web_book(chapter):
    text = "\n".join(c.source for c in read(chapter).cells if c.cell_type == "markdown")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    for link in links:
        assert not link.endswith(".ipynb") and not link.startswith("#"), link
        if link.startswith(notebooks.BOOK_URL):
            page = re.match(re.escape(notebooks.BOOK_URL) + r"/book/([\w-]+)\.html(?:#([\w.-]+))?$", link)
            assert page and (ROOT / "book" / f"{page.group(1)}.md").exists(), link
            anchor = (page.group(2) or "").removeprefix("module-")
            if page.group(1) == "api" and anchor.startswith("paththeory"):  # a {py:func} role's object
                assert _importable(anchor), link


def _importable(dotted: str) -> bool:
    """Whether ``dotted`` (``paththeory.action.entropy``, ``paththeory.solve.Theory.solve``) names an object."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


API = notebooks.BOOK_URL + "/book/api.html"


@pytest.mark.parametrize("myst, markdown", [
    ("Computed by {py:func}`paththeory.action.entropy`.",
     f"Computed by [`paththeory.action.entropy`]({API}#paththeory.action.entropy)."),
    ("Solved by {py:class}`~paththeory.solve.Theory`.", f"Solved by [`Theory`]({API}#paththeory.solve.Theory)."),
    ("{py:meth}`~paththeory.solve.Theory.solve`", f"[`solve`]({API}#paththeory.solve.Theory.solve)"),
    ("{py:func}`the entropy <paththeory.action.entropy>`", f"[`the entropy`]({API}#paththeory.action.entropy)"),
    ("{py:func}`the entropy <~paththeory.action.entropy>`", f"[`the entropy`]({API}#paththeory.action.entropy)"),
    ("{py:mod}`paththeory.action`", f"[`paththeory.action`]({API}#module-paththeory.action)"),
    ("{py:data}`paththeory.__all__`", f"[`paththeory.__all__`]({API}#paththeory.__all__)"),
    ("{py:func}`!paththeory.action.entropy`", "`paththeory.action.entropy`"),
    ("> **Definition (K)**\n>\n> Evaluated by {py:func}`paththeory.kernels.kernel_matrix`.",
     f"> **Definition (K)**\n>\n> Evaluated by [`paththeory.kernels.kernel_matrix`]({API}#paththeory.kernels.kernel_matrix)."),
])
def test_python_roles_become_links_to_the_api_page(myst, markdown):
    from paththeory_tools.plain_markdown import MarkdownContext, myst_to_markdown

    context = MarkdownContext({}, {}, {}, base_url=notebooks.BOOK_URL)
    assert myst_to_markdown(myst, context) == markdown


def test_python_roles_in_a_definition_become_links_and_stay_code_without_a_book():
    from paththeory_tools.plain_markdown import MarkdownContext, myst_to_markdown

    myst = ("```{prf:definition} Effective weights\n:label: def-w\n\nThe weights $w^\\pi$.\n\n"
            "Computed by {py:func}`paththeory.model.effective_weights`.\n```")
    assert myst_to_markdown(myst, MarkdownContext({}, {}, {}, base_url=notebooks.BOOK_URL)) == (
        "> **Definition (Effective weights)**\n>\n> The weights $w^\\pi$.\n>\n"
        f"> Computed by [`paththeory.model.effective_weights`]({API}#paththeory.model.effective_weights).")
    assert myst_to_markdown("Computed by {py:func}`~paththeory.model.effective_weights`.") == (
        "Computed by `effective_weights`.")


def test_references_become_links_with_anchors():
    text = "\n".join(c.source for c in read("model").cells if c.cell_type == "markdown")
    assert f"]({notebooks.BOOK_URL}/book/model.html#def-attention-path)" in text
    depth = "\n".join(c.source for c in read("depth").cells if c.cell_type == "markdown")
    assert f"({notebooks.BOOK_URL}/book/derivation.html#equation-wishart-identity)" in depth
    assert "Tiberi et al. (2024)" in text


def test_cell_ids_are_stable_and_unique(tmp_path):
    first = notebooks.notebook_text(ROOT / "book" / "model.md")
    assert notebooks.notebook_text(ROOT / "book" / "model.md") == first
    ids = [c["id"] for c in json.loads(first)["cells"]]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids)
    assert [c.id for c in read("model").cells] == ids


def _mini_repo(root: Path) -> Path:
    (root / "book").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/page\n  - file: book/notes\n")
    header = "---\njupytext:\n  formats: md:myst,ipynb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n"
    (root / "book" / "intro.md").write_text(header + "# Intro\n\nSee {doc}`page`.\n")
    (root / "book" / "page.md").write_text(
        header + "(sec-page)=\n# Page\n\n```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: A line, see "
        "{ref}`sec-page`.\n    name: fig-line\n---\nx = 1\n```\n\nAs {numref}`fig-line` shows.\n")
    (root / "book" / "notes.md").write_text("# Notes, no code\n")
    return root


def test_the_generator_writes_the_toc_notebooks_and_the_check_sees_a_stale_one(tmp_path):
    root = _mini_repo(tmp_path)
    assert notebooks.toc_chapters(root) == ["intro", "page"]
    assert len(notebooks.stale_notebooks(root)) == 4  # both editions of both chapters
    written = notebooks.write_colab_notebooks(root)
    assert [p.relative_to(root / "notebooks").as_posix() for p in written] == [
        "intro.ipynb", "page.ipynb", "student/intro.ipynb", "student/page.ipynb"]
    assert notebooks.stale_notebooks(root) == []
    page = nbformat.read(root / "notebooks" / "page.ipynb", as_version=4)
    assert myst_left(page) == []
    assert page.cells[-2].source == (f"**Figure.** A line, see [Page]({notebooks.BOOK_URL}/book/page.html#sec-page).")
    assert page.cells[-1].source == f"As [the figure]({notebooks.BOOK_URL}/book/page.html#fig-line) shows."
    intro = nbformat.read(root / "notebooks" / "intro.ipynb", as_version=4)
    assert intro.cells[0].source.endswith(f"See [Page]({notebooks.BOOK_URL}/book/page.html).")
    (root / "book" / "page.md").write_text((root / "book" / "page.md").read_text().replace("x = 1", "x = 2"))
    assert notebooks.stale_notebooks(root) == ["notebooks/page.ipynb: out of date with book/page.md",
                                               "notebooks/student/page.ipynb: out of date with book/page.md"]
    (root / "notebooks" / "old.ipynb").write_text("{}")
    assert "notebooks/old.ipynb: no such chapter in _toc.yml" in notebooks.stale_notebooks(root)
    notebooks.write_colab_notebooks(root)
    assert notebooks.stale_notebooks(root) == [] and not (root / "notebooks" / "old.ipynb").exists()


def test_the_command_line_writes_and_checks(tmp_path, capsys):
    from paththeory_tools.cli import main

    root = _mini_repo(tmp_path)
    assert main(["notebooks", "--root", str(root), "--check"]) == 1
    assert notebooks.REGENERATE in capsys.readouterr().out
    assert main(["notebooks", "--root", str(root)]) == 0
    assert main(["notebooks", "--root", str(root), "--check"]) == 0


def test_the_colab_url_points_at_the_plain_notebook():
    url = notebooks.colab_url("book/markov", "https://github.com/paththeory/paththeory", "main")
    assert url == "https://colab.research.google.com/github/paththeory/paththeory/blob/main/notebooks/markov.ipynb"
    assert notebooks.colab_url("book/x", "https://github.com/a/b.git/", "dev").endswith("/a/b/blob/dev/notebooks/x.ipynb")


class _App:
    def __init__(self, srcdir, theme, folder=notebooks.NOTEBOOKS_DIR, root=""):
        self.srcdir = srcdir
        self.config = type("Config", (), {"html_theme_options": theme, "colab_notebooks_folder": folder,
                                          "colab_notebooks_root": root})()


def test_the_book_points_the_colab_button_at_the_plain_notebook(book_extension):
    """The extension, as the build calls it after sphinx-book-theme built the launch buttons."""
    import yaml

    pytest.importorskip("sphinx")
    ext = book_extension("colab_notebooks")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "paththeory_tools.sphinxext.colab_notebooks" in config["sphinx"]["extra_extensions"]
    theme = {"repository_url": config["repository"]["url"], "repository_branch": config["repository"]["branch"],
             "launch_buttons": {"colab_url": config["launch_buttons"]["colab_url"]}}
    theme_url = "https://colab.research.google.com/github/paththeory/paththeory/blob/main/book/model.ipynb"
    context = {"header_buttons": [{"label": "download-buttons", "buttons": [{"text": ".ipynb", "url": "x"}]},
                                  {"label": "launch-buttons", "buttons": [{"text": "Colab", "url": theme_url}]}]}
    ext.point_colab_button(_App(str(ROOT), theme), "book/model", "page.html", context, None)
    assert ext.colab_buttons(context)[0]["url"] == (
        "https://colab.research.google.com/github/paththeory/paththeory/blob/main/notebooks/model.ipynb")
    assert (ROOT / "notebooks" / "model.ipynb").exists()
    assert context["header_buttons"][0]["buttons"][0]["url"] == "x"
    page_without = {"header_buttons": []}
    ext.point_colab_button(_App(str(ROOT), theme), "book/notation", "page.html", page_without, None)
    assert page_without == {"header_buttons": []}
    # The student edition (built from a staged copy elsewhere) opens the student notebooks.
    context["header_buttons"][1]["buttons"][0]["url"] = theme_url
    ext.point_colab_button(_App("/elsewhere", theme, notebooks.STUDENT_DIR, str(ROOT)), "book/model", "page.html",
                           context, None)
    assert ext.colab_buttons(context)[0]["url"].endswith("/blob/main/notebooks/student/model.ipynb")


def test_the_notebooks_number_cross_references_as_the_book_does():
    """Theorems, exercises, figures and equations carry the web book's numbers (chapter from _toc.yml's
    numbered parts, then the count of that kind on the page): the numbers a built book shows."""
    ctx = plain_markdown.MarkdownContext.from_book(ROOT / "book", base_url=notebooks.BOOK_URL)
    assert plain_markdown.toc_numbers(ROOT / "_toc.yml")["book/derivation"] == 2
    expected = {"prop-result-1": "Proposition 2.1", "lem-wishart": "Lemma 2.3", "asm-thermodynamic-limit":
                "Assumption 2.3", "rem-approximations": "Remark 2.2", "def-renormalised-kernel": "Definition 1.5",
                "prop-result-2": "Proposition 4.1", "cor-gp-point": "Corollary 3.1", "fig-markov-task": "Figure 8.1",
                "fig-markov-two-path": "Figure 8.8"}
    assert {label: ctx.numbers.get(label) for label in expected} == expected
    assert ctx.equation_numbers["gamma-identity"] == "2.1"
    derivation = read("derivation")
    text = "\n".join(c.source for c in derivation.cells if c.cell_type == "markdown")
    assert "\\tag{2.1}" in text and "\\tag{1}" not in text
    depth = "\n".join(c.source for c in read("depth").cells if c.cell_type == "markdown")
    assert f"[Proposition 2.1]({notebooks.BOOK_URL}/book/derivation.html#prop-result-1)" in depth
    assert "Proposition (Result 1" not in depth and "[the equation of *" not in depth
    validity = "\n".join(c.source for c in read("validity").cells if c.cell_type == "markdown")
    assert f"[Exercise 15.6 (The measure behind the large-width forms)]({notebooks.BOOK_URL}/book/problems.html" in validity


def test_the_download_button_offers_the_plain_notebook(book_extension, tmp_path):
    """The page's .ipynb download is the plain notebook, copied into the built site; not the MyST one."""
    pytest.importorskip("sphinx")
    ext = book_extension("colab_notebooks")

    def buttons():
        return [{"label": "download-notebook-button", "url": "../_sources/book/model.ipynb", "tooltip": "t"},
                {"label": "download-source-button", "url": "../_sources/book/model.md", "tooltip": "t"}]

    context = {"pathto": lambda name, resource: f"../{name}",
               "header_buttons": [{"label": "download-buttons", "buttons": buttons()}]}
    ext.point_download_button(_App(str(ROOT), {}), "book/model", "page.html", context, None)
    notebook, source = context["header_buttons"][0]["buttons"]
    assert notebook["url"] == f"../{ext.DOWNLOAD_DIR}/model.ipynb" and "plain" in notebook["tooltip"]
    assert source["url"] == "../_sources/book/model.md" and "MyST" in source["tooltip"]
    # A page without a plain notebook keeps the theme's entry.
    other = {"pathto": context["pathto"], "header_buttons": [{"label": "download-buttons", "buttons": buttons()}]}
    ext.point_download_button(_App(str(ROOT), {}), "book/notation", "page.html", other, None)
    assert other["header_buttons"][0]["buttons"][0]["url"] == "../_sources/book/model.ipynb"

    # After the build, the built pages' plain notebooks are in the site, byte for byte.
    app = _App(str(ROOT), {})
    app.outdir = str(tmp_path)
    app.builder = type("Builder", (), {"format": "html"})()
    app.env = type("Env", (), {"found_docs": {"book/model", "book/notation"}})()
    copied = ext.copy_notebooks(app, None)
    assert [p.name for p in copied] == ["model.ipynb"]
    assert (tmp_path / ext.DOWNLOAD_DIR / "model.ipynb").read_bytes() == (OUT / "model.ipynb").read_bytes()
    assert ext.copy_notebooks(app, RuntimeError("failed build")) == []


def test_the_html_check_fails_a_myst_or_missing_notebook_download(tmp_path, module_from_file):
    check = module_from_file("check_html", ROOT / ".ci" / "check_html.py")
    (tmp_path / "book").mkdir()
    (tmp_path / "_notebooks").mkdir()
    (tmp_path / "_notebooks" / "model.ipynb").write_text("{}")
    page = '<html><body><article><a class="btn-download-notebook-button" href="{}">.ipynb</a></article></body></html>'
    for name, href in (("myst", "../_sources/book/model.ipynb"), ("missing", "../_notebooks/gone.ipynb"),
                       ("plain", "../_notebooks/model.ipynb")):
        (tmp_path / "book" / f"{name}.html").write_text(page.format(href))
    assert sorted(p.split(" (")[0].split(" ../")[0] for p in check.problems(tmp_path)) == [
        "book/missing.html: notebook download", "book/myst.html: notebook download is the MyST notebook"]


# --------------------------------------------------------------------------- the student edition

STUDENT = ROOT / notebooks.STUDENT_DIR


def read_student(chapter: str):
    return nbformat.read(STUDENT / f"{chapter}.ipynb", as_version=4)


def test_every_chapter_has_a_student_notebook():
    assert sorted(p.stem for p in STUDENT.glob("*.ipynb")) == sorted(CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_student_notebooks_read_right_and_hide_every_solution(chapter):
    nb, full = read_student(chapter), read(chapter)
    assert myst_left(nb) == []
    nbformat.validate(nb)
    text = "\n".join(c.source for c in nb.cells)
    assert BEGIN not in text and "> **Solution**" not in text
    figures = [c.source for c in nb.cells if FIGURE_HEADING.match(c.source)]
    assert figures == [c.source for c in full.cells if FIGURE_HEADING.match(c.source)]
    for cell in nb.cells:
        if cell.cell_type == "code" and "exercise" in cell.metadata.get("tags", []):
            assert "raise NotImplementedError(" in cell.source
    if any(BEGIN in c.source for c in full.cells) or "prob-" in chapter:
        assert "**Student notebook.**" in text
    assert nb.metadata["accelerator"] == "GPU" and nb.metadata["paththeory"]["edition"] == "student"
    assert all(notebooks.STUDENT_BOOK_URL in link for link in re.findall(r"\]\((https://paththeory[^)\s]+)\)", text))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_notebook_speaks_of_the_web_page(chapter):
    for nb in (read(chapter), read_student(chapter)):
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert not re.search(r"this page|rocket icon", text, re.IGNORECASE), chapter


def test_cell_ids_are_stable_across_generations(tmp_path):
    first = notebooks.write_colab_notebooks(ROOT, tmp_path / "a")
    second = notebooks.write_colab_notebooks(ROOT, tmp_path / "b")
    for a, b in zip(first, second):
        ids_a = [c.id for c in nbformat.read(a, as_version=4).cells]
        assert ids_a == [c.id for c in nbformat.read(b, as_version=4).cells] and len(set(ids_a)) == len(ids_a)
