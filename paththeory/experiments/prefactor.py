"""Does the ``1/N`` prefactor of the theory's error grow with the architecture? (book: the validity chapter, "Does
the prefactor grow with the architecture?")

The theory's one approximation, Laplace's, leaves an error in the order parameter that vanishes as the width grows; at
a fixed architecture it falls like ``1/N``, and how its prefactor grows with the number of paths is not derived. This
module asks every posterior sample the book ships, NUTS and exact Gibbs alike, for seven networks: the hidden-Markov-chain
task (4 paths) and the Omniglot network (16 paths) of :mod:`paththeory.experiments.validity`, the four networks
of :mod:`paththeory.experiments.residual` (attention only and with MLP blocks: 4 paths; with skips: 9; two residual
blocks: 36) and the three-output network of :mod:`paththeory.experiments.multiclass` (4 paths, a ``U`` of size
``C |Pi| = 12``), each with a longer Gibbs scan at widths ``N >= |Pi|`` (:func:`scan_settings`). A network's size is
that of its ``U``: ``|Pi|``, or ``C |Pi|`` with ``C`` outputs (``paths`` below).

It computes findings, not words (the words: :mod:`paththeory.reports.prefactor`):

* :class:`Point`: one sampled width, its distance ``d`` from the theory with its noise floor, debiased with its error
  where resolved, else an upper limit (:func:`paththeory.experiments.stats.debiased_distance`);
* :class:`NetworkScaling`: per network, ``d ~ N^-b`` through every mixed width (resolved as measurements, the others
  as upper limits, :func:`paththeory.experiments.stats.power_law_fit`) and the prefactor ``N d``, a weighted mean over
  the resolved mixed widths with ``N >= |Pi|``, which exists only with two such widths;
* :class:`Growth`: the prefactor against the number of paths, ``N d ~ |Pi|^eta``, with ``eta``'s distance in
  errors from 0 (flat), 1 (like the paths) and 2 (like the ``|Pi|(|Pi| + 1) / 2`` fluctuation modes).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from paththeory.experiments import multiclass, residual, stats, validity
from paththeory.experiments.compare import distance as compare_distance
from paththeory.experiments.records import samplers
from paththeory.laplace import laplace_shift
from paththeory.profiles import choose
from paththeory.solve import Theory

#: The networks, in the order of the chapter: the validity experiment's tasks, the residual experiment's, many outputs.
NETWORKS = ("markov", "omniglot", "attention", "mlp", "skip", "residual", "outputs")
#: The reference exponents of the prefactor's growth ``N d ~ |Pi|^eta``: flat, like the paths, like the modes.
GROWTHS = {"flat": 0.0, "paths": 1.0, "modes": 2.0}
#: How many errors a fitted exponent may lie from a reference to be consistent with it.
Z_CONSISTENT = 2.0
#: The networks the next order of Laplace's method covers (:mod:`paththeory.laplace`: no skip connections).
PREDICTED = ("markov", "omniglot", "attention", "mlp", "outputs")
#: The false-alarm rate at which the measured distances of a network are said to disagree with the prediction.
LEVEL = 0.05


def scan_settings(profile: str | None = None) -> tuple[validity.Config, residual.Config, multiclass.Config]:
    """The configurations of the longer Gibbs scan: Omniglot at ``N = 20, 40, 100``, the networks with skips and
    residual blocks at ``N = 50, 100`` and three outputs at ``N = 20, 30, 60, 100``, widths ``N >= |Pi|`` (``C |Pi|``)
    where the shorter runs of their chapters leave ``d`` unresolved; 400 warm-up and 3,200 kept sweeps of 4 chains
    (4 times the chapters' `smoke` schedule, so half the noise floor), `paper`: 10,000. Their records ship for `smoke`
    (``validity_gibbs_scan_smoke.json``, ``residual_gibbs_scan_smoke.json``, ``multiclass_gibbs_scan_smoke.json``:
    about 22, 25 and 4 minutes on a 2-core CPU)."""
    samples = choose({"smoke": 3200, "colab": 3200, "paper": 10_000}, profile)
    v = dataclasses.replace(validity.settings(profile), gibbs_markov_widths=(), gibbs_omniglot_widths=(20, 40, 100),
                            gibbs_warmup=400, gibbs_samples=samples)
    r = dataclasses.replace(residual.settings(profile), gibbs=(("skip", 50), ("skip", 100), ("residual", 50),
                                                               ("residual", 100)), gibbs_warmup=400,
                            gibbs_samples=samples)
    m = dataclasses.replace(multiclass.settings(profile), sample_widths=(), gibbs_widths=(20, 30, 60, 100),
                            gibbs_warmup=400, gibbs_samples=samples, gibbs_chains=4)
    return v, r, m


def write_scan(experiment: str, profile: str | None = None, out=None, *, progress: bool = True):
    """Sample the scan of :func:`scan_settings` for ``experiment`` (``"validity"``, ``"residual"`` or
    ``"multiclass"``) with the Gibbs sampler and write its records (default: the package's own
    ``<experiment>_gibbs_scan_<profile>.json``; ``python -m paththeory <experiment> --sampler gibbs --scan``). Atomic,
    as every writer of records."""
    from functools import partial

    from paththeory.profiles import current_profile

    profile = current_profile(profile)
    modules = {"validity": (validity, 0), "residual": (residual, 1), "multiclass": (multiclass, 2)}
    if experiment not in modules:
        raise ValueError(f"experiment must be one of {tuple(modules)}; got {experiment!r}.")
    module, i = modules[experiment]
    return module.RECORDS.write(scan_settings(profile)[i], profile, "gibbs",
                                partial(module.sample_points, progress=progress), out, variant="scan")


@dataclass(frozen=True)
class Point:
    """One sampled width of one network: ``distance`` ``d = |U_sampled - U*|_F / |U*|_F`` and its noise floor
    ``noise`` ``s`` (``None``: not estimated), ``batch_means`` behind ``s``, ``mixed`` (R-hat of ``U`` within its
    experiment's threshold); ``resolved`` (``d > 2 s``) with the debiased ``value`` and its error ``se``, else an
    ``upper_limit`` and the ``limit``/``limit_se`` a censored fit takes (:func:`paththeory.experiments.compare.distance`)."""

    network: str
    paths: int
    width: int
    sampler: str
    distance: float
    noise: float | None
    batch_means: int | None
    mixed: bool
    resolved: bool = False
    value: float | None = None
    se: float | None = None
    upper_limit: float | None = None
    limit: float | None = None
    limit_se: float | None = None
    outputs: int = 1

    @property
    def judged(self) -> bool:
        """Whether the point counts: its chains mixed and its noise floor is known."""
        return self.mixed and self.noise is not None


def point(network: str, paths: int, width: int, sampler: str, distance: float, noise: float | None,
          batch_means: int | None, mixed: bool, outputs: int = 1) -> Point:
    """A :class:`Point`, debiased or bounded where its noise floor is known (``paths``: the size of ``U``, ``C |Pi|``
    for ``outputs`` ``C``).

    Example:
      >>> p = point("markov", 4, 10, "nuts", 0.104, 0.0104, 40, True)
      >>> p.resolved, round(p.value, 4), round(p.se, 4)
      (True, 0.1035, 0.0105)
    """
    base = Point(network, int(paths), int(width), sampler, float(distance), noise, batch_means, bool(mixed),
                 outputs=int(outputs))
    d = compare_distance(distance, noise, batch_means)
    return dataclasses.replace(base, resolved=d.resolved, value=d.value, se=d.se, upper_limit=d.upper_limit,
                               limit=d.limit, limit_se=d.limit_se)


@dataclass(frozen=True)
class PowerLaw:
    """``d ~ N^-b`` fitted through a network's mixed widths (:func:`paththeory.experiments.stats.power_law_fit`):
    ``determined`` only with two resolved widths at least."""

    determined: bool
    b: float | None
    b_se: float | None
    chi2_nu: float | None
    n_measured: int
    n_censored: int


@dataclass(frozen=True)
class NetworkScaling:
    """One network: its ``points``, the ``fit`` of ``d ~ N^-b``, and the prefactor ``N d`` (weighted mean over the
    resolved mixed ``regime_widths`` with ``N >= paths``, with its error inflated by ``sqrt(chi2/nu)`` where that
    exceeds 1: :func:`paththeory.experiments.stats.weighted_mean`), ``None`` below two such widths. Averaging the
    resolved widths alone does not bias it: on simulated distances with a known prefactor it lands within 0.5 % of
    the truth whatever the floors (tests/experiments/test_stats_calibration.py), since the wide, noisy widths that
    pass the threshold by fluctuating up carry little weight."""

    network: str
    paths: int
    points: tuple[Point, ...]
    fit: PowerLaw
    regime_widths: tuple[int, ...]
    prefactor: float | None
    prefactor_se: float | None
    prefactor_chi2_nu: float | None
    outputs: int = 1


@dataclass(frozen=True)
class Growth:
    """The prefactor against the number of paths, ``N d ~ |Pi|^eta``, through the networks that have one
    (``networks``, ``paths``). ``determined`` needs prefactors at two path counts at least; ``z`` is
    ``(eta - g) / eta_se`` for each reference exponent of :data:`GROWTHS`, and ``consistent`` the references
    within :data:`Z_CONSISTENT` errors. ``chi2_p``: the p-value of the power law's chi-square (``None`` with two
    networks); ``size_explains``: whether one power law of the size describes the prefactors within their errors (its
    p-value at least :data:`LEVEL`), ``None`` without a p-value. Where it does not, the networks differ in more than
    their size, and ``eta`` (its error inflated by ``sqrt(chi2_nu)``) is a trend, not a law."""

    networks: tuple[str, ...]
    paths: tuple[int, ...]
    determined: bool
    eta: float | None
    eta_se: float | None
    chi2_nu: float | None
    z: dict[str, float] | None
    consistent: tuple[str, ...]
    chi2_p: float | None = None
    size_explains: bool | None = None


@dataclass(frozen=True)
class CommonWidth:
    """``N d`` of every network at ``width``, the largest width at which each has a resolved mixed point (NUTS and
    Gibbs pooled by their weighted mean, :func:`paththeory.experiments.stats.weighted_mean`), and the :class:`Growth`
    fitted through them: the growth with the architecture, without the different width ranges of the prefactors."""

    width: int
    networks: tuple[str, ...]
    paths: tuple[int, ...]
    values: tuple[float, ...]
    ses: tuple[float, ...]
    growth: Growth


@dataclass(frozen=True)
class Prediction:
    """The next order of Laplace's method at one width of one network (:func:`paththeory.laplace.laplace_shift`):
    ``distance``, ``|E[U] - U*|_F / |U*|_F``, what the debiased distance of an exact sampler's mean approaches."""

    network: str
    paths: int
    width: int
    distance: float


@dataclass(frozen=True)
class PredictionCheck:
    """One network's measured distances against :class:`Prediction`: ``chi2`` over its ``n_resolved`` resolved mixed
    points and its ``p`` (:func:`paththeory.experiments.stats.goodness_of_fit`), ``fit_agrees`` when ``p`` is at least
    :data:`LEVEL` (``None`` without a resolved point); ``limits_kept`` of its ``limits`` unresolved ones whose upper
    limit lies above the prediction, ``limits_agree`` when all do; ``agrees``: both (``None`` without a resolved
    point); ``below_paths``: the widths of the points it counts that lie below the network's number of paths
    (``N < |Pi|``, outside the theory's regime: their distances test the prediction where it need not hold)."""

    network: str
    paths: int
    n_resolved: int
    chi2: float | None
    p: float | None
    fit_agrees: bool | None
    limits_kept: int
    limits: int
    limits_agree: bool
    agrees: bool | None
    below_paths: tuple[int, ...] = ()


@dataclass(frozen=True)
class Findings:
    """Every network's :class:`NetworkScaling`, the :class:`Growth` of their prefactors, and, for the networks the next
    order of Laplace's method covers, its :class:`Prediction` at every sampled width and their :class:`PredictionCheck`."""

    networks: tuple[NetworkScaling, ...]
    growth: Growth
    predictions: tuple[Prediction, ...] = ()
    checks: tuple[PredictionCheck, ...] = ()
    common: CommonWidth | None = None


def network_scaling(points: Sequence[Point], network: str) -> NetworkScaling:
    """:class:`NetworkScaling` of ``network`` from its ``points`` (NUTS and Gibbs pooled; those not
    :attr:`Point.judged` are kept but enter no fit).

    Example:
      >>> pts = [point("x", 4, w, "gibbs", 1.0 / w, 0.1 / w, 40, True) for w in (10, 30, 100)]
      >>> s = network_scaling(pts, "x")
      >>> round(s.fit.b, 3), round(s.prefactor, 3), s.regime_widths
      (1.0, 0.995, (10, 30, 100))
    """
    own = tuple(sorted((p for p in points if p.network == network), key=lambda p: (p.width, p.sampler)))
    if not own:
        raise ValueError(f"no point of the network {network!r}.")
    paths = own[0].paths
    judged = [p for p in own if p.judged]
    fit = PowerLaw(False, None, None, None, sum(p.resolved for p in judged), sum(not p.resolved for p in judged))
    if judged:
        f = stats.power_law_fit([p.width for p in judged],
                                [p.value if p.resolved else p.limit for p in judged],
                                [p.se if p.resolved else p.limit_se for p in judged],
                                [not p.resolved for p in judged])
        fit = PowerLaw(f["determined"], f["b"], f["b_se"], f["chi2_nu"], f["n_measured"], f["n_censored"])
    regime = [p for p in judged if p.resolved and p.width >= paths]
    widths = tuple(sorted({p.width for p in regime}))
    prefactor = se = chi2 = None
    if len(widths) >= 2:
        m = stats.weighted_mean([p.width * p.value for p in regime], [p.width * p.se for p in regime])
        prefactor, se, chi2 = m["mean"], m["se"], m["chi2_nu"]
    return NetworkScaling(network, paths, own, fit, widths if prefactor is not None else (), prefactor, se, chi2,
                          own[0].outputs)


def growth(scalings: Sequence[NetworkScaling]) -> Growth:
    """:class:`Growth` of the prefactors of ``scalings`` (those that have one) with the number of paths.

    Example:
      >>> pts = [point(n, k, w, "gibbs", k / w, 0.1 * k / w, 40, True)
      ...        for n, k in (("a", 4), ("b", 16)) for w in (20, 60, 200)]
      >>> g = growth([network_scaling(pts, "a"), network_scaling(pts, "b")])
      >>> round(g.eta, 3), g.consistent
      (1.0, ('paths',))
    """
    have = [s for s in scalings if s.prefactor is not None]
    return _growth(tuple(s.network for s in have), tuple(s.paths for s in have), [s.prefactor for s in have],
                   [s.prefactor_se for s in have])


def _growth(names: tuple[str, ...], paths: tuple[int, ...], values, ses) -> Growth:
    """:class:`Growth` of ``values`` (with errors ``ses``) against the numbers of ``paths``."""
    empty = Growth(names, paths, False, None, None, None, None, ())
    if len(set(paths)) < 2:
        return empty
    f = stats.power_law_fit(paths, values, ses)
    if not f["determined"]:
        return empty
    eta, se = -f["b"], f["b_se"]
    z = {name: (eta - g) / se for name, g in GROWTHS.items()}
    consistent = tuple(name for name in GROWTHS if abs(z[name]) <= Z_CONSISTENT)
    p = f["chi2_p"]
    return Growth(names, paths, True, eta, se, f["chi2_nu"], z, consistent, p, None if p is None else p >= LEVEL)


def common_width(scalings: Sequence[NetworkScaling]) -> CommonWidth | None:
    """:class:`CommonWidth` of ``scalings`` (``None`` when no width is resolved for every network).

    Example:
      >>> pts = [point(n, k, w, "gibbs", k / w, 0.1 * k / w, 40, True)
      ...        for n, k in (("a", 4), ("b", 16)) for w in (20, 60)]
      >>> c = common_width([network_scaling(pts, "a"), network_scaling(pts, "b")])
      >>> c.width, [round(v, 2) for v in c.values], round(c.growth.eta, 3)
      (60, [3.98, 15.92], 1.0)
    """
    resolved = [{p.width for p in s.points if p.judged and p.resolved} for s in scalings]
    shared = set.intersection(*resolved) if resolved else set()
    if not shared:
        return None
    width = max(shared)
    values, ses = [], []
    for s in scalings:
        here = [p for p in s.points if p.width == width and p.judged and p.resolved]
        m = stats.weighted_mean([width * p.value for p in here], [width * p.se for p in here])
        values.append(m["mean"])
        ses.append(m["se"])
    names, paths = tuple(s.network for s in scalings), tuple(s.paths for s in scalings)
    return CommonWidth(width, names, paths, tuple(values), tuple(ses), _growth(names, paths, values, ses))


def check_prediction(points: Sequence[Point], predictions: Sequence[Prediction], network: str) -> PredictionCheck:
    """:class:`PredictionCheck` of ``network``'s judged points against its ``predictions`` (one per width).

    Example:
      >>> pts = [point("x", 4, w, "gibbs", 1.0 / w, 0.1 / w, 40, True) for w in (10, 30)]
      >>> c = check_prediction(pts, [Prediction("x", 4, w, 1.0 / w) for w in (10, 30)], "x")
      >>> c.n_resolved, c.agrees
      (2, True)
    """
    by_width = {q.width: q.distance for q in predictions if q.network == network}
    judged = [p for p in points if p.network == network and p.judged and p.width in by_width]
    if not judged:
        raise ValueError(f"no judged point of the network {network!r} at a predicted width.")
    measured = [p for p in judged if p.resolved]
    limits = [p for p in judged if not p.resolved]
    kept = sum(by_width[p.width] <= p.upper_limit for p in limits)
    below = tuple(sorted({p.width for p in judged if p.width < p.paths}))
    if not measured:
        return PredictionCheck(network, judged[0].paths, 0, None, None, None, kept, len(limits), kept == len(limits),
                               None, below)
    fit = stats.goodness_of_fit([p.value for p in measured], [p.se for p in measured],
                                [by_width[p.width] for p in measured])
    fit_agrees = fit["p"] >= LEVEL
    return PredictionCheck(network, judged[0].paths, len(measured), fit["chi2"], fit["p"], fit_agrees, kept,
                           len(limits), kept == len(limits), fit_agrees and kept == len(limits), below)


def findings(points: Sequence[Point], predictions: Sequence[Prediction] = ()) -> Findings:
    """:class:`Findings` from every network's points: one :class:`NetworkScaling` per network of :data:`NETWORKS`
    that has points (others, in order after them), the :class:`Growth` and :class:`CommonWidth` of those with one
    output (with ``C`` outputs the coding of the labels changes the task as well as the size of ``U``: a simplex
    code, whose rows sum to zero, leaves one output without labels, so ``C |Pi|`` is not a number of paths to put
    beside theirs), and a :class:`PredictionCheck` per network with ``predictions`` (:func:`predict`), which covers
    every network on its own terms."""
    present = [n for n in NETWORKS if any(p.network == n for p in points)]
    present += sorted({p.network for p in points} - set(present))
    scalings = tuple(network_scaling(points, n) for n in present)
    predicted = [n for n in present if any(q.network == n for q in predictions)]
    checks = tuple(check_prediction(points, predictions, n) for n in predicted)
    single = [s for s in scalings if s.outputs == 1]  # the growth with |Pi| compares networks of one output
    return Findings(scalings, growth(single), tuple(predictions), checks, common_width(single))


def predict(points: Sequence[Point], profile: str | None = None) -> tuple[Prediction, ...]:
    """:class:`Prediction` of the next order of Laplace's method at every judged width of every network it covers
    (:data:`PREDICTED`: no skip connections) among ``points``, on the data the samples saw."""
    v_cfg, r_cfg, m_cfg = validity.settings(profile), residual.settings(profile), multiclass.settings(profile)
    out = []
    for network in (n for n in PREDICTED if any(p.network == n for p in points)):
        if network in validity.TASKS:
            prob = validity.problem(network, v_cfg)
            temperature = prob.temperature
        elif network == "outputs":
            prob, temperature = multiclass.chapter_problem(m_cfg), m_cfg.temperature
        else:
            prob, temperature = residual.problem(network, r_cfg), r_cfg.temperature
        theory = Theory(prob.arch, prob.train, prob.y_train)
        own = [p for p in points if p.network == network and p.judged]
        for width in sorted({p.width for p in own}):
            shift = laplace_shift(theory, theory.solve(float(width), temperature))
            out.append(Prediction(network, own[0].paths, int(width), shift.relative))
    return tuple(out)


def validity_points(rows: Sequence[validity.Row]) -> list[Point]:
    """:class:`Point` of every row of :func:`paththeory.experiments.validity.compare`, which has debiased its
    distance already (:func:`paththeory.experiments.validity.row`)."""
    return [Point(r.task, r.paths, r.width, r.sampler, r.distance, r.noise, r.batch_means, r.mixed, r.resolved,
                  r.value, r.se, r.upper_limit, r.limit, r.limit_se) for r in rows]


def residual_points(rows: Sequence[residual.Row]) -> list[Point]:
    """:class:`Point` of every row of :func:`paththeory.experiments.residual.compare`."""
    return [point(r.network, r.paths, r.width, r.sampler, r.U_distance, r.U_noise, r.batch_means, r.converged)
            for r in rows]


def multiclass_points(records: Sequence[dict], cfg: multiclass.Config) -> list[Point]:
    """:class:`Point` of every record of :func:`paththeory.experiments.multiclass.sample_points` (``cfg``: the
    configuration that drew them), against the theory at its width
    (:func:`paththeory.experiments.multiclass.theory_against`); mixed when R-hat of ``U`` is at most
    :data:`paththeory.experiments.multiclass.R_HAT_OK`."""
    prob = multiclass.chapter_problem(cfg)
    out = []
    for record in records:
        _, d, s = multiclass.theory_against(prob, record, cfg)
        out.append(point("outputs", cfg.n_classes * prob.arch.n_paths, record["width"], record["sampler"], d, s,
                         record["batch_means"], record["diagnostics"]["r_hat_U_max"] <= multiclass.R_HAT_OK,
                         outputs=cfg.n_classes))
    return out


def sampled_points(profile: str | None = None, validity_rows: Sequence[dict] | None = None) -> list[Point]:
    """Every shipped record of the seven networks (or a fresh run where none ships for ``profile``'s sizes: hours)
    against the theory at its width: the NUTS and Gibbs records of the validity and residual experiments and the
    scan of :func:`scan_settings`. ``validity_rows``: :func:`paththeory.experiments.validity.compare` of the
    validity experiment's own NUTS and Gibbs records at ``profile``'s sizes, when already computed."""
    v_cfg, r_cfg = validity.settings(profile), residual.settings(profile)
    v_scan, r_scan, m_scan = scan_settings(profile)
    runs = [(v_scan, "gibbs")] + ([(v_cfg, "nuts"), (v_cfg, "gibbs")] if validity_rows is None else [])
    points = [] if validity_rows is None else validity_points(validity_rows)
    for cfg, sampler in runs:
        payload = validity.samples(profile, sampler=sampler, config=cfg)
        points += validity_points(validity.compare(payload, cfg))
    payloads = [(cfg, residual.samples(profile, sampler=sampler, config=cfg))
                for cfg, sampler in ((r_cfg, "nuts"), (r_cfg, "gibbs"), (r_scan, "gibbs"))]
    # one theory curve and one GP predictor per network serve all three sets of records (their data are the same)
    problems = {n: residual.problem(n, r_cfg) for n in residual.NETWORKS}
    widths = sorted({rec["width"] for _, payload in payloads for rec in payload["records"]})
    curves = {n: residual.theory_curve(problems[n], widths, r_cfg.temperature) for n in residual.NETWORKS}
    gp_means = {n: residual.gp_mean(problems[n], r_cfg.temperature) for n in residual.NETWORKS}
    for cfg, payload in payloads:
        points += residual_points(residual.compare(payload, cfg, curves, problems, gp_means))
    m_cfg = multiclass.settings(profile)
    for cfg in (m_cfg, m_scan):
        for sampler in sorted(set(samplers(cfg).values())):
            points += multiclass_points(multiclass.samples(profile, sampler=sampler, config=cfg)["records"], cfg)
    return points
