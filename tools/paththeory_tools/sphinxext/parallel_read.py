"""Let Sphinx read (and so execute) the book's chapters in parallel processes.

Sphinx reads serially, with a warning, when any loaded extension does not declare whether parallel
reading is safe. Two extensions that Jupyter Book loads into every build declare nothing:

* ``sphinx_multitoc_numbering`` renumbers sections across toctrees in ``assign_section_numbers``,
  which Sphinx calls on the merged environment in the main process, after every document is read;
* ``sphinx_jupyterbook_latex`` adds node types and transforms that act only for LaTeX builders.

Neither keeps per-document state that a parallel read would lose, so this extension declares both
safe. With ``make book`` (``BOOK_JOBS`` processes, see tools/paththeory_tools/build.py) two chapters execute at once.

``sphinx_proof`` (the theory's definitions, lemmas and propositions) declares itself safe, but its
``prf`` domain does not implement ``merge_domaindata``, and Sphinx refuses to merge the results of
the reading processes without it. The domain holds no data of its own: the proofs of every page
live in ``env.proof_list``, which sphinx_proof merges itself (its ``env-merge-info`` handler). So
the merge this extension gives the domain has nothing to do.
"""

from __future__ import annotations

#: Extensions loaded by Jupyter Book that are safe to read in parallel but do not say so.
UNDECLARED_SAFE = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex")


def _declare(app, config) -> None:
    for name in UNDECLARED_SAFE:
        ext = app.extensions.get(name)
        if ext is not None and ext.parallel_read_safe is None:
            ext.parallel_read_safe = True


#: Domains whose data stays empty (their extension merges its state itself) but which lack
#: ``merge_domaindata``.
DOMAINS_WITHOUT_DATA = ("prf",)


def _merge_nothing(self, docnames, otherdata) -> None:
    """``Domain.merge_domaindata`` for a domain that keeps no per-document data."""


def _give_domains_a_merge(app) -> None:
    for name in DOMAINS_WITHOUT_DATA:
        domain = app.registry.domains.get(name)
        if domain is not None and "merge_domaindata" not in vars(domain):
            domain.merge_domaindata = _merge_nothing


def setup(app) -> dict:
    app.connect("config-inited", _declare)
    app.connect("builder-inited", _give_domains_a_merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
