"""Every figure's image has its caption as alt text (tools/paththeory_tools/sphinxext/figure_alt.py), and the built-HTML
check (.ci/check_html.py) fails a page whose image alt is empty or a file path: the transform on
small doctrees, and one tiny Sphinx build, not the book's."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_from_doctree
from docutils.utils import new_document
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser

from tests.tools.sphinx_build import build_with_extension

ROOT = Path(__file__).resolve().parents[2]
#: A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def ext(book_extension):
    return book_extension("figure_alt")


@pytest.fixture(scope="module")
def check(module_from_file):
    return module_from_file("check_html", ROOT / ".ci" / "check_html.py")


def _document() -> nodes.document:
    return new_document("chapter", get_default_settings(Parser))


def _figure(*images: nodes.image, caption: list[nodes.Node] | None = None) -> nodes.figure:
    """A figure as myst-nb makes it from a cell's ``mystnb: figure: caption:`` metadata: the cell's
    output (an image in a container) followed by the caption."""
    figure = nodes.figure()
    figure += nodes.container("", *images, classes=["cell_output"])
    if caption is not None:
        figure += nodes.caption("", "", *caption)
    return figure


def _html(document: nodes.document) -> str:
    return publish_from_doctree(document, writer_name="html5").decode()


def test_a_figure_image_gets_its_caption_as_alt_text(ext, check):
    doc = _document()
    caption = [nodes.Text("Test accuracy against the width "), nodes.math("", "N"),
               nodes.Text(":\n  the theory (circles)\n and the GP (dashed).")]
    doc += _figure(nodes.image(uri="../_images/45f9d3.png"), caption=caption)
    assert check.alt_text_problems(f"<article>{_html(doc)}</article>") == [
        "image alt text is a path ('../_images/45f9d3.png')"
    ]  # what the book showed: the HTML writer's fallback is the image's path
    assert ext.set_figure_alt(doc) == 1
    image = next(doc.findall(nodes.image))
    assert image["alt"] == "Test accuracy against the width N: the theory (circles) and the GP (dashed)."
    html = _html(doc)
    assert 'alt="Test accuracy against the width N: the theory (circles) and the GP (dashed)."' in html
    assert check.alt_text_problems(f"<article>{html}</article>") == []


def test_panels_are_numbered_real_alt_texts_kept_and_uncaptioned_images_left(ext):
    doc = _document()
    doc += _figure(nodes.image(uri="a.png"), nodes.image(uri="b.png"), caption=[nodes.Text("Two panels.")])
    doc += _figure(nodes.image(uri="c.png", alt="The kernel as a heat map"), caption=[nodes.Text("Kernel.")])
    doc += _figure(nodes.image(uri="d.png"))  # no caption: nothing to say
    assert ext.set_figure_alt(doc) == 2
    alts = [im.get("alt") for im in doc.findall(nodes.image)]
    assert alts == ["Two panels. (panel 1 of 2)", "Two panels. (panel 2 of 2)", "The kernel as a heat map", None]


@pytest.mark.parametrize("alt, bad", [(None, True), ("", True), ("   ", True), ("../_images/f330.png", True),
                                      ("figure.svg", True), ("_static/images/x", True),
                                      ("Accuracy against P/N at T = 1", False), ("Colab logo", False)])
def test_path_like_alt_texts(ext, check, alt, bad):
    assert ext.is_path_like(alt) is bad
    img = '<img src="x.png">' if alt is None else f'<img src="x.png" alt="{alt}">'
    assert bool(check.alt_text_problems(f"<html><body><article>{img}</article></body></html>")) is bad


def test_the_html_check_fails_a_chapter_page_with_a_path_as_alt(check, tmp_path):
    (tmp_path / "index.html").write_text("<html><body><article><p>Fine.</p></article></body></html>")
    (tmp_path / "book").mkdir()
    page = tmp_path / "book" / "model.html"
    # the theme's chrome (outside the article) is not the chapter's: its images are not checked here
    chrome = '<header><img src="../_static/logo.png" alt="../_static/logo.png"></header>'
    page.write_text(f'<html><body>{chrome}<article><figure><img src="../_images/f3.png" alt="../_images/f3.png">'
                    "<figcaption>Figure 1.1 The paths.</figcaption></figure></article></body></html>")
    found = check.problems(tmp_path)
    assert found == ["book/model.html: image alt text is a path ('../_images/f3.png')"]
    assert check.main(["check_html", str(tmp_path)]) == 1
    page.write_text(f'<html><body>{chrome}<article><figure><img src="../_images/f3.png" alt="The paths.">'
                    "<figcaption>Figure 1.1 The paths.</figcaption></figure></article></body></html>")
    assert check.problems(tmp_path) == []


def test_the_extension_sets_alt_texts_in_a_sphinx_build(tmp_path):
    """The post-transform registered by setup() runs in a real (tiny) Sphinx build."""
    html = build_with_extension(
        tmp_path, "figure_alt",
        "Page\n====\n\n.. figure:: plot.png\n\n   Accuracy against the width :math:`N`.\n\n"
        ".. figure:: plot.png\n   :alt: A written alt text\n\n   Its caption.\n",
        {"plot.png": PIXEL},
    )
    assert 'alt="Accuracy against the width N."' in html
    assert 'alt="A written alt text"' in html
    assert 'alt="plot.png"' not in html and 'alt="_images/plot.png"' not in html
