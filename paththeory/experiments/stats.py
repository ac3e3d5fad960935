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

Comparing a theory with posterior samples: a distance ``d`` with its Monte Carlo noise floor ``s`` is
:func:`resolved` beyond ``2 s``, and then debiased with its error, else an upper limit
(:func:`debiased_distance`; ``s`` is itself estimated from :func:`batch_count` batch means,
:func:`floor_relative_sd`); two samplers agree entry by entry at a fixed family-wise false-alarm rate
(:func:`sidak_threshold`, :func:`agreement_test`); a power law is fitted through measured points and
upper limits (:func:`power_law_fit`) and a level averaged with its scatter (:func:`weighted_mean`). Their
calibration on simulated data is ``tests/experiments/test_stats_calibration.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import log_ndtr
from scipy.stats import chi2 as chi_square
from scipy.stats import norm, rankdata
from scipy.stats import t as student_t

from paththeory._checks import (as_float_array, check_count, check_finite, check_nonnegative, check_open_interval,
                                check_positive, check_symmetric)

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
    b = batch_count(1, d.shape[1], n_batches)
    size = d.shape[1] // b
    means = d[:, : b * size].reshape(d.shape[0], b, size, *d.shape[2:]).mean(axis=2)
    means = means.reshape(-1, *d.shape[2:])
    return means.std(axis=0, ddof=1) / math.sqrt(means.shape[0])


