"""Benchmark: the L-BFGS solver against the authors' first-order baseline in the same process.

Baseline (the optimiser of the authors' repository): Adam on free matrices ``P^(l)`` with ``U^(l) = (P + P^T)/2``, started at
the GP point, stopped when ``max |d(S/N)/dP| < 1e-5`` or after 50,000 steps; lr 0.1 for the
Markov-chain task and 0.008 for Omniglot. Both use the same kernel operator and the same
action code in float64, so the comparison measures the solver's strategy (L-BFGS on a
Cholesky parametrisation, and at the Omniglot size its float32 first phase); its final
gradient is always evaluated in float64. Cases:

* ``markov``: P = 100, 4 paths, N0 = 231, 31 tokens, 10 widths (the Markov-chain task, T = 0.01),
  solved together as one batched sweep;
* ``omniglot``: P = 600, 16 paths (L = 2, H = 4), N0 = 192, 48 tokens, random tokens and QK
  heads (G = 128), mean pooling, one (N, T) solve;
* ``multioutput``: the ``markov`` case with C = 3 outputs, one-hot classes of a random linear teacher on
  the mean token, so the energy acts on a 300 x 300 kernel and U is 12 x 12; also timed without the
  Hessian restart (first-order L-BFGS). The baseline keeps lr 0.1, since none of lr 0.03, 0.01 and
  0.003 avoided its divergence at N = 10 (measured on 2 CPU cores): there, as at lr 0.1, Adam's
  symmetric matrices leave the positive-definite cone and the action turns NaN, after 68, 84 and 337
  steps. At lr 0.03 the next three widths diverged too (after 32-721 steps) and the sixth, N = 129,
  had not converged in 50,000 steps. Diverged widths are reported with a NaN gradient;
* ``multioutput_omniglot``: the ``omniglot`` size with C = 3 outputs (one-hot classes of a random linear
  teacher on the features; a 1800 x 1800 kernel, U 48 x 48), one (N, T) solve against first-order
  L-BFGS (the solver without the Hessian restart): Adam would take hours here.

* ``large_p`` (not part of ``all``: about 20 minutes on 2 CPU cores): the Markov-chain task at
  P = 1,000, 1,500, 2,000, 5,000 and 10,000 (4 paths of N0 = 231: ``n N0 = 924``), one solve at N = 100,
  T = 0.01, with the feature-space backend (:class:`~paththeory.kernels.LowRankKernel`) and, up to
  :data:`LARGE_P_DENSE_MAX` examples, the ``P x P`` one; each in a fresh process
  (:func:`large_p_point`), whose peak resident memory (``ru_maxrss``, which also counts what JAX's
  allocator holds, unlike ``tracemalloc``) is its own. The crossover is the smallest ``P`` at which
  the feature-space solve was the faster.

:data:`CASES` (``all``) holds every case but ``large_p``.
Compile times (``compile_seconds``, ``compilations``) are measured with JAX's persistent compilation cache off,
so that a program loaded from it is not counted as a compilation.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import warnings
from functools import partial
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from paththeory import _compilation_cache
from paththeory.action import action, gp_order_parameters
from paththeory.kernels import apply_operator
from paththeory.model import Architecture, QKAttention, path_features
from paththeory.solve import ConvergenceWarning, Theory

BASELINE_TOL = 1e-5
BASELINE_MAX_STEPS = 50_000
SOLVER_REPEATS = 5


def _adam_objective(ps, op, y, temperature, widths, heads, variances):
    us = [0.5 * (p + p.T) for p in ps]
    return action(us, apply_operator(op, us[0]), y, temperature, widths, heads, variances)


@partial(jax.jit, static_argnames=("heads", "variances", "lr"))
def _adam_loop(ps, op, y, temperature, widths, max_steps, *, heads, variances, lr):
    opt = optax.adam(lr)
    grad_fn = jax.value_and_grad(_adam_objective)

    def cond(c):
        _, _, gmax, step, f = c
        return (gmax >= BASELINE_TOL) & (step < max_steps) & jnp.isfinite(f)

    def body(c):
        ps, state, _, step, _ = c
        f, g = grad_fn(ps, op, y, temperature, widths, heads, variances)
        gmax = jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in g]))
        updates, state = opt.update(g, state, ps)
        new = optax.apply_updates(ps, updates)
        done = gmax < BASELINE_TOL  # the gradient is measured before the step, as in the original loop
        return (jax.tree.map(lambda a, b: jnp.where(done, a, b), ps, new), state, gmax, step + 1, f)

    init = (ps, opt.init(ps), jnp.array(jnp.inf), jnp.array(0), jnp.array(0.0))
    ps, _, gmax, step, f = jax.lax.while_loop(cond, body, init)
    return ps, gmax, step, f


def baseline_adam(theory: Theory, width, temperature: float, lr: float, max_steps: int = BASELINE_MAX_STEPS):
    """The authors' optimiser: Adam on free symmetric matrices; returns ``(Us, max|grad|, steps)``."""
    heads, variances = theory.arch.heads, theory.arch.variances
    ps0 = [jnp.asarray(u) for u in gp_order_parameters(heads, variances, theory.n_outputs)]
    ps, gmax, steps, _ = jax.block_until_ready(_adam_loop(
        ps0, theory.operator, theory.targets, jnp.asarray(temperature), jnp.asarray(theory.arch.widths(width)),
        jnp.asarray(max_steps), heads=heads, variances=variances, lr=lr,
    ))
    return [np.asarray(0.5 * (p + p.T)) for p in ps], float(gmax), int(steps)


