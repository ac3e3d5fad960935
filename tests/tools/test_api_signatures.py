"""The API page's signatures: short names without autodoc's ``~`` and factory defaults as the value they make."""

from __future__ import annotations

from paththeory_tools.sphinxext.api_signatures import readable


def test_short_names_lose_their_module_and_tilde():
    assert readable("(U: ~numpy.ndarray, inner: list[~numpy.ndarray], U_a: float | ~numpy.ndarray)") == (
        "(U: ndarray, inner: list[ndarray], U_a: float | ndarray)")
    assert readable("(chains: list[~paththeory.sampling.results.ChainReport])") == "(chains: list[ChainReport])"


def test_factory_defaults_show_the_empty_value_they_make():
    assert readable("(temperature: float, report: dict = <factory>, source: ~weakref.ReferenceType = None)") == (
        "(temperature: float, report: dict = {}, source: ReferenceType = None)")
    assert readable("(settings: dict = <factory>, inner: list = <factory>, inner_draws: list = <factory>)") == (
        "(settings: dict = {}, inner: list = [], inner_draws: list = [])")
    assert readable("(details: dict[str, float | int | None] = <factory>, tolerance: float = 0.1)") == (
        "(details: dict[str, float | int | None] = {}, tolerance: float = 0.1)")
    assert readable("(rows: ~mod.Table = <factory>)") == "(rows: Table = ...)"


def test_nothing_else_changes():
    plain = "(arch: Architecture, width: int = 10, *, method: str = 'auto') -> None"
    assert readable(plain) == plain and readable(None) is None