def batch_count(n_chains: int, n_draws: int, n_batches: int = 10) -> int:
    """How many batch means :func:`batch_means_se` averages over for ``n_chains`` chains of ``n_draws`` draws each:
    ``n_chains * max(2, min(n_batches, n_draws // 2))``. Its error, a standard deviation over that many means, has
    ``batch_count - 1`` degrees of freedom (:func:`floor_relative_sd`, :func:`agreement_test`).

    Example:
      >>> batch_count(2, 400), batch_count(4, 800), batch_count(1, 6)
      (20, 40, 3)
    """
    n_chains, n_batches = check_count(n_chains, "n_chains"), check_count(n_batches, "n_batches", minimum=2)
    n_draws = check_count(n_draws, "n_draws", minimum=4, hint="A batch-means error needs 4 draws per chain at least.")
    return n_chains * max(2, min(n_batches, n_draws // 2))


def floor_relative_sd(batch_means: int) -> float:
    """The relative standard deviation of a noise floor estimated from ``batch_means`` batch means,
    ``1 / sqrt(2 (B - 1))``: that of a standard deviation over ``B`` normal means (``(B - 1) s^2 / sigma^2`` is
    chi-square with ``B - 1`` degrees of freedom). For a Frobenius norm of many entries' errors it is this when the
    entries' errors move together, the worst case, and smaller when they are independent.

    Example:
      >>> round(floor_relative_sd(20), 3), round(floor_relative_sd(40), 3)
      (0.162, 0.113)
    """
    return 1.0 / math.sqrt(2.0 * (check_count(batch_means, "batch_means", minimum=2) - 1))


def _floor(s: float, name: str = "s") -> float:
    """``s`` as a noise floor: a finite number > 0 (``None`` or NaN means the noise was not estimated)."""
    if s is None or (isinstance(s, (float, np.floating)) and math.isnan(s)):
        raise ValueError(f"{name} is not known (None or NaN): a distance without a noise floor cannot be debiased; "
                         "check the record's Monte Carlo errors first.")
    return check_positive(s, name)


def debiased_distance(d: float, s: float, batch_means: int | None = None, z: float = 2.0) -> dict:
    """A measured distance ``d`` with its noise floor ``s`` (``E d^2 = d_true^2 + s^2``, and ``s`` bounds the
    standard deviation of ``d`` whatever the correlations between the entries:
    :func:`paththeory.experiments.compare.relative_distance`), as a debiased value with its standard error where the run
    resolves it, else as an upper limit.

    * ``resolved``: ``d > 2 s`` (:func:`resolved`).
    * Resolved: ``value = sqrt(d^2 - s^2)`` and ``se = s d / sqrt(d^2 - s^2)`` (the bound ``sd(d) <= s`` through
      ``d value / d d = d / value``), 15 % above ``s`` at the threshold ``d = 2 s``. With ``batch_means`` ``B``, ``s``
      is itself an estimate with relative error ``r`` (:func:`floor_relative_sd`) and ``value`` moves by
      ``-s / value`` per unit of ``s``: ``se = s sqrt(d^2 + r^2 s^2) / value``. The bound is reached when the noise
      lies along the difference (a single entry); with many independent entries the error is smaller and the
      bars cover more than their nominal 68 % and 95 %.
    * Unresolved: ``upper_limit = d + q s``, a one-sided bound at confidence ``Phi(z)`` (97.7 % for ``z = 2``)
      whatever the correlations: ``d >= d_true + u.e`` with ``u`` the unit difference and ``u.e`` normal with
      standard deviation at most ``s``. ``q = z`` for a known ``s``; with ``B`` batch means the quantile of Student's
      t with ``B - 1`` degrees of freedom at the same confidence. ``limit`` and ``limit_se`` are what a
      censored fit takes (:func:`power_law_fit`): the debiased value and its error at the threshold ``d = 2 s``,
      ``sqrt(3) s`` and ``s sqrt(4 + r^2) / sqrt(3)``.

    Fields that do not apply are ``None``.

    Example:
      >>> r = debiased_distance(0.05, 0.01)
      >>> r["resolved"], round(r["value"], 4), round(r["se"], 4)
      (True, 0.049, 0.0102)
      >>> r = debiased_distance(0.015, 0.01)
      >>> r["resolved"], round(r["upper_limit"], 3), round(r["limit"], 4), round(r["limit_se"], 4)
      (False, 0.035, 0.0173, 0.0115)
    """
    d, s, z = check_nonnegative(d, "d"), _floor(s), check_positive(z, "z")
    r = 0.0 if batch_means is None else floor_relative_sd(batch_means)
    out = {"distance": d, "noise": s, "resolved": resolved(d, s), "value": None, "se": None, "upper_limit": None,
           "limit": None, "limit_se": None}
    if out["resolved"]:
        value = math.sqrt(d * d - s * s)
        out.update(value=value, se=s * math.sqrt(d * d + (r * s) ** 2) / value)
    else:
        q = z if batch_means is None else float(student_t.isf(norm.sf(z), batch_means - 1))
        out.update(upper_limit=d + q * s, limit=math.sqrt(3.0) * s,
                   limit_se=s * math.sqrt(4.0 + r * r) / math.sqrt(3.0))
    return out


def _dof(dof, shape: tuple[int, ...]) -> np.ndarray | None:
    """``dof`` (``None``, one number or one per entry) as ``None`` or an array of ``shape``, each > 0 (infinite: a
    known error, the normal limit)."""
    if dof is None:
        return None
    dof = as_float_array(dof, "dof", finite=False)
    if dof.size != 1 and dof.shape != shape:
        raise ValueError(f"dof must be one number or one per entry of z {shape}; got shape {dof.shape}.")
    if np.any(np.isnan(dof)) or np.any(dof <= 0):
        raise ValueError("dof must be positive degrees of freedom (None: the errors are known, a normal quantile).")
    return np.broadcast_to(dof.reshape(-1) if dof.size == 1 else dof, shape)


def sidak_threshold(k: int, level: float = 0.05, dof: float | None = None) -> float:
    """The largest ``|z|`` that ``k`` entries may show at family-wise false-alarm rate ``level`` (Sidak): every entry
    is tested two-sided at ``alpha_k = 1 - (1 - level)^(1/k)``, ``z* = Phi^-1(1 - alpha_k / 2)``; with ``dof`` (errors
    estimated, e.g. from batch means) the quantile of Student's t with ``dof`` degrees of freedom instead
    (``math.inf``: the normal one).

    Example:
      >>> round(sidak_threshold(10), 2), round(sidak_threshold(666), 2), round(sidak_threshold(666, dof=19), 2)
      (2.8, 3.95, 5.01)
    """
    k, level = check_count(k, "k"), check_open_interval(level, "level")
    alpha = -math.expm1(math.log1p(-level) / k)
    if dof is None or dof == math.inf:
        return float(norm.isf(alpha / 2))
    return float(student_t.isf(alpha / 2, check_positive(dof, "dof")))


def agreement_test(z, level: float = 0.05, dof=None) -> dict:
    """Whether ``k`` z-scores ``z`` (entries of a difference over its standard error) are consistent with noise
    alone, at family-wise false-alarm rate ``level`` (Sidak, :func:`sidak_threshold`).

    Each entry's two-sided p-value is ``p_i = 2 P(Z > |z_i|)`` (``Z`` normal, or Student's t with ``dof``, one
    number or one per entry, where the errors are estimated); the worst entry has the smallest, ``p_min``, and the
    family-wise p-value is ``1 - (1 - p_min)^k``. Returns ``k``, ``level``, ``index`` (of the worst entry in
    ``z``, flattened), ``max_z`` (its ``|z|``), ``threshold`` (:func:`sidak_threshold` at its ``dof``), ``p_family``
    and ``agree`` (``p_family >= level``, i.e. ``max_z <= threshold``). An infinite ``z`` (a difference against a zero
    error) is a disagreement; a NaN one raises (leave such entries out).

    Example:
      >>> t = agreement_test([0.5, -1.2, 3.1, 0.3])
      >>> t["index"], round(t["max_z"], 1), round(t["threshold"], 2), round(t["p_family"], 4), t["agree"]
      (2, 3.1, 2.49, 0.0077, False)
    """
    z = np.abs(as_float_array(z, "z", finite=False)).ravel()
    if np.any(np.isnan(z)):
        raise ValueError("z contains NaN (a zero difference over a zero error?); leave such entries out.")
    level = check_open_interval(level, "level")
    dof = _dof(dof, z.shape)
    p = 2 * (norm.sf(z) if dof is None else student_t.sf(z, dof))
    worst = int(np.lexsort((-z, p))[0])  # the smallest p; of equal ones, the largest |z|
    p_family = float(-np.expm1(z.size * np.log1p(-min(p[worst], 1.0 - 1e-16))))
    worst_dof = None if dof is None else float(dof[worst])
    return {"k": int(z.size), "level": level, "index": worst, "max_z": float(z[worst]),
            "threshold": sidak_threshold(z.size, level, worst_dof), "p_family": p_family, "agree": p_family >= level}


def goodness_of_fit(y, y_sd, predicted) -> dict:
    """Measurements ``y`` with errors ``y_sd`` against a prediction made without them: ``chi2 = sum ((y - predicted) /
    y_sd)^2`` over ``nu = len(y)`` points and its p-value ``P(chi2_nu >= chi2)`` (``p`` ``None`` without points).
    Gaussian errors of known size are assumed; errors estimated from ``k`` batch means make ``p`` somewhat too small
    (the test rejects a little too often), never too large.

    Example:
      >>> r = goodness_of_fit([1.0, 2.0], [0.1, 0.2], [1.1, 2.0])
      >>> round(r["chi2"], 6), r["nu"], round(r["p"], 3)
      (1.0, 2, 0.607)
    """
    y, y_sd, predicted = (np.asarray(a, dtype=float).ravel() for a in (y, y_sd, predicted))
    if not (y.size == y_sd.size == predicted.size):
        raise ValueError(f"y, y_sd and predicted must have one entry per point; got {y.size}, {y_sd.size} and "
                         f"{predicted.size}.")
    if np.any(~np.isfinite(y_sd)) or np.any(y_sd <= 0):
        raise ValueError("y_sd must be finite and positive.")
    chi2 = float(np.sum(((y - predicted) / y_sd) ** 2))
    return {"chi2": chi2, "nu": int(y.size), "p": float(chi_square.sf(chi2, y.size)) if y.size else None}


def weighted_mean(y, y_sd) -> dict:
    """The inverse-variance weighted mean of measurements ``y`` with standard errors ``y_sd``, and its error.

    ``mean = sum w y / sum w`` with ``w = 1 / y_sd^2``; ``se_stat = 1 / sqrt(sum w)``; ``chi2_nu`` the chi-square of
    the points about the mean over ``n - 1`` (``None`` for one point); ``se`` is ``se_stat`` inflated by
    ``sqrt(chi2_nu)`` when ``chi2_nu > 1`` (the points scatter more than their errors say, e.g. the quantity is not
    constant). Returns also ``n``.

    Example:
      >>> m = weighted_mean([1.0, 1.2, 3.0], [0.1, 0.1, 0.1])
      >>> round(m["mean"], 3), round(m["se_stat"], 4), round(m["chi2_nu"], 1), round(m["se"], 3)
      (1.733, 0.0577, 121.3, 0.636)
    """
    y, y_sd = as_float_array(y, "y", ndim=1), as_float_array(y_sd, "y_sd", ndim=1)
    if y.shape != y_sd.shape or np.any(y_sd <= 0):
        raise ValueError(f"y and y_sd must be 1-D of one length with y_sd > 0; got {y.shape} and {y_sd.shape}.")
    w = 1.0 / y_sd**2
    mean = float(np.sum(w * y) / np.sum(w))
    se_stat = float(1.0 / math.sqrt(np.sum(w)))
    chi2_nu = float(np.sum(w * (y - mean) ** 2) / (y.size - 1)) if y.size > 1 else None
    inflate = math.sqrt(chi2_nu) if chi2_nu is not None and chi2_nu > 1 else 1.0
    return {"mean": mean, "se": se_stat * inflate, "se_stat": se_stat, "chi2_nu": chi2_nu, "n": int(y.size)}


def _power_law_nll(params: np.ndarray, t: np.ndarray, ln_y: np.ndarray, sd_ln: np.ndarray, t_c: np.ndarray,
                   limit: np.ndarray, limit_sd: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Minus the log-likelihood of :func:`power_law_fit` at ``params = (c, b)`` (``ln y = c - b t``), its gradient
    and its Hessian."""
    c, b = params
    res = (ln_y - c + b * t) / sd_ln  # measured points, in ln y
    grad_res = np.stack([-1.0 / sd_ln, t / sd_ln], axis=1)
    value = 0.5 * float(res @ res)
    grad = grad_res.T @ res
    hess = grad_res.T @ grad_res
    if t_c.size:  # upper limits: -ln Phi(u), u = (limit - y_model) / limit_sd
        y_model = np.exp(c - b * t_c)
        u = (limit - y_model) / limit_sd
        du = np.stack([-y_model, y_model * t_c], axis=1) / limit_sd[:, None]
        d2u = np.stack([np.stack([-y_model, y_model * t_c], axis=1),
                        np.stack([y_model * t_c, -y_model * t_c**2], axis=1)], axis=1) / limit_sd[:, None, None]
        mills = np.exp(norm.logpdf(u) - log_ndtr(u))  # phi / Phi
        value -= float(np.sum(log_ndtr(u)))
        grad = grad - du.T @ mills
        hess = hess + (du * (mills * (u + mills))[:, None]).T @ du - np.einsum("i,ijk->jk", mills, d2u)
    return value, grad, hess


def power_law_fit(x, y, y_sd, censored=None, x_ref: float | None = None) -> dict:
    """The power law ``y = a x^(-b)`` by maximum likelihood through measured points and upper limits.

    A measured point (``censored`` False) enters as a Gaussian in ``ln y`` with ``sd(ln y) = y_sd / y``; a
    censored one as the probability ``Phi((y - a x^-b) / y_sd)`` that a measurement with error ``y_sd`` falls below
    its limit ``y`` (for a distance below twice its noise floor: ``limit`` and ``limit_se`` of
    :func:`debiased_distance`). Fitting the measured points alone keeps only the upward fluctuations of a falling
    quantity near its noise floor and flattens the law; the limits correct that.

    Returns ``determined`` (two measured points at distinct ``x`` at least; else every fitted field is ``None``),
    ``b`` and its error ``b_se``; ``x_ref`` (default: the geometric mean of the measured ``x``, where ``b`` and the
    level are uncorrelated), ``y_ref = a x_ref^-b`` and ``y_ref_se``; ``ln_a``; ``chi2_nu``, the chi-square of the
    measured points about the law over ``n_measured - 2`` (``None`` with two points) and its p-value ``chi2_p``, the
    chance of a larger chi-square were the law exact (how well one power law describes the points); the errors are
    those of the
    likelihood's curvature (``b_se_stat``) inflated by ``sqrt(chi2_nu)`` when it exceeds 1 (``inflation``); and
    ``n_measured``, ``n_censored``.

    Example:
      >>> f = power_law_fit([10, 100, 1000], [0.1, 0.01, 0.002], [0.01, 0.001, 0.002], [False, False, True])
      >>> f["determined"], round(f["b"], 3), round(f["b_se"], 3), f["n_measured"], f["n_censored"]
      (True, 1.003, 0.061, 2, 1)
      >>> power_law_fit([10, 100], [0.1, 0.01], [0.01, 0.001], [False, True])["b"] is None
      True
    """
    x, y, y_sd = (as_float_array(v, name, ndim=1) for v, name in ((x, "x"), (y, "y"), (y_sd, "y_sd")))
    censored = np.zeros(x.shape, bool) if censored is None else np.asarray(censored, dtype=bool)
    if not (x.shape == y.shape == y_sd.shape == censored.shape) or np.any(x <= 0) or np.any(y <= 0) \
            or np.any(y_sd <= 0):
        raise ValueError("power_law_fit needs positive x, y and y_sd and a censored flag per point, all of one length.")
    m = ~censored
    out = {"determined": False, "b": None, "b_se": None, "b_se_stat": None, "x_ref": None, "y_ref": None,
           "y_ref_se": None, "ln_a": None, "chi2_nu": None, "chi2_p": None, "inflation": None, "n_measured": int(m.sum()),
           "n_censored": int(censored.sum())}
    if len(np.unique(x[m])) < 2:
        return out
    from scipy.optimize import minimize

    x_ref = float(np.exp(np.mean(np.log(x[m])))) if x_ref is None else check_positive(x_ref, "x_ref")
    t = np.log(x) - math.log(x_ref)
    args = (t[m], np.log(y[m]), y_sd[m] / y[m], t[censored], y[censored], y_sd[censored])
    w = 1.0 / args[2] ** 2  # the measured points alone: weighted least squares, the start
    design = np.stack([np.ones(m.sum()), -t[m]], axis=1)
    start = np.linalg.solve(design.T @ (design * w[:, None]), design.T @ (w * args[1]))
    fit = minimize(lambda p: _power_law_nll(p, *args)[:2], start, jac=True, method="trust-exact",
                   hess=lambda p: _power_law_nll(p, *args)[2], options={"gtol": 1e-10})
    c, b = fit.x
    cov = np.linalg.inv(_power_law_nll(fit.x, *args)[2])
    res = (args[1] - c + b * args[0]) / args[2]
    nu = int(m.sum()) - 2
    chi2_nu = float(res @ res / nu) if nu > 0 else None
    chi2_p = float(chi_square.sf(res @ res, nu)) if nu > 0 else None
    inflation = math.sqrt(chi2_nu) if chi2_nu is not None and chi2_nu > 1 else 1.0
    out.update(determined=True, b=float(b), b_se=float(math.sqrt(cov[1, 1]) * inflation),
               b_se_stat=float(math.sqrt(cov[1, 1])), x_ref=x_ref, y_ref=float(math.exp(c)),
               y_ref_se=float(math.exp(c) * math.sqrt(cov[0, 0]) * inflation), ln_a=float(c + b * math.log(x_ref)),
               chi2_nu=chi2_nu, chi2_p=chi2_p, inflation=inflation)
    return out