def _time(fn, repeats: int = 1):
    """``(result, seconds)``: the median wall time of ``repeats`` calls (noise on a shared machine)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, float(np.median(times))


def _compiled_during(fn) -> dict:
    """Run ``fn`` (a first solve) with the solver's compilations recorded: ``seconds`` (the whole call, compilation
    included) and ``compilations``, one ``{"seconds", "executable"}`` per program the solver compiled
    (:class:`paththeory._compiled.Precompiled`); :func:`compilation_sizes` turns them into sizes once the case's
    memory is measured. The persistent compilation cache is off meanwhile
    (:func:`paththeory._compilation_cache.disabled`): a program loaded from it would be timed as a compilation."""
    from paththeory.solve import COMPILED_SOLVER as solver

    before, solver.measure = len(solver.compilations), True
    try:
        with _compilation_cache.disabled():
            _, seconds = _time(fn)
    finally:
        solver.measure = False
    return {"seconds": seconds, "compilations": solver.compilations[before:]}


def compilation_sizes(compilations: list[dict]) -> list[dict]:
    """``[{"seconds", "lowering_seconds", "xla_seconds", "hlo_characters"}]``: each recorded compilation's time,
    split into tracing and lowering and XLA's compilation, and its program's size
    (:func:`paththeory._compiled.program_size`)."""
    from paththeory._compiled import program_size

    return [{"seconds": c["seconds"], "lowering_seconds": c["lowering_seconds"], "xla_seconds": c["xla_seconds"],
             "hlo_characters": program_size(c["executable"])} for c in compilations]


def compare(theory: Theory, widths: Sequence[float], temperature: float, lr: float,
            baseline_max_steps: int = BASELINE_MAX_STEPS) -> dict:
    """Time a sweep over ``widths`` with the solver and with the Adam baseline.

    The solver runs at its default tolerance (max |grad| <= 1e-9) and at the baseline's (the
    smallest final gradient the baseline reached, so the solver's final gradient is never
    larger); each solver time is the median of ``SOLVER_REPEATS`` runs, the baseline runs once
    (it takes minutes). Compilation is timed separately and excluded. Where Adam diverges (a NaN
    gradient) at every width, ``baseline_grad_norm`` is NaN and the matched time is the one at 1e-9.
    """
    widths = list(widths)

    def compile_only() -> list:
        with warnings.catch_warnings():  # one iteration is unconverged on purpose
            warnings.simplefilter("ignore", ConvergenceWarning)
            return theory.sweep(widths, temperature, max_iter=1)

    compiled = _compiled_during(compile_only)
    compile_seconds = compiled["seconds"]
    tight, tight_seconds = _time(lambda: theory.sweep(widths, temperature), SOLVER_REPEATS)
    peak_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    baseline_adam(theory, widths[0], temperature, lr, max_steps=1)  # compile outside the timing
    base = []
    for w in widths:
        (_, gmax, steps), secs = _time(lambda w=w: baseline_adam(theory, w, temperature, lr, baseline_max_steps))
        base.append((secs, gmax, steps))
    base_seconds = sum(b[0] for b in base)
    base_grad = max(b[1] for b in base)
    finite = [b[1] for b in base if np.isfinite(b[1])]
    if finite:
        matched, seconds = _time(lambda: theory.sweep(widths, temperature, tol=min(finite)), SOLVER_REPEATS)
    else:  # the baseline diverged everywhere: compare against the solver at tol 1e-9
        matched, seconds = tight, tight_seconds
    return {
        "compile_seconds": compile_seconds,
        "compilations": compilation_sizes(compiled["compilations"]),
        "seconds": seconds,
        "baseline_seconds": base_seconds,
        "ratio": base_seconds / seconds,
        "grad_norm": max(s.report["grad_norm"] for s in matched),
        "baseline_grad_norm": base_grad,
        "iterations": [s.report["iterations"] for s in matched],
        "baseline_steps": [b[2] for b in base],
        "converged": all(s.report["converged"] for s in matched + tight),
        "seconds_tol_1e-9": tight_seconds,
        "ratio_tol_1e-9": base_seconds / tight_seconds,
        "grad_norm_tol_1e-9": max(s.report["grad_norm"] for s in tight),
        "iterations_tol_1e-9": [s.report["iterations"] for s in tight],
        "peak_memory_bytes": peak_bytes,
        "kernel_backend": type(theory.operator).__name__,
    }


def first_order(theory: Theory, widths: Sequence[float], temperature: float) -> dict:
    """The same sweep by first-order L-BFGS (the solver without the Hessian restart), to ``tol = 1e-9``,
    once (compiled outside the timing): ``seconds``, ``iterations``, ``grad_norm`` and the largest
    difference of ``U`` from the solver's (``theory``'s own setting) solution."""
    plain = Theory(theory.arch, theory.features, theory.y, precision=theory.precision, hessian=False)
    widths = list(widths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain.sweep(widths, temperature, max_iter=1)
    sols, seconds = _time(lambda: plain.sweep(widths, temperature))
    ref = theory.sweep(widths, temperature)
    return {"first_order_seconds": seconds, "first_order_iterations": [s.report["iterations"] for s in sols],
            "first_order_grad_norm": max(s.report["grad_norm"] for s in sols),
            "first_order_converged": all(s.report["converged"] for s in sols),
            "max_abs_U_difference": max(float(np.max(np.abs(a.U - b.U))) for a, b in zip(sols, ref))}


def markov_case(baseline_max_steps: int = BASELINE_MAX_STEPS) -> dict:
    """Case (i): the Markov-chain size, a 10-width sweep at T = 0.01 (lr 0.1 for the baseline)."""
    from paththeory.tasks import markov

    arch = markov.four_paths()
    data = markov.sample_task(100)
    theory = Theory(arch, path_features(arch, data.x), data.y)
    widths = [float(w) for w in np.geomspace(10, 1000, 10)]
    size = {"P": 100, "paths": 4, "N0": 231, "tokens": 31, "widths": widths, "temperature": 0.01}
    return {"case": "markov", "size": size, **compare(theory, widths, 0.01, 0.1, baseline_max_steps)}


def multioutput_case(baseline_max_steps: int = BASELINE_MAX_STEPS, n_outputs: int = 3) -> dict:
    """Case (iii): the Markov-chain size with ``C`` outputs (one-hot classes of a random linear teacher on the
    mean token), a 10-width sweep at T = 0.01 (lr 0.1 for the baseline)."""
    from paththeory.tasks import markov

    arch = markov.four_paths()
    data = markov.sample_task(100)
    teacher = np.random.default_rng(0).normal(size=(data.x.shape[2], n_outputs))
    labels = np.eye(n_outputs)[np.argmax(data.x.mean(axis=1) @ teacher, axis=1)]
    theory = Theory(arch, path_features(arch, data.x), labels)
    widths = [float(w) for w in np.geomspace(10, 1000, 10)]
    size = {"P": 100, "paths": 4, "N0": 231, "tokens": 31, "outputs": n_outputs, "widths": widths,
            "temperature": 0.01}
    return {"case": "multioutput", "size": size, **compare(theory, widths, 0.01, 0.1, baseline_max_steps),
            **first_order(theory, widths, 0.01), "hessian": theory.hessian}


def omniglot_size_problem(seed: int = 0, n_examples: int = 600) -> tuple[Architecture, np.ndarray, np.ndarray]:
    """Random tokens and QK heads at the Omniglot size: ``(arch, features[P, 16, 192], y)``."""
    rng = np.random.default_rng(seed)
    heads, g, n0, tokens = 4, 128, 192, 48
    layers = [QKAttention(rng.normal(size=(heads, g, n0)) / np.sqrt(n0), rng.normal(size=(heads, g, n0)) / np.sqrt(n0))
              for _ in range(2)]
    arch = Architecture(layers, readout="mean")
    x = rng.normal(size=(n_examples, tokens, n0))
    teacher = rng.normal(size=n0)
    y = np.sign(x.mean(axis=1) @ teacher)
    return arch, np.asarray(path_features(arch, x, batch_size=50)), y  # batches bound the attention temporaries


def omniglot_case(width: float = 10.0, temperature: float = 0.5,
                  baseline_max_steps: int = BASELINE_MAX_STEPS) -> dict:
    """Case (ii): one (N, T) solve at the Omniglot size (P = 600, 16 paths; lr 0.008 for the baseline)."""
    arch, feats, y = omniglot_size_problem()
    theory = Theory(arch, feats, y)
    size = {"P": 600, "paths": 16, "N0": 192, "tokens": 48, "width": width, "temperature": temperature}
    return {"case": "omniglot", "size": size, **compare(theory, [width], temperature, 0.008, baseline_max_steps)}


def multioutput_omniglot_case(width: float = 10.0, temperature: float = 0.5, n_outputs: int = 3,
                               baseline_max_steps: int = BASELINE_MAX_STEPS) -> dict:
    """Case (iv): one (N, T) solve at the Omniglot size with ``C`` outputs (one-hot classes of a random
    linear teacher on the path features), against first-order L-BFGS (``baseline_max_steps`` unused:
    no Adam run)."""
    arch, feats, _ = omniglot_size_problem()
    teacher = np.random.default_rng(1).normal(size=(feats.shape[1] * feats.shape[2], n_outputs))
    scores = feats.reshape(feats.shape[0], -1) @ teacher
    labels = np.eye(n_outputs)[np.argmax(scores - scores.mean(axis=0), axis=1)]
    theory = Theory(arch, feats, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        compiled = _compiled_during(lambda: theory.solve(width, temperature, max_iter=1))
    sol, seconds = _time(lambda: theory.solve(width, temperature), SOLVER_REPEATS)
    base = first_order(theory, [width], temperature)
    peak_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    size = {"P": 600, "paths": 16, "N0": 192, "tokens": 48, "outputs": n_outputs, "width": width,
            "temperature": temperature}
    return {"case": "multioutput_omniglot", "size": size, "compile_seconds": compiled["seconds"],
            "compilations": compilation_sizes(compiled["compilations"]),
            "seconds_tol_1e-9": seconds, "iterations_tol_1e-9": [sol.report["iterations"]],
            "grad_norm_tol_1e-9": sol.report["grad_norm"], "converged": sol.report["converged"],
            "hessian": theory.hessian, "ratio_first_order": base["first_order_seconds"] / seconds, **base,
            "peak_memory_bytes": peak_bytes,
            "kernel_backend": type(theory.operator).__name__}


#: The training-set sizes of the ``large_p`` case, and the largest at which it also runs the ``P x P`` backend:
#: there, on 2 shared CPU cores, its solve took 393 s (523 iterations, K + T I being ill-conditioned) and its
#: evaluations grow as P^3 (at P = 10,000 each also holds several 0.8 GB matrices).
LARGE_P_SIZES = (1000, 1500, 2000, 5000, 10_000)
LARGE_P_DENSE_MAX = 2000


def large_p_point(n_examples: int, backend: str, width: float = 100.0, temperature: float = 0.01) -> dict:
    """One Markov-chain solve at ``P = n_examples`` with ``backend`` (``"low_rank"`` or ``"dense"``,
    :func:`~paththeory.kernels.kernel_operator`), meant to run alone in a process (:func:`large_p_case`):
    the seconds of the path features, of the kernel operator, of the compilation (a solve of one iteration,
    ``compile_seconds``) and of the solve (``seconds``), its iterations, gradient and ``U``, and the process's
    peak resident memory (``ru_maxrss``) at the end."""
    from paththeory.tasks import markov

    start = time.perf_counter()
    arch = markov.four_paths()
    data = markov.sample_task(n_examples)
    feats = np.asarray(path_features(arch, data.x))
    features_seconds = time.perf_counter() - start
    theory, operator_seconds = _time(lambda: Theory(arch, feats, data.y, backend=backend))

    def compile_only():
        with warnings.catch_warnings():  # one iteration is unconverged on purpose
            warnings.simplefilter("ignore", ConvergenceWarning)
            return theory.solve(width, temperature, max_iter=1)

    with _compilation_cache.disabled():  # a compilation, not a program loaded from the persistent cache
        _, compile_seconds = _time(compile_only)
    sol, seconds = _time(lambda: theory.solve(width, temperature))
    return {"P": n_examples, "backend": backend, "kernel_backend": type(theory.operator).__name__,
            "precision": theory.precision, "hessian": theory.hessian, "features_seconds": features_seconds,
            "operator_seconds": operator_seconds, "compile_seconds": compile_seconds, "seconds": seconds,
            "iterations": sol.report["iterations"], "evaluations": sol.report["evaluations"],
            "grad_norm": sol.report["grad_norm"], "converged": sol.report["converged"], "U": sol.U.tolist(),
            "peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def _point_in_subprocess(n_examples: int, backend: str) -> dict:
    """:func:`large_p_point` in a fresh Python process (its own peak memory and compilation)."""
    code = ("import json, sys; from paththeory.experiments.bench import large_p_point; "
            "print(json.dumps(large_p_point(int(sys.argv[1]), sys.argv[2])))")
    out = subprocess.run([sys.executable, "-c", code, str(n_examples), backend], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the large-P solve at P = {n_examples} ({backend}) failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def large_p_case(sizes: Sequence[int] = LARGE_P_SIZES, dense_max: int = LARGE_P_DENSE_MAX,
                 baseline_max_steps: int = BASELINE_MAX_STEPS, point=_point_in_subprocess) -> dict:
    """Case (v): the Markov-chain task at large ``P`` with the feature-space and (up to ``dense_max``) the
    ``P x P`` backends, one process per point (``point(P, backend)``; ``baseline_max_steps`` unused: no Adam
    run). Returns the rows, the largest ``U`` difference between the backends at each ``P`` where both ran,
    and the crossover: the smallest ``P`` where the feature-space solve (features and operator included) took
    less time than the ``P x P`` one (``None`` if it never did where both ran)."""
    rows = []
    for p in sizes:
        rows.append(point(p, "low_rank"))
        if p <= dense_max:
            rows.append(point(p, "dense"))
    by = {(r["P"], r["backend"]): r for r in rows}
    both = [p for p in sizes if (p, "dense") in by]
    total = {key: r["operator_seconds"] + r["seconds"] for key, r in by.items()}
    crossover = next((p for p in both if total[p, "low_rank"] < total[p, "dense"]), None)
    differences = {str(p): float(np.max(np.abs(np.subtract(by[p, "low_rank"]["U"], by[p, "dense"]["U"]))))
                   for p in both}
    size = {"P": list(sizes), "paths": 4, "N0": 231, "n N0": 924, "width": 100.0, "temperature": 0.01,
            "dense_max": dense_max}
    return {"case": "large_p", "size": size, "rows": rows, "max_abs_U_difference": differences,
            "crossover_P": crossover}


#: Every case ``all`` runs, in its order (``large_p`` runs only by name).
CASES = ("markov", "omniglot", "multioutput", "multioutput_omniglot")


def run(cases: Sequence[str] = CASES, baseline_max_steps: int = BASELINE_MAX_STEPS) -> dict:
    """Run the benchmark cases (``"all"`` or :data:`CASES`: every one); returns a JSON-ready dict with the
    device recorded."""
    table = {"markov": markov_case, "omniglot": omniglot_case, "multioutput": multioutput_case,
             "multioutput_omniglot": multioutput_omniglot_case, "large_p": large_p_case}
    cases = CASES if cases == "all" or tuple(cases) == ("all",) else cases
    results = [table[c](baseline_max_steps=baseline_max_steps) for c in cases]
    return {"device": str(jax.devices()[0]), "baseline_max_steps": baseline_max_steps, "cases": results}


def format_table(report: dict) -> str:
    """A human-readable summary of :func:`run`'s output."""
    lines = [f"device: {report['device']}"]
    for c in report["cases"]:
        if c["case"] == "large_p":
            lines += _large_p_lines(c)
            continue
        if "baseline_seconds" not in c:  # against first-order L-BFGS only
            lines.append(
                f"{c['case']:9s} solver {c['seconds_tol_1e-9']:8.3f} s, {c['iterations_tol_1e-9']} iterations "
                f"(compile {c['compile_seconds']:.1f} s, {_executables(c)})  first-order L-BFGS "
                f"{c['first_order_seconds']:8.2f} s, "
                f"{c['first_order_iterations']} iterations  ratio {c['ratio_first_order']:6.1f}x  "
                f"max |dU| {c['max_abs_U_difference']:.1e}  peak memory {c['peak_memory_bytes'] / 2**30:.2f} GiB")
            continue
        lines.append(
            f"{c['case']:9s} solver {c['seconds']:8.3f} s (compile {c['compile_seconds']:.1f} s, {_executables(c)})  "
            f"baseline {c['baseline_seconds']:9.2f} s  ratio {c['ratio']:8.1f}x  "
            f"grad {c['grad_norm']:.1e} vs baseline {c['baseline_grad_norm']:.1e}"
        )
        lines.append(
            f"{'':9s} at tol 1e-9: {c['seconds_tol_1e-9']:8.3f} s  ratio {c['ratio_tol_1e-9']:8.1f}x  "
            f"grad {c['grad_norm_tol_1e-9']:.1e}  peak memory {c['peak_memory_bytes'] / 2**30:.2f} GiB"
        )
        if "first_order_seconds" in c:
            lines.append(f"{'':9s} first-order L-BFGS: {c['first_order_seconds']:8.3f} s, iterations "
                         f"{c['first_order_iterations']}  max |dU| {c['max_abs_U_difference']:.1e}")
    return "\n".join(lines)


