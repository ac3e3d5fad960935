"""The student edition of the web book: every solution left out, built from the full build's executed notebooks.

``paththeory-tools student`` (or ``make student``) after ``make book``:

1. stages a copy of the book in ``<out>/source`` whose chapters are the notebooks the full build
   executed (``_build/jupyter_execute/book/<chapter>.ipynb``, outputs included) with every
   solution cut out (:func:`strip_solutions`): the gated ``{solution-start}`` ... ``{solution-end}``
   ranges with their code cells and outputs, and every written ``{solution}``;
2. builds it with Jupyter Book, executing nothing (the figures are the full build's), into
   ``<out>/html``; its Colab buttons open the student notebooks (``notebooks/student``), and its
   download button offers the staged notebooks, which hold no solution;
3. checks (:func:`leaks`) that no solution code, written solution or answer value appears in the
   pages, the downloadable sources or the student notebooks.

sphinx-exercise's own ``hide_solutions`` drops a solution directive but leaves the cells of a gated
solution on the page (version 1.2.1), so the solutions are cut from the staged sources instead.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from pathlib import Path
from typing import Iterable

import yaml

from paththeory_tools.plain_markdown import HOW_EXERCISES_WORK, SOLUTION_DIRECTIVE

#: Where the full build leaves its executed notebooks (myst-nb's output folder).
EXECUTED = Path("_build") / "jupyter_execute"
#: The sentence of a chapter's exercise section that says where the solutions are, and its student form.
STUDENT_SENTENCE = "This student edition leaves the solutions out."

_GATE_START = re.compile(r"^`{3,}\{solution-start\}", re.MULTILINE)
_GATE_END = re.compile(r"^(`{3,})\{solution-end\}[ \t]*\n\1[ \t]*$\n?", re.MULTILINE)


def strip_solutions(notebook, *, keep_answers: bool = False, keep_written: bool = False):
    """A copy of an ``nbformat`` notebook of the book without its solutions: the one stripping
    function of every student artefact (the web student edition, the student notebooks, the
    released nbgrader notebooks; the feedback shows no book text at all).

    Cuts each gated solution (from its ``{solution-start}`` fence to its ``{solution-end}`` fence,
    the cells between included: prose, demonstrations) and each written ``{solution}`` directive,
    and replaces the sentence that points to the solutions by :data:`STUDENT_SENTENCE`. With
    ``keep_answers`` (notebooks a student works in) a gated code cell that holds an answer between
    the ``### BEGIN SOLUTION`` markers, or an exercise's check, is kept (it is stubbed later) and the
    sentence is left for the notebook's own; with ``keep_written`` (the instructor's nbgrader source
    notebook) the written solutions are kept (nbgrader cuts their model answers on release).

    Example:
      >>> import nbformat
      >>> md = nbformat.v4.new_markdown_cell
      >>> nb = nbformat.v4.new_notebook(cells=[md("Task.\\n\\n```{solution-start} ex\\n```"),
      ...     nbformat.v4.new_code_cell("answer = 24"), md("```{solution-end}\\n```\\n\\nNext.")])
      >>> [c.source for c in strip_solutions(nb).cells]
      ['Task.', 'Next.']
    """
    import copy

    how = re.compile(r"\s+".join(map(re.escape, HOW_EXERCISES_WORK.split())))
    out = copy.deepcopy(notebook)
    cells, inside = [], False
    from paththeory_tools.student import BEGIN

    for cell in out.cells:
        if cell.cell_type != "markdown":
            answer = BEGIN in cell.source or re.search(r"\bcheck(_implementation)?\(", cell.source)
            if not inside or (keep_answers and answer):
                cells.append(cell)
            continue
        text = cell.source
        kept = ""
        while text:
            if inside:
                end = _GATE_END.search(text)
                if not end:
                    text = ""
                    break
                inside, text = False, text[end.end():]
            start = _GATE_START.search(text)
            if start:
                kept, text, inside = kept + text[:start.start()], text[start.start():], True
            else:
                kept, text = kept + text, ""
        kept = kept if keep_written else SOLUTION_DIRECTIVE.sub("", kept)
        kept = (kept if keep_answers else how.sub(STUDENT_SENTENCE, kept)).strip("\n")
        kept = re.sub(r"\n{3,}", "\n\n", kept)
        if kept.strip():
            cell.source = kept
            cells.append(cell)
    if inside:
        raise ValueError("a {solution-start} without its {solution-end}: the solution would run to the end "
                         "of the page; close it with ```{solution-end}```.")
    out.cells = cells
    return out


def _student_config(root: Path, config: dict) -> dict:
    config = dict(config)
    config["title"] = f"{config.get('title', '')} (student edition)"
    config["execute"] = {**config.get("execute", {}), "execute_notebooks": "off"}
    config["exclude_patterns"] = [p for p in config.get("exclude_patterns", []) if p != "**/*.ipynb"]
    sphinx = dict(config.get("sphinx", {}))
    sphinx["config"] = {**sphinx.get("config", {}), "colab_notebooks_folder": "notebooks/student",
                        "colab_notebooks_root": str(root.resolve())}
    config["sphinx"] = sphinx
    return config


def stage(root: str | Path, out: str | Path) -> Path:
    """Write the student edition's sources into ``<out>/source`` (see the module's docstring) and return it."""
    import nbformat

    from paththeory_tools.notebooks import toc_chapters

    root, out = Path(root), Path(out)
    executed = root / EXECUTED / "book"
    chapters = toc_chapters(root)
    missing = [c for c in chapters if not (executed / f"{c}.ipynb").exists()]
    if missing:
        raise FileNotFoundError(f"the full build's executed notebooks are missing for {', '.join(missing)} "
                                f"(looked in {executed}); run `make book` first.")
    src = out / "source"
    if src.exists():
        shutil.rmtree(src)
    (src / "book").mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text())
    (src / "_config.yml").write_text(yaml.safe_dump(_student_config(root, config), sort_keys=False))
    shutil.copy(root / "_toc.yml", src / "_toc.yml")
    for item in (root / "book").iterdir():
        if item.name.startswith(".") or item.suffix == ".ipynb":
            continue
        if item.is_dir():
            shutil.copytree(item, src / "book" / item.name, ignore=shutil.ignore_patterns("__pycache__"))
        elif item.suffix != ".md" or item.stem not in chapters:
            shutil.copy(item, src / "book" / item.name)
    for chapter in chapters:
        nb = strip_solutions(nbformat.read(executed / f"{chapter}.ipynb", as_version=4))
        nb.metadata.pop("jupytext", None)
        nbformat.write(nb, src / "book" / f"{chapter}.ipynb")
    return src


def build(root: str | Path = ".", out: str | Path | None = None) -> Path:
    """Stage and build the student edition into ``<out>/html`` (default ``_build/student``), strictly
    (any warning fails), then check it for leaks; returns the HTML folder.

    The build runs in a private folder inside ``out``; only a build that passed and showed no solution
    replaces ``<out>/source``, ``<out>/html`` and ``<out>/build.log``, under the folder's lock
    (``paththeory._io.folder_lock``), so two builds at once leave one build's files and a failed
    or interrupted one leaves the previous edition (and its own log, for a failed build)."""
    import subprocess
    import sys
    import tempfile

    from paththeory import _io

    root = Path(root)
    out = Path(out) if out is not None else root / "_build" / "student"
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        src = stage(root, work)
        jb = Path(sys.executable).with_name("jupyter-book")
        cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(src), "--path-output", str(work),
               "-W", "--keep-going", "--all"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        log = run.stdout + run.stderr
        _io.write_text(work / "build.log", log)
        warnings = [line for line in log.splitlines() if "WARNING" in line]
        if run.returncode or warnings:
            os.replace(work / "build.log", out / "build.log")
            raise RuntimeError(f"the student edition's build failed ({out / 'build.log'}):\n" + "\n".join(warnings[:20]))
        os.replace(work / "_build" / "html", work / "html")
        problems = leaks(root, work / "html")
        if problems:
            raise RuntimeError("the student edition shows solutions:\n" + "\n".join(problems[:30]))
        with _io.folder_lock(out):
            for name in ("source", "html", "build.log"):
                old = out / name
                if old.is_dir():
                    shutil.rmtree(old)
                os.replace(work / name, old)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out / "html"


# --------------------------------------------------------------------------- leaks


def solution_fragments(root: str | Path) -> dict[str, list[str]]:
    """``{chapter: [text that only a solution holds]}``: the lines of code between the solution markers
    and the sentences of the written solutions, long enough (25 characters) to be distinctive and
    absent from the rest of the chapter."""
    from paththeory_tools.student import BEGIN, END

    found: dict[str, list[str]] = {}
    for md in sorted((Path(root) / "book").glob("*.md")):
        text = md.read_text()
        lines = []
        for block in re.findall(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.DOTALL):
            lines += [line.strip() for line in block.splitlines()]
        for m in SOLUTION_DIRECTIVE.finditer(text):
            body = re.sub(r"^:[\w-]+:.*$", "", m.group(0), flags=re.MULTILINE).splitlines()[1:-1]
            lines += [line.strip() for line in body]
        gated, outside = _gated(text)
        lines += gated
        rest = SOLUTION_DIRECTIVE.sub("", re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END), "", outside,
                                                 flags=re.DOTALL))
        fragments = [line for line in lines if len(line) >= 25 and not line.startswith(("#", "import ", "from "))
                     and line not in rest]
        if fragments:
            found[md.stem] = sorted(set(fragments))
    return found


_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_GATE = re.compile(r"^`{3,}\{solution-start\}.*?^`{3,}\{solution-end\}[^\n]*\n`{3,}[ \t]*$",
                   re.MULTILINE | re.DOTALL)


def _gated(text: str) -> tuple[list[str], str]:
    """``(the stripped lines of the gated solutions, the chapter without them)``: their prose and
    demonstration code; the answer and check cells a student notebook keeps are left out of both."""
    from paththeory_tools.student import BEGIN

    lines, outside = [], text
    for gate in _GATE.finditer(text):
        body = gate.group(0)
        kept = [m.group(0) for m in _CODE_CELL.finditer(body)
                if BEGIN in m.group(1) or re.search(r"\bcheck(_implementation)?\(", m.group(1))]
        for cell in kept:
            body = body.replace(cell, "")
        lines += [line.strip() for line in body.splitlines()
                  if line.strip() and not line.lstrip().startswith(("```", ":"))]
        outside = outside.replace(gate.group(0), "\n".join(kept))
    return lines, outside


def answer_values(chapters: Iterable[str] | None = None) -> dict[str, list[str]]:
    """``{exercise id: [the answer's value as the book would print it]}`` for the exercises whose answer is
    one number: its 3- and 4-significant-digit forms (integers, and numbers with fewer digits, are left
    out: they occur in ordinary text; an array's entries are left out too: one of many entries matching
    a number on the page is chance, and the code that computes the array is checked instead). With
    ``chapters``, only the exercises of those chapters (an exercise id starts with its chapter): an answer
    can take seconds to compute, and a check of one chapter needs its own only."""
    import numpy as np

    from paththeory.exercises.checking import _truth
    from paththeory.exercises.keys import EXERCISES

    chapters = None if chapters is None else set(chapters)
    out = {}
    for ex, spec in EXERCISES.items():
        if spec.expects.kind not in ("number", "integer"):
            continue
        if chapters is not None and ex.split(".")[0] not in chapters:
            continue
        forms = set()
        for v in np.ravel(_truth(ex)[0]):
            if not np.isfinite(v) or float(v).is_integer() or len(f"{abs(v):.4g}".replace(".", "").lstrip("0")) < 3:
                continue
            forms |= {f"{v:.3f}", f"{v:.4g}"} if abs(v) < 1 else {f"{v:.4g}"}
        out[ex] = sorted(forms)
    return out


def _page_text(path: Path) -> str:
    text = path.read_text(errors="replace")
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", text, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def leaks(root: str | Path, html_dir: str | Path, notebooks: str | Path | None = None) -> list[str]:
    """Where the student edition shows a solution: ``"<file>: <what>"`` for each solution marker, line of
    solution code, sentence of a written solution or gated solution, or answer value (of its chapter's
    exercises) found in the pages, their downloadable sources or the student notebooks (default
    ``<root>/notebooks/student``): :func:`artefact_leaks` over those files."""
    from paththeory_tools.notebooks import toc_chapters

    root, html_dir = Path(root), Path(html_dir)
    notebooks = Path(notebooks) if notebooks is not None else root / "notebooks" / "student"
    fragments, values = solution_fragments(root), answer_values()
    chapters = set(toc_chapters(root))
    files = [(p, p.stem) for p in html_dir.glob("book/*.html")]
    files += [(p, p.name.split(".")[0]) for p in (html_dir / "_sources" / "book").glob("*")]
    files += [(p, p.stem) for p in notebooks.glob("*.ipynb")]
    files = [(p, chapter) for p, chapter in files if chapter in chapters]  # the API page documents the markers
    return artefact_leaks(root, files, fragments, values)


def artefact_leaks(root: str | Path, files: list[tuple[Path, str]], fragments: dict | None = None,
                   values: dict | None = None) -> list[str]:
    """Where any student artefact shows a solution: ``files`` are ``(path, chapter)`` pairs (web
    pages, page sources, student notebooks, released nbgrader notebooks, feedback), or triples whose
    third item is the name to report (a file checked under a temporary name before it is published);
    what is looked for: solution markers, solution code, written solutions, gated solution prose and
    demonstrations (:func:`solution_fragments`) and answer values (:func:`answer_values`, or the
    frozen values a course passes)."""
    from paththeory_tools.student import BEGIN

    root = Path(root)
    fragments = solution_fragments(root) if fragments is None else fragments
    values = answer_values({f[1] for f in files}) if values is None else values
    problems = []
    for path, chapter, *shown in files:
        path = Path(path)
        text = _page_text(path) if path.suffix == ".html" else path.read_text(errors="replace")
        where = shown[0] if shown else path.relative_to(root) if path.is_relative_to(root) else path
        if BEGIN in text:
            problems.append(f"{where}: a {BEGIN!r} marker")
        problems += [f"{where}: solution text {frag!r}" for frag in fragments.get(chapter, []) if frag in text]
        for ex, forms in values.items():
            if ex.split(".")[0] != chapter:
                continue
            problems += [f"{where}: the answer of {ex}, {form}" for form in forms
                         if re.search(r"(?<![\d.])" + re.escape(form) + r"(?!\d)", text)]
    return problems
