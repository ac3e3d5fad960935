"""The words: tables, sentences and figures that format an experiment's findings and compute nothing.

One module per experiment (:mod:`.markov`, :mod:`.omniglot`, :mod:`.claims`, :mod:`.multiclass`,
:mod:`.omniglot_nway`, :mod:`.residual`, :mod:`.validity`, :mod:`.prefactor`), with :mod:`.agreement` (two samplers
against each other) and :mod:`.records` (where shipped records come from). A report reads the numbers and verdicts
that its experiment stored (typed findings, :mod:`paththeory.experiments`) and only formats them: it imports no
statistics and reduces no arrays (``tests/package/test_reports.py`` checks both), so rewording a sentence changes no
verdict and breaks one wording test (``tests/reports/``), not a science test.
"""
