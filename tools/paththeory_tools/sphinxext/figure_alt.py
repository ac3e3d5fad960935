"""Sphinx extension of the book: every figure's image gets its caption as alt text.

A figure cell of a chapter carries its caption in the cell's metadata (``mystnb: figure: caption:``);
myst-nb wraps the cell's image in a figure node with that caption, but leaves the image node
without ``alt``, so the HTML writer falls back to the image's file path: a screen reader reads
``../_images/45f9d3…png``. This post-transform sets the alt text of each image inside a captioned
figure to the caption's plain text (TeX as written, whitespace collapsed); an image that already
has a real alt text (a ``{figure}`` directive's ``:alt:``) keeps it. A figure with several images
numbers them (``(panel 1 of 2)``). It runs after myst-nb has chosen the output's mime type
(``SelectMimeType``, priority 4), so it sees the image that is written.

``.ci/check_html.py`` fails the build's check when an image of a chapter page still has an empty
or path-like alt text (``tests/tools/test_alt_text.py`` runs the transform on a small doctree).
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

#: An alt text that is a file name or path rather than words: what the HTML writer falls back to.
PATH_LIKE = re.compile(r"^\S*[/\\]\S*$|\.(png|jpe?g|gif|svg|webp|pdf)$", re.IGNORECASE)


def is_path_like(alt: str | None) -> bool:
    """Whether ``alt`` says nothing to a reader: missing, empty, or a file path or name.

    Example:
      >>> [is_path_like(a) for a in (None, " ", "../_images/f3.png", "fig.svg", "Test accuracy against N")]
      [True, True, True, True, False]
    """
    return alt is None or not alt.strip() or bool(PATH_LIKE.search(alt.strip()))


def caption_text(caption: nodes.caption) -> str:
    """The caption as one line of plain text (math as its TeX source, whitespace collapsed)."""
    return " ".join(caption.astext().split())


def set_figure_alt(document: nodes.Node) -> int:
    """Give each image under a captioned figure of ``document`` its caption as alt text, unless it
    has a real one already. Returns how many images were given one."""
    changed = 0
    for figure in list(document.findall(nodes.figure)):
        captions = [c for c in figure.children if isinstance(c, nodes.caption)]
        if not captions or not (text := caption_text(captions[0])):
            continue
        images = [im for im in figure.findall(nodes.image) if is_path_like(im.get("alt"))]
        total = sum(1 for _ in figure.findall(nodes.image))
        for k, image in enumerate(images, start=1):
            image["alt"] = text if total == 1 else f"{text} (panel {k} of {total})"
            changed += 1
    return changed


class FigureAltText(SphinxPostTransform):
    """Post-transform: the caption of a figure becomes its image's alt text (:func:`set_figure_alt`)."""

    default_priority = 50  # after myst-nb's SelectMimeType (4), before the writers

    def run(self, **kwargs) -> None:
        set_figure_alt(self.document)


def setup(app):
    app.add_post_transform(FigureAltText)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
