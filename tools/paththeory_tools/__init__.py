"""The repository's tooling around the ``paththeory`` package: what builds, converts and grades the
book, never shipped in the package's wheel.

* :mod:`~paththeory_tools.notebooks`: the Colab notebooks (``notebooks/``) and the student notebooks;
* :mod:`~paththeory_tools.plain_markdown`: MyST to the plain Markdown that Colab renders;
* :mod:`~paththeory_tools.student`: stubbing solutions, the exercises page;
* :mod:`~paththeory_tools.edition`: the student edition of the web book;
* :mod:`~paththeory_tools.grading`: the instructor's side of grading with nbgrader;
* :mod:`~paththeory_tools.paper_map`: the paper map (rows in ``book/paper_map.yml``);
* :mod:`~paththeory_tools.build` and :mod:`~paththeory_tools.sphinxext`: the book's build and its
  Sphinx extensions.

The command line is ``paththeory-tools`` (``notebooks``, ``student``, ``course``).
"""
