"""Every result of the theory chapters is one click from its code: each ``prf:definition``, ``prf:lemma``,
``prf:proposition`` and ``prf:corollary`` ends with a ``{py:func}`` or ``{py:class}`` link to a documented
function of the package (the strict build fails on a link that points nowhere,
``paththeory_tools.sphinxext.code_links``)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("definition", "lemma", "proposition", "corollary")
OPEN = re.compile(r"^(`{3,}|:{3,})\{prf:(" + "|".join(KINDS) + r")\}(.*)$", re.M)
ROLE = re.compile(r"\{py:(?:func|class)\}`~?([\w.]+)`")


def results(text: str) -> list[tuple[str, str]]:
    """``[(title, body)]`` of the result directives of a chapter's MyST source."""
    found = []
    for m in OPEN.finditer(text):
        fence = m.group(1)
        end = re.compile("^" + re.escape(fence) + r"[ \t]*$", re.M).search(text, m.end())
        found.append((f"{m.group(2)} {m.group(3).strip()}", text[m.end():end.start() if end else len(text)]))
    return found


def chapter_results() -> list[tuple[str, str, str]]:
    return [(md.stem, title, body) for md in sorted((ROOT / "book").glob("*.md"))
            for title, body in results(md.read_text())]


def test_the_theory_chapters_state_their_results():
    chapters = {chapter for chapter, _, _ in chapter_results()}
    assert {"model", "derivation", "depth", "order_parameter"} <= chapters and len(chapter_results()) >= 15


@pytest.mark.parametrize("chapter, title, body", chapter_results(), ids=lambda v: v if len(v) < 60 else "")
def test_every_result_links_the_function_that_computes_it(chapter, title, body):
    targets = ROLE.findall(body)
    assert targets, f"{chapter}: '{title}' has no {{py:func}}/{{py:class}} link to its code"
    for target in targets:
        module, name = target.rsplit(".", 1)
        assert hasattr(importlib.import_module(module), name), f"{chapter}: {target} does not exist"


def test_the_reader_finds_results_and_their_links():
    text = ("```{prf:lemma} A\n:label: a\nBody.\nComputed by {py:func}`paththeory.action.entropy`.\n```\n\n"
            "::::{prf:definition} B\nNo link here.\n::::\n")
    (a, body_a), (b, body_b) = results(text)
    assert a == "lemma A" and ROLE.findall(body_a) == ["paththeory.action.entropy"]
    assert b == "definition B" and ROLE.findall(body_b) == []
