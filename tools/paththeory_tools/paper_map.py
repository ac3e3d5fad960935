"""The paper and the book, item by item: one table with a row per equation, figure and appendix of
Tiberi, Mignacco, Irie & Sompolinsky (NeurIPS 2024), and a few rows for what the book adds.

Each :class:`Row` names the paper's item (``"Eq. 9"``, ``"Fig. 3b"``, ``"App. G.2"``), says in
the book's words what the paper does there, where the book treats it (a chapter, and a section
label ``(label)=`` inside it), which functions of the package evaluate or reproduce it, its
status (:data:`STATUSES`) with a one-line reason, how the status depends on the profile, and
where its numbers come from (:data:`SOURCES`). :data:`ROWS` is the table; :func:`row` looks one
item up, :func:`markdown_table` renders it for the book's page ``book/paper_map.md``.

A status says what the book computes and how that differs from the paper; it is not a verdict
on the paper's numbers. Where a chapter tests one of the paper's claims, the verdict of the
current build (with its noise) is in that chapter's claims table
(:mod:`paththeory.experiments.claims`).

``tests/tools/test_paper_map.py`` ties the table to the book: every required item has a row, every
label exists in its chapter, every function imports, and each row's ``cites`` appear in the
chapter's text, so a chapter that drops or renames a section breaks the test, not the map.

Example:
  >>> row("Fig. 3b").status
  'variant'
  >>> row("eq. 9").page, row("eq. 9").label
  ('derivation', 'derivation-step-predictor')
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

#: What a row's status means. The statuses, in the order the page lists them.
STATUS_MEANINGS: dict[str, str] = {
    "reproduced": "the book computes the item as the paper defines it (for an equation: derives it, "
                  "evaluates it in the package and checks it numerically; for an experiment: the "
                  "paper's set-up, with the paper's or the authors' sizes at the paper profile)",
    "variant": "the book computes the item with a stated change: another network, data, route of "
               "derivation or procedure, or a computed figure where the paper draws a diagram",
    "reduced": "the book computes only part of the item (fewer curves, points or comparisons) at "
               "every profile",
    "not reproduced": "the book does not compute the item; the reason says why",
    "the book's own": "not in the paper: something the book adds",
}
STATUSES: tuple[str, ...] = tuple(STATUS_MEANINGS)
#: Where a row's numbers come from. A row without numbers (an identity) lists none.
SOURCES: tuple[str, ...] = ("paper text", "authors' repository", "this book's choice")
#: Kinds of item, from the start of :attr:`Row.item`.
KINDS: tuple[str, ...] = ("equation", "figure", "appendix", "book")
_KIND_PREFIX = {"Eq.": "equation", "Fig.": "figure", "App.": "appendix", "Book:": "book"}


@dataclass(frozen=True)
class Row:
    """One item of the paper (or one addition of the book) and where the book treats it.

    ``item``: the paper's name for it (``"Eq. 9"``, ``"Fig. 2c (top)"``, ``"App. H.2.1"``) or
    ``"Book: ..."`` for an addition; ``paper``: what the paper does there, in the book's words;
    ``page``: the chapter (``book/<page>.md``); ``label``: a section label ``(label)=`` in that
    chapter (empty: the whole chapter); ``functions``: dotted names of the package's functions or
    classes that evaluate or reproduce it; ``status``: one of :data:`STATUSES`; ``reason``: one
    line, required unless the status is "reproduced"; ``profile``: how the row depends on the
    profile (empty: it does not); ``numbers``: the sources (:data:`SOURCES`) of its numbers;
    ``numbers_note``: which number comes from which source; ``cites``: strings with which the
    chapter cites the item (checked by the tests).
    """

    item: str
    paper: str
    page: str
    label: str = ""
    functions: tuple[str, ...] = ()
    status: str = "reproduced"
    reason: str = ""
    profile: str = ""
    numbers: tuple[str, ...] = ()
    numbers_note: str = ""
    cites: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"{self.item}: status {self.status!r} is not one of {STATUSES}")
        if self.status != "reproduced" and not self.reason:
            raise ValueError(f"{self.item}: a row that is not 'reproduced' needs a reason")
        unknown = set(self.numbers) - set(SOURCES)
        if unknown:
            raise ValueError(f"{self.item}: unknown sources {sorted(unknown)}; use {SOURCES}")
        if not any(self.item.startswith(p) for p in _KIND_PREFIX):
            raise ValueError(f"{self.item}: an item starts with one of {tuple(_KIND_PREFIX)}")

    @property
    def kind(self) -> str:
        """``"equation"``, ``"figure"``, ``"appendix"`` or ``"book"``."""
        return next(k for p, k in _KIND_PREFIX.items() if self.item.startswith(p))

    @property
    def target(self) -> str:
        """The MyST cross-reference target: the section label, or the chapter's name."""
        return self.label or self.page


