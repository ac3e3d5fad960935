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
