"""Omniglot, N-way: the multi-output theory on ``C``-way one-shot sequences (the book's own; issue 23).

The network of :mod:`paththeory.experiments.omniglot` was trained on 2-way sequences (two context
images with the label vectors ``E_0``, ``E_1``, then a query with ``E_2``; 48 tokens). Here its
queries and keys are kept and the Bayesian value and readout weights of the theory, with ``C``
outputs, are fitted to ``C``-way sequences built the same way
(:func:`paththeory.tasks.omniglot.nway_indices`, :func:`~paththeory.tasks.omniglot.one_shot_run_nway_indices`):
one context drawing per class with its label vector, then the query. What the network never saw:

* label vectors: ``E_0``, ``E_1`` and the query's ``E_2`` are the network's; classes ``2..C-1`` get
  fresh N(0, 1) vectors drawn like them (:func:`~paththeory.tasks.omniglot.nway_label_vectors`);
* positions: a ``C``-way sequence has ``16 (C + 1)`` tokens; the first 48 positions keep the trained
  encoding exactly and later ones continue the same sinusoids, standardised as the first 48
  (:func:`~paththeory.tasks.omniglot.positional_encoding`); the query sits at the end, beyond the
  positions of training.

Labels are simplex-coded in ``R^C`` (:func:`paththeory.tasks.multiclass.encode_labels`; the output
index is the label id, not the character), the predicted class is the argmax of the mean outputs
(:func:`paththeory.tasks.multiclass.correct`), and the temperature of each width and of the GP is
chosen on validation characters (:func:`paththeory.experiments.omniglot.select_temperature`).
Theory and GP are scored on the same sequences of held-out characters and of the one-shot runs
(evaluation alphabets), so their difference has a paired standard error.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from paththeory import training
from paththeory.experiments import stats
from paththeory.display.tables import markdown_table
from paththeory.tasks.data import load_one_shot_runs
from paththeory.experiments.records import jsonable
from paththeory.experiments.omniglot import select_temperature
from paththeory.experiments.omniglot_base import _characters
from paththeory.model import attention_matrices, path_features
from paththeory.predict import mean_predictor
from paththeory.profiles import choose, current_profile
from paththeory.solve import Theory
from paththeory.tasks.multiclass import correct, encode_labels
from paththeory.tasks.omniglot import (
    PATCHES_PER_IMAGE,
    assemble_nway_tokens,
    encode_images,
    nway_indices,
    one_shot_run_images,
    one_shot_run_nway_indices,
)

#: Evaluation splits: validation characters (temperature selection), held-out characters, the runs.
SPLITS = ("validation", "test", "one_shot_runs")
SPLIT_NAMES = {"validation": "validation characters", "test": "held-out characters",
               "one_shot_runs": "evaluation alphabets (one-shot runs)"}


@dataclass(frozen=True)
class Config:
    """Sizes of one profile: ``ways`` (``C``), ``n_train[i]`` training sequences for ``ways[i]`` (so the
    kernel is ``C P`` square), ``n_validation`` and ``n_test`` sequences per character split, ``n_runs``
    one-shot-run queries (at most 400), the theory's ``widths`` and the ``temperatures`` searched by
    theory and GP alike; ``n_control`` training sequences (600 in every profile) for the 2-way controls of
    :func:`controls`."""

    ways: tuple[int, ...]
    n_train: tuple[int, ...]
    n_validation: int
    n_test: int
    n_runs: int
    widths: tuple[int, ...]
    temperatures: tuple[float, ...]
    tol: float = 1e-6
    seed: int = 0
    n_control: int = 600

    def __post_init__(self) -> None:
        if len(self.ways) != len(self.n_train) or not self.ways:
            raise ValueError(f"ways and n_train must pair up; got {self.ways} and {self.n_train}.")
        if any(c < 2 for c in self.ways) or any(p < 2 for p in (*self.n_train, self.n_control)):
            raise ValueError(f"ways must be >= 2 and n_train, n_control >= 2; got {self.ways}, {self.n_train} and "
                             f"{self.n_control}.")
        if not self.widths or not self.temperatures or min(self.temperatures) <= 0:
            raise ValueError("give at least one width and one temperature > 0.")


#: ``C = 2`` is the control: the 2-way task the network was trained on, through the same code. The
#: smoke profile leaves that row out (the 20-way sequences, 336 tokens, dominate its time: their
#: features take about 0.05 s each on a 2-core CPU); there the trained format of :func:`controls`
#: (``n_control`` = 600 sequences, as colab's ``C = 2``) stands in for it.
SETTINGS = {
    "smoke": Config((5, 20), (120, 30), 40, 80, 100, (10, 1000), (0.5,)),
    "colab": Config((2, 5, 20), (600, 600, 150), 500, 1000, 400, (10, 100, 1000), (0.1, 0.25, 0.5, 1.0)),
    "paper": Config((2, 5, 20), (600, 600, 300), 1000, 2000, 400, (10, 100, 1000), (0.1, 0.25, 0.5, 1.0)),
}


def settings(profile: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


def feature_batch(n_ways: int, n_heads: int, budget: int = 2**27) -> int:
    """Sequences per :func:`~paththeory.model.path_features` batch so that one layer's attention
    (``n_heads (16 (C + 1))^2`` float64 per sequence) stays within ``budget`` bytes."""
    n_tokens = PATCHES_PER_IMAGE * (n_ways + 1)
    return max(1, budget // (8 * n_heads * n_tokens**2))


def split_correct(mean, classes: dict, splits=SPLITS) -> dict:
    """Argmax correctness ``{split: [n_s] bool}`` of outputs ``mean [sum n_s, C]``, the splits stacked
    in the order of ``splits``, against ``classes[split] [n_s]``."""
    mean = np.asarray(mean)
    sizes = [len(classes[s]) for s in splits]
    if mean.ndim != 2 or len(mean) != sum(sizes):
        raise ValueError(f"mean must be [{sum(sizes)}, C] (the splits {tuple(splits)} stacked); got {mean.shape}.")
    stops = np.cumsum(sizes)
    return {s: correct(mean[b - n:b], classes[s]) for s, n, b in zip(splits, sizes, stops)}


def score(right, reference=None) -> dict:
    """Accuracy of 0/1 correctness ``right [n]``, its binomial SE and, given ``reference [n]`` (another
    predictor on the same items), the paired difference ``right - reference`` with its SE."""
    right = np.asarray(right, dtype=float)
    acc = float(right.mean())
    out = {"accuracy": acc, "se": stats.standard_error(acc, right.size)}
    if reference is not None:
        out["gain"] = stats.paired_difference(right, np.asarray(reference, dtype=float))
    return out


def images(network: training.Checkpoint, root=None) -> dict:
    """What every ``C`` draws from, read and encoded once: the network's Omniglot characters
    (``chars``, their ``patches``, its character ``split``) and the one-shot ``runs`` with their
    ``run_patches``."""
    chars, patches, split = _characters(network, root)
    runs = load_one_shot_runs(root=root)
    return {"chars": chars, "patches": patches, "split": split, "runs": runs,
            "run_patches": encode_images(one_shot_run_images(runs))}


def nway_problem(cfg: Config, n_ways: int, n_train: int, network: training.Checkpoint, data: dict,
                 tokens: dict | None = None) -> dict:
    """Path features of ``n_ways``-way sequences: ``train``, each split of :data:`SPLITS`, with the
    classes (label ids) ``classes[split]`` and simplex labels ``y_train [P, C]``; ``data`` from
    :func:`images`; ``tokens``: options of :func:`~paththeory.tasks.omniglot.assemble_nway_tokens` (the
    sequences themselves depend on ``cfg.seed`` and ``n_ways`` only)."""
    chars, patches, split = data["chars"], data["patches"], data["split"]
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence([cfg.seed, n_ways]).spawn(4)]
    index = {name: nway_indices(chars.labels, rng, n, n_ways, characters=ids)
             for rng, (name, ids, n) in zip(rngs, (("train", split.train, n_train),
                                                   ("validation", split.validation, cfg.n_validation),
                                                   ("test", split.test, cfg.n_test)))}
    run_index = one_shot_run_nway_indices(data["runs"], rngs[3], n_ways, cfg.n_runs)
    arch, batch = network.architecture, feature_batch(n_ways, max(network.architecture.heads))
    opts = {"channels": network.channels, **(tokens or {})}
    features = {k: np.asarray(path_features(arch, assemble_nway_tokens(patches, i, **opts), batch))
                for k, i in index.items()}
    features["one_shot_runs"] = np.asarray(path_features(
        arch, assemble_nway_tokens(data["run_patches"], run_index, **opts), batch))
    classes = {k: i.classes for k, i in index.items()} | {"one_shot_runs": run_index.classes}
    return {"features": features, "classes": classes, "y_train": encode_labels(classes["train"], n_ways),
            "characters": {k: int(len(getattr(split, k))) for k in ("train", "validation", "test")}}


def evaluate_ways(cfg: Config, n_ways: int, n_train: int, network: training.Checkpoint, data: dict,
                  tokens: dict | None = None, items: bool = False) -> dict:
    """Theory (every width) and GP on ``n_ways``-way sequences, temperatures chosen on validation;
    ``data`` from :func:`images`, ``tokens`` as in :func:`nway_problem`. With ``items`` the result keeps
    the per-sequence correctness, ``right["gp"][split]`` and ``right["theory"][width][split]``."""
    start = time.perf_counter()
    prob = nway_problem(cfg, n_ways, n_train, network, data, tokens)
    f, y, classes = prob["features"], prob["y_train"], prob["classes"]
    f_eval = np.concatenate([f[s] for s in SPLITS])
    seconds = {"features": time.perf_counter() - start}

    def right(U, t) -> dict:  # {split: [n] bool}
        return split_correct(mean_predictor(U, f["train"], y, f_eval, t), classes)

    arch = network.architecture
    t0 = time.perf_counter()
    gp_U = arch.gp_scale * np.eye(n_ways * arch.n_paths)
    gp_grid = [right(gp_U, t) for t in cfg.temperatures]
    seconds["gp"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    grid = Theory(arch, f["train"], y).sweep(list(cfg.widths), list(cfg.temperatures), tol=cfg.tol)
    seconds["theory_solve"] = time.perf_counter() - t0
    th_grid = [[right(sol.U, t) for sol in row] for t, row in zip(cfg.temperatures, grid)]
    seconds["theory_predict"] = time.perf_counter() - t0 - seconds["theory_solve"]
    temps = list(cfg.temperatures)
    gp_t = float(select_temperature([g["validation"].mean() for g in gp_grid], temps))
    gp = gp_grid[temps.index(gp_t)]
    th_t = select_temperature([[c["validation"].mean() for c in row] for row in th_grid], temps)
    out = {"n_ways": n_ways, "n_train": n_train, "chance": 1.0 / n_ways, "characters": prob["characters"],
           "n_eval": {s: int(len(classes[s])) for s in SPLITS}, "temperature": {"gp": gp_t},
           "ratio": {}, "converged": {}, "theory": {}}
    for j, (w, t) in enumerate(zip(cfg.widths, th_t)):
        i = temps.index(float(t))
        key = str(w)
        out["temperature"][key] = float(t)
        out["ratio"][key] = n_ways * arch.n_paths / w
        out["converged"][key] = bool(grid[i][j].report["converged"])
        out["theory"][key] = {s: score(th_grid[i][j][s], gp[s]) for s in SPLITS}
    out["gp"] = {s: score(gp[s]) for s in SPLITS}
    if items:
        out["right"] = {"gp": gp, "theory": {str(w): th_grid[temps.index(float(t))][j]
                                             for j, (w, t) in enumerate(zip(cfg.widths, th_t))}}
    seconds["total"] = time.perf_counter() - start
    out["seconds"] = seconds
    return out


def run(profile: str | None = None, *, config: Config | None = None, network: training.Checkpoint | None = None,
        root=None, data: dict | None = None) -> dict:
    """Every ``C`` of the profile's :class:`Config` and the 2-way :func:`controls`, with the shipped
    network (or ``network``) and the images of :func:`images` (read here unless ``data`` is given)."""
    name = current_profile(profile)
    cfg = config or settings(name)
    net = network or training.load_checkpoint()
    start = time.perf_counter()
    results = {"profile": name, "config": asdict(cfg), "n_paths": net.architecture.n_paths,
               "trained_ways": 2, "ways": {}}
    data = images(net, root) if data is None else data
    results["seconds_images"] = time.perf_counter() - start
    for c, p in zip(cfg.ways, cfg.n_train):
        results["ways"][str(c)] = evaluate_ways(cfg, c, p, net, data)
    results["controls"] = controls(cfg, net, data)
    results["seconds"] = time.perf_counter() - start
    return jsonable(results)


#: The 2-way controls of :func:`controls`: the trained format, then one departure of the ``C``-way
#: format each (options of :func:`~paththeory.tasks.omniglot.assemble_nway_tokens`).
CONTROLS = {"trained format": {}, "fresh label vectors": {"fresh_labels": True},
            "the query at its 5-way position": {"query_slot": 5}}
#: What each change of :data:`CONTROLS` does, for the sentences.
CONTROL_ACTIONS = {"fresh label vectors": "changing the label vectors",
                   "the query at its 5-way position": "moving the query"}


def controls(cfg: Config, network: training.Checkpoint, data: dict) -> dict:
    """Which departure of the ``C``-way format breaks the predictors: 2-way sequences
    (``cfg.n_control`` training sequences) in the format of training and with one change each
    (:data:`CONTROLS`). The sequences (images, label ids, targets) are the same every time; each format's
    tokens carry its change, and the theory and the GP are fitted and their temperatures chosen on
    validation anew per format. Per format, split and predictor (GP, theory per width) the accuracy
    ± SE and, for the changed formats, the paired change from the trained format."""
    start = time.perf_counter()
    runs = {name: evaluate_ways(cfg, 2, cfg.n_control, network, data, tokens, items=True)
            for name, tokens in CONTROLS.items()}
    base = runs["trained format"]["right"]
    out = {"n_train": cfg.n_control, "chance": 0.5, "n_eval": runs["trained format"]["n_eval"],
           "seconds": time.perf_counter() - start, "formats": {}}
    for name, r in runs.items():
        right, paired = r["right"], name != "trained format"
        out["formats"][name] = {
            "gp": {s: score(right["gp"][s], base["gp"][s] if paired else None) for s in SPLITS},
            "theory": {w: {s: score(right["theory"][w][s], base["theory"][w][s] if paired else None)
                           for s in SPLITS} for w in right["theory"]},
            "temperature": r["temperature"], "converged": r["converged"]}
    return out


def controls_table(results: dict, split: str = "one_shot_runs") -> str:
    """:func:`controls` as a table: per format, accuracy ± SE of the GP and the theory per width on
    ``split``, with the paired change from the trained format."""
    ctl = results["controls"]
    widths = [str(w) for w in results["config"]["widths"]]

    def cell(r: dict, converged: bool = True) -> str:
        change = f" ({r['gain']['difference']:+.3f} ± {r['gain']['se']:.3f})" if "gain" in r else ""
        return _cell(r) + change + ("" if converged else " (not converged)")

    rows = [[name, cell(f["gp"][split]), *(cell(f["theory"][w][split], f["converged"][w]) for w in widths),
             ", ".join(f"{f['temperature'][k]:g}" for k in ("gp", *widths))]
            for name, f in ctl["formats"].items()]
    return markdown_table(["2-way format", "GP", *(f"theory N = {w}" for w in widths),
                           f"T (GP, {', '.join(f'N = {w}' for w in widths)})"], rows)


def controls_sentences(results: dict, split: str = "one_shot_runs") -> str:
    """Generated reading of :func:`controls`: per changed format and predictor, whether the change
    moves the accuracy (paired change against two paired SEs) and whether what is left is above chance
    (against two binomial SEs); then, of the predictors above chance in the trained format, which each
    change alone brings to chance."""
    ctl = results["controls"]
    chance = ctl["chance"]

    def level(r: dict) -> str:
        return _versus_chance(r, chance)

    def above(r: dict) -> bool:
        return level(r) == "above chance"

    def listed(names: list) -> str:
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    formats = ctl["formats"]
    base = formats["trained format"]
    names = ["the GP"] + [f"the theory at N = {w}" for w in base["theory"]]
    pick = lambda f: [f["gp"][split], *(f["theory"][w][split] for w in f["theory"])]  # noqa: E731
    working = [above(r) for r in pick(base)]
    text = [f"In the trained format ({ctl['n_eval'][split]} sequences of the {SPLIT_NAMES[split]}, "
            f"P = {ctl['n_train']}) "
            + ", ".join(f"{n} scores {r['accuracy']:.3f} ± {r['se']:.3f} ({level(r)})"
                        for n, r in zip(names, pick(base))) + "."]
    for name, f in formats.items():
        if name == "trained format":
            continue
        parts = []
        for n, r in zip(names, pick(f)):
            g = r["gain"]
            move = {"holds": "rises", "fails": "falls", "within noise": "does not change beyond noise"}[
                stats.verdict(g["difference"], g["se"])]
            parts.append(f"{n} {move} ({g['difference']:+.3f} ± {g['se']:.3f}, now {level(r)})")
        text.append(f"With {name}: " + "; ".join(parts) + ".")
    if not any(working):
        text.append("No predictor is above chance in the trained format at this size, so these controls cannot "
                    "tell the two apart.")
        return " ".join(text)
    for name, f in formats.items():
        if name == "trained format":
            continue
        action = CONTROL_ACTIONS[name]
        after = [(n, r) for n, w, r in zip(names, working, pick(f)) if w]  # the predictors that work
        # "brought to chance": above chance before, not after, and the paired change itself significant
        broken = [(n, r) for n, r in after
                  if not above(r) and stats.verdict(r["gain"]["difference"], r["gain"]["se"]) == "fails"]
        kept = [f"{n} ({r['accuracy']:.3f} ± {r['se']:.3f})" for n, r in after if above(r)]
        unclear = [n for n, r in after if not above(r) and n not in {b for b, _ in broken}]
        if broken and not kept and not unclear:
            where = "chance" if all(level(r) == "at chance" for _, r in broken) else "or below chance"
            text.append(f"{action.capitalize()} alone brings every predictor that is above chance in the trained "
                        f"format to {where}.")
            continue
        groups = [f"{listed(g)} {where}" for where, g in (
            ("to chance", [n for n, r in broken if level(r) == "at chance"]),
            ("below chance", [n for n, r in broken if level(r) != "at chance"])) if g]
        pieces = ["brings " + " and ".join(groups)] if groups else []
        if kept:
            verb = "stays" if len(kept) == 1 else "stay"
            pieces.append(f"while {listed(kept)} {verb} above chance" if pieces else
                          f"leaves {listed(kept)} above chance")
        if unclear:
            pieces.append(("and " if pieces else "") + f"leaves {listed(unclear)} at chance without a significant drop")
        text.append(f"{action.capitalize()} alone " + ", ".join(pieces) + ".")
    return " ".join(text)


def _image_mass(attn, n_ways: int, queries: slice = slice(None)) -> np.ndarray:
    """The attention mass on each image's 16 key tokens, averaged over the query tokens ``queries``:
    ``[P, H, C + 1]`` (the ``C`` contexts, then the query) from ``attn [P, H, T, T]`` (``[b, h, key, query]``)."""
    attn = np.asarray(attn, dtype=float)
    t = PATCHES_PER_IMAGE * (n_ways + 1)
    if attn.ndim != 4 or attn.shape[2:] != (t, t):
        raise ValueError(f"attn must be [P, H, T, T] with T = {t} tokens for {n_ways} ways; got {attn.shape}.")
    n, heads = attn.shape[:2]
    return attn[..., queries].mean(axis=3).reshape(n, heads, n_ways + 1, PATCHES_PER_IMAGE).sum(axis=3)


def match_share(attn, index) -> np.ndarray:
    """Of the attention the query's tokens give to the context images, the share on the drawing of the
    query's own class: ``[P, H]`` per attention matrix ``attn [P, H, T, T]`` (``[b, h, key, query]``)
    of ``C``-way sequences ``index`` (:class:`~paththeory.tasks.omniglot.NWayIndex`). A head that
    ignores the drawings' content gives ``1 / C`` on average; one that finds the match gives 1."""
    labels, classes = np.asarray(index.labels), np.asarray(index.classes)
    n, n_ways = len(classes), labels.shape[1] - 1
    if np.shape(attn)[0] != n:
        raise ValueError(f"attn must hold the {n} sequences of index; got {np.shape(attn)[0]}.")
    per_image = _image_mass(attn, n_ways, slice(PATCHES_PER_IMAGE * n_ways, None))[:, :, :n_ways]
    match = np.argmax(labels[:, :n_ways] == classes[:, None], axis=1)  # the context of the query's class
    return per_image[np.arange(n), :, match] / per_image.sum(axis=2)


