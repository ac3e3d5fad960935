"""The paper's Fig. 3 claims, each turned into a number, its noise and a verdict.

:func:`fig3_claims` reads a ``results.json`` of :func:`paththeory.experiments.omniglot.run` and
returns one row per claim and split; :func:`claims_table` prints them. A verdict is
``"holds"``, ``"within noise"`` or ``"fails"`` (:mod:`paththeory.stats`): an estimate must clear
two standard errors, a permutation test a one-sided p-value of 0.05. Nothing is written by
hand: change the results and the verdicts follow.

The claims, each with its statistic and the source of its noise:

* finite width beats the GP (Fig. 3b), per split: the accuracy difference at the smallest
  width on the same sequences; paired standard error;
* the optimal temperature grows as N shrinks (spec §7.3): Spearman's rho between N and the
  selected T; bootstrap over the validation sequences;
* NUTS samples match the theory's U (Fig. 3c): relative Frobenius distance, at most
  :data:`U_TOLERANCE`; batch-means Monte Carlo error;
* the trained weights share the theory's pattern (Fig. 3c): Mantel r(U_theory, U_GD); path
  relabellings;
* U is block-structured by first-layer head (Fig. 3c): Mantel r(abs U, same-head indicator);
  path relabellings;
* the head score predicts the single-head drop (Fig. 3e), per split: Spearman's rho; exact
  permutations;
* pruning lowest score first beats random orders, and highest score first is worse (Fig. 3f),
  per split: mean accuracy over the pruning curve; random orders;
* the two lowest-scored heads cost at most two points, per split: paired accuracy cost; paired
  standard error.
"""

from __future__ import annotations

from paththeory import stats

#: Relative Frobenius distance between the sampled and the theory's ``U`` below which they "match".
#: Fixed before any Omniglot run, from the Markov-chain test of the sampler (``tests/test_sampling.py``,
#: 20 %); the theory drops ``O(1/N)`` terms, so exact agreement is not expected at N = 10.
U_TOLERANCE = 0.2
#: Cost of pruning the two lowest-scored heads that the paper's text calls small.
TWO_HEADS_TOLERANCE = 0.02
#: Spec §9: the authors' single-head accuracy drops (points), heads in order of increasing theory score.
PAPER_SINGLE_HEAD_DROPS = (2.0, 0.8, 4.3, 8.4, 7.8, 7.3, 9.5, 8.9)
#: Spec §5.2: the authors' cumulative pruning order of their L = 2, H = 8 network (0-based (layer, head)).
PAPER_H8_PRUNING_ORDER = ((0, 6), (0, 4), (1, 5), (0, 0), (1, 1), (0, 3), (1, 4), (0, 5), (1, 2), (0, 2), (1, 7),
                          (1, 0), (0, 1))
#: Splits whose pruning results become claims (the others stay in ``results.json``).
PRUNING_CLAIM_SPLITS = ("test", "mnist", "fashion")


def _paper_rho() -> str:
    r = stats.spearman_test(range(len(PAPER_SINGLE_HEAD_DROPS)), PAPER_SINGLE_HEAD_DROPS)
    return f"rho = {r['rho']:.2f} (p = {r['p_greater']:.3f}) from the drops of spec §9"


def _row(claim_id: str, claim: str, split: str | None, value, noise: str, verdict: str, paper: str,
         measured: str) -> dict:
    return {"id": claim_id, "claim": claim, "split": split, "value": value, "measured": measured, "noise": noise,
            "verdict": verdict, "paper": paper}


def _p(x) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" if x >= 0.001 else f"{x:.0e}"