_MARKOV_HEADS = ("the random heads are new draws from the authors' distribution (NumPy, with the "
                 "authors' seeds and scales), so the adversarial and denoising paths are not the "
                 "paper's")
_MARKOV_PROFILE = ("smoke: theory at 5 widths, NUTS at N = 10 only (2 short chains); colab: the "
                   "7 widths, NUTS at N = 10, 30, 100; paper: NUTS at 6 widths")
_MARKOV_NUMBERS = ("P = 100, P_test = 1000, T = 0.01, the widths, β = 10 and the random heads' "
                   "scales and seeds: authors' repository (lost from the paper's text); NumPy "
                   "draws and the smoke and colab sizes: this book's choice")
_OWN_NETWORK = ("a network trained here (another recipe, 158 Omniglot characters with their "
                "rotations)")
_OMNIGLOT_PROFILE = ("smoke: 3 widths × 4 temperatures, one short NUTS chain at N = 10; colab and "
                     "paper: the authors' 10 widths × 10 temperatures, 4 or 10 chains")
_OMNIGLOT_NUMBERS = ("P = 600, the widths and temperatures: authors' repository (the paper's text "
                     "says ten of each); the smoke grid and choosing T on validation characters: "
                     "this book's choice")
_VERDICT = "this build's verdict is in the chapter's claims table"