def block_attention(attn, n_ways: int) -> np.ndarray:
    """Where a head looks: the attention mass on each image's 16 key tokens, averaged over every query
    token, ``[P, H, C + 1]`` (the ``C`` contexts, then the query) from ``attn [P, H, T, T]``; a head
    blind to content and position gives ``1 / (C + 1)`` to each image."""
    return _image_mass(attn, n_ways)


def query_attention(network: training.Checkpoint, data: dict, ways=(2, 5, 20), n: int = 200,
                    seed: int = 0) -> dict:
    """How the trained heads attend in ``C``-way sequences of held-out characters (``data`` from
    :func:`images`), for each ``C`` of ``ways``: every head's :func:`match_share` (mean and standard
    error over the sequences; chance ``1 / C``), and from :func:`block_attention` the mass on the
    query's drawing (``on_query``) and on tokens 33-48 (``on_trained_query``), where the query sits in
    the 2-way sequences of training and a context drawing sits when ``C > 2``. The attention is that
    of the bare input (the network's queries and keys), the same the theory's path features use."""
    chars, patches, split = data["chars"], data["patches"], data["split"]
    arch = network.architecture
    out = {}
    for c in ways:
        index = nway_indices(chars.labels, np.random.default_rng([seed, c]), n, c, characters=split.test)
        attn = attention_matrices(arch, assemble_nway_tokens(patches, index, channels=network.channels))
        shares = [match_share(a, index) for a in attn]  # per layer [P, H]
        blocks = [block_attention(a, c) for a in attn]  # per layer [P, H, C + 1]

        def mean_se(v):  # over the sequences
            return v.mean(axis=0).tolist(), (v.std(axis=0, ddof=1) / np.sqrt(n)).tolist()

        share = [mean_se(sh) for sh in shares]
        on_query = [mean_se(b[:, :, -1]) for b in blocks]
        on_trained = [mean_se(b[:, :, 2]) for b in blocks]
        out[str(c)] = {"chance": 1.0 / c, "uniform": 1.0 / (c + 1), "n": n,
                       "share": [m for m, _ in share], "se": [e for _, e in share],
                       "on_query": [m for m, _ in on_query], "on_query_se": [e for _, e in on_query],
                       "on_trained_query": [m for m, _ in on_trained],
                       "on_trained_query_se": [e for _, e in on_trained]}
    return out


