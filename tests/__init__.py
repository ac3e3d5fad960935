"""paththeory test suite."""
