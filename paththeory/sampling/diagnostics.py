"""Convergence diagnostics of MCMC chains: rank-normalised split R-hat and bulk ESS (Vehtari et al.
2021, as Stan and ArviZ compute them), E-BFMI, and the one-line summary of a run.
"""

from __future__ import annotations

import math

import numpy as np
from numpyro.diagnostics import autocovariance, gelman_rubin
from scipy.stats import norm, rankdata

from paththeory._checks import as_float_array

SAMPLER_NAMES = {"nuts": "NUTS", "gibbs": "Gibbs"}  # a run's ``method`` -> its name in reports



# --------------------------------------------------------------------------- diagnostics


def _split_chains(draws: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as two chains: ``[c, d, ...]`` -> ``[2c, d // 2, ...]`` (odd ``d``
    drops the middle draw)."""
    half = draws.shape[1] // 2
    return np.concatenate([draws[:, :half], draws[:, draws.shape[1] - half:]], axis=0)


def _rank_normalize(draws: np.ndarray) -> np.ndarray:
    """Normal scores of the pooled ranks, per quantity: ``[chains, draws, ...]`` -> same shape."""
    c, d = draws.shape[:2]
    flat = draws.reshape(c * d, -1)
    ranks = rankdata(flat, axis=0)
    return norm.ppf((ranks - 0.375) / (c * d + 0.25)).reshape(draws.shape)


def _autocorrelation(x: np.ndarray) -> np.ndarray:
    """Stan's multi-chain autocorrelation ``rho_t`` of ``x [chains, draws, K]``: ``[draws, K]``.

    ``rho_t = 1 - (W - mean_c gamma_t) / var+`` with ``gamma_t`` each chain's biased autocovariance,
    ``W`` the mean within-chain variance and ``var+ = W (n - 1) / n + B / n`` (Stan Reference Manual,
    "Effective sample size"; ArviZ's ``_ess``). ``rho_0 = 1``; NaN where ``var+ = 0``.
    """
    c, n = x.shape[:2]
    gamma = autocovariance(x, axis=1, bias=True).mean(axis=0)  # [n, K]
    within = gamma[0] * n / (n - 1.0)
    var_plus = within * (n - 1.0) / n + (x.mean(axis=1).var(axis=0, ddof=1) if c > 1 else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = 1.0 - (within - gamma) / var_plus
    rho[0] = 1.0
    return rho


def _geyer_tau(rho: np.ndarray, n_total: int) -> np.ndarray:
    """Integrated autocorrelation time ``tau`` from ``rho [n, K]`` by Geyer's initial positive and
    initial monotone sequences, exactly as Stan and ArviZ truncate it: ``[K]``, at least ``1 / log10(n_total)``.

    Pair sums ``P_m = rho_2m + rho_2m+1`` are kept up to the first ``m >= 1`` with ``P_m <= 0`` (or the
    last pair the chain length allows), replaced by their running minimum, and ``tau = -1 + 2 sum P_m``
    plus the even term ``rho_2M`` of the pair that ended the sum when it is positive (or that pair's sum is).
    The floor bounds the ESS by ``n_total log10(n_total)`` for antithetic chains; a cut-off chain can
    therefore never give a negative or infinite ESS.
    """
    n = rho.shape[0]
    m_max = max(0, (n - 3) // 2)  # the last pair m whose lags 2m, 2m + 1 the sequence may use
    pairs = rho[0:2 * m_max + 1:2] + rho[1:2 * m_max + 2:2]  # [m_max + 1, K]
    stops = np.vstack([pairs[1:] <= 0, np.ones((1, rho.shape[1]), bool)])  # a sentinel after the last pair
    first = np.minimum(stops.argmax(axis=0) + 1, m_max)  # the first m >= 1 with P_m <= 0, else the last pair
    end = np.where(pairs[0] > 0, first, 0)  # M: pairs 0 .. M - 1 are summed
    kept = np.arange(m_max + 1)[:, None] < end[None, :]
    total = np.sum(np.where(kept, np.minimum.accumulate(pairs, axis=0), 0.0), axis=0)
    cols = np.arange(rho.shape[1])
    last_even, last_pair = rho[2 * end, cols], pairs[end, cols]
    tail = np.where((last_pair >= 0) | (last_even > 0), last_even, 0.0)
    return np.maximum(-1.0 + 2.0 * total + tail, 1.0 / math.log10(n_total))


def effective_sample_size(draws: np.ndarray) -> np.ndarray:
    """Effective sample size of ``draws [chains, draws, ...]`` (at least 2 draws): shape of one draw.

    Stan's and ArviZ's estimator (without splitting or rank-normalising; :func:`rank_rhat_ess` does
    both): ``chains * draws / tau`` with ``tau`` from :func:`_geyer_tau`. It is positive, at most
    ``chains * draws * log10(chains * draws)``, equals ``chains * draws`` for constant draws and is
    NaN for non-finite ones. A test checks it against ArviZ and the AR(1) formula ``n (1 - phi) / (1 + phi)``.

    Example:
      >>> x = np.random.default_rng(0).normal(size=(2, 500))
      >>> bool(800 < effective_sample_size(x) < 1300)
      True
    """
    x = _check_draws(draws)
    if x.shape[1] < 2:
        raise ValueError(f"draws must be [chains, draws >= 2, ...]; got shape {x.shape}.")
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    n_total = flat.shape[0] * flat.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite draws give NaN, below
        constant = np.ptp(flat.reshape(n_total, -1), axis=0) < np.finfo(float).resolution
        ess = n_total / _geyer_tau(np.nan_to_num(_autocorrelation(flat)), n_total)
    ess = np.where(constant, float(n_total), ess)
    ess = np.where(np.isfinite(flat).all(axis=(0, 1)), ess, np.nan)
    return ess.reshape(x.shape[2:])


def _check_draws(draws) -> np.ndarray:
    """``draws`` as a float64 ``[chains, draws, ...]`` array with at least one of each (NaN and inf pass: they give NaN)."""
    x = as_float_array(draws, "draws", finite=False)
    if x.ndim < 2:
        raise ValueError(f"draws must be [chains, draws, ...]; got shape {x.shape}.")
    return x


def rank_rhat_ess(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalised split R-hat and bulk ESS of ``draws [chains, draws, ...]`` (NaN if < 4 draws).

    As ArviZ's ``rhat(method="z_scale")`` and ``ess(method="bulk")`` (Vehtari et al. 2021): the chains
    are split in halves, the pooled draws replaced by the normal scores of their ranks, and R-hat and
    :func:`effective_sample_size` computed on the result.
    """
    draws = _check_draws(draws)
    if draws.shape[1] < 4:
        nan = np.full(draws.shape[2:], np.nan)
        return nan, nan
    z = _rank_normalize(_split_chains(draws))
    return np.asarray(gelman_rubin(z)), effective_sample_size(z)


def e_bfmi(energy: np.ndarray) -> float:
    """Energy Bayesian fraction of missing information of one chain ``energy [draws]``:
    ``sum dE^2 / sum (E - mean E)^2``; NaN for fewer than 3 draws (a chain cut short) or non-finite energies."""
    try:
        empty = len(energy) == 0
    except TypeError:  # a number: refused below
        empty = False
    e = np.zeros(0) if empty else as_float_array(energy, "energy", finite=False)
    if e.ndim != 1:
        raise ValueError(f"energy must be one chain's energies [draws]; got shape {e.shape}.")
    if e.size < 3:
        return float("nan")
    return float(np.sum(np.diff(e) ** 2) / np.sum((e - e.mean()) ** 2))




def stopped_text(stopped: dict) -> str:
    """Where the time limit stopped a run, in words."""
    chain = stopped["chain"]
    chains = f"chains {chain[0]}-{chain[-1]}" if isinstance(chain, list) else f"chain {chain}"
    return (f"stopped by its {stopped['time_limit']:g} s time limit in {chains} ({stopped['phase']}, "
            f"iteration {stopped['iteration']} of {stopped['of']})")


def diagnostics_summary(diagnostics: dict) -> str:
    """One readable line for the ``diagnostics`` of :class:`~paththeory.sampling.results.PosteriorSamples` (or their JSON copy).

    A complete run gives its draws, R-hat, bulk ESS, time and, for NUTS, divergences and E-BFMI; an incomplete
    one says where it stopped and gives no statistic, since those of a cut chain depend on the
    machine's load.

    Example:
      >>> d = dict(complete=True, draws_used=200, draws_planned=200, r_hat_max=1.004, ess_bulk_min=87.2,
      ...          divergences=0, e_bfmi_min=0.91, seconds=41.5, stopped=None)
      >>> diagnostics_summary(d)
      'NUTS: 200 draws, R-hat max 1.00, bulk ESS min 87, 0 divergences, E-BFMI min 0.91, 42 s'
    """
    missing = None
    if isinstance(diagnostics, dict):
        needed = ("complete", "draws_used", "draws_planned") + (
            ("stopped",) if diagnostics.get("complete") is False else
            ("r_hat_max", "ess_bulk_min", "seconds")
            + (("divergences", "e_bfmi_min") if diagnostics.get("method", "nuts") == "nuts" else ()))
        missing = [k for k in needed if k not in diagnostics]
    if missing is None or missing:
        raise ValueError("diagnostics must be the dictionary of a sampling run (PosteriorSamples.diagnostics, or its "
                         "JSON copy); " + (f"got {type(diagnostics).__name__}." if missing is None
                                           else f"it lacks {', '.join(missing)}."))
    if diagnostics.get("method", "nuts") not in SAMPLER_NAMES:
        raise ValueError(f"diagnostics['method'] must be one of {tuple(SAMPLER_NAMES)}; got {diagnostics['method']!r}.")
    sampler = SAMPLER_NAMES[diagnostics.get("method", "nuts")]
    if not diagnostics["complete"]:
        return (f"{sampler} incomplete: {stopped_text(diagnostics['stopped'])}; "
                f"{diagnostics['draws_used']} of {diagnostics['draws_planned']} draws, not enough for a verdict")
    nuts = (f", {diagnostics['divergences']} divergences, E-BFMI min {diagnostics['e_bfmi_min']:.2f}"
            if sampler == "NUTS" else "")
    return (f"{sampler}: {diagnostics['draws_used']} draws, R-hat max {diagnostics['r_hat_max']:.2f}, "
            f"bulk ESS min {diagnostics['ess_bulk_min']:.0f}{nuts}, {diagnostics['seconds']:.0f} s")