def query_attention_table(att: dict) -> str:
    """:func:`query_attention` as a table: two rows per ``C``, one column per head (``layer.head``):
    the share on the matching drawing ± SE, and the mass on the query's drawing / on tokens 33-48
    (standard errors in the sentences); the column "blind head" is what a head blind to the drawings
    gives: ``1 / C`` of match share, ``1 / (C + 1)`` on any one image."""
    first = next(iter(att.values()))
    heads = [(l, h) for l, layer in enumerate(first["share"]) for h in range(len(layer))]
    rows = []
    for c, r in att.items():
        rows.append([c, "match share", f"{r['chance']:.2f}",
                     *(f"{r['share'][l][h]:.2f} ± {r['se'][l][h]:.2f}" for l, h in heads)])
        rows.append([c, "on query / tokens 33–48", f"{r['uniform']:.2f}",
                     *(f"{r['on_query'][l][h]:.2f} / {r['on_trained_query'][l][h]:.2f}" for l, h in heads)])
    return markdown_table(["C", "what", "blind head", *(f"head {l + 1}.{h + 1}" for l, h in heads)], rows)


def _z_bonferroni(k: int, alpha: float = 0.05) -> float:
    """One-sided normal quantile for ``k`` tests at family-wise level ``alpha`` (Bonferroni)."""
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / k))


