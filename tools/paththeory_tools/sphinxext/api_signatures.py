"""Sphinx extension of the book: signatures on the API page as a reader writes them.

With postponed annotations, autodoc prints a dataclass's generated signature with the targets of its
short-name references (``U: ~numpy.ndarray``) and a field with a default factory as ``= <factory>``.
This rewrites each ``~dotted.Name`` to ``Name`` and a factory default to the empty value it makes
(``{}`` for a dict, ``[]`` for a list, ``...`` otherwise).
"""

from __future__ import annotations

import re

_SHORT = re.compile(r"~(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)")
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
    """``signature`` with ``~a.b.Name`` as ``Name`` and ``name: dict = <factory>`` as ``name: dict = {}``."""
    if signature is None:
        return None
    signature = _SHORT.sub(r"\1", signature)
    while (at := signature.find("<factory>")) >= 0:
        signature = signature[:at] + _factory_value(signature, at) + signature[at + len("<factory>"):]
    return signature


def rewrite_signature(app, what, name, obj, options, signature, return_annotation):
    return readable(signature), readable(return_annotation)


def setup(app):
    app.connect("autodoc-process-signature", rewrite_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
