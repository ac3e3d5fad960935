"""Omniglot, N-way: the multi-output theory on ``C``-way one-shot sequences (book: the many-outputs chapter).

The network of :mod:`paththeory.experiments.omniglot` was trained on 2-way sequences (two context
images with the label vectors ``E_0``, ``E_1``, then a query with ``E_2``; 48 tokens). Here its
queries and keys are kept and the Bayesian value and readout weights of the theory, with ``C``
outputs, are fitted to ``C``-way sequences built the same way
(``paththeory.tasks.omniglot.nway_indices``, ``paththeory.tasks.omniglot.one_shot_run_nway_indices``):
one context drawing per class with its label vector, then the query. What the network never saw:

* label vectors: ``E_0``, ``E_1`` and the query's ``E_2`` are the network's; classes ``2..C-1`` get
  fresh N(0, 1) vectors drawn like them (``paththeory.tasks.omniglot.nway_label_vectors``);
* positions: a ``C``-way sequence has ``16 (C + 1)`` tokens; the first 48 positions keep the trained
  encoding exactly and later ones continue the same sinusoids, standardised as the first 48
  (``paththeory.tasks.omniglot.positional_encoding``); the query sits at the end, beyond the
  positions of training.

Labels are simplex-coded in ``R^C`` (:func:`paththeory.tasks.multiclass.encode_labels`; the output
index is the label id, not the character), the predicted class is the argmax of the mean outputs
(:func:`paththeory.tasks.multiclass.correct`), and the temperature of each width and of the GP is
chosen on validation characters (``paththeory.experiments.omniglot.select_temperature``).
Theory and GP are scored on the same sequences of held-out characters and of the one-shot runs
(evaluation alphabets), so their difference has a paired standard error.

Its findings are types (:class:`Findings`, :class:`Attention`): every verdict against chance, against the GP and
of the 2-way controls, and the test of every head's attention at a family-wise level, computed here and stored with
the results; their words: :mod:`paththeory.reports.omniglot_nway`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from paththeory import training
from paththeory.experiments import stats
from paththeory.tasks.data import load_one_shot_runs
from paththeory.experiments.records import jsonable, typed
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
    network (or ``network``) and the images of :func:`images` (read here unless ``data`` is given), and their
    :class:`Findings` (``"findings"``, read back by :func:`stored_findings`)."""
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
    results = jsonable(results)
    results["findings"] = jsonable(findings(results))
    return results


