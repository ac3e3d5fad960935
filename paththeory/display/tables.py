"""Tables for the chapters and the experiments' generated text: Markdown for ``IPython.display.Markdown``."""

from __future__ import annotations


def markdown_table(header, rows) -> str:
    """A Markdown table (for ``IPython.display.Markdown``): ``header`` a sequence of column
    titles, ``rows`` sequences of cells of the same length; a ``|`` in a cell is escaped.

    Example:
      >>> print(markdown_table(["width", "accuracy"], [["N = 10", "0.970"]]))
      | width | accuracy |
      |---|---|
      | N = 10 | 0.970 |
    """
    header = [str(c) for c in header]
    body = [[str(c) for c in row] for row in rows]
    if not header or any(len(row) != len(header) for row in body):
        raise ValueError(f"every row needs {len(header)} cells, one per column of the header.")

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *map(line, body)])


def scientific(x: float, digits: int = 0) -> str:
    """``x`` in scientific notation as typeset maths (for Markdown with ``$...$``), not as ``1e-06``.

    Example:
      >>> scientific(1e-6), scientific(2.5e-5, 1), scientific(0.0)
      ('$10^{-6}$', '$2.5\\\\times10^{-5}$', '$0$')
    """
    if x == 0:
        return "$0$"
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    power = f"10^{{{int(exponent)}}}"
    return f"${power}$" if mantissa in ("1", "1." + "0" * digits) else f"${mantissa}\\times{power}$"
