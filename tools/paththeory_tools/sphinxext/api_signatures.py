"""Sphinx extension of the book: signatures on the API page as a reader writes them.

autodoc prints a dataclass field with a default factory as ``= <factory>``, which is not Python: Sphinx then
cannot parse the whole argument list and shows it as plain text, its short-name references included
(``U: ~numpy.ndarray``, unlinked). This rewrites a factory default to the empty value it makes (``{}`` for a
dict, ``[]`` for a list, ``...`` otherwise), so that the list parses and ``~numpy.ndarray`` shows as a linked
``ndarray``.
"""

from __future__ import annotations

import re

_EMPTY = {"dict": "{}", "list": "[]", "tuple": "()", "set": "set()"}


def _factory_value(signature: str, at: int) -> str:
    """The empty value made by the factory default at index ``at``: found from the annotation's outer type, read
    back from ``at`` to the parameter's ``:`` outside brackets."""
    depth, i = 0, at
    while i > 0:
        i -= 1
        depth += {"]": 1, "[": -1}.get(signature[i], 0)
        if depth == 0 and signature[i] in ":,(":
            break
    outer = re.match(r"\s*([\w.]+)", signature[i + 1:at]) if signature[i] == ":" else None
    return _EMPTY.get(outer.group(1).split(".")[-1], "...") if outer else "..."


def readable(signature: str | None) -> str | None:
    """``signature`` with ``name: dict = <factory>`` as ``name: dict = {}``."""
    if signature is None:
        return None
    while (at := signature.find("<factory>")) >= 0:
        signature = signature[:at] + _factory_value(signature, at) + signature[at + len("<factory>"):]
    return signature


def rewrite_signature(app, what, name, obj, options, signature, return_annotation):
    return readable(signature), readable(return_annotation)


def setup(app):
    app.connect("autodoc-process-signature", rewrite_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
