"""The theory against posterior samples, and one sampler against another: relative distances with their noise
floors (:func:`relative_distance`, :func:`sampled_vs_theory`) and the entry-wise agreement of two samplers
(:func:`sampler_agreement`), shared by every experiment that samples (book: the validity chapter, "How we compare
theory and samples"). The statistics behind them are :mod:`paththeory.experiments.stats`; their words,
:mod:`paththeory.reports.agreement`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from paththeory.experiments import stats

@dataclass(frozen=True)
class Distance:
    """A relative Frobenius distance ``distance`` (``d``) of the samples' average from another's, with the noise
    floor ``noise`` (``s``, ``None`` where the records do not give it) of the samples' average on the same scale
    (:func:`relative_distance`): ``resolved`` when ``d > 2 s``, then debiased to ``value`` ± ``se``, else bounded by
    ``upper_limit``, with the ``limit`` and ``limit_se`` that a censored fit takes
    (:func:`paththeory.experiments.stats.debiased_distance`: the rule of every comparison with samples in the book)."""

    distance: float
    noise: float | None
    resolved: bool = False
    value: float | None = None
    se: float | None = None
    upper_limit: float | None = None
    limit: float | None = None
    limit_se: float | None = None


def distance(d: float, s: float | None, batch_means: int | None = None) -> Distance:
    """:class:`Distance` of ``d`` with its floor ``s`` over ``batch_means`` batch means (``s = None``: the raw
    distance, neither resolved nor bounded).

    Example:
      >>> distance(0.144, 0.01, 20).resolved, distance(0.015, 0.01, 20).resolved, distance(0.1, None).upper_limit
      (True, False, None)
    """
    if s is None:
        return Distance(float(d), None)
    return Distance(**stats.debiased_distance(d, s, batch_means))


def relative_distance(sampled, theory, se=None) -> tuple[float, float | None]:
    """``d = |sampled - theory|_F / |theory|_F`` and, from the entries' Monte Carlo errors ``se``, its noise floor
    ``s = |se|_F / |theory|_F`` (``None`` when ``se`` is): the distance that sampling noise alone gives
    (``E d^2 = d_true^2 + s^2``), and a bound on the standard deviation of ``d`` whatever the correlations between
    the entries (``g^T Sigma g <= Tr Sigma`` for a unit ``g``).

    Example:
      >>> d, s = relative_distance(1.1 * np.eye(3), np.eye(3), np.full((3, 3), 0.01))
      >>> round(d, 3), round(s, 3)
      (0.1, 0.017)
    """
    sampled, theory = np.asarray(sampled, dtype=float), np.asarray(theory, dtype=float)
    norm = float(np.linalg.norm(theory))
    noise = None if se is None else float(np.linalg.norm(np.asarray(se, dtype=float)) / norm)
    return float(np.linalg.norm(sampled - theory) / norm), noise


def sampled_vs_theory(theory, sampled, sampled_se, gp_scale: float, seed: int = 0) -> dict:
    """How far a sampled estimate of ``U`` (NUTS or Gibbs) lies from the theory's, shared by Fig. 2, Fig. 3
    and the validity figure.

    ``relative_distance = |U_sampled - U_theory|_F / |U_theory|_F``; its Monte Carlo ``noise`` is the
    Frobenius norm of the per-entry batch-means errors ``sampled_se`` on the same scale (``None``
    when ``sampled_se`` is; both by :func:`relative_distance`); ``gp_relative_distance`` is the distance
    of the sample from the GP point ``gp_scale I`` (for scale); ``mantel`` a Mantel test of the two
    patterns (``None`` below three paths, too few to permute).

    Example:
      >>> d = sampled_vs_theory(np.eye(3), 1.1 * np.eye(3), np.full((3, 3), 0.01), 1.0)
      >>> round(d["relative_distance"], 3), round(d["noise"], 3), round(d["gp_relative_distance"], 3)
      (0.1, 0.017, 0.1)
    """
    th, sampled = np.asarray(theory, dtype=float), np.asarray(sampled, dtype=float)
    distance, noise = relative_distance(sampled, th, sampled_se)
    return {"relative_distance": distance, "noise": noise,
            "gp_relative_distance": float(np.linalg.norm(sampled - gp_scale * np.eye(len(th))) / np.linalg.norm(th)),
            "mantel": stats.mantel_test(th, sampled, seed=seed) if len(th) >= 3 else None}


def record_batches(record: dict) -> int | None:
    """How many batch means a record's ``U_se`` averages over (:func:`paththeory.experiments.stats.batch_count`, 10
    batches per chain as :func:`~paththeory.experiments.stats.batch_means_se` takes by default), from its diagnostics:
    one ``e_bfmi`` per chain and ``draws_used`` over all of them; ``None`` when the diagnostics do not say."""
    diag = record.get("diagnostics", {})
    chains, draws = len(diag.get("e_bfmi") or ()), diag.get("draws_used")
    if not chains or not draws or draws // chains < 4:
        return None
    return stats.batch_count(chains, draws // chains)


def sampler_agreement(first: Sequence[dict], second: Sequence[dict], key: Sequence[str], r_hat_ok: float,
                      level: float = 0.05) -> list[dict]:
    """Two samplers' records of the same posteriors against each other, at every point (the record fields
    ``key``) both sampled. Records without ``U_se`` (incomplete runs) are left out. Per point:

    * ``distance``: ``|U_1 - U_2|_F / |U_2|_F``, with ``noise`` the combined Monte Carlo error on the same scale
      (``|(se_1^2 + se_2^2)^{1/2}|_F / |U_2|_F``: the distance two agreeing samplers show, ``E d^2 = s^2``) and
      ``resolved`` (``d > 2 s``, :func:`paththeory.experiments.stats.resolved`);
    * the entry-wise test of :func:`paththeory.experiments.stats.agreement_test` over the ``k`` upper-triangle
      entries of ``U`` with ``z = (U_1 - U_2) / (se_1^2 + se_2^2)^{1/2}``, at family-wise false-alarm rate ``level``
      (Sidak): ``max_z`` at ``entry`` ``(i, j)``, the ``threshold`` it is held to, ``p_family`` and ``k``. The errors
      are batch-means estimates, so each ``z`` is a Student's t with Welch-Satterthwaite degrees of freedom ``dof``
      (of the worst entry) from the two records' numbers of batch means (:func:`record_batches`; a normal ``z``,
      ``dof`` ``None``, where the diagnostics do not say). Entries with no error on either side and no difference
      are left out of ``k``;
    * ``agree``: the entry-wise test passes and the distance is not resolved;
    * ``mixed``: both runs' R-hat of ``U`` at most ``r_hat_ok``; ``ess_per_second``: each run's effective draws of
      ``U`` per second.

    Example:
      >>> a = {"task": "x", "width": 10, "U": [[1.0, 0.0], [0.0, 1.0]], "U_se": [[0.1, 0.1], [0.1, 0.1]],
      ...      "diagnostics": {"r_hat_U_max": 1.0, "ess_per_second": 5.0}}
      >>> b = {**a, "U": [[1.1, 0.0], [0.0, 1.6]], "diagnostics": {"r_hat_U_max": 1.2, "ess_per_second": 50.0}}
      >>> row = sampler_agreement([a], [b], ("task", "width"), 1.01)[0]
      >>> round(row["distance"], 3), round(row["noise"], 3), row["entry"], round(row["max_z"], 2), row["k"]
      (0.313, 0.146, (1, 1), 4.24, 3)
      >>> round(row["threshold"], 2), round(row["p_family"], 4), row["agree"], row["mixed"]
      (2.39, 0.0001, False, False)
    """
    others = {tuple(r[k] for k in key): r for r in second if r.get("U_se") is not None}
    rows = []
    for a in first:
        b = others.get(tuple(a[k] for k in key))
        if b is None or a.get("U_se") is None:
            continue
        ua, ub = np.asarray(a["U"], float), np.asarray(b["U"], float)
        sa, sb = np.asarray(a["U_se"], float), np.asarray(b["U_se"], float)
        se = np.hypot(sa, sb)
        iu = np.triu_indices(len(ub))
        diff, err = (ua - ub)[iu], se[iu]
        keep = (err > 0) | (diff != 0)  # 0 / 0: an entry both samplers hold fixed
        with np.errstate(divide="ignore"):
            z = diff[keep] / err[keep]
        na, nb = record_batches(a), record_batches(b)
        dof = None
        if na is not None and nb is not None:  # Welch-Satterthwaite, per entry
            va, vb = sa[iu][keep] ** 2, sb[iu][keep] ** 2
            with np.errstate(divide="ignore", invalid="ignore"):
                dof = np.where(va + vb > 0, (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)), np.inf)
        test = stats.agreement_test(z, level, dof)
        norm = float(np.linalg.norm(ub))
        distance, noise = float(np.linalg.norm(ua - ub)) / norm, float(np.linalg.norm(se)) / norm
        da, db = a["diagnostics"], b["diagnostics"]
        resolved = stats.resolved(distance, noise)
        rows.append({**{k: a[k] for k in key}, "distance": distance, "noise": noise, "resolved": resolved,
                     "max_z": test["max_z"], "entry": tuple(int(i[keep][test["index"]]) for i in iu), "k": test["k"],
                     "threshold": test["threshold"], "p_family": test["p_family"],
                     "dof": None if dof is None else float(dof[test["index"]]), "level": level,
                     "agree": test["agree"] and not resolved,
                     "mixed": da["r_hat_U_max"] <= r_hat_ok and db["r_hat_U_max"] <= r_hat_ok,
                     "ess_per_second": (da["ess_per_second"], db["ess_per_second"])})
    return rows