def query_attention_sentences(att: dict, alpha: float = 0.05) -> str:
    """Sentences generated from :func:`query_attention`. Per ``C``: the heads whose match share is above
    chance, each tested one-sided at the Bonferroni level ``alpha / H`` over the ``H`` heads; what
    that says about the ``C``-way failure, read against ``C = 2`` (the format of training); and, for
    the head that looks most at the query at ``C = 2``, where it looks when ``C`` grows."""
    parts, above = [], {}
    for c, r in att.items():
        heads = [(l, h) for l, layer in enumerate(r["share"]) for h in range(len(layer))]
        z = _z_bonferroni(len(heads), alpha)
        hits = [(l, h) for l, h in heads if r["share"][l][h] - r["chance"] > z * r["se"][l][h]]
        above[c] = bool(hits)
        best, l, h = max((r["share"][l][h], l, h) for l, h in heads)
        parts.append(f"C = {c}: " + (f"{len(hits)} of {len(heads)} heads above chance "
                                     f"({', '.join(f'{a + 1}.{b + 1}' for a, b in hits)})" if hits else
                                     f"no head above chance (largest {best:.2f} ± {r['se'][l][h]:.2f}, head "
                                     f"{l + 1}.{h + 1}; chance {r['chance']:.2f})"))
    text = ("Match share, each head tested against chance one-sided at the Bonferroni level "
            f"{alpha:g} over the heads: " + "; ".join(parts) + ".")
    if "2" not in att:
        return text
    wider = [c for c in att if c != "2"]
    if not above["2"]:
        text += (" Since no head singles out the matching drawing even in the 2-way format the network was "
                 "trained on, the match share does not explain the failure at more ways.")
    elif wider and not any(above[c] for c in wider):
        text += (" Heads that single out the matching drawing in the 2-way format stop doing so at "
                 f"C = {', '.join(wider)}.")
    two = att["2"]
    on, l, h = max((m, l, h) for l, layer in enumerate(two["on_query"]) for h, m in enumerate(layer))
    later = [f"at C = {c} it gives the query {r['on_query'][l][h]:.2f} ± {r['on_query_se'][l][h]:.3f} and "
             f"tokens 33–48 {r['on_trained_query'][l][h]:.2f} ± {r['on_trained_query_se'][l][h]:.3f} (a blind "
             f"head: {r['uniform']:.2f})" for c, r in att.items() if c != "2"]
    return (text + f" Head {l + 1}.{h + 1} gives the query's drawing {on:.2f} ± {two['on_query_se'][l][h]:.3f} "
            f"of all tokens' attention in the 2-way format (a blind head: {two['uniform']:.2f}), where the "
            "query holds tokens 33–48"
            + ("; " + "; ".join(later) + ", where a context drawing now sits at tokens 33–48" if later else "")
            + ".")


