"""Tasks of the paper: the hidden Markov chain (``markov``) and in-context image classification."""
