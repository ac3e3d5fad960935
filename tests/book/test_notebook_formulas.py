"""Every display formula of the chapters parses where the Colab notebooks show it.

The web book wraps a bare ``$$...$$`` that holds ``&`` or ``\\\\`` in a ``split`` environment, Jupyter's
MathJax does not: there it shows "Misplaced &". The notebooks carry the chapters' formulas as written, so
each ``&`` and ``\\\\`` must sit in an alignment environment of its own, and every ``\\begin`` needs its
``\\end``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Environments in which ``&`` and ``\\`` are allowed.
ALIGNING = {"aligned", "split", "cases", "array", "matrix", "pmatrix", "bmatrix", "vmatrix", "Vmatrix", "gathered",
            "alignedat", "align", "align*", "gather", "gather*", "eqnarray"}
_DISPLAY = re.compile(r"\$\$(.*?)\$\$", re.S)
_PART = re.compile(r"\\(begin|end)\{([^}]*)\}|\\\\|(?<!\\)&")


def formula_problem(tex: str) -> str | None:
    """Why ``tex`` does not parse as a display formula outside the web book, or None.
      >>> formula_problem(r"a&=b\\\\c&=d"), formula_problem(r"\\begin{aligned}a&=b\\\\c&=d\\end{aligned}")
      ('& outside an alignment environment', None)
    """
    open_: list[str] = []
    for match in _PART.finditer(tex):
        kind, name = match.group(1), match.group(2)
        if kind == "begin":
            open_.append(name)
        elif kind == "end" and (not open_ or open_.pop() != name):
            return f"\\end{{{name}}} without its \\begin"
        elif kind is None and not (open_ and open_[-1] in ALIGNING):
            return match.group() + " outside an alignment environment"
    return f"\\begin{{{open_[-1]}}} not closed" if open_ else None


def display_formulas(text: str) -> list[tuple[int, str]]:
    """``(line, tex)`` of every ``$$...$$`` of a MyST source, code cells left out."""
    prose = re.sub(r"```\{code-cell\}.*?\n```", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    return [(prose[:m.start()].count("\n") + 1, m.group(1)) for m in _DISPLAY.finditer(prose)]


SOURCES = sorted((ROOT / "book").glob("*.md"))


@pytest.mark.parametrize("md", SOURCES, ids=[p.stem for p in SOURCES])
def test_display_formulas_parse_in_a_notebook(md):
    bad = [f"{md.name}:{line}: {problem}" for line, tex in display_formulas(md.read_text())
           if (problem := formula_problem(tex))]
    assert not bad, "wrap the lines in \\begin{aligned}...\\end{aligned}\n" + "\n".join(bad)


def test_the_parser_catches_an_unclosed_environment():
    assert formula_problem(r"\begin{aligned}a&=b") == r"\begin{aligned} not closed"
    assert formula_problem(r"a\end{cases}") == r"\end{cases} without its \begin"
    assert formula_problem(r"\{x\}\&y") is None
