"""The paper-to-book map (book/paper_map.yml, read by paththeory_tools.paper_map, printed on book/paper_map.md by
paththeory_tools.sphinxext.paper_map_tables) against the book itself: every equation, figure and appendix it
must cover has a row, every row names a section that exists in its chapter and a chapter that cites the item,
every function it names imports, and the page prints every row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from paththeory_tools import paper_map
from paththeory_tools.notebooks import toc_chapters
from paththeory_tools.paper_map import ROWS, SOURCES, STATUSES
from paththeory_tools.sphinxext import paper_map_tables

from tests.conftest import toc_entries

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
    return {f.removeprefix("book/") for f in toc_entries(toc)}


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


def test_the_rows_are_the_yaml_files_rows():
    assert paper_map.DATA == BOOK / "paper_map.yml"
    loaded = paper_map.load_rows(paper_map.DATA)
    assert loaded == ROWS and len(ROWS) == len(yaml.safe_load(paper_map.DATA.read_text()))
    assert all(isinstance(r, paper_map.Row) and isinstance(r.functions, tuple) for r in loaded)


@pytest.mark.parametrize("text, error", [
    ("- {item: Eq. 1, paper: x, page: model, status: done}", "status"),
    ("- {item: Eq. 1, paper: x, page: model, status: variant}", "reason"),
    ("- {item: Eq. 1, paper: x, page: model, colour: red}", "unknown fields \\['colour'\\]"),
    ("- {item: Eq. 1, paper: x}", "missing fields \\['page'\\]"),
    ("- {item: Eq. 1, paper: x, page: model, cites: Eq. 1}", "cites must be a list of strings"),
    ("- {item: Eq. 1, paper: x, page: 2}", "page must be a string"),
    ("- {item: Fig. 2c (top), paper: x, page: markov}\n- {item: Fig. 2c top, paper: y, page: markov}",
     "more than one row"),
    ("item: Eq. 1", "a YAML list of rows"),
])
def test_a_bad_yaml_file_is_refused(tmp_path, text, error):
    path = tmp_path / "paper_map.yml"
    path.write_text(text)
    with pytest.raises(ValueError, match=error):
        paper_map.load_rows(path)


def test_a_yaml_row_leaves_out_empty_fields(tmp_path):
    path = tmp_path / "paper_map.yml"
    path.write_text("- {item: Eq. 1, paper: x, page: model, functions: [paththeory.model.network_output]}")
    assert paper_map.load_rows(path) == (paper_map.Row("Eq. 1", "x", "model",
                                                       functions=("paththeory.model.network_output",)),)


def test_rows_by_book_label_agree_with_the_rows():
    labels = paper_map.labels()
    assert labels == list(dict.fromkeys(r.target for r in ROWS))
    sections = {r.label for r in ROWS if r.label}
    assert not sections & toc_pages(), "a section label is also a chapter's name: rows_for_label is ambiguous"
    grouped = [r for label in labels for r in paper_map.rows_for_label(label)]
    assert sorted(grouped, key=ROWS.index) == list(ROWS) and len(grouped) == len(ROWS)
    for label in labels:
        assert all(r.target == label for r in paper_map.rows_for_label(label))
    assert [r.item for r in paper_map.rows_for_label("model")] == [r.item for r in ROWS if r.page == "model"
                                                                    and not r.label]
    assert paper_map.rows_for_label("no-such-section") == []


def test_the_table_by_book_section_has_a_line_per_section():
    lines = paper_map.label_table().splitlines()[2:]
    assert len(lines) == len(paper_map.labels())
    for line, label in zip(lines, paper_map.labels()):
        assert len(re.findall(r"(?<!\\)\|", line)) == 3, line
        role = "doc" if label in toc_pages() else "ref"
        assert line.startswith(f"| {{{role}}}`{label}`"), line
        assert all(f"**{r.item}** ({r.status})" in line for r in paper_map.rows_for_label(label))


class FakeApp:
    """What the extension uses of Sphinx's application: ``connect`` and ``env.note_dependency``."""

    def __init__(self):
        self.dependencies: list[str] = []
        self.env = self
        self.connected: list[tuple[str, object]] = []

    def note_dependency(self, path: str) -> None:
        self.dependencies.append(path)

    def connect(self, event: str, handler) -> None:
        self.connected.append((event, handler))


PAGE_SOURCE = (BOOK / "paper_map.md").read_text()


def rendered_page() -> str:
    """book/paper_map.md after the extension's source-read hook."""
    source = [PAGE_SOURCE]
    app = FakeApp()
    paper_map_tables.fill_placeholders(app, paper_map_tables.PAGE, source)
    assert app.dependencies == [str(paper_map.DATA)]
    return source[0]


def test_the_page_is_plain_myst_with_a_placeholder_of_every_kind():
    assert "```{code-cell}" not in PAGE_SOURCE and not PAGE_SOURCE.startswith("---")
    assert "paper_map" not in toc_chapters(ROOT), "the page must not get a (Colab) notebook"
    kinds = [m["kind"] for m in paper_map_tables.PLACEHOLDER.finditer(PAGE_SOURCE)]
    assert sorted(kinds) == sorted(paper_map_tables.PLACEHOLDER_KINDS)
    assert PAGE_SOURCE.count("{paper-map}") == len(kinds)


def test_the_page_prints_every_row():
    page = rendered_page()
    assert "{paper-map}" not in page
    assert paper_map.summary() in page and paper_map.status_legend() in page
    assert paper_map.label_table(myst=True) in page
    for r in ROWS:
        line = paper_map.markdown_table([r]).splitlines()[-1]
        assert line in page, f"the page does not print the row of {r.item}"
        role = "ref" if r.label else "doc"
        assert f"{{{role}}}`{r.target}`" in line


def test_the_hook_leaves_other_pages_alone():
    source = ["```{paper-map} equation\n```\n"]
    app = FakeApp()
    paper_map_tables.fill_placeholders(app, "book/model", source)
    assert source == ["```{paper-map} equation\n```\n"] and app.dependencies == []


def test_an_unknown_placeholder_is_a_warning(monkeypatch):
    warnings: list[tuple[str, dict]] = []
    monkeypatch.setattr(paper_map_tables.logger, "warning", lambda msg, **kw: warnings.append((msg, kw)))
    source = ["# Title\n\n```{paper-map} tables\n```\n\n```{paper-map} figure\n```\n"]
    paper_map_tables.fill_placeholders(FakeApp(), paper_map_tables.PAGE, source)
    assert len(warnings) == 1
    message, kwargs = warnings[0]
    assert "'tables'" in message and kwargs["location"] == (paper_map_tables.PAGE, 3)
    assert "{paper-map}" not in source[0] and "| **Fig. 1a**" in source[0]


def test_the_extension_is_registered_and_parallel_safe():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "paththeory_tools.sphinxext.paper_map_tables" in config["sphinx"]["extra_extensions"]
    app = FakeApp()
    assert paper_map_tables.setup(app) == {"parallel_read_safe": True, "parallel_write_safe": True}
    assert app.connected == [("source-read", paper_map_tables.fill_placeholders)]


def test_the_module_examples_run():
    import doctest

    result = doctest.testmod(paper_map, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
