"""The paper-to-book map (paththeory_tools.paper_map, book/paper_map.md) against the book itself: every
equation, figure and appendix it must cover has a row, every row names a section that exists in
its chapter and a chapter that cites the item, every function it names imports, and the page
prints every row."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest
import yaml

from paththeory_tools import paper_map
from paththeory_tools.paper_map import ROWS, SOURCES, STATUSES

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
LABEL = re.compile(r"^\(([^()\s]+)\)=\s*$", flags=re.M)

REQUIRED_EQUATIONS = [f"Eq. {n}" for n in (*range(1, 14), *range(29, 35))]
REQUIRED_FIGURES = ["Fig. 1c", "Fig. 1d", "Fig. 2c (top)", "Fig. 2c (bottom)", "Fig. 2d", "Fig. 2e", "Fig. 2f",
                    "Fig. 3b", "Fig. 3c", "Fig. 3d", "Fig. 3e", "Fig. 3f", "Fig. 5b", "Fig. 5c", "Fig. 6",
                    "Fig. 7"]
#: Every appendix of the paper: Part I (related work, "Appendix I" in the main text), A to H, with
#: the subsections that hold their own derivation or experiment.
REQUIRED_APPENDICES = ["App. I", "App. A", "App. B", "App. C.1", "App. C.2", "App. C.3", "App. D", "App. E",
                       "App. F", "App. G.1", "App. G.2", "App. H.1", "App. H.2.1", "App. H.2.2", "App. H.2.3"]


def toc_pages() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = {toc["root"]}

    def walk(items):
        for item in items:
            if "file" in item:
                found.add(item["file"])
            for key in ("chapters", "sections", "parts"):
                walk(item.get(key, []))

    walk(toc.get("chapters", []) + toc.get("parts", []))
    return {f.removeprefix("book/") for f in found}


def labels_by_page() -> dict[str, list[str]]:
    return {p.stem: LABEL.findall(p.read_text()) for p in sorted(BOOK.glob("*.md"))}


@pytest.mark.parametrize("item", REQUIRED_EQUATIONS + REQUIRED_FIGURES + REQUIRED_APPENDICES)
def test_every_required_item_has_a_row(item):
    assert paper_map.row(item).item == item


def test_items_are_unique_and_rows_of_every_kind_exist():
    items = [r.item for r in ROWS]
    assert len(items) == len(set(items))
    assert {r.kind for r in ROWS} == set(paper_map.KINDS)
    assert sum(paper_map.status_counts().values()) == len(ROWS)


@pytest.mark.parametrize("r", ROWS, ids=lambda r: r.item)
def test_the_row_names_a_section_that_exists(r):
    assert r.page in toc_pages(), f"{r.item}: book/{r.page}.md is not a page of the book (_toc.yml)"
    if r.label:
        where = [page for page, labels in labels_by_page().items() if r.label in labels]
        assert where == [r.page], (f"{r.item}: the label ({r.label})= must be in book/{r.page}.md and "
                                   f"nowhere else; found in {where}")


def test_no_label_is_defined_twice():
    seen: dict[str, str] = {}
    for page, labels in labels_by_page().items():
        for label in labels:
            assert label not in seen, f"({label})= is in both {seen[label]}.md and {page}.md"
            seen[label] = page


@pytest.mark.parametrize("r", ROWS, ids=lambda r: r.item)
def test_the_chapter_cites_the_item(r):
    text = (BOOK / f"{r.page}.md").read_text()
    missing = [c for c in r.cites if c not in text]
    assert not missing, f"{r.item}: book/{r.page}.md no longer cites it as {missing}"


@pytest.mark.parametrize("name", sorted({f for r in ROWS for f in r.functions}))
def test_every_function_named_imports_and_is_callable(name):
    assert name.startswith("paththeory.")
    assert callable(paper_map.resolve(name)), name


@pytest.mark.parametrize("r", ROWS, ids=lambda r: r.item)
def test_status_reason_and_sources_follow_the_rules(r):
    assert r.status in STATUSES
    assert r.status == "reproduced" or r.reason, f"{r.item}: a status other than 'reproduced' needs a reason"
    for text in (r.paper, r.reason, r.profile, r.numbers_note):
        assert "\n" not in text
    assert len(r.reason) <= 240, f"{r.item}: the reason should be one line"
    assert set(r.numbers) <= set(SOURCES)
    assert not r.numbers_note or r.numbers, f"{r.item}: a note on numbers needs their sources"


def test_a_row_with_a_bad_status_or_no_reason_is_refused():
    with pytest.raises(ValueError, match="status"):
        paper_map.Row("Eq. 1", "x", "model", status="done")
    with pytest.raises(ValueError, match="reason"):
        paper_map.Row("Eq. 1", "x", "model", status="variant")
    with pytest.raises(ValueError, match="sources"):
        paper_map.Row("Eq. 1", "x", "model", numbers=("a blog",))


def test_lookup():
    assert paper_map.row("fig. 2C top") is paper_map.row("Fig. 2c (top)")
    assert paper_map.row("Eq. 9").label == "derivation-step-predictor"
    with pytest.raises(KeyError, match="no row"):
        paper_map.row("Fig. 99")
    assert all(r.kind == "figure" for r in paper_map.rows(kind="figure"))
    assert paper_map.rows(page="pruning") and all(r.page == "pruning" for r in paper_map.rows(page="pruning"))
    with pytest.raises(ValueError):
        paper_map.rows(kind="table")


def test_the_table_has_four_columns_on_every_line():
    for line in paper_map.markdown_table().splitlines():
        assert len(re.findall(r"(?<!\\)\|", line)) == 5, line


def rendered_page() -> str:
    """Run the code cells of book/paper_map.md (the install cell does nothing off Colab) and
    return the Markdown they display."""
    display_module = pytest.importorskip("IPython.display")
    shown: list[str] = []
    original = display_module.display
    display_module.display = lambda *objs, **kw: shown.extend(o.data for o in objs)
    try:
        namespace: dict = {}
        for cell in jupytext.read(BOOK / "paper_map.md").cells:
            if cell.cell_type == "code":
                exec(compile(cell.source, "paper_map.md", "exec"), namespace)
    finally:
        display_module.display = original
    return "\n".join(shown)


def test_the_page_prints_every_row():
    page = rendered_page()
    assert paper_map.summary() in page
    for r in ROWS:
        line = paper_map.markdown_table([r]).splitlines()[-1]
        assert line in page, f"the page does not print the row of {r.item}"
        role = "ref" if r.label else "doc"
        assert f"{{{role}}}`{r.target}`" in line


def test_the_module_examples_run():
    import doctest

    result = doctest.testmod(paper_map, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
