"""The Colab notebooks: every chapter of the book as a plain Jupyter notebook, in two editions.

The chapters are MyST Markdown (``book/<chapter>.md``), paired by jupytext with
``book/<chapter>.ipynb`` for the book's build; Colab renders neither MyST roles nor directives.
:func:`write_colab_notebooks` writes ``notebooks/<chapter>.ipynb`` for every chapter of
``_toc.yml`` that is a notebook: its code cells (the install cell first, collapsed on Colab and in
JupyterLab), its text in plain Markdown (:func:`paththeory_tools.student.plain_notebook`), each
figure's caption in a Markdown cell under the figure, every cross-reference as a link to the
published book at :data:`BOOK_URL`, and the exercises with their worked solutions. Cell ids
follow from the chapter and the cell's position, so two generations are identical. The student
edition, ``notebooks/student/<chapter>.ipynb``, has every solution stubbed and the written ones
left out, and links to the student web book (:data:`STUDENT_BOOK_URL`); both request a GPU on Colab.

The Colab button of a page opens :func:`colab_url` (``tools/paththeory_tools/sphinxext/colab_notebooks.py`` points it
there). After changing a chapter, run ``paththeory-tools notebooks`` from the repository
root; ``paththeory-tools notebooks --check`` lists the stale notebooks.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: The published web book: the Colab notebooks' links to pages, sections, equations and figures.
BOOK_URL = "https://paththeory.github.io/paththeory"
#: The student edition of the web book (solutions left out): the student notebooks link there.
STUDENT_BOOK_URL = BOOK_URL + "/student"
#: The folder, relative to the repository root, of the Colab notebooks.
NOTEBOOKS_DIR = "notebooks"
#: The folder of the student notebooks (solutions stubbed), the student edition's Colab buttons open these.
STUDENT_DIR = NOTEBOOKS_DIR + "/student"
#: The command that regenerates them.
REGENERATE = "paththeory-tools notebooks"
COLAB_URL = "https://colab.research.google.com"


def toc_chapters(root: str | Path = ".") -> list[str]:
    """The notebook chapters of ``<root>/_toc.yml`` in order (the root page first): those whose
    ``.md`` is a jupytext notebook (has a ``kernelspec``), i.e. the pages with a Colab button."""
    import yaml

    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or ():
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("chapters"))
            walk(entry.get("sections"))

    for part in toc.get("parts", ()):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    out = []
    for file in files:
        md = root / f"{file}.md"
        if md.exists() and "\nkernelspec:" in md.read_text().split("\n---", 1)[0]:
            out.append(Path(file).name)
    return out


def _cell_id(chapter: str, index: int) -> str:
    return hashlib.sha1(f"{chapter}:{index}".encode()).hexdigest()[:12]


def colab_notebook(md_path: str | Path, base_url: str | None = None, *, student: bool = False):
    """The Colab notebook (an ``nbformat`` notebook) of the MyST chapter ``md_path``: plain
    Markdown, captions under their figures, links to ``base_url`` (default :data:`BOOK_URL`, or
    :data:`STUDENT_BOOK_URL` for students), stable cell ids, a GPU requested on Colab; solutions
    kept, or with ``student=True`` stubbed (:func:`paththeory_tools.student.student_version`)."""
    import jupytext

    from paththeory_tools.student import plain_notebook, student_version
    from paththeory_tools.plain_markdown import MarkdownContext

    md = Path(md_path)
    base_url = base_url or (STUDENT_BOOK_URL if student else BOOK_URL)
    context = MarkdownContext.from_book(md.parent, base_url=base_url)
    source = jupytext.reads(md.read_text(), fmt="md:myst")
    nb = student_version(source, context) if student else plain_notebook(source, context, solutions=True)
    for i, cell in enumerate(nb.cells):
        cell.id = _cell_id(md.stem, i)
    install = next((c for c in nb.cells if c.cell_type == "code"), None)
    if install is not None and "google.colab" in install.source:  # hidden, as on the page: collapsed
        install.metadata.update({"cellView": "form", "jupyter": {"source_hidden": True}})
    nb.metadata = {"kernelspec": nb.metadata.get("kernelspec", {}), "accelerator": "GPU",
                   "colab": {"provenance": [], "gpuType": "T4"},
                   "paththeory": {"source": f"{md.parent.name}/{md.name}", "regenerate": REGENERATE,
                                  "edition": "student" if student else "full"}}
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def notebook_text(md_path: str | Path, base_url: str | None = None, *, student: bool = False) -> str:
    """The ``.ipynb`` text of :func:`colab_notebook` (what :func:`write_colab_notebooks` writes)."""
    import nbformat

    return nbformat.writes(colab_notebook(md_path, base_url, student=student)).rstrip("\n") + "\n"


def _editions(root: Path, out: Path | None = None) -> list[tuple[Path, bool]]:
    """The notebook folders and whether each is the students': ``out`` (default ``<root>/notebooks``)
    and its ``student`` folder."""
    out = root / NOTEBOOKS_DIR if out is None else out
    return [(out, False), (out / Path(STUDENT_DIR).relative_to(NOTEBOOKS_DIR), True)]


def write_colab_notebooks(root: str | Path = ".", out_dir: str | Path | None = None,
                          base_url: str | None = None) -> list[Path]:
    """Write ``<out_dir>/<chapter>.ipynb`` (default ``<root>/notebooks``) and the student edition
    ``<out_dir>/student/<chapter>.ipynb`` for every notebook chapter of ``<root>/_toc.yml``
    (:func:`toc_chapters`); remove notebooks there of chapters no longer listed. Returns the paths written."""
    from paththeory import _io

    root = Path(root)
    out = _io.check_output_folder(out_dir if out_dir is not None else root / NOTEBOOKS_DIR)
    chapters = toc_chapters(root)
    if not chapters:
        raise ValueError(f"{root / '_toc.yml'} lists no notebook chapter; give the repository root.")
    written = []
    for folder, student in _editions(root, out):
        folder.mkdir(parents=True, exist_ok=True)
        for chapter in chapters:
            path = folder / f"{chapter}.ipynb"
            text = notebook_text(root / "book" / f"{chapter}.md", base_url, student=student)
            if not path.exists() or path.read_text() != text:
                _io.write_text(path, text)
            written.append(path)
        for old in folder.glob("*.ipynb"):
            if old.stem not in chapters:
                old.unlink()
    return written


def stale_notebooks(root: str | Path = ".", base_url: str | None = None) -> list[str]:
    """``"notebooks/<chapter>.ipynb: why"`` for every Colab notebook (both editions) that is missing,
    out of date with its chapter, or left over; empty when ``notebooks/`` is up to date."""
    root = Path(root)
    chapters = toc_chapters(root)
    problems = []
    for folder, student in _editions(root):
        rel = folder.relative_to(root).as_posix()
        for chapter in chapters:
            path = folder / f"{chapter}.ipynb"
            if not path.exists():
                problems.append(f"{rel}/{chapter}.ipynb: missing")
            elif path.read_text() != notebook_text(root / "book" / f"{chapter}.md", base_url, student=student):
                problems.append(f"{rel}/{chapter}.ipynb: out of date with book/{chapter}.md")
        problems += [f"{rel}/{p.name}: no such chapter in _toc.yml"
                     for p in sorted(folder.glob("*.ipynb")) if p.stem not in chapters]
    return problems


def colab_url(pagename: str, repository_url: str, branch: str = "main", colab: str = COLAB_URL,
              folder: str = NOTEBOOKS_DIR) -> str:
    """The Colab address of the plain notebook of page ``pagename`` (``book/<chapter>``) in ``folder``.

    Example:
      >>> colab_url("book/model", "https://github.com/paththeory/paththeory")
      'https://colab.research.google.com/github/paththeory/paththeory/blob/main/notebooks/model.ipynb'
    """
    org_repo = repository_url.rstrip("/").removesuffix(".git").split("github.com/")[-1]
    return f"{colab.rstrip('/')}/github/{org_repo}/blob/{branch}/{folder}/{Path(pagename).name}.ipynb"


def write_student_notebooks(book_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Write ``<out_dir>/<chapter>.ipynb`` for every MyST chapter of ``book_dir`` with exercises.

    The notebooks are the student edition's Colab notebooks
    (:func:`colab_notebook` with ``student=True``): plain Markdown, solutions
    stubbed, captions kept, links to the student web book, stable cell ids, a GPU requested on
    Colab. Needs ``jupytext`` (the ``book`` extra). Returns the paths written, each written
    atomically. ``out_dir`` must be another folder than ``book_dir`` (the book's own files are never
    overwritten), and ``book_dir`` must hold at least one chapter with exercises.

    Example:
      >>> import pathlib, tempfile
      >>> book = pathlib.Path(tempfile.mkdtemp())
      >>> cell = '```{code-cell} ipython3\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)\\n```\\n'
      >>> _ = (book / "chapter.md").write_text(cell)
      >>> [p.name for p in write_student_notebooks(book, book / "student")]
      ['chapter.ipynb']
    """
    from paththeory import _io
    from paththeory_tools.student import BEGIN

    book, out = Path(book_dir), _io.check_output_folder(out_dir)
    if not book.is_dir():
        raise NotADirectoryError(f"the book folder {book} does not exist; give the folder of the chapters' .md files.")
    if out.resolve() == book.resolve():
        raise ValueError(f"the output folder {out} is the book folder itself; give another folder so that "
                         "the book's own files are not overwritten.")
    chapters = [md for md in sorted(book.glob("*.md")) if BEGIN in md.read_text() or "{exercise}" in md.read_text()]
    if not chapters:
        raise ValueError(f"{book} holds no chapter (.md) with exercises ({BEGIN!r} cells or {{exercise}} "
                         "directives); give the book's folder.")
    return [_io.write_text(out / f"{md.stem}.ipynb", notebook_text(md, student=True)) for md in chapters]
