"""L-BFGS inside one ``lax.while_loop``: the compact-form direction and the line search of the solver.

Generic in the objective: ``fg(theta) -> (f, g, gmax)`` with ``gmax`` the stopping measure (for the
solver, ``max |dS/dU|``; :mod:`paththeory.solve`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array


class State(NamedTuple):
    """An L-BFGS iterate with its curvature pairs (ring buffer) and counters; ``status`` as in ``STATUS`` of
    :mod:`paththeory.solve`."""

    theta: Array
    f: Array
    g: Array
    gmax: Array
    s_hist: Array
    y_hist: Array
    count: Array
    it: Array
    evals: Array
    status: Array
    uncertified: Array  # steps accepted on the approximate Wolfe condition, not Armijo's


def lbfgs_direction(g, s_hist, y_hist, count, h0=None):
    """L-BFGS direction ``-H g`` from the last ``m`` pairs (ring buffer, newest at ``count-1 mod m``).

    Compact form of Byrd, Nocedal and Schnabel (1994): with ``S, Y`` the pairs oldest first,
    ``R = triu(S^T Y)``, ``D = diag(S^T Y)``, ``u = R^{-1} S^T g``,
    ``H g = H_0 g + S R^{-T} [(D + Y^T H_0 Y) u - Y^T H_0 g] - H_0 Y u``: a few small matrix
    products instead of the sequential two-loop recursion. ``H_0`` is the matrix ``h0`` (an inverse
    Hessian) or, by default, ``gamma I`` with ``gamma = s.y / y.y`` of the newest pair.
    """
    m = s_hist.shape[0]
    n_valid = jnp.minimum(count, m)
    k = jnp.arange(m)
    valid = k < n_valid
    order = (count - n_valid + k) % m  # oldest first
    S = jnp.where(valid[:, None], s_hist[order], 0.0)
    Y = jnp.where(valid[:, None], y_hist[order], 0.0)
    sy = S @ Y.T
    R = jnp.triu(sy) + jnp.diag(jnp.where(valid, 0.0, 1.0))
    if h0 is None:
        newest = Y[jnp.maximum(n_valid - 1, 0)]
        yy = newest @ newest
        gamma = jnp.where(count > 0, (S[jnp.maximum(n_valid - 1, 0)] @ newest) / jnp.where(yy > 0, yy, 1.0), 1.0)
        h0_g, h0_yt = gamma * g, gamma * Y.T
    else:
        h0_g, h0_yt = h0 @ g, h0 @ Y.T
    u = jax.scipy.linalg.solve_triangular(R, S @ g, lower=False)
    inner = jnp.diagonal(sy) * u + Y @ (h0_yt @ u) - Y @ h0_g
    p1 = jax.scipy.linalg.solve_triangular(R, inner, lower=False, trans=1)
    return -(h0_g + S.T @ p1 - h0_yt @ u)


def reached(gmax: Array, f: Array, tol, rtol) -> Array:
    """The stopping rule: ``max |dS/dU| <= max(tol, rtol |S/N|)``."""
    return gmax <= jnp.maximum(tol, rtol * jnp.abs(f))


def run(state: State, fg, tol, max_iter, *, roundoff: float, max_backtracks: int,
           max_uncertified: int | None = None, h0: Array | None = None, rtol=0.0) -> State:
    """Run L-BFGS iterations from ``state`` until ``max |dS/dU| <= max(tol, rtol |S/N|)``, a failed line search or
    ``max_iter`` iterations in all. ``fg(theta) -> (f, g, gmax)``; ``roundoff`` is the relative
    change of ``f`` below which a step is accepted on an approximate Wolfe condition instead of
    Armijo's (where ``f`` cannot certify descent). With ``max_uncertified`` the run ends (status 1)
    after that many such steps: the float32 phase has reached its noise floor. ``h0``: the initial
    inverse Hessian (default: scaled identity), see :func:`lbfgs_direction`."""
    def fg_aux(theta):
        return (*fg(theta), ())

    def body(s: State) -> State:
        return iteration(s, fg_aux, tol, max_iter, roundoff=roundoff, max_backtracks=max_backtracks,
                         max_uncertified=max_uncertified, h0=h0, rtol=rtol)[0]

    return jax.lax.while_loop(lambda s: s.status == 0, body, state)


def iteration(s: State, fg, tol, max_iter, *, roundoff, max_backtracks, max_uncertified=None, h0=None, rtol=0.0,
              has_h0=None, probe=None, active=None, aux=()) -> tuple[State, object]:
    """One L-BFGS iteration of :func:`run` from ``s``: ``(state, aux)``, with ``fg(theta) -> (f, g, gmax, aux)`` and
    ``aux`` that of the accepted point (the argument ``aux`` where none was). Every option may be traced, so that
    one loop can run several phases (:func:`paththeory.solve._minimise`): ``has_h0`` (a traced flag) says whether
    ``h0`` is used or the scaled identity; ``probe`` evaluates at ``s.theta`` itself and accepts it (no step);
    where ``active`` is false nothing is evaluated."""
    history = s.s_hist.shape[0]
    if has_h0 is None:
        direction = lbfgs_direction(s.g, s.s_hist, s.y_hist, s.count, h0)
        first = (s.count == 0) & (h0 is None)  # a quasi-Newton step without curvature: keep it short
    else:
        direction = jax.lax.cond(has_h0, lambda: lbfgs_direction(s.g, s.s_hist, s.y_hist, s.count, h0),
                                 lambda: lbfgs_direction(s.g, s.s_hist, s.y_hist, s.count))
        first = (s.count == 0) & ~has_h0
    slope = s.g @ direction
    direction = jnp.where(slope < 0, direction, -s.g)
    slope = jnp.where(slope < 0, slope, -(s.g @ s.g))
    if probe is not None:
        direction = jnp.where(probe, jnp.zeros_like(direction), direction)
    t0 = jnp.where(first, jnp.minimum(1.0, 1.0 / jnp.sqrt(s.g @ s.g)), 1.0)
    f_scale = jnp.maximum(1.0, jnp.abs(s.f))

    def ls_cond(c):
        going = (~c[5]) & (c[4] < max_backtracks)
        return going if active is None else going & active

    def ls_body(c):
        t = c[0]
        f_new, g_new, gmax_new, aux_new = fg(s.theta + t * direction)
        armijo = f_new <= s.f + 1e-4 * t * slope
        # Approximate Wolfe (Hager & Zhang): f within its round-off and the slope not reversed.
        near = (f_new <= s.f + roundoff * f_scale) & (g_new @ direction <= (2e-4 - 1.0) * slope)
        finite = jnp.isfinite(f_new) & jnp.all(jnp.isfinite(g_new))
        ok = finite & (armijo | near)
        ok = ok if probe is None else ok | probe
        return (jnp.where(ok, t, 0.5 * t), f_new, g_new, gmax_new, c[4] + 1, ok, finite & armijo, aux_new)

    t, f_new, g_new, gmax_new, n_ls, ok, certified, aux = jax.lax.while_loop(
        ls_cond, ls_body, (t0, s.f, s.g, s.gmax, jnp.array(0), jnp.array(False), jnp.array(False), aux)
    )
    theta_new = jnp.where(ok, s.theta + t * direction, s.theta)
    step = theta_new - s.theta
    dg = g_new - s.g
    sy = step @ dg
    keep = ok & (sy > 1e-12 * jnp.sqrt(step @ step) * jnp.sqrt(dg @ dg))
    slot = s.count % history
    s_hist = jnp.where(keep, s.s_hist.at[slot].set(step), s.s_hist)
    y_hist = jnp.where(keep, s.y_hist.at[slot].set(dg), s.y_hist)
    f = jnp.where(ok, f_new, s.f)
    g = jnp.where(ok, g_new, s.g)
    gmax = jnp.where(ok, gmax_new, s.gmax)
    it = s.it + 1
    uncertified = s.uncertified + (ok & ~certified)
    at_tol = reached(gmax, f, tol, rtol)
    done = at_tol if max_uncertified is None else at_tol | (uncertified >= max_uncertified)
    status = jnp.where(done, 1, jnp.where(~ok, 3, jnp.where(it >= max_iter, 2, 0)))
    return State(theta_new, f, g, gmax, s_hist, y_hist, s.count + keep, it, s.evals + n_ls, status,
                 uncertified), aux
