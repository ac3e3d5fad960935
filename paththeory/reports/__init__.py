"""The words: tables, sentences and figures that format an experiment's findings and compute nothing.

One module per experiment whose findings are typed (:mod:`paththeory.experiments.prefactor` and its report
:mod:`.prefactor`). A report reads the numbers and verdicts that its experiment stored and only formats them: it
imports no statistics and reduces no arrays (``tests/package/test_reports.py`` checks both), so rewording a sentence
changes no verdict and breaks one wording test, not a science test.
"""
