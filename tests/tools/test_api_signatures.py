"""The API page's signatures: factory defaults as the value they make, so that Sphinx parses the argument list (and
shows and links its ``~``-shortened names itself)."""

from __future__ import annotations

from paththeory_tools.sphinxext.api_signatures import readable


def test_factory_defaults_show_the_empty_value_they_make():
    assert readable("(temperature: float, report: dict = <factory>, source: ~weakref.ReferenceType = None)") == (
        "(temperature: float, report: dict = {}, source: ~weakref.ReferenceType = None)")
    assert readable("(settings: dict = <factory>, inner: list = <factory>, inner_draws: list = <factory>)") == (
        "(settings: dict = {}, inner: list = [], inner_draws: list = [])")
    assert readable("(details: dict[str, float | int | None] = <factory>, tolerance: float = 0.1)") == (
        "(details: dict[str, float | int | None] = {}, tolerance: float = 0.1)")
    assert readable("(rows: ~mod.Table = <factory>)") == "(rows: ~mod.Table = ...)"


def test_the_rewritten_list_is_python_and_nothing_else_changes():
    import ast

    out = readable("(U: ~numpy.ndarray, report: dict = <factory>, inner: list = <factory>)")
    ast.parse(f"def f{out.replace('~', '')}: pass")  # what Sphinx's parser needs: valid Python
    plain = "(arch: Architecture, width: int = 10, *, method: str = 'auto') -> None"
    assert readable(plain) == plain and readable(None) is None