#: The 2-way controls of :func:`controls`: the trained format, then one departure of the ``C``-way
#: format each (options of :func:`~paththeory.tasks.omniglot.assemble_nway_tokens`).
CONTROLS = {"trained format": {}, "fresh label vectors": {"fresh_labels": True},
            "the query at its 5-way position": {"query_slot": 5}}


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
    of ``C``-way sequences ``index`` (``paththeory.tasks.omniglot.NWayIndex``). A head that
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
    of the bare input (the network's queries and keys), the same the theory's path features use. Returns the
    measurements per ``C`` (``"ways"``) and their :class:`Attention` findings (``"findings"``, as JSON)."""
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
    return {"ways": out, "findings": jsonable(attention_findings(out))}


# --------------------------------------------------------------------------- findings

#: Family-wise level of the test of every head's match share against chance (:func:`attention_findings`).
ALPHA = 0.05


@dataclass(frozen=True)
class Gain:
    """A paired change ``difference`` ± ``se`` and the ``verdict`` on ``difference > 0``
    (:func:`paththeory.experiments.stats.verdict`: two paired SEs)."""

    difference: float
    se: float
    verdict: str


@dataclass(frozen=True)
class Predictor:
    """One predictor on one split (``name``: ``"gp"`` or a width): accuracy ± binomial SE, ``chance``: the verdict on
    ``accuracy > chance`` (``"holds"``: above chance, ``"within noise"``: at chance, ``"fails"``: below), and its
    paired ``gain`` (the theory over the GP; a changed format over the trained one), ``None`` where none."""

    name: str
    accuracy: float
    se: float
    chance: str
    gain: Gain | None


def predictor(name: str, r: dict, chance: float) -> Predictor:
    """:class:`Predictor` of one :func:`score` ``r`` against ``chance``.

    Example:
      >>> p = predictor("10", {"accuracy": 0.6, "se": 0.02, "gain": {"difference": 0.01, "se": 0.02}}, 0.5)
      >>> p.chance, p.gain.verdict
      ('holds', 'within noise')
    """
    g = r.get("gain")
    gain = None if g is None else Gain(g["difference"], g["se"], stats.verdict(g["difference"], g["se"]))
    return Predictor(name, r["accuracy"], r["se"], stats.verdict(r["accuracy"] - chance, r["se"]), gain)


def _predictors(block: dict, split: str, chance: float) -> tuple[Predictor, ...]:
    """The GP, then the theory per width, of ``block`` (``{"gp": ..., "theory": {w: ...}}``) on ``split``."""
    return (predictor("gp", block["gp"][split], chance),
            *(predictor(w, t[split], chance) for w, t in block["theory"].items()))


#: What a change of format does to a predictor above chance in the trained format (:class:`Change`): it stays above
#: chance; it is brought to chance, or below, by a significant drop; it ends at chance without one. ``"was at
#: chance"``: the predictor was not above chance in the trained format.
OUTCOMES = ("kept", "to chance", "below chance", "unclear", "was at chance")


@dataclass(frozen=True)
class Change:
    """One changed format of :data:`CONTROLS`: its ``predictors`` (gain: the paired change from the trained format),
    the ``outcome`` of each (:data:`OUTCOMES`), and whether every predictor above chance in the trained format is
    brought down (``all_broken``) and all of them to chance, none below (``all_to_chance``)."""

    format: str
    predictors: tuple[Predictor, ...]
    outcome: tuple[str, ...]
    all_broken: bool
    all_to_chance: bool


@dataclass(frozen=True)
class Controls:
    """The 2-way controls on one split: the ``trained`` format's predictors, whether any is above chance there
    (``any_above``: without one the controls tell nothing) and each :class:`Change`."""

    trained: tuple[Predictor, ...]
    any_above: bool
    changes: tuple[Change, ...]


def _outcome(before: Predictor, after: Predictor) -> str:
    if before.chance != "holds":
        return "was at chance"
    if after.chance == "holds":
        return "kept"
    if after.gain.verdict == "fails":  # a significant drop
        return "to chance" if after.chance == "within noise" else "below chance"
    return "unclear"


def controls_findings(ctl: dict, split: str) -> Controls:
    """:class:`Controls` of :func:`controls`'s output ``ctl`` on ``split``."""
    formats = ctl["formats"]
    trained = _predictors(formats["trained format"], split, ctl["chance"])
    changes = []
    for name, f in formats.items():
        if name == "trained format":
            continue
        after = _predictors(f, split, ctl["chance"])
        outcome = tuple(_outcome(b, a) for b, a in zip(trained, after))
        working = [o for o in outcome if o != "was at chance"]
        broken = bool(working) and all(o in ("to chance", "below chance") for o in working)
        changes.append(Change(name, after, outcome, broken, broken and all(o == "to chance" for o in working)))
    return Controls(trained, any(p.chance == "holds" for p in trained), tuple(changes))


@dataclass(frozen=True)
class Findings:
    """Per ``C`` (key) and split, the :class:`Predictor` of the GP then the theory per width (``ways``), and whether
    the theory converged at every width (``converged``); per split, the 2-way :class:`Controls`."""

    ways: dict[str, dict[str, tuple[Predictor, ...]]]
    converged: dict[str, bool]
    controls: dict[str, Controls]


def findings(results: dict) -> Findings:
    """:class:`Findings` of the results of :func:`run`."""
    ways = {c: {s: _predictors(r, s, r["chance"]) for s in SPLITS} for c, r in results["ways"].items()}
    converged = {c: all(r["converged"].values()) for c, r in results["ways"].items()}
    return Findings(ways, converged, {s: controls_findings(results["controls"], s) for s in SPLITS})


def stored_findings(results: dict) -> Findings:
    """The :class:`Findings` stored in ``results["findings"]`` by :func:`run`, typed
    (:func:`paththeory.experiments.records.typed`)."""
    return typed(Findings, results["findings"], "omniglot_nway findings")


@dataclass(frozen=True)
class HeadsAtWays:
    """The match shares of one ``C`` (:func:`query_attention`): the heads ``(layer, head)`` above chance, each
    one-sided at the Bonferroni level ``alpha / H`` over the ``H`` heads (``z``, the normal quantile), and the head
    with the largest share (``best``)."""

    n_ways: int
    heads: int
    z: float
    above: tuple[tuple[int, int], ...]
    best: tuple[int, int]


@dataclass(frozen=True)
class Attention:
    """:class:`HeadsAtWays` per ``C`` at family-wise level ``alpha``; with ``C = 2`` measured: whether a head singles
    out the matching drawing there (``trained_above``), whether none does at any larger ``C`` while one does at 2
    (``lost``), and the head that gives the query's drawing the most attention at ``C = 2`` (``query_head``)."""

    alpha: float
    ways: tuple[HeadsAtWays, ...]
    trained_above: bool | None
    lost: bool | None
    query_head: tuple[int, int] | None


def attention_findings(att: dict, alpha: float = ALPHA) -> Attention:
    """:class:`Attention` of the per-``C`` measurements ``att`` of :func:`query_attention`."""
    from scipy.stats import norm

    ways = []
    for c, r in att.items():
        heads = [(l, h) for l, layer in enumerate(r["share"]) for h in range(len(layer))]
        z = float(norm.ppf(1 - alpha / len(heads)))
        hits = tuple((l, h) for l, h in heads if r["share"][l][h] - r["chance"] > z * r["se"][l][h])
        best = max(heads, key=lambda lh: r["share"][lh[0]][lh[1]])
        ways.append(HeadsAtWays(int(c), len(heads), z, hits, best))
    if "2" not in att:
        return Attention(alpha, tuple(ways), None, None, None)
    above = {w.n_ways: bool(w.above) for w in ways}
    wider = [c for c in above if c != 2]
    on = att["2"]["on_query"]
    query_head = max(((l, h) for l, layer in enumerate(on) for h in range(len(layer))), key=lambda lh: on[lh[0]][lh[1]])
    return Attention(alpha, tuple(ways), above[2], above[2] and bool(wider) and not any(above[c] for c in wider),
                     query_head)
