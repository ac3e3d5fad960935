"""The tasks of the paper and the book, with their data: the hidden Markov chain (:mod:`.markov`), its C-class
version (:mod:`.multiclass`), the toy needle task (:mod:`.toy`), in-context Omniglot classification
(:mod:`.omniglot`), the data loaders (:mod:`.data`) and the small example problems the docstrings and
exercises share (:mod:`.examples`)."""

from paththeory.tasks import data, examples, markov, multiclass, omniglot, toy

__all__ = ["data", "examples", "markov", "multiclass", "omniglot", "toy"]
