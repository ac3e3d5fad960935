"""The exact posterior of the overlaps for one path, by quadrature: the oracle of the theory's one approximation
(book: the validity chapter, "One approximation: Laplace's").

One layer of one head, unit variances and every width ``N``. Keeping the exact Gamma and Wishart densities, the
posterior of the overlaps ``U_a = |a|^2 / n_1`` and ``U = w.w / n_0`` (Result 2) is, exactly,

    p(U_a, U) dU_a dU  ∝  exp(-S(U_a, U) / 2)  dU_a / U_a  dU / U,
    S = N (U_a - ln U_a) + N (U / U_a - ln U + ln U_a) + E(U),   E(U) = ln det(U C + T I) + y^T (U C + T I)^{-1} y,

with ``S`` the theory's action and ``C`` the path's kernel: against the invariant measure ``dU_a/U_a dU/U`` (that is
``d ln U_a d ln U``) the action *is* the posterior. So its minimum, the saddle point ``U*``, is the exact joint mode in
``(ln U_a, ln U)``; the theory's one approximation is Laplace's, reading the posterior mean off that mode. The
``U_a`` integral is ``int dU_a / U_a exp(-N (U_a + U / U_a) / 2) = 2 K_0(N sqrt U)``, so the marginal density of
``U`` is ``U^{N/2 - 1} K_0(N sqrt U) exp(-E(U)/2)`` and its mean is one quadrature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, special

from paththeory._checks import as_float_array, check_finite

#: Relative tolerance of the quadratures of :func:`one_path_posterior`.
QUAD_RTOL = 1e-10
#: Half-width, in ln U, of the window the quadratures integrate over around the peak (the density there is below
#: e^-50 of its peak at every width this module is used at: it falls like exp(-N (ln U)^2 / 4) or faster).
_WINDOW = 15.0


@dataclass(frozen=True)
class OnePathPosterior:
    """The exact posterior of one path's overlap ``U`` at one width, and two of its modes.

    ``mean``: the exact posterior mean of ``U`` (what Result 2 and the samplers estimate); ``saddle``: the
    minimiser of the action, the joint mode of the posterior in ``(ln U_a, ln U)``; ``lebesgue_mode``: the joint mode
    in ``(U_a, U)``, one coordinate-dependent mode among many (the density against ``dU_a dU`` carries the extra
    factor ``U_a^{-1} U^{-1}``).

    Book: One approximation: Laplace's
    (https://paththeory.github.io/paththeory/book/validity.html#derivation-saddle-validity)
    """

    width: float
    mean: float
    saddle: float
    lebesgue_mode: float

    @property
    def laplace_error(self) -> float:
        """``saddle / mean - 1``: the error of Laplace's step, the theory's one approximation."""
        return self.saddle / self.mean - 1


@dataclass(frozen=True)
class PathEnergy:
    """``E(U) = ln det(U C + T I) + y^T (U C + T I)^{-1} y`` of one path for a scalar ``U > 0``, from one
    eigendecomposition of its kernel ``C`` (``eigenvalues``, the squared projections ``projections`` of ``y`` on the
    eigenvectors): each call costs ``O(P)``. Build it with :func:`energy_function`.

    Book: One approximation: Laplace's
    (https://paththeory.github.io/paththeory/book/validity.html#derivation-saddle-validity)
    """

    eigenvalues: np.ndarray
    projections: np.ndarray
    temperature: float

    def __call__(self, u: float) -> float:
        d = u * self.eigenvalues + self.temperature
        return float(np.sum(np.log(d)) + np.sum(self.projections / d))

    def slope(self, u: float) -> float:
        """``dE/dU = sum_i lambda_i / d_i - sum_i p_i lambda_i / d_i^2`` with ``d_i = U lambda_i + T``."""
        d = u * self.eigenvalues + self.temperature
        return float(np.sum(self.eigenvalues / d) - np.sum(self.projections * self.eigenvalues / d**2))


def energy_function(kernel, y, temperature: float) -> PathEnergy:
    """The energy of one path as a function of its scalar order parameter (:class:`PathEnergy`), from the path kernel
    ``C`` ``[P, P]`` and the labels ``y`` ``[P]``.

    Book: One approximation: Laplace's
    (https://paththeory.github.io/paththeory/book/validity.html#derivation-saddle-validity)

    Example:
      >>> E = energy_function(np.eye(2), np.array([1.0, -1.0]), 1.0)
      >>> bool(abs(E(1.0) - (2 * np.log(2) + 1.0)) < 1e-12)
      True
    """
    C = as_float_array(kernel, "kernel", ndim=2)
    y = as_float_array(y, "y", ndim=1)
    if C.shape != (len(y), len(y)):
        raise ValueError(f"kernel must be [P, P] with P = len(y) = {len(y)}; got {C.shape}.")
    T = check_finite(temperature, "temperature")
    if T <= 0:
        raise ValueError(f"temperature must be > 0; got {temperature!r}.")
    lam, vec = np.linalg.eigh(0.5 * (C + C.T))
    if lam[0] < -1e-9 * max(1.0, lam[-1]):
        raise ValueError(f"kernel must be positive semi-definite (a path kernel); its least eigenvalue is {lam[0]:.3g}.")
    return PathEnergy(np.clip(lam, 0.0, None), (vec.T @ y) ** 2, T)


def _minimise_log(f, slope=None) -> float:
    """The minimiser ``U`` of ``f(s)`` over ``s = ln U`` in [-10, 6]: Brent's bounded search, then, given the slope
    ``df/dU``, its root next to that point (the search alone is accurate to about sqrt(machine epsilon))."""
    s0 = optimize.minimize_scalar(f, bounds=(-10, 6), method="bounded", options={"xatol": 1e-12}).x
    if slope is not None:
        lo, hi = s0 - 1e-3, s0 + 1e-3
        g = lambda s: slope(np.exp(s))
        if g(lo) < 0 < g(hi):
            s0 = optimize.brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return float(np.exp(s0))


def one_path_posterior(kernel, y, width: float, temperature: float) -> OnePathPosterior:
    """The exact posterior mean of one path's overlap ``U`` at width ``N`` (by quadrature), the saddle point and the
    joint mode in ``(U_a, U)`` (module docstring).

    ``kernel``: the path kernel ``C^{pi pi}`` ``[P, P]`` of the one path (:func:`paththeory.kernels.path_kernels`);
    ``y`` ``[P]``; unit variances and every width ``N``.

    The saddle point minimises ``S``; at fixed ``U`` its ``U_a`` is ``sqrt U``, so ``U*`` minimises
    ``2 N sqrt U - N ln U + E(U)``. The mode in ``(U_a, U)`` minimises ``S + 2 ln U_a + 2 ln U``, whose ``U_a`` at
    fixed ``U`` solves ``N U_a^2 + 2 U_a - N U = 0``.

    Book: One approximation: Laplace's
    (https://paththeory.github.io/paththeory/book/validity.html#derivation-saddle-validity)

    Example:
      >>> post = one_path_posterior(np.eye(3), np.ones(3), 20, 0.5)
      >>> post.lebesgue_mode < post.saddle < post.mean
      True
    """
    energy = energy_function(kernel, y, temperature)
    N = check_finite(width, "width")
    if N <= 0:
        raise ValueError(f"width must be > 0; got {width!r}.")

    def log_marginal(s: float) -> float:  # ln of the density of s = ln U: (N/2) ln U + ln K_0(N sqrt U) - E / 2
        u = np.exp(s)
        z = N * np.sqrt(u)
        return N / 2 * s + np.log(special.k0e(z)) - z - 0.5 * energy(u)

    peak = np.log(_minimise_log(lambda s: -log_marginal(s)))
    top = log_marginal(peak)
    weight = lambda s: np.exp(log_marginal(s) - top)
    kw = dict(points=[peak], limit=400, epsabs=0.0, epsrel=QUAD_RTOL)
    Z = integrate.quad(weight, peak - _WINDOW, peak + _WINDOW, **kw)[0]
    M = integrate.quad(lambda s: np.exp(s) * weight(s), peak - _WINDOW, peak + _WINDOW, **kw)[0]

    readout = lambda u: (np.sqrt(1 + N * N * u) - 1) / N  # the U_a of the mode in (U_a, U) at fixed U

    def lebesgue(s: float) -> float:
        u, ua = np.exp(s), readout(np.exp(s))
        return N * ua + N * u / ua - N * s + 2 * np.log(ua) + 2 * s + energy(u)

    saddle = _minimise_log(lambda s: 2 * N * np.exp(s / 2) - N * s + energy(np.exp(s)),
                           lambda u: N / np.sqrt(u) - N / u + energy.slope(u))
    mode = _minimise_log(lebesgue, lambda u: N / readout(u) - (N - 2) / u + energy.slope(u))
    return OnePathPosterior(width=float(N), mean=float(M / Z), saddle=saddle, lebesgue_mode=mode)
