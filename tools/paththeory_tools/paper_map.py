"""The paper and the book, item by item: one table with a row per equation, figure and appendix of
Tiberi, Mignacco, Irie & Sompolinsky (NeurIPS 2024), and a few rows for what the book adds.

Each :class:`Row` names the paper's item (``"Eq. 9"``, ``"Fig. 3b"``, ``"App. G.2"``), says in
the book's words what the paper does there, where the book treats it (a chapter, and a section
label ``(label)=`` inside it), which functions of the package evaluate or reproduce it, its
status (:data:`STATUSES`) with a one-line reason, how the status depends on the profile, and
where its numbers come from (:data:`SOURCES`). The rows are data, ``book/paper_map.yml``
(:data:`DATA`): :func:`load_rows` reads and checks them, and :data:`ROWS` is the table.
:func:`row` looks one item up and :func:`rows_for_label` the items one section of the book treats;
:func:`summary`, :func:`status_legend`, :func:`markdown_table` and :func:`label_table` render the
table for the book's page ``book/paper_map.md``, where the book's Sphinx extension
:mod:`paththeory_tools.sphinxext.paper_map_tables` prints them.

A status says what the book computes and how that differs from the paper; it is not a verdict
on the paper's numbers. Where a chapter tests one of the paper's claims, the verdict of the
current build (with its noise) is in that chapter's claims table
(:mod:`paththeory.experiments.claims`).

``tests/tools/test_paper_map.py`` ties the table to the book: every required item has a row, every
label exists in its chapter, every function imports, and each row's ``cites`` appear in the
chapter's text, so a chapter that drops or renames a section breaks the test, not the map.

Example:
  >>> row("Fig. 3b").status
  'variant'
  >>> row("eq. 9").page, row("eq. 9").label
  ('derivation', 'derivation-step-predictor')
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections import Counter
from pathlib import Path

import yaml

#: What a row's status means. The statuses, in the order the page lists them.
STATUS_MEANINGS: dict[str, str] = {
    "reproduced": "the book computes the item as the paper defines it (for an equation: derives it, "
                  "evaluates it in the package and checks it numerically; for an experiment: the "
                  "paper's set-up, with the paper's or the authors' sizes at the paper profile)",
    "variant": "the book computes the item with a stated change: another network, data, route of "
               "derivation or procedure, or a computed figure where the paper draws a diagram",
    "reduced": "the book computes only part of the item (fewer curves, points or comparisons) at "
               "every profile",
    "not reproduced": "the book does not compute the item; the reason says why",
    "the book's own": "not in the paper: something the book adds",
}
STATUSES: tuple[str, ...] = tuple(STATUS_MEANINGS)
#: Where a row's numbers come from. A row without numbers (an identity) lists none.
SOURCES: tuple[str, ...] = ("paper text", "authors' repository", "this book's choice")
#: Kinds of item, from the start of :attr:`Row.item`.
KINDS: tuple[str, ...] = ("equation", "figure", "appendix", "book")
_KIND_PREFIX = {"Eq.": "equation", "Fig.": "figure", "App.": "appendix", "Book:": "book"}


@dataclasses.dataclass(frozen=True)
class Row:
    """One item of the paper (or one addition of the book) and where the book treats it.

    ``item``: the paper's name for it (``"Eq. 9"``, ``"Fig. 2c (top)"``, ``"App. H.2.1"``) or
    ``"Book: ..."`` for an addition; ``paper``: what the paper does there, in the book's words;
    ``page``: the chapter (``book/<page>.md``); ``label``: a section label ``(label)=`` in that
    chapter (empty: the whole chapter); ``functions``: dotted names of the package's functions or
    classes that evaluate or reproduce it; ``status``: one of :data:`STATUSES`; ``reason``: one
    line, required unless the status is "reproduced"; ``profile``: how the row depends on the
    profile (empty: it does not); ``numbers``: the sources (:data:`SOURCES`) of its numbers;
    ``numbers_note``: which number comes from which source; ``cites``: strings with which the
    chapter cites the item (checked by the tests).
    """

    item: str
    paper: str
    page: str
    label: str = ""
    functions: tuple[str, ...] = ()
    status: str = "reproduced"
    reason: str = ""
    profile: str = ""
    numbers: tuple[str, ...] = ()
    numbers_note: str = ""
    cites: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"{self.item}: status {self.status!r} is not one of {STATUSES}")
        if self.status != "reproduced" and not self.reason:
            raise ValueError(f"{self.item}: a row that is not 'reproduced' needs a reason")
        unknown = set(self.numbers) - set(SOURCES)
        if unknown:
            raise ValueError(f"{self.item}: unknown sources {sorted(unknown)}; use {SOURCES}")
        if not any(self.item.startswith(p) for p in _KIND_PREFIX):
            raise ValueError(f"{self.item}: an item starts with one of {tuple(_KIND_PREFIX)}")

    @property
    def kind(self) -> str:
        """``"equation"``, ``"figure"``, ``"appendix"`` or ``"book"``."""
        return next(k for p, k in _KIND_PREFIX.items() if self.item.startswith(p))

    @property
    def target(self) -> str:
        """The MyST cross-reference target: the section label, or the chapter's name."""
        return self.label or self.page