def _executables(case: dict) -> str:
    """The programs a case's first solve compiled: ``"2 programs, 12.3 s (lowering 2.1 s, XLA 10.2 s), 3.1M HLO
    characters"``."""
    runs = case.get("compilations") or []
    return (f"{len(runs)} program{'s' if len(runs) != 1 else ''}, {sum(r['seconds'] for r in runs):.1f} s "
            f"(lowering {sum(r['lowering_seconds'] for r in runs):.1f} s, XLA {sum(r['xla_seconds'] for r in runs):.1f} s), "
            f"{sum(r['hlo_characters'] for r in runs) / 1e6:.1f}M HLO characters")


def _large_p_lines(case: dict) -> list[str]:
    """The ``large_p`` case's rows: per ``P`` and backend, the seconds of the solve (and of the operator, the
    compilation and the features), the iterations and the peak memory."""
    lines = ["large_p   P       backend     kernel          solve s  operator s  compile s  features s  "
             "iterations  peak GiB"]
    for r in case["rows"]:
        lines.append(f"{'':9s} {r['P']:<7d} {r['backend']:11s} {r['kernel_backend']:15s} {r['seconds']:7.1f}  "
                     f"{r['operator_seconds']:10.1f}  {r['compile_seconds']:9.1f}  {r['features_seconds']:10.1f}  "
                     f"{r['iterations']:10d}  {r['peak_memory_bytes'] / 2**30:8.2f}")
    diffs = ", ".join(f"P = {p}: {d:.1e}" for p, d in case["max_abs_U_difference"].items())
    lines.append(f"{'':9s} max |U(low rank) - U(dense)|: {diffs or 'no P with both'}; crossover at P = "
                 f"{case['crossover_P']}")
    return lines
