"""What a reader sees: figures in the book's style (:mod:`.plots`), the explorer of the chapter "GP limit
versus finite width" (:mod:`.widgets`), the notice of a chapter that lacks a file (:mod:`.notices`) and
Markdown tables (:mod:`.tables`)."""

from paththeory.display import notices, plots, tables, widgets

__all__ = ["notices", "plots", "tables", "widgets"]