def _key(item: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[()]", " ", item)).strip().lower()


_FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(Row)}
_REQUIRED = tuple(name for name, f in _FIELDS.items() if f.default is dataclasses.MISSING)


def _row_from_mapping(entry: object, where: str) -> Row:
    """A :class:`Row` from one mapping of the YAML file: lists become tuples, types are checked."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: a row is a mapping of {tuple(_FIELDS)}; got {entry!r}")
    unknown = sorted(set(entry) - set(_FIELDS))
    missing = [name for name in _REQUIRED if name not in entry]
    if unknown or missing:
        raise ValueError(f"{where}: unknown fields {unknown}, missing fields {missing}")
    values: dict[str, str | tuple[str, ...]] = {}
    for name, value in entry.items():
        is_list = _FIELDS[name].default == ()
        if is_list and isinstance(value, list) and all(isinstance(v, str) for v in value):
            values[name] = tuple(value)
        elif not is_list and isinstance(value, str):
            values[name] = value
        else:
            raise ValueError(f"{where}: {name} must be {'a list of strings' if is_list else 'a string'}; "
                             f"got {value!r}")
    return Row(**values)


def load_rows(path: str | Path) -> tuple[Row, ...]:
    """The rows of a paper-map YAML file: a list of mappings with :class:`Row`'s fields (a field
    left out is empty; lists for the tuples). Raises ``ValueError`` for an unknown or missing field,
    a value of the wrong type, a row that :class:`Row` refuses, or two rows with the same item.

    Example:
      >>> load_rows(DATA) == ROWS
      True
    """
    entries = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise ValueError(f"{path}: the paper map is a YAML list of rows")
    loaded = tuple(_row_from_mapping(entry, f"{path}, row {i}") for i, entry in enumerate(entries, 1))
    counts = Counter(_key(r.item) for r in loaded)
    twice = sorted(r.item for r in loaded if counts[_key(r.item)] > 1)
    if twice:
        raise ValueError(f"{path}: more than one row for {twice}")
    return loaded


#: The paper map's data file, in the repository (the tools live in ``tools/paththeory_tools/``).
DATA: Path = Path(__file__).resolve().parents[2] / "book" / "paper_map.yml"
#: The table: the rows of :data:`DATA`, in its order.
ROWS: tuple[Row, ...] = load_rows(DATA)
_INDEX: dict[str, Row] = {_key(r.item): r for r in ROWS}


def row(item: str) -> Row:
    """The row of ``item`` (case, spaces and parentheses do not matter: ``"fig. 2c top"``).

    Example:
      >>> row("Fig. 2c top").item
      'Fig. 2c (top)'
    """
    try:
        return _INDEX[_key(item)]
    except KeyError:
        raise KeyError(f"no row for {item!r}; the items are: {', '.join(r.item for r in ROWS)}") from None


def rows(kind: str | None = None, status: str | None = None, page: str | None = None) -> list[Row]:
    """The rows of one kind (:data:`KINDS`), status and chapter (``None``: any), in table order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}; got {status!r}")
    return [r for r in ROWS if (kind is None or r.kind == kind) and (status is None or r.status == status)
            and (page is None or r.page == page)]


def resolve(name: str):
    """The object a dotted name points to, importing the longest module prefix.

    Example:
      >>> resolve("paththeory.predict.predictor").__name__
      'predictor'
    """
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(f"no module in {name!r}")


def status_counts(selected: list[Row] | None = None) -> dict[str, int]:
    """How many rows have each status."""
    selected = ROWS if selected is None else selected
    return {s: sum(r.status == s for r in selected) for s in STATUSES}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _where(r: Row, myst: bool) -> str:
    if myst:
        return f"{{ref}}`{r.label}` ({{doc}}`{r.page}`)" if r.label else f"{{doc}}`{r.page}`"
    return f"chapter {r.page}" + (f", section {r.label}" if r.label else "")