def fig3_claims(results: dict) -> list[dict]:
    """One row per claim (and split) present in ``results``: ``id``, ``claim``, ``split``, ``value``,
    ``measured`` (text), ``noise`` (text), ``verdict`` and ``paper`` (what the paper reports)."""
    rows = []
    names = results.get("split_names", {})

    def in_order(by_split: dict) -> list[str]:  # the order of results["splits"], then any others
        listed = [s for s in results.get("splits", []) if s in by_split]
        return listed + [s for s in by_split if s not in listed]

    if "finite_vs_gp" in results:
        width = str(min(results["widths"]))
        for split in in_order(results["finite_vs_gp"]):
            d = results["finite_vs_gp"][split][width]
            rows.append(_row(
                f"finite_vs_gp:{split}", f"finite width (N = {width}) beats the GP", split, d["difference"],
                f"paired SE {100 * d['se']:.1f} points on {d['n']}", stats.verdict(d["difference"], d["se"]),
                "theory above the GP at small N, in and out of distribution (Fig. 3b)",
                f"{100 * d['difference']:+.1f} points"))
    if "temperature_trend" in results:
        tr = results["temperature_trend"]
        low, high = tr["interval"]
        verdict = "holds" if high < 0 else "fails" if low > 0 else "within noise"
        chosen = ", ".join(f"{t:g}" for t in tr["selected"].values())
        rows.append(_row(
            "temperature_trend", "the selected temperature grows as N shrinks", None, tr["rho"],
            f"bootstrap 95 % [{low:+.2f}, {high:+.2f}] ({tr['n_bootstrap']} resamples)", verdict,
            "T = 0.5 at N = 10, 0.25 at N = 500 (spec §7.3)",
            f"rho(N, T) = {tr['rho']:+.2f}; T = {chosen} for N = {', '.join(tr['selected'])}"))
    comp = results.get("order_parameter_comparison")
    if comp is not None:
        ag = comp["agreement"]
        tvs = ag.get("theory_vs_sampled")
        if tvs is not None:
            noise = tvs["noise"]
            rows.append(_row(
                "u_sampled", f"NUTS samples match the theory's U (distance <= {U_TOLERANCE:.0%})", None,
                tvs["relative_distance"],
                "n/a" if noise is None else f"Monte Carlo {noise:.1%} (GP point: {tvs['gp_relative_distance']:.0%})",
                stats.verdict(U_TOLERANCE - tvs["relative_distance"], noise if noise is not None else float("nan")),
                "theory and sampled U agree (Fig. 3c)",
                f"{tvs['relative_distance']:.1%}; Mantel r = {tvs['mantel']['r']:.2f}"))
        m = ag["theory_vs_gd"]
        rows.append(_row(
            "u_gd", "the trained network's U has the theory's pattern", None, m["r"],
            f"permutation p = {_p(m['p_greater'])}", stats.verdict_from_p(m["p_greater"], m["p_less"]),
            "same pattern (Fig. 3c)", f"Mantel r = {m['r']:.2f}"))
        block = ag["block"]["theory"]["mantel"]
        rows.append(_row(
            "u_block", "the theory's U is block-structured by first-layer head", None, block["r"],
            f"permutation p = {_p(block['p_greater'])}", stats.verdict_from_p(block["p_greater"], block["p_less"]),
            "blocks by first-layer head (Fig. 3c)",
            f"Mantel r = {block['r']:.2f}; contrast {ag['block']['theory']['contrast']:.2f}"))
    for split in in_order(results.get("pruning", {})):
        pr = results["pruning"][split]
        if split not in PRUNING_CLAIM_SPLITS:
            continue
        sp = pr["spearman"]
        rows.append(_row(
            f"score_drop:{split}", "a head's score predicts its single-head drop", split, sp["rho"],
            f"{'exact' if sp['exact'] else 'sampled'} permutation p = {_p(sp['p_greater'])}",
            stats.verdict_from_p(sp["p_greater"], sp["p_less"]), _paper_rho(),
            "undefined" if sp["rho"] is None else f"rho = {sp['rho']:+.2f}"))
        area = pr["area"]
        n_random = pr["cumulative"]["random"]["n"]
        for key, claim, better in (("ascending", "pruning lowest score first beats random orders", True),
                                   ("descending", "pruning highest score first is worse than random orders", False)):
            ps = area[f"{key}_vs_random"]
            p_claim, p_against = (ps["p_better"], ps["p_worse"]) if better else (ps["p_worse"], ps["p_better"])
            rows.append(_row(
                f"{key}_vs_random:{split}", claim, split, area[f"score_{key}"] - area["random_mean"],
                f"p = {_p(p_claim)} against {n_random} random orders (sd {100 * area['random_sd']:.1f})",
                stats.verdict_from_p(p_claim, p_against),
                "theory's order keeps accuracy longest, its reverse loses it fastest (Fig. 3f)",
                f"mean accuracy {area[f'score_{key}']:.3f} vs random {area['random_mean']:.3f}"))
        two = pr["two_lowest"]
        if two is not None:
            rows.append(_row(
                f"two_lowest:{split}", f"pruning the two lowest-scored heads costs <= {100 * TWO_HEADS_TOLERANCE:.0f} points",
                split, two["difference"], f"paired SE {100 * two['se']:.1f} points",
                stats.verdict(TWO_HEADS_TOLERANCE - two["difference"], two["se"]),
                "2.0 and 0.8 points for the two lowest heads alone (spec §9)",
                f"{100 * two['difference']:+.1f} points" + (
                    "" if pr.get("best_pair") is None else
                    f"; cheapest of all {pr['best_pair']['n_pairs']} pairs {100 * pr['best_pair']['cost']:+.1f}")))
    for row in rows:
        row["split_name"] = names.get(row["split"], row["split"])
    return rows


def claims_table(rows: list[dict], markdown: bool = True) -> str:
    """The rows of :func:`fig3_claims` as a Markdown table (or aligned text with ``markdown=False``)."""
    head = ("claim", "split", "ours", "noise", "verdict", "paper")
    body = [(r["claim"], r["split"] or "", r["measured"], r["noise"], f"**{r['verdict']}**" if markdown else r["verdict"],
             r["paper"]) for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(cells) + " |" for cells in body])
    widths = [max(len(c) for c in col) for col in zip(head, *body)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in (head, *body))


def verdict_counts(rows: list[dict]) -> dict[str, int]:
    """How many rows end in each verdict."""
    return {v: sum(r["verdict"] == v for r in rows) for v in stats.VERDICTS}


def layer_counts(order, k: int | None = None, n_layers: int | None = None) -> list[int]:
    """How many of the first ``k`` heads of a pruning ``order`` (``(layer, head)`` pairs) sit in each layer.

    Head labels are arbitrary across independently trained networks, so only such summaries of
    two networks' orders can be compared.

    Example:
      >>> layer_counts(PAPER_H8_PRUNING_ORDER)
      [7, 6]
    """
    order = [tuple(lh) for lh in order][:k]
    n = n_layers or 1 + max(l for l, _ in order)
    return [sum(1 for l, _ in order if l == layer) for layer in range(n)]
