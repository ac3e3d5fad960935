"""The saddle point against the exact posterior of one path, by quadrature (book/depth.md, "When is the saddle
point accurate?", and the problem prob-prefactor of book/problems.md).

One layer, one head, unit variances, all widths N. Keeping the exact Gamma and Wishart weights, the one-layer
partition function is ``int dU_a dU exp(-S/2) U_a^{-1} U^{-(H+1)/2}`` (H = 1), and this is the exact joint
posterior density of ``U_a = |a|^2 / n_1`` and of the overlap ``U = w.w / n_0`` of the effective weights: its
mean in ``U`` is what Result 2 and NUTS estimate. With

    S = N (U_a - ln U_a) + N (U / U_a - ln U + ln U_a) + E(U),   E(U) = ln det(U C + T I) + y^T (U C + T I)^{-1} y,

the ``U_a`` integral is ``int dU_a U_a^{-1} exp(-N (U_a + U / U_a) / 2) = 2 K_0(N sqrt U)``, so the marginal
density of ``U`` is ``U^{N/2 - 1} K_0(N sqrt U) exp(-E(U)/2)``: one exact quadrature per width. It is compared
with

* the saddle point, the minimiser of ``S`` (the package: ``Theory(...).solve(N, T).U``), and
* the mode, the maximiser of the exact integrand (``S + 2 ln U_a + 2 ln U``: the prefactor kept),

at N = P = 10, 30, 100 on one synthetic task (the first P sequences of one pool, T = 0.1). Measured relative
errors against the exact posterior mean (this build): saddle -3.9 %, -1.2 %, -0.40 %; mode -24 %, -12 %,
-6.0 %; the (|Pi| + 1) / N heuristic says 20 %, 6.7 %, 2 %.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, special

import paththeory as pt
from paththeory.solve import Theory
from tests.conftest import random_qk_arch

T = 0.1
WIDTHS = (10, 30, 100)
QUAD_RTOL = 1e-10


def task():
    """One head, N0 = 20, a pool of 100 sequences labelled by a random teacher: features [100, 1, 20], labels."""
    arch = random_qk_arch((1,), n0=20, readout="first", seed=0)
    rng = np.random.default_rng(100)
    x = rng.normal(size=(100, 4, 20))
    teacher = rng.normal(size=20)
    y = np.sign(x[:, 0] @ teacher + 0.5 * x[:, 1] @ teacher)
    return arch, np.asarray(pt.path_features(arch, x)), y


def energy(u, C, y):
    A = u * C + T * np.eye(len(y))
    return np.linalg.slogdet(A)[1] + y @ np.linalg.solve(A, y)


def log_marginal(u, N, energy_of):
    """ln of the exact marginal density of U, up to a constant: (N/2 - 1) ln U + ln K_0(N sqrt U) - E(U)/2."""
    z = N * np.sqrt(u)
    return (N / 2 - 1) * np.log(u) + np.log(special.k0e(z)) - z - 0.5 * energy_of(u)


def posterior_mean(N, energy_of):
    """<U> under the exact marginal density, by quadrature in ln U around its peak."""
    g = lambda s: log_marginal(np.exp(s), N, energy_of) + s  # density of s = ln U
    peak = optimize.minimize_scalar(lambda s: -g(s), bounds=(-10, 6), method="bounded").x
    top = g(peak)
    weight = lambda s: np.exp(g(s) - top)
    kw = dict(points=[peak], limit=400, epsabs=0.0, epsrel=QUAD_RTOL)
    Z = integrate.quad(weight, peak - 15, peak + 15, **kw)[0]
    M = integrate.quad(lambda s: np.exp(s) * weight(s), peak - 15, peak + 15, **kw)[0]
    return M / Z


def mode(N, energy_of):
    """The maximiser in U of the exact integrand exp(-S/2) U_a^{-1} U^{-1}, i.e. the minimiser of
    S + 2 ln U_a + 2 ln U; at fixed U the U_a that minimises it solves N U_a^2 + 2 U_a - N U = 0."""
    def minus_two_log(s):
        u = np.exp(s)
        ua = (np.sqrt(1 + N * N * u) - 1) / N
        return N * ua + N * u / ua - N * np.log(u) + 2 * np.log(ua) + 2 * np.log(u) + energy_of(u)

    return np.exp(optimize.minimize_scalar(minus_two_log, bounds=(-10, 6), method="bounded",
                                           options={"xatol": 1e-12}).x)


def test_bessel_reduction_and_prior_mean():
    """The U_a integral is 2 K_0(N sqrt U), and with no data the exact mean of U is the GP value 1 (the prior mean
    of w.w / n_0), at every width: a check of the powers in the marginal density."""
    for N in (10, 30):
        for u in (0.3, 1.0, 2.5):
            direct = integrate.quad(lambda s: np.exp(-N / 2 * (np.exp(s) + u * np.exp(-s))), -30, 30,
                                    epsabs=0.0, epsrel=1e-12, limit=400)[0]  # dU_a / U_a = d ln U_a
            assert direct == pytest.approx(2 * special.k0(N * np.sqrt(u)), rel=1e-9)
    for N in WIDTHS:
        assert posterior_mean(N, lambda u: 0.0) == pytest.approx(1.0, rel=1e-8)


def test_marginal_matches_two_dimensional_quadrature():
    """At N = 10, the posterior mean of U from the joint density over (U_a, U) equals the one from the marginal."""
    arch, F, y = task()
    N = 10
    f, yy = F[:N, 0], y[:N]
    C = f @ f.T
    E = lambda u: energy(u, C, yy)
    mean_1d = posterior_mean(N, E)
    # in s = ln U, s_a = ln U_a the measure dU_a dU = U_a U ds_a ds cancels the prefactor U_a^{-1} U^{-1}
    log_joint = lambda sa, s: -0.5 * (N * np.exp(sa) + N * np.exp(s - sa) - N * s + E(np.exp(s)))
    top = log_joint(0.5 * np.log(mean_1d), np.log(mean_1d))
    kw = dict(epsabs=0.0, epsrel=1e-9)
    lo, hi = np.log(mean_1d) - 4, np.log(mean_1d) + 4
    Z = integrate.dblquad(lambda sa, s: np.exp(log_joint(sa, s) - top), lo, hi, -6, 6, **kw)[0]
    M = integrate.dblquad(lambda sa, s: np.exp(s + log_joint(sa, s) - top), lo, hi, -6, 6, **kw)[0]
    assert M / Z == pytest.approx(mean_1d, rel=1e-6)


@pytest.mark.slow  # 20 s of quadrature: the main suite only, not the lower-bounds run
def test_saddle_point_error_shrinks_with_width_and_is_below_the_mode_shift():
    arch, F, y = task()
    saddle_err, mode_err = [], []
    for N in WIDTHS:
        f, yy = F[:N], y[:N]
        C = f[:, 0] @ f[:, 0].T
        E = lambda u: energy(u, C, yy)
        mean = posterior_mean(N, E)
        sol = Theory(arch, f, yy).solve(N, T)
        assert sol.report["converged"]
        saddle_err.append(sol.U[0, 0] / mean - 1)
        mode_err.append(mode(N, E) / mean - 1)
    saddle_err, mode_err = np.array(saddle_err), np.array(mode_err)
    widths = np.array(WIDTHS, float)
    print("N", WIDTHS, "saddle", np.round(saddle_err, 4), "mode", np.round(mode_err, 4))
    # the saddle point's relative error shrinks with N, like 1/N: |error| <= 0.6 / N (measured 0.39 / N to 0.40 / N),
    # a third of the (|Pi| + 1) / N = 2 / N that the prefactor heuristic would give
    assert np.all(np.diff(np.abs(saddle_err)) < 0)
    assert np.all(np.abs(saddle_err) <= 0.6 / widths)
    # the mode (the prefactor kept) is much further from the posterior mean: below it by at least 1 / N
    assert np.all(mode_err < -1.0 / widths)
    assert np.all(np.abs(mode_err) > 4 * np.abs(saddle_err))
