"""Sphinx extension of the book: a link to the package's code that points nowhere fails the build.

Every result of the theory chapters ends with a line such as ``Computed by {py:func}`paththeory.action.entropy`.``,
and the API page (``book/api.md``) documents those objects with ``automodule``. Sphinx says nothing
about a ``py`` reference that it cannot resolve unless ``nitpicky`` is on, which would also flag
hundreds of unrelated type hints (``jax.Array``, ``Sequence[int]``...). This handler of
``missing-reference`` warns instead about exactly the references of the ``py`` domain whose target
starts with ``paththeory`` (a misspelt name, an object renamed or no longer on the API page), at the
reference's source location, so that the strict build (``-W``) fails on them. It resolves nothing:
it returns ``None``, and other handlers (intersphinx) are asked first.

Only references written as roles are checked (``{py:func}`...``` in a chapter, ``:func:`...``` in a
docstring: the nodes of Sphinx's ``XRefRole``, which carry ``refwarn``). The cross-references that
autodoc makes of type hints (a signature's annotations, a docstring's ``Returns:`` type) are not:
a type such as ``paththeory.profiles.T`` (a ``TypeVar``) has nothing to link to.

``tests/tools/test_code_links.py`` runs it in a real (tiny) Sphinx build.
"""

from __future__ import annotations

from sphinx.util import logging

logger = logging.getLogger(__name__)

#: The package whose objects the book links: only references into it are checked.
PACKAGE = "paththeory"


def is_package_target(target: str) -> bool:
    """Whether a ``py`` reference's target names an object of the package (``~`` and a leading ``.`` ignored).

    Example:
      >>> [is_package_target(t) for t in ("paththeory.action.entropy", "~paththeory.Theory", "paththeory",
      ...                                  "numpy.ndarray", "paththeory_tools.cli", "Sequence")]
      [True, True, True, False, False, False]
    """
    name = target.lstrip("~.")
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def warn_unresolved(app, env, node, contnode) -> None:
    """Warn about an unresolved ``py`` reference into the package; resolve nothing."""
    if node.get("refdomain") != "py" or "refwarn" not in node.attributes:
        return None  # another domain, or a type hint's cross-reference (not a role)
    target = node.get("reftarget", "")
    if not is_package_target(target):
        return None
    role = node.get("reftype", "obj")
    logger.warning("py:%s reference target not found: %s (is it documented on the API page, book/api.md?)",
                   role, target, location=node, type="code_links", subtype="missing")
    return None


def setup(app):
    # Late (priority 900): a handler that can resolve the reference (intersphinx) runs first.
    app.connect("missing-reference", warn_unresolved, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