def _book_cell(r: Row, myst: bool) -> str:
    return _where(r, myst) + "".join(f", `{f}`" for f in r.functions)


def markdown_table(selected: list[Row] | None = None, myst: bool = True) -> str:
    """The rows (default: all) as a Markdown table of four columns: the paper's item and what it
    does, the book's section and functions, the status with its reason and profile, and where the
    numbers come from. ``myst=True`` links the sections with MyST roles (for the book's pages);
    ``myst=False`` names them in plain Markdown (for a notebook outside the book, e.g. on Colab).

    Example:
      >>> print(markdown_table([row("Eq. 10")], myst=False))  # doctest: +NORMALIZE_WHITESPACE
      | the paper | in the book | status | numbers from |
      |---|---|---|---|
      | **Eq. 10**: the kernel: path-path kernels weighted by the order parameter U
        | chapter model, section model-path-kernels, `paththeory.kernels.path_kernels`,
        `paththeory.kernels.kernel_matrix`, `paththeory.kernels.gp_kernel` | **reproduced**
        | none (no numbers) |
    """
    selected = list(ROWS if selected is None else selected)
    lines = ["| the paper | in the book | status | numbers from |", "|---|---|---|---|"]
    for r in selected:
        status = f"**{r.status}**" + (f": {r.reason}" if r.reason else "")
        if r.profile:
            status += f" (profiles: {r.profile})"
        numbers = "; ".join(r.numbers) if r.numbers else "none (no numbers)"
        if r.numbers_note:
            numbers += f": {r.numbers_note}"
        cells = (f"**{r.item}**: {r.paper}", _book_cell(r, myst), status, numbers)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def _by_target(selected: list[Row] | tuple[Row, ...]) -> dict[str, list[Row]]:
    grouped: dict[str, list[Row]] = {}
    for r in selected:
        grouped.setdefault(r.target, []).append(r)
    return grouped


def labels() -> list[str]:
    """The book's sections that the rows name, in order of first appearance: each row's
    :attr:`Row.target`, i.e. its section label or, for a row about a whole chapter (no label), the
    chapter's name.

    Example:
      >>> labels()[:3]
      ['model-architecture', 'model-attention-paths', 'derivation-partition-function']
    """
    return list(_by_target(ROWS))


def rows_for_label(label: str) -> list[Row]:
    """The rows whose :attr:`Row.target` is ``label`` (one of :func:`labels`; empty for another), in
    table order: the paper's items that book section treats. A chapter's name selects the rows about
    the whole chapter (those without a label), not every row of the chapter (that is ``rows(page=...)``).

    Example:
      >>> [r.item for r in rows_for_label("markov-two-paths")]
      ['Fig. 2e', 'Fig. 2f', 'Fig. 5c']
      >>> [r.item for r in rows_for_label("model")]
      ['App. A']
    """
    return _by_target(ROWS).get(label, [])


def label_table(selected: list[Row] | None = None, myst: bool = True) -> str:
    """The rows (default: all) by book section, as a Markdown table of two columns: the section
    (in :func:`labels`' order) and the paper's items it treats, each with its status. ``myst`` as
    in :func:`markdown_table`.

    Example:
      >>> print(label_table(rows_for_label("markov-two-paths"), myst=False))  # doctest: +NORMALIZE_WHITESPACE
      | in the book | the paper's items |
      |---|---|
      | chapter markov, section markov-two-paths | **Fig. 2e** (reduced), **Fig. 2f** (variant),
        **Fig. 5c** (reproduced) |
    """
    lines = ["| in the book | the paper's items |", "|---|---|"]
    for section in _by_target(ROWS if selected is None else selected).values():
        items = ", ".join(f"**{r.item}** ({r.status})" for r in section)
        lines.append(f"| {_cell(_where(section[0], myst))} | {_cell(items)} |")
    return "\n".join(lines)


def status_legend() -> str:
    """The statuses and what each means, as a Markdown list, with how many rows have each."""
    counts = status_counts()
    return "\n".join(f"* **{s}** ({counts[s]} row{'s' if counts[s] != 1 else ''}): {m}."
                     for s, m in STATUS_MEANINGS.items())


def summary() -> str:
    """One sentence: how many rows of each kind, and how many of each status."""
    kinds = {k: len(rows(kind=k)) for k in KINDS}
    counts = status_counts()
    return (f"The table has {len(ROWS)} rows: {kinds['equation']} equations, {kinds['figure']} figures, "
            f"{kinds['appendix']} appendices and {kinds['book']} additions of the book. "
            + ", ".join(f"{n} {s}" for s, n in counts.items()) + ".")