ROWS: tuple[Row, ...] = (
    # ------------------------------------------------------------------ equations of the main text
    Row("Eq. 1", "the input projection of the tokens to the width N", "model", "model-architecture",
        ("paththeory.model.network_output", "paththeory.model.sample_prior"), cites=("Eqs. 1–4",)),
    Row("Eq. 2", "one multi-head attention layer: each head's values applied to the attention-mixed "
        "output of the layer below", "model", "model-architecture",
        ("paththeory.model.network_output",), cites=("Eqs. 1–4",)),
    Row("Eq. 3", "the attention matrix: a softmax over keys of query-key scores computed from the "
        "bare input", "model", "model-architecture",
        ("paththeory.model.attention_matrices", "paththeory.model.QKAttention",
         "paththeory.model.ScoreAttention"), cites=("Eqs. 1–4",)),
    Row("Eq. 4", "the linear readout from one token or the mean over tokens", "model",
        "model-architecture", ("paththeory.model.network_output", "paththeory.model.readout_vector"),
        cites=("Eqs. 1–4",)),
    Row("Eq. 5", "the output as a sum over attention paths", "model", "model-attention-paths",
        ("paththeory.model.path_expansion_output", "paththeory.model.path_contributions"),
        reason="checked against the layer-by-layer forward pass", cites=("Eqs. 5–7",)),
    Row("Eq. 6", "the effective weights of a path", "model", "model-attention-paths",
        ("paththeory.model.effective_weights",),
        reason="written without the input projection, as in the authors' code (the paper's "
               "symbols were lost)", cites=("Eqs. 5–7",)),
    Row("Eq. 7", "the attentioned input of a path", "model", "model-attention-paths",
        ("paththeory.model.path_attention", "paththeory.model.path_features"), cites=("Eqs. 5–7",)),
    Row("Eq. 8", "the Gibbs posterior of the input-projection, value and readout weights at "
        "temperature T, with Gaussian priors", "derivation", "derivation-partition-function",
        ("paththeory.sampling.posterior_model", "paththeory.sampling.sample_posterior"),
        reason="sampled with NUTS in the experiments (App. F row)", numbers=("authors' repository",),
        numbers_note="prior variances 1 (the paper's value was lost from its text)",
        cites=("Eq. 8",)),
    Row("Eq. 9", "the mean predictor: kernel regression with the renormalised kernel",
        "derivation", "derivation-step-predictor", ("paththeory.predict.predictor",),
        reason="derived for one layer, checked by quadrature; compared with NUTS in the "
               "experiments", cites=("Eq. 9",)),
    Row("Eq. 10", "the kernel: path-path kernels weighted by the order parameter U", "model",
        "model-path-kernels",
        ("paththeory.kernels.path_kernels", "paththeory.kernels.kernel_matrix",
         "paththeory.kernels.gp_kernel"), cites=("Eq. 10",)),
    Row("Eq. 11", "U minimises the action S(U)", "derivation", "derivation-one-layer",
        ("paththeory.solve.Theory.solve", "paththeory.solve.solve", "paththeory.solve.sweep"),
        reason="the minimum reached from the GP point; the action is not convex, so it is not "
               "proven global (a multi-start test in the solver chapter)", cites=("Eq. 11",)),
    Row("Eq. 12", "the action: an entropy plus an energy, the negative log evidence of the labels",
        "derivation", "derivation-one-layer",
        ("paththeory.action.action", "paththeory.action.entropy", "paththeory.action.energy"),
        reason="the book's entropy enters with a plus sign and is least at the GP point; the "
               "paper's wording implies the opposite sign (the same U*)", cites=("Eq. 12",)),
    Row("Eq. 13", "Result 2: U is the posterior mean overlap of the paths' effective weights",
        "order_parameter", "derivation-result-2",
        ("paththeory.model.effective_weights", "paththeory.sampling.sample_posterior",
         "paththeory.training.gd_order_parameter"),
        reason="derived by a shorter route than App. D and checked by Monte Carlo; the NUTS and "
               "gradient-descent estimates of U use it", cites=("Eq. 13",)),
    # ------------------------------------------------------------------ equations of App. B.1
    Row("Eq. 29", "the mean predictor at any depth", "derivation", "derivation-step-predictor",
        ("paththeory.predict.predictor",), cites=("Eqs. 29–30",)),
    Row("Eq. 30", "the variance of the predictor", "markov", "markov-variance",
        ("paththeory.predict.predictor", "paththeory.experiments.markov.variance_vs_samples"),
        reason="derived in the derivation chapter; compared with the NUTS samples' variance at every "
               "sampled width of the Markov task", cites=("Eq. 30",)),
    Row("Eq. 31", "the kernel at any depth (Eq. 10 again)", "model", "model-path-kernels",
        ("paththeory.kernels.kernel_matrix",), cites=("Eq. 31",)),
    Row("Eq. 32", "the action at any depth, with one order parameter per layer and a scalar one "
        "for the readout", "depth", "derivation-any-depth",
        ("paththeory.action.action", "paththeory.action.entropy_with_readout",
         "paththeory.action.readout_order_parameter", "paththeory.action.gp_order_parameters"),
        reason="its entropy checked against the chain of exact Gamma and Wishart densities",
        cites=("Eqs. 32–34",)),
    Row("Eq. 33", "a function of one matrix used to write the action's entropy terms (read from "
        "the prose; the symbols were lost)", "depth", "derivation-any-depth",
        ("paththeory.action.entropy",), cites=("Eqs. 32–34",)),
    Row("Eq. 34", "the energy term (so named in App. H.2.1)", "depth", "derivation-any-depth",
        ("paththeory.action.energy", "paththeory.hessian.energy_derivatives"), cites=("Eqs. 32–34",)),
    # ------------------------------------------------------------------ figures
    Row("Fig. 1a", "a diagram of the attention paths", "model", "model-attention-paths",
        ("paththeory.model.path_attention",), status="variant",
        reason="the chapter draws the path attention vectors of a small random network instead",
        numbers=("this book's choice",), numbers_note="the small network"),
    Row("Fig. 1c", "kernel-task alignment: the energy favours kernels whose leading principal "
        "components lie along the labels", "gp_vs_finite", "gp-vs-finite-alignment",
        ("paththeory.predict.pc_label_overlap", "paththeory.display.widgets.draw_overlaps"), status="variant",
        reason="an illustration in the paper; computed here on this book's toy task",
        numbers=("this book's choice",), numbers_note="the toy task", cites=("Fig. 1(c, d)",)),
    Row("Fig. 1d", "kernel combination: the GP adds the same-path kernels with equal weights, "
        "finite width weighs and correlates the paths", "gp_vs_finite", "gp-vs-finite-load",
        ("paththeory.solve.Theory.sweep", "paththeory.display.widgets.static_explorer"), status="variant",
        reason="an illustration in the paper; computed here on this book's toy task",
        numbers=("this book's choice",), numbers_note="the toy task", cites=("Fig. 1(c, d)",)),
    Row("Fig. 2a", "a diagram of the hidden-Markov-chain task", "markov", "markov-task",
        ("paththeory.tasks.markov.sample_task",), status="variant",
        reason="the chapter plots one sequence of each class instead",
        numbers=("authors' repository",), numbers_note="the task's sizes (App. G.1 row)"),
    Row("Fig. 2b", "a diagram of the network's four attention paths", "markov", "markov-network",
        ("paththeory.tasks.markov.four_paths",), status="variant",
        reason="the chapter tabulates the four paths and draws the good head's attention"),
    Row("Fig. 2c (top)", "test accuracy against the width: theory, NUTS, and the GP on all paths, "
        "on the good path and on the good and denoising paths", "markov", "markov-accuracy",
        ("paththeory.experiments.markov.run", "paththeory.experiments.markov.theory_curve",
         "paththeory.experiments.markov.gp_accuracy", "paththeory.experiments.markov.plot_accuracy"),
        status="variant", reason=_MARKOV_HEADS, profile=_MARKOV_PROFILE,
        numbers=("authors' repository", "this book's choice"), numbers_note=_MARKOV_NUMBERS,
        cites=("Fig. 2c",)),
    Row("Fig. 2c (bottom)", "the order parameter U at three widths, with its NUTS estimate",
        "markov", "markov-order-parameter",
        ("paththeory.experiments.markov.plot_order_parameters",
         "paththeory.experiments.markov.plot_sampled_order_parameters",
         "paththeory.sampling.sample_posterior"),
        status="variant", reason=_MARKOV_HEADS, profile=_MARKOV_PROFILE,
        numbers=("authors' repository", "this book's choice"), numbers_note=_MARKOV_NUMBERS,
        cites=("Fig. 2c, bottom",)),
    Row("Fig. 2d", "overlap of the labels with the kernel's principal components, finite width "
        "against the GP", "markov", "markov-pc-overlap",
        ("paththeory.experiments.markov.pc_overlaps", "paththeory.predict.pc_label_overlap",
         "paththeory.experiments.markov.plot_pc_overlaps"),
        status="variant", reason=_MARKOV_HEADS,
        profile="none: the training set and the smallest width are the same in every profile",
        numbers=("authors' repository",), numbers_note="the top 30 components, P = 100",
        cites=("Fig. 2d",)),
    Row("Fig. 2e", "a noisier task run with the good and the (random) denoising path only",
        "markov", "markov-two-paths",
        ("paththeory.tasks.markov.two_paths_noisy", "paththeory.experiments.markov.theory_curve",
         "paththeory.experiments.markov.gp_accuracy"),
        status="reduced",
        reason="the random-head run is printed for the theory and the GP on both paths, without "
               "NUTS; the plotted run is the uniform-head variant (Fig. 5c row)",
        numbers=("authors' repository",), numbers_note="σ⊥ = 5 (lost from the paper's text)",
        cites=("Fig. 2e",)),
    Row("Fig. 2f", "App. G.2.2's name for the noisier two-path experiment, which §4.1 shows as Fig. 2e "
        "(the text we have has no panel f)", "markov", "markov-two-paths",
        ("paththeory.tasks.markov.two_paths_noisy",), status="variant",
        reason="the same experiment as the Fig. 2e and Fig. 5c rows, under the name App. G.2.2 gives it",
        numbers=("authors' repository",), numbers_note="see the Fig. 2e row", cites=("Fig. 2(f)",)),
    Row("Fig. 3a", "a diagram of the one-shot, in-context image task", "omniglot", "omniglot-task",
        ("paththeory.experiments.omniglot.plot_sequence", "paththeory.tasks.omniglot.icl_sequences"),
        status="variant", reason="the chapter draws one training sequence instead",
        numbers=("authors' repository",),
        numbers_note="16 patches per image, 48 tokens, N0 = 192, the label vectors"),
    Row("Fig. 3b", "accuracy against the width, in and out of distribution: theory, GP and NUTS",
        "omniglot", "omniglot-accuracy",
        ("paththeory.experiments.omniglot.run", "paththeory.experiments.omniglot.theory_sweep",
         "paththeory.experiments.omniglot.gp_accuracies",
         "paththeory.experiments.omniglot_figures.plot_accuracy",
         "paththeory.experiments.claims.fig3_claims"),
        status="variant",
        reason=f"{_OWN_NETWORK}; T chosen on validation characters; the out-of-distribution "
               f"contexts are test images; {_VERDICT}",
        profile=_OMNIGLOT_PROFILE, numbers=("authors' repository", "this book's choice"),
        numbers_note=_OMNIGLOT_NUMBERS + "; the 2-point 'comparable' tolerance: this book's choice",
        cites=("Fig. 3b",)),
    Row("Fig. 3c", "U from the theory, from NUTS samples and from the gradient-descent weights",
        "omniglot", "omniglot-order-parameter",
        ("paththeory.experiments.omniglot.compare_order_parameters",
         "paththeory.experiments.omniglot_figures.plot_order_parameters",
         "paththeory.training.gd_order_parameter", "paththeory.experiments.stats.mantel_test"),
        status="variant",
        reason=f"{_OWN_NETWORK}; patterns compared by Mantel tests; {_VERDICT}",
        profile="smoke: one chain of 100 draws; colab: 4 chains of 200; paper: 10 chains",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="N = 10, P = 600: authors' repository; the 20 % tolerance on the NUTS "
                     "distance: this book's choice",
        cites=("Fig. 3c",)),
    Row("Fig. 3d", "overlap of the labels with the kernel's principal components", "omniglot",
        "omniglot-pc-overlap",
        ("paththeory.experiments.omniglot.pc_overlaps", "paththeory.predict.pc_label_overlap",
         "paththeory.experiments.omniglot_figures.plot_pc_overlaps"),
        status="variant", reason=f"{_OWN_NETWORK}; {_VERDICT}",
        numbers=("authors' repository",), numbers_note="the top 50 components, as in the authors' plot",
        cites=("Fig. 3d",)),
    Row("Fig. 3e", "each head's score from U against the accuracy lost when it alone is pruned",
        "pruning", "pruning-single-heads",
        ("paththeory.pruning.head_scores", "paththeory.pruning.pruned_accuracies",
         "paththeory.experiments.pruning.plot_head_scores", "paththeory.experiments.stats.spearman_test"),
        status="variant",
        reason=f"{_OWN_NETWORK}; drops on held-out characters (the paper's text names no "
               f"split); {_VERDICT}",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="the (H − d)^(-1/2) rescaling and the authors' drops: authors' repository; "
                     "the split: this book's choice",
        cites=("Fig. 3e",)),
    Row("Fig. 3f", "accuracy after pruning heads cumulatively in order of score, in and out of "
        "distribution", "pruning", "pruning-cumulative",
        ("paththeory.pruning.score_order", "paththeory.pruning.pruning_curves",
         "paththeory.experiments.pruning.plot_pruning"),
        status="variant", reason=f"{_OWN_NETWORK}; {_VERDICT}",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="the rescaling: authors' repository; the 2-point 'marginal' threshold: "
                     "this book's choice",
        cites=("Fig. 3f",)),
    Row("Fig. 4", "a diagram of the model (App. A)", "model", "model-architecture",
        status="not reproduced",
        reason="a diagram; the chapter writes the forward pass as equations and checks it",
        cites=("App. A",)),
    Row("Fig. 5a", "a diagram of the four paths of the Markov-task network (App. G.2)", "markov",
        "markov-network", status="not reproduced",
        reason="a diagram; the chapter lists the four paths in a table"),
    Row("Fig. 5b", "the same-path kernels, the GP kernel and the renormalised kernel", "markov",
        "markov-path-kernels", ("paththeory.experiments.markov.plot_kernels",), status="variant",
        reason=_MARKOV_HEADS, numbers=("authors' repository", "this book's choice"),
        numbers_note="25 sequences per class: this book's choice", cites=("Fig. 5b",)),
    Row("Fig. 5c", "Fig. 2e's experiment with an exactly uniform denoising head", "markov",
        "markov-two-paths",
        ("paththeory.experiments.markov.plot_two_path", "paththeory.tasks.markov.two_paths_noisy"),
        profile="smoke: theory and GP only, no NUTS; colab: NUTS at N = 10; paper: NUTS at "
                "N = 10, 30, 100",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="σ⊥ = 5 and the sizes of Fig. 2: authors' repository; the sampled widths: "
                     "this book's choice",
        cites=("Fig. 5c",)),
    Row("Fig. 6", "accuracy of the deeper network (3 layers of 3 heads), in and out of "
        "distribution", "beyond", "beyond-deeper",
        ("paththeory.experiments.omniglot.run", "paththeory.experiments.claims.fig3_claims"),
        status="variant",
        reason="an L = 3, H = 3 network trained here; no NUTS; which data set the paper calls "
               f"'comparable' is read from App. H.2.2's text; {_VERDICT}",
        profile="smoke: 2 widths × 3 temperatures; colab and paper: the full grid",
        numbers=("authors' repository", "this book's choice"), numbers_note=_OMNIGLOT_NUMBERS,
        cites=("Fig. 6",)),
    Row("Fig. 7", "head scores and cumulative pruning of the wider network (2 layers of 8 heads)",
        "beyond", "beyond-wider",
        ("paththeory.experiments.pruning.plot_head_scores",
         "paththeory.experiments.pruning.plot_pruning", "paththeory.experiments.claims.layer_counts"),
        status="variant",
        reason="an L = 2, H = 8 network trained here; only per-layer summaries of the pruning "
               f"order compare across networks; {_VERDICT}",
        profile="smoke: P = 300, 2 widths × 3 temperatures; colab and paper: P = 600, full grid",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="the authors' pruning order: authors' repository; the smoke sizes: this "
                     "book's choice",
        cites=("Fig. 7",)),
    # ------------------------------------------------------------------ appendices
    Row("App. I", "related theory work (Part I; the main text calls it Appendix I)", "references",
        status="not reproduced",
        reason="a survey of related work with nothing to compute; the chapters cite the works "
               "they use"),
    Row("App. A", "definitions: the model again (Eqs. 14–19) and the path notation (Eqs. 20–28)",
        "model", "",
        ("paththeory.model.Architecture", "paththeory.model.path_features"), cites=("App. A",)),
    Row("App. B", "the results at any depth: predictor statistics and action (B.1, Eqs. 29–34), "
        "the meaning of U (B.2)", "depth", "derivation-any-depth",
        ("paththeory.action.action", "paththeory.predict.predictor"), cites=("App. B.1",)),
    Row("App. C.1", "the partition function with a source term (Eqs. 36–40)", "derivation",
        "derivation-partition-function", cites=("App. C.1",)),
    Row("App. C.2", "the weights integrated layer by layer, from the readout down, by induction",
        "derivation", "derivation-step-readout",
        ("paththeory.action.entropy_with_readout", "paththeory.action.inner_order_parameter_l2"),
        status="variant",
        reason="each power is written as an exact Gamma or Wishart integral over an overlap, not "
               "as a delta function with a conjugate order parameter; the same action",
        cites=("App. C.2.2",)),
    Row("App. C.3", "the auxiliary variables integrated: the predictor and the action",
        "derivation", "derivation-step-predictor", ("paththeory.predict.predictor",)),
    Row("App. D", "the derivation of Result 2 with a second source term", "order_parameter",
        "derivation-result-2", ("paththeory.model.effective_weights",), status="variant",
        reason="a shorter route: given the effective weights the output is Gaussian in the input "
               "projection, so U's posterior is a Wishart prior times the label evidence",
        cites=("App. D",)),
    Row("App. E", "the action minimised numerically, by Adam, over a grid of widths and "
        "temperatures", "solver", "derivation-solver",
        ("paththeory.solve.Theory.solve", "paththeory.experiments.bench.baseline_adam", "paththeory.experiments.bench.compare"),
        status="variant",
        reason="L-BFGS on Cholesky factors with one exact-Hessian restart; Adam on free symmetric "
               "matrices is the benchmark's baseline",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="Adam's learning rates and stopping rule: authors' repository; the solver's "
                     "tolerance: this book's choice"),
    Row("App. F", "posterior sampling with NUTS (NumPyro)", "markov", "markov-sampling",
        ("paththeory.sampling.sample_posterior", "paththeory.sampling.posterior_model",
         "paththeory.sampling.draw_readout"),
        status="variant",
        reason="the readout is integrated out and drawn from its exact conditional, in float64; "
               "the authors sampled every weight in float32 (the same posterior)",
        profile="fewer and shorter chains in smoke and colab (each chapter prints its own)",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="Omniglot's 10 chains of 100 + 100 draws: authors' repository; the Markov "
                     "chains, the smoke and colab chains and the time limits: this book's choice",
        cites=("App. F",)),
    Row("App. G.1", "the hidden-Markov-chain task", "markov", "markov-task",
        ("paththeory.tasks.markov.sample_task",), numbers=("authors' repository",),
        numbers_note="30 steps, flip probabilities 0.3 and 0.7, 200 features, the noise "
                     "strengths, P = 100, P_test = 1000, T = 0.01 (lost from the paper's text)",
        cites=("App. G.1",)),
    Row("App. G.2", "the designed good heads and the random heads", "markov", "markov-network",
        ("paththeory.tasks.markov.same_token_head", "paththeory.tasks.markov.uniform_head",
         "paththeory.tasks.markov.random_head", "paththeory.tasks.markov.four_paths"),
        status="variant",
        reason="random heads redrawn with NumPy; readout from the last token as in the authors' "
               "code, where the paper's text says the first",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="β = 10, the block scales and seeds: authors' repository; the generator: "
                     "this book's choice",
        cites=("App. G.2.2",)),
    Row("App. H.1", "the gradient-descent training of the network whose queries and keys the "
        "theory uses", "omniglot", "omniglot-trained-network",
        ("paththeory.training.train", "paththeory.experiments.omniglot.trained_network"),
        status="variant",
        reason="AdamW with warm-up and clipping in fp32 on 158 characters with rotations for "
               "41,000 steps; the paper used Adam on 1,028 characters for 10 epochs",
        profile="paper: retrains a network with the shipped one's configuration; smoke and "
                "colab: the shipped network",
        numbers=("paper text", "authors' repository", "this book's choice"),
        numbers_note="batches of 128, validation every 1,000 steps: paper text; learning rate, "
                     "widths, G = 128: authors' repository; the recipe's changes: this book's "
                     "choice",
        cites=("App. H.1",)),
    Row("App. H.2.1", "the temperature chosen for each width, and why it grows as N shrinks",
        "omniglot", "omniglot-temperature",
        ("paththeory.experiments.omniglot.select_temperature",
         "paththeory.experiments.omniglot.temperature_trend",
         "paththeory.experiments.omniglot_figures.plot_temperature_grid"),
        status="variant",
        reason="chosen on validation characters (the authors' code scores the test sequences); "
               f"the trend is a bootstrapped rank correlation; {_VERDICT}",
        profile=_OMNIGLOT_PROFILE, numbers=("authors' repository", "this book's choice"),
        numbers_note=_OMNIGLOT_NUMBERS, cites=("App. H.2.1",)),
    Row("App. H.2.2", "the deeper network's accuracy (Fig. 6)", "beyond", "beyond-deeper",
        ("paththeory.experiments.omniglot.run",), status="variant", reason="see the Fig. 6 row",
        cites=("App. H.2.2",)),
    Row("App. H.2.3", "head pruning in the wider network (Fig. 7)", "beyond", "beyond-wider",
        ("paththeory.experiments.pruning.pruning_stage",), status="variant",
        reason="see the Fig. 7 row", cites=("App. H.2.3",)),
    # ------------------------------------------------------------------ the book's own
    Row("Book: toy task", "a needle task with one useful path, where the right weighting is known",
        "gp_vs_finite", "gp-vs-finite-toy-task",
        ("paththeory.tasks.toy.sample_task", "paththeory.tasks.toy.architecture"),
        status="the book's own", reason="isolates the re-weighting of paths on a task built for it",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="P = 100 as in the authors' Markov task; everything else: this book's choice"),
    Row("Book: saddle point", "which terms the saddle point drops, and when they are small",
        "depth", "derivation-saddle-validity", status="the book's own",
        reason="the paper states its limit; the book counts the dropped terms (|Π|/N)"),
    Row("Book: validity figure", "theory against NUTS as |Π|/N grows, Markov (4 paths) and Omniglot (16 paths) "
        "from N = 10 up (the paper's §4.2 remark on small widths, measured)", "depth",
        "derivation-saddle-measured",
        ("paththeory.experiments.validity.sample_points", "paththeory.experiments.validity.compare"),
        status="the book's own", reason="the paper remarks that theory and sampling agree even at its "
        "smallest Omniglot width; the book measures the distance at several values of |Π|/N",
        profile="smoke and colab: Markov N = 10, 30, 100 and Omniglot N = 10, 20, sampled once on a CPU and "
        "shipped with the package; paper: more widths and draws, sampled as the page is built",
        numbers=("authors' repository", "this book's choice"),
        numbers_note="Markov P = 100 and T = 0.01 from the authors' repository (as in the Fig. 2 chapter); "
        "the widths, the Omniglot P and T and the draws: this book's choice"),
    Row("Book: pruning tests", "random and reverse pruning orders, and how the score depends on "
        "the width, the rule and the training set", "pruning", "pruning-score-sensitivity",
        ("paththeory.pruning.random_orders", "paththeory.experiments.pruning.score_variants",
         "paththeory.experiments.pruning.score_sensitivity"),
        status="the book's own", reason="tests the paper does not make, marked so in the claims tables",
        numbers=("this book's choice",), numbers_note="1,000 random orders, P = 150 and 300"),
    Row("Book: many outputs", "the theory with C outputs (the paper's outlook), checked against NUTS on a "
        "three-class Markov-chain task", "many_outputs", "many-outputs-derivation",
        ("paththeory.solve.Theory", "paththeory.sampling.sample_posterior",
         "paththeory.tasks.multiclass.sample_task", "paththeory.experiments.multiclass.run"),
        status="the book's own", reason="the paper names the extension and leaves it undone",
        profile="smoke: NUTS at two widths (2 short chains); colab and paper: three and four widths",
        numbers=("this book's choice",), numbers_note="the task, P, T, the widths and the draws"),
    Row("Book: N-way Omniglot", "the C-output theory and the GP on 5- and 20-way one-shot tasks with the "
        "queries and keys of the 2-way network, the heads' attention there, and 2-way controls that change "
        "the label vectors or the query's position alone", "many_outputs", "many-outputs-nway",
        ("paththeory.experiments.omniglot_nway.run", "paththeory.experiments.omniglot_nway.query_attention",
         "paththeory.experiments.omniglot_nway.controls", "paththeory.tasks.omniglot.assemble_nway_tokens"),
        status="the book's own", reason="the paper's Omniglot task is 2-way (§4.2); C-way versions are this "
        "book's test", profile="smoke: 5- and 20-way at P = 120 and 30, one temperature, controls at P = 600; "
        "colab and paper: also 2-way, four temperatures",
        numbers=("this book's choice",), numbers_note="the new label vectors and positions, P and the splits",
        cites=("§4.2",)),
)