# --------------------------------------------------------------------------- tables and sentences


def _versus_chance(r: dict, chance: float) -> str:
    """"above chance", "at chance" or "below chance": accuracy ``r`` against ``chance`` and two SEs."""
    return {"holds": "above chance", "fails": "below chance", "within noise": "at chance"}[
        stats.verdict(r["accuracy"] - chance, r["se"])]


def _cell(r: dict) -> str:
    return f"{r['accuracy']:.3f} ± {r['se']:.3f}"


def accuracy_table(results: dict, splits=("test", "one_shot_runs")) -> str:
    """Argmax accuracy ± binomial SE of the GP and the theory per width, and theory minus GP ± paired SE."""
    widths = [str(w) for w in results["config"]["widths"]]
    head = ["C", "sequences", "chance", "GP", *(f"theory N = {w}" for w in widths),
            *(f"N = {w} − GP" for w in widths)]
    rows = []
    for c, r in results["ways"].items():
        for s in splits:
            gains = [r["theory"][w][s]["gain"] for w in widths]
            rows.append([c, f"{SPLIT_NAMES[s]} ({r['n_eval'][s]})", f"{r['chance']:.3f}", _cell(r["gp"][s]),
                         *(_cell(r["theory"][w][s]) for w in widths),
                         *(f"{g['difference']:+.3f} ± {g['se']:.3f}" for g in gains)])
    return markdown_table(head, rows)


