"""The statistics behind the book's verdicts: standard errors, permutation tests, a three-way verdict.

Every claim of the paper that the book tests ends in one of three verdicts (:data:`VERDICTS`):

* ``"holds"``: the measurement supports the claim beyond its noise;
* ``"fails"``: the measurement contradicts the claim beyond its noise;
* ``"within noise"``: the measurement cannot tell.

A claim whose measurement stopped short (a sampling run cut by a time budget its caller asked for,
``on_time_limit="stop"`` of :func:`paththeory.sampling.posterior.sample_posterior`) gets no verdict but
:data:`NOT_ENOUGH_DRAWS`: a number from a cut chain depends on how busy the machine was.

"Beyond its noise" means two standard errors for an estimate (:func:`verdict`) and a one-sided
p-value below 0.05 for a test (:func:`verdict_from_p`). The tests are permutation tests, so they
assume nothing about the shape of the data: :func:`spearman_test` (exact enumeration up to 8
items) and :func:`mantel_test` (the correlation of two matrices, rows and columns permuted
together).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.stats import rankdata

from paththeory._checks import as_float_array, check_count, check_finite, check_open_interval, check_symmetric

VERDICTS = ("holds", "within noise", "fails")
#: What a claim gets instead of a verdict when its sampling run was stopped before all its draws.
NOT_ENOUGH_DRAWS = "not enough draws"
#: Every value a claim's ``verdict`` field can take.
OUTCOMES = (*VERDICTS, NOT_ENOUGH_DRAWS)
#: Above this many items a permutation test samples permutations instead of enumerating them all.
EXACT_MAX_ITEMS = 8


def standard_error(p: float, n: int) -> float:
    """Binomial standard error ``sqrt(p (1 - p) / n)`` of an accuracy ``p`` measured on ``n`` items.

    Example:
      >>> round(standard_error(0.8, 1000), 4)
      0.0126
    """
    n = check_count(n, "n")
    if isinstance(p, bool) or not (isinstance(p, (int, float, np.integer, np.floating)) and 0 <= p <= 1):
        raise ValueError(f"p must be an accuracy between 0 and 1; got {p!r}.")
    return float(math.sqrt(max(p * (1 - p), 1e-12) / n))


def paired_difference(a, b) -> dict:
    """Mean of ``a - b`` over paired items and its standard error ``sd(a - b) / sqrt(n)``.

    ``a``, ``b``: per-item scores ``[n]`` on the *same* items (e.g. 0/1 correctness of two predictors
    on one test set). Pairing removes the variance the two share, so the error is smaller than
    that of two independent accuracies.

    Example:
      >>> d = paired_difference([1, 1, 0, 1], [1, 0, 0, 0])
      >>> d["difference"], round(d["se"], 3), d["n"]
      (0.5, 0.289, 4)
    """
    a, b = as_float_array(a, "a", ndim=1), as_float_array(b, "b", ndim=1)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"a and b must be paired 1-D arrays of at least 2 items; got {a.shape} and {b.shape}.")
    d = a - b
    return {"difference": float(d.mean()), "se": float(d.std(ddof=1) / math.sqrt(d.size)), "n": int(d.size)}


def verdict(estimate: float, se: float, threshold: float = 0.0, z: float = 2.0) -> str:
    """Verdict on the claim ``estimate > threshold``: ``"holds"`` when ``estimate - z se > threshold``,
    ``"fails"`` when ``estimate + z se < threshold``, else ``"within noise"``.

    For a claim ``estimate < threshold``, pass ``-estimate`` and ``-threshold``. A NaN ``se`` (noise not
    estimated) gives ``"within noise"``; a non-finite estimate or a negative ``se`` raises a ValueError.

    Example:
      >>> verdict(0.05, 0.01), verdict(0.01, 0.01), verdict(-0.05, 0.01)
      ('holds', 'within noise', 'fails')
    """
    estimate, threshold = check_finite(estimate, "estimate"), check_finite(threshold, "threshold")
    z = check_finite(z, "z")
    if isinstance(se, (bool, np.bool_)) or not isinstance(se, (int, float, np.integer, np.floating)) or se < 0:
        raise ValueError(f"se must be a standard error >= 0 (NaN where the noise was not estimated); got {se!r}.")
    if z <= 0:
        raise ValueError(f"z must be a positive number of standard errors; got {z!r}.")
    if not np.isfinite(se):
        return "within noise"
    if estimate - z * se > threshold:
        return "holds"
    if estimate + z * se < threshold:
        return "fails"
    return "within noise"


def resolved(distance: float, noise: float | None) -> bool:
    """Whether a measured ``distance`` is resolved: a distance is resolved only if it exceeds twice its noise
    floor ``noise`` (a known, finite one; ``None`` or NaN resolves nothing).

    Example:
      >>> resolved(0.05, 0.02), resolved(0.04, 0.02), resolved(0.05, None)
      (True, False, False)
    """
    return noise is not None and math.isfinite(noise) and bool(distance > 2 * noise)


def verdict_from_p(p_greater: float, p_less: float, alpha: float = 0.05) -> str:
    """Verdict on a claim of a positive effect from its two one-sided p-values.

    NaN p-values (:func:`spearman_test` of a constant input) give ``"within noise"``.

    Example:
      >>> verdict_from_p(0.01, 0.99), verdict_from_p(0.3, 0.7), verdict_from_p(0.99, 0.02)
      ('holds', 'within noise', 'fails')
    """
    for name, p in (("p_greater", p_greater), ("p_less", p_less)):
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)) or p < 0 or p > 1:
            raise ValueError(f"{name} must be a p-value in [0, 1] (or NaN for no test); got {p!r}.")
    alpha = check_open_interval(alpha, "alpha")
    if np.isfinite(p_greater) and p_greater < alpha:
        return "holds"
    if np.isfinite(p_less) and p_less < alpha:
        return "fails"
    return "within noise"


def _permutations(n: int, n_permutations: int, seed: int) -> tuple[np.ndarray, bool]:
    """All permutations of ``n`` items when ``n <= EXACT_MAX_ITEMS``, else ``n_permutations`` random ones."""
    if n <= EXACT_MAX_ITEMS:
        return np.array(list(itertools.permutations(range(n)))), True
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n_permutations, n)), axis=1), False


def tail_p_values(observed: float, null: np.ndarray, exact: bool) -> tuple[float, float]:
    """One-sided p-values ``P(null >= observed)`` and ``P(null <= observed)``.

    Exact: the fraction over all permutations (the identity included). Sampled: ``(1 + k) / (1 + m)``,
    which counts the observed arrangement as one of the null draws and so is never zero.
    """
    observed = check_finite(observed, "observed")
    tol = 1e-12 * max(1.0, abs(observed))
    k_ge, k_le = int(np.sum(null >= observed - tol)), int(np.sum(null <= observed + tol))
    if exact:
        return k_ge / null.size, k_le / null.size
    return (1 + k_ge) / (1 + null.size), (1 + k_le) / (1 + null.size)


def row_correlations(x, ys) -> np.ndarray:
    """Pearson correlation of ``x [n]`` with every row of ``ys [m, n]``: ``[m]``, NaN where either is constant."""
    x, ys = as_float_array(x, "x", ndim=1), np.asarray(ys, dtype=float)
    if ys.ndim != 2 or ys.shape[1] != x.size:
        raise ValueError(f"ys must be [m, n] with n = len(x) = {x.size}; got shape {ys.shape}.")
    xc = x - x.mean()
    yc = ys - ys.mean(axis=1, keepdims=True)
    denom = np.linalg.norm(xc) * np.linalg.norm(yc, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, yc @ xc / denom, np.nan)


def spearman_test(x, y, n_permutations: int = 20000, seed: int = 0) -> dict:
    """Spearman's rank correlation of ``x`` and ``y`` with permutation p-values.

    The null distribution pairs ``x`` with every permutation of ``y`` (all ``n!`` of them for
    ``n <= 8``, else ``n_permutations`` random ones). Ties get average ranks.

    Returns ``rho``, ``p_greater`` (of a correlation at least as large), ``p_less``, ``n`` and
    ``exact``. ``rho`` and the p-values are NaN when either input is constant.

    Example:
      >>> r = spearman_test([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5])
      >>> round(r["rho"], 3), round(r["p_greater"], 4), r["exact"]
      (0.829, 0.0292, True)
    """
    x, y = as_float_array(x, "x", ndim=1), as_float_array(y, "y", ndim=1)
    n_permutations, seed = check_count(n_permutations, "n_permutations"), check_count(seed, "seed", minimum=0)
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"x and y must be 1-D arrays of the same length >= 3; got {x.shape} and {y.shape}.")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"rho": float("nan"), "p_greater": float("nan"), "p_less": float("nan"), "n": int(x.size),
                "exact": x.size <= EXACT_MAX_ITEMS}
    rx, ry = rankdata(x), rankdata(y)
    rho = float(row_correlations(rx, ry[None])[0])
    perms, exact = _permutations(x.size, n_permutations, seed)
    p_greater, p_less = tail_p_values(rho, row_correlations(rx, ry[perms]), exact)
    return {"rho": rho, "p_greater": p_greater, "p_less": p_less, "n": int(x.size), "exact": exact}


def mantel_test(A, B, n_permutations: int = 9999, seed: int = 0) -> dict:
    """Mantel test: the Pearson correlation of two symmetric matrices over their distinct entries
    (upper triangle, diagonal included), against relabelling the rows and columns of ``B`` together.

    A relabelling keeps each matrix's structure (diagonal entries stay on the diagonal) and only
    breaks the correspondence between the two, so the test asks whether the same items are
    large, small, positively or negatively coupled in both. Returns ``r``, ``p_greater``,
    ``p_less``, ``n`` (matrix size) and ``exact``.

    Example:
      >>> rng = np.random.default_rng(0)
      >>> a = rng.normal(size=(8, 8)); A = a @ a.T
      >>> r = mantel_test(A, A + 0.1 * np.eye(8))
      >>> round(r["r"], 3), r["p_greater"] < 0.01
      (1.0, True)
    """
    A, B = as_float_array(A, "A", ndim=2), as_float_array(B, "B", ndim=2)
    if A.shape[0] != A.shape[1] or A.shape != B.shape or A.shape[0] < 3:
        raise ValueError(f"A and B must be square matrices of the same size >= 3; got {A.shape} and {B.shape}.")
    A, B = check_symmetric(A, "A"), check_symmetric(B, "B")
    n_permutations, seed = check_count(n_permutations, "n_permutations"), check_count(seed, "seed", minimum=0)
    n = A.shape[0]
    iu = np.triu_indices(n)
    a = A[iu]
    if np.ptp(a) == 0 or np.ptp(B[iu]) == 0:
        return {"r": float("nan"), "p_greater": float("nan"), "p_less": float("nan"), "n": n,
                "exact": n <= EXACT_MAX_ITEMS}
    perms, exact = _permutations(n, n_permutations, seed)
    relabelled = B[perms[:, iu[0]], perms[:, iu[1]]]  # [m, n(n+1)/2]: B with rows and columns permuted
    r = float(row_correlations(a, B[iu][None])[0])
    p_greater, p_less = tail_p_values(r, row_correlations(a, relabelled), exact)
    return {"r": r, "p_greater": p_greater, "p_less": p_less, "n": n, "exact": exact}


def batch_means_se(draws, n_batches: int = 10) -> np.ndarray:
    """Monte Carlo standard error of the mean of MCMC draws ``[chains, draws, ...]`` by batch means.

    Each chain is cut into ``n_batches`` consecutive batches (fewer when it is short, at least 2
    draws each); the error is the standard deviation of the batch means over ``sqrt(number of
    batches)``, which accounts for the autocorrelation within a chain as long as a batch is
    longer than it. Returns an array of the shape of one draw.

    Example:
      >>> rng = np.random.default_rng(0)
      >>> se = batch_means_se(rng.normal(size=(2, 400, 3)))
      >>> se.shape, bool(np.all(np.abs(se - 1 / np.sqrt(800)) < 0.02))
      ((3,), True)
    """
    d = as_float_array(draws, "draws")
    n_batches = check_count(n_batches, "n_batches", minimum=2)
    if d.ndim < 2 or d.shape[1] < 4:
        raise ValueError(f"draws must be [chains, draws >= 4, ...]; got {d.shape}.")
    b = max(2, min(n_batches, d.shape[1] // 2))
    size = d.shape[1] // b
    means = d[:, : b * size].reshape(d.shape[0], b, size, *d.shape[2:]).mean(axis=2)
    means = means.reshape(-1, *d.shape[2:])
    return means.std(axis=0, ddof=1) / math.sqrt(means.shape[0])


def power_law(x, y, y_sd) -> tuple[float, float]:
    """The exponent ``b`` of ``y = a x^(-b)`` fitted by weighted least squares of ``ln y`` on ``ln x`` with the
    known errors ``sd(ln y) = y_sd / y`` (at least two distinct ``x``), and its standard error from those
    errors (not from the residuals, so two points give one too).

    Example:
      >>> b, se = power_law([10, 100], [0.1, 0.01], [0.01, 0.001])
      >>> round(b, 6), round(se, 3)
      (1.0, 0.061)
    """
    x, y, y_sd = (as_float_array(v, name, ndim=1) for v, name in ((x, "x"), (y, "y"), (y_sd, "y_sd")))
    if len(x) != len(y) or len(y) != len(y_sd) or len(np.unique(x)) < 2 or np.any(x <= 0) or np.any(y <= 0) \
            or np.any(y_sd <= 0):
        raise ValueError("power_law needs positive x, y and y_sd of one length, with two distinct x at least.")
    design = np.stack([np.ones_like(x), np.log(x)], axis=1)
    weight = (y / y_sd) ** 2
    cov = np.linalg.inv(design.T @ (design * weight[:, None]))
    coef = cov @ (design.T @ (weight * np.log(y)))
    return float(-coef[1]), float(math.sqrt(cov[1, 1]))