def _key(item: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[()]", " ", item)).strip().lower()


_INDEX: dict[str, Row] = {_key(r.item): r for r in ROWS}
if len(_INDEX) != len(ROWS):  # pragma: no cover - a duplicate item is a bug in the table
    raise ValueError("two rows of the paper map have the same item")


def row(item: str) -> Row:
    """The row of ``item`` (case, spaces and parentheses do not matter: ``"fig. 2c top"``).

    Example:
      >>> row("Fig. 2c top").item
      'Fig. 2c (top)'
    """
    try:
        return _INDEX[_key(item)]
    except KeyError:
        raise KeyError(f"no row for {item!r}; the items are: {', '.join(r.item for r in ROWS)}") from None


def rows(kind: str | None = None, status: str | None = None, page: str | None = None) -> list[Row]:
    """The rows of one kind (:data:`KINDS`), status and chapter (``None``: any), in table order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}; got {status!r}")
    return [r for r in ROWS if (kind is None or r.kind == kind) and (status is None or r.status == status)
            and (page is None or r.page == page)]


def resolve(name: str):
    """The object a dotted name points to, importing the longest module prefix.

    Example:
      >>> resolve("paththeory.predict.predictor").__name__
      'predictor'
    """
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(f"no module in {name!r}")


def status_counts(selected: list[Row] | None = None) -> dict[str, int]:
    """How many rows have each status."""
    selected = ROWS if selected is None else selected
    return {s: sum(r.status == s for r in selected) for s in STATUSES}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _book_cell(r: Row, myst: bool) -> str:
    if myst:
        where = f"{{ref}}`{r.label}` ({{doc}}`{r.page}`)" if r.label else f"{{doc}}`{r.page}`"
    else:
        where = f"chapter {r.page}" + (f", section {r.label}" if r.label else "")
    return where + "".join(f", `{f}`" for f in r.functions)


def markdown_table(selected: list[Row] | None = None, myst: bool = True) -> str:
    """The rows (default: all) as a Markdown table of four columns: the paper's item and what it
    does, the book's section and functions, the status with its reason and profile, and where the
    numbers come from. ``myst=True`` links the sections with MyST roles (for the book's pages);
    ``myst=False`` names them in plain Markdown (for a notebook outside the book, e.g. on Colab).

    Example:
      >>> print(markdown_table([row("Eq. 10")], myst=False))  # doctest: +NORMALIZE_WHITESPACE
      | the paper | in the book | status | numbers from |
      |---|---|---|---|
      | **Eq. 10**: the kernel: path-path kernels weighted by the order parameter U
        | chapter model, section model-path-kernels, `paththeory.kernels.path_kernels`,
        `paththeory.kernels.kernel_matrix`, `paththeory.kernels.gp_kernel` | **reproduced**
        | none (no numbers) |
    """
    selected = list(ROWS if selected is None else selected)
    lines = ["| the paper | in the book | status | numbers from |", "|---|---|---|---|"]
    for r in selected:
        status = f"**{r.status}**" + (f": {r.reason}" if r.reason else "")
        if r.profile:
            status += f" (profiles: {r.profile})"
        numbers = "; ".join(r.numbers) if r.numbers else "none (no numbers)"
        if r.numbers_note:
            numbers += f": {r.numbers_note}"
        cells = (f"**{r.item}**: {r.paper}", _book_cell(r, myst), status, numbers)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def status_legend() -> str:
    """The statuses and what each means, as a Markdown list, with how many rows have each."""
    counts = status_counts()
    return "\n".join(f"* **{s}** ({counts[s]} row{'s' if counts[s] != 1 else ''}): {m}."
                     for s, m in STATUS_MEANINGS.items())


def summary() -> str:
    """One sentence: how many rows of each kind, and how many of each status."""
    kinds = {k: len(rows(kind=k)) for k in KINDS}
    counts = status_counts()
    return (f"The table has {len(ROWS)} rows: {kinds['equation']} equations, {kinds['figure']} figures, "
            f"{kinds['appendix']} appendices and {kinds['book']} additions of the book. "
            + ", ".join(f"{n} {s}" for s, n in counts.items()) + ".")