def sizes_table(results: dict) -> str:
    """Training set, kernel size, ``C |Pi| / N``, selected temperatures and solve times per ``C``."""
    widths = [str(w) for w in results["config"]["widths"]]
    rows = []
    for c, r in results["ways"].items():
        temps = ", ".join(f"N = {w}: {r['temperature'][w]:g}" for w in widths)
        ratios = ", ".join(f"{r['ratio'][w]:.2g}" for w in widths)
        rows.append([c, r["n_train"], int(c) * r["n_train"], ratios, f"{temps}; GP: {r['temperature']['gp']:g}",
                     "yes" if all(r["converged"].values()) else "no", f"{r['seconds']['theory_solve']:.1f} s"])
    return markdown_table(["C", "P", "kernel C P", "C|Π|/N", "temperature (validation)", "converged",
                           "solve"], rows)


def verdict_sentences(results: dict, split: str = "one_shot_runs") -> str:
    """Per ``C`` and width: is the theory above chance (accuracy − 1/C against two binomial SEs), and
    does it beat the GP (paired difference against two paired SEs)?"""
    out = []
    for c, r in results["ways"].items():
        gp = r["gp"][split]
        parts = []
        for w, th in r["theory"].items():
            s = th[split]
            word = _versus_chance(s, r["chance"])
            g = s["gain"]
            versus = {"holds": "better than the GP", "fails": "worse than the GP",
                      "within noise": "not distinguishable from the GP"}[stats.verdict(g["difference"], g["se"])]
            parts.append(f"at N = {w} the theory scores {s['accuracy']:.3f} ± {s['se']:.3f}, {word} "
                         f"and {versus} ({g['difference']:+.3f} ± {g['se']:.3f})")
        gp_word = _versus_chance(gp, r["chance"])
        out.append(f"**{c}-way** ({SPLIT_NAMES[split]}, chance {r['chance']:.3f}): the GP scores "
                   f"{gp['accuracy']:.3f} ± {gp['se']:.3f}, {gp_word}; " + "; ".join(parts) + ".")
    return "\n\n".join(out)

