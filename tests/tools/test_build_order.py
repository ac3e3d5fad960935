"""The book's parallel build hands out one page at a time, longest chapter first (tools/paththeory_tools/build.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "paththeory_tools"


def _toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {toc["root"]}
    for part in toc["parts"]:
        files.update(entry["file"] for entry in part["chapters"])
    return files


def test_every_chapter_of_the_execution_order_is_in_the_toc(module_from_file):
    build = module_from_file("build", TOOLS / "build.py")
    assert len(set(build.EXECUTION_ORDER)) == len(build.EXECUTION_ORDER)
    assert set(build.EXECUTION_ORDER) <= _toc_files()


def test_one_page_per_batch_listed_chapters_first_then_sphinx_order(module_from_file):
    build = module_from_file("build", TOOLS / "build.py")
    pages = sorted(_toc_files() | {"book/unlisted_b", "book/unlisted_a"})
    batches = build.one_page_per_batch(pages, 2)
    assert all(len(batch) == 1 for batch in batches)
    order = [batch[0] for batch in batches]
    assert sorted(order) == pages  # every page once
    listed = [name for name in build.EXECUTION_ORDER]
    assert order[: len(listed)] == listed
    rest = order[len(listed):]
    assert rest == sorted(rest)  # the others keep Sphinx's (sorted) order
    assert order.index("book/omniglot") < order.index("book/pruning")
