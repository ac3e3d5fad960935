"""The next order of Laplace's method (paththeory.laplace) against exact posterior means.

* One path: the exact mean by quadrature (paththeory.one_path) at N = P = 10, 30, 100. The saddle point misses it by
  about 0.4/N; the next order must leave at most 3 % of that gap (measured: 1.5 %, 1.3 %, 0.6 %), an error of the
  next order, O(1/N^2).
* Two outputs on one path: the exact Gibbs sampler of the weights at N = P = 10 (its mean known to about 0.002),
  where the saddle point misses by about 0.07 per entry; the next order lands within sampling noise.
* The prior of two layers (no data), one output and two: its mean is the GP point at every width, which is also its mode against the
  invariant measure, so the first-order shift must vanish in every entry, the inner level and the readout included,
  while its two terms (the measure's and the third derivatives') do not vanish alone.
* A closed form with a nonzero shift: the Gamma density x^(k-1) e^(-k x) against dx has mean 1 and mode 1 - 1/k; read
  against dx/x its "saddle" is 1, so the shift from the saddle to the mean is 0 at first order, and against dx the
  saddle is 1 - 1/k and the shift 1/k exactly.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from paththeory import laplace
from paththeory.action import entropy_with_readout
from paththeory.experiments import stats
from paththeory.one_path import one_path_posterior
from paththeory.sampling import sample_posterior
from paththeory.solve import Theory
from paththeory.tasks.examples import one_path_problem

T = 0.1


@pytest.mark.parametrize("N", [10, 30, 100])
def test_one_path_mean_against_the_exact_quadrature(N):
    arch, F, Y = one_path_problem()
    f, y = F[:N], Y[:N]
    theory = Theory(arch, f, y)
    solution = theory.solve(float(N), T)
    exact = one_path_posterior(f[:, 0] @ f[:, 0].T, y, N, T).mean
    saddle = float(solution.U[0, 0])
    predicted = float(laplace.laplace_shift(theory, solution).U_mean[0, 0])
    assert 0.3 < N * (exact - saddle) < 0.5  # the gap the next order must close (0.46, 0.37, 0.32)
    assert abs(exact - predicted) <= 0.03 * abs(exact - saddle)


@pytest.mark.slow
def test_two_outputs_against_the_exact_gibbs_sampler():
    arch, F, y = one_path_problem()
    f = F[:10]
    second = np.sign(f[:, 0] @ np.random.default_rng(7).normal(size=f.shape[-1]))  # another linear teacher
    Y = np.stack([y[:10], second], axis=1)
    theory = Theory(arch, f, Y)
    solution = theory.solve(10.0, T)
    shift = laplace.laplace_shift(theory, solution)
    assert shift.U_mean.shape == (2, 2) and np.shape(shift.readout_shift) == (2, 2)
    draws = sample_posterior(arch, f, Y, 10, T, method="gibbs", num_warmup=500, num_samples=10_000, num_chains=8,
                             seed=1, progress_bar=False)
    se = stats.batch_means_se(draws.U_draws)
    z_saddle = (draws.U - solution.U) / se
    z_next = (draws.U - shift.U_mean) / se
    assert np.min(np.abs(z_saddle)) > 10  # the gap the next order must close: 0.02 to 0.07 per entry
    assert np.max(np.abs(z_next)) < 4  # measured: within 1.5 errors of about 0.002


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_the_two_layer_prior_has_no_shift(n_outputs):
    widths, heads, variances = (12.0, 12.0, 12.0), (2, 2), (1.0,) * 4
    sizes = (n_outputs, 4 * n_outputs, 2 * n_outputs)

    def half_action(x):
        U_a, U1, U2 = laplace._unpack(x, sizes)
        return 0.5 * entropy_with_readout([U1, U2], U_a, widths, heads, variances)

    gp = jnp.asarray(laplace._pack([np.eye(n) for n in sizes]))
    shift = laplace.mean_shift(half_action, lambda x: laplace.log_measure(x, sizes), gp)
    np.testing.assert_allclose(shift, 0.0, atol=1e-12)
    moved = laplace.mean_shift(half_action, lambda x: 0.0 * x[0], gp)  # the third derivatives' term alone
    assert np.max(np.abs(moved)) > 1e-2


@pytest.mark.parametrize("k", [20.0, 200.0])
def test_a_gamma_density_in_two_measures(k):
    half = lambda x: k * x[0] - k * jnp.log(x[0])  # x^k e^(-k x) against dx/x, i.e. x^(k-1) e^(-k x) against dx
    assert float(laplace.mean_shift(half, lambda x: -jnp.log(x[0]), jnp.ones(1))[0]) == pytest.approx(0.0, abs=1e-12)
    half_dx = lambda x: k * x[0] - (k - 1) * jnp.log(x[0])  # the same density read against dx: saddle 1 - 1/k
    shift = float(laplace.mean_shift(half_dx, lambda x: 0.0 * x[0], jnp.array([1 - 1 / k]))[0])
    assert shift == pytest.approx(1 / k, rel=2 / k)  # exact mean 1: the first order gets 1/k up to O(1/k^2)


def test_bad_input_is_named():
    arch, F, Y = one_path_problem()
    mine, other = Theory(arch, F[:10], Y[:10]), Theory(arch, F[:10], -Y[:10])
    with pytest.raises(ValueError, match="Solution of this theory"):
        laplace.laplace_shift(mine, other.solve(10.0, T))
