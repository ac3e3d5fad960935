"""Command line: ``paththeory bench``, ``paththeory reproduce CHAPTER``, ``paththeory train omniglot``,
``paththeory validity``. (The repository's commands, ``notebooks``, ``student`` and ``course``, are
``paththeory-tools``: ``tools/`` of the repository.)

Also available as ``python -m paththeory ...``. A bad argument, a missing file or any other error
ends the command with one line on stderr and a non-zero exit status; ``paththeory --debug ...``
(or ``PATHTHEORY_DEBUG=1``) shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from paththeory import __version__, _io

EXPERIMENTS = ("markov", "omniglot")
#: The samplers of ``--sampler`` (``paththeory.sampling.sample_posterior``'s methods; named here, not imported,
#: so that the command line starts without loading the samplers).
SAMPLERS = ("nuts", "gibbs")
#: The chapters ``paththeory reproduce`` runs: the paper's experiments, then the book's own.
REPRODUCIBLE = (*EXPERIMENTS, "multiclass", "residual", "nonlinear", "nonlinear_between")
DEBUG_ENV_VAR = "PATHTHEORY_DEBUG"
#: Commands of paththeory 0.1 that are the repository tooling's now (``paththeory-tools``, in ``tools/``).
MOVED_COMMANDS = ("notebooks", "student", "course")
#: Errors whose message alone tells a user what to fix; any other error also names its type.
USER_ERRORS = (ValueError, TypeError, OSError)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def nonempty_path(value: str) -> str:
    """Argument type of an output path: any non-empty name."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the output path is empty; give a folder or file name")
    return value


def output_folder(value: str) -> str:
    """Argument type of ``--out`` of ``reproduce``: a folder that exists or can be created, writable."""
    try:
        _io.check_output_folder(nonempty_path(value))
    except OSError as err:
        raise argparse.ArgumentTypeError(str(err).rstrip(".")) from None
    return value


def checkpoint_stem(value: str) -> str:
    """Argument type of ``--out`` of ``train``: a checkpoint name (not a folder) in a writable folder."""
    if Path(nonempty_path(value)).is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is a folder; give a checkpoint name in it, "
                                         f"e.g. {value.rstrip('/')}/mynet")
    try:
        _io.check_output_folder(Path(value).parent)
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot write the checkpoint {value}: {str(err).rstrip('.')}") from None
    return value


def existing_folder(value: str) -> str:
    """Argument type of ``--data-root``: a folder that exists (a typo must not start a download there)."""
    if not Path(value).expanduser().is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is not an existing folder; check the path "
                                         "(it should hold omniglot/ and mnist/)")
    return value


def positive_int(value: str) -> int:
    """Argument type of a count that must be at least 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1; got {number}")
    return number


def error_line(exc: BaseException, prog: str = "paththeory") -> str:
    """The one line that replaces the traceback of ``exc`` in the command ``prog``."""
    message = " ".join(str(exc).split()) or "(no message)"
    if isinstance(exc, USER_ERRORS):
        return f"{prog}: error: {message}"
    return f"{prog}: error: {type(exc).__name__}: {message} (run {prog} --debug ... for the traceback)"


def _bench(args: argparse.Namespace) -> int:
    from paththeory.experiments import bench

    if args.case == "sampling":
        from paththeory.experiments import bench_sampling

        case = bench_sampling.sampling_case()
        print(json.dumps(case, indent=2) if args.json else bench_sampling.format_rows(case))
        return 0
    cases = bench.CASES if args.case == "all" else (args.case,)
    report = bench.run(cases, baseline_max_steps=args.baseline_max_steps)
    print(json.dumps(report, indent=2) if args.json else bench.format_table(report))
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from paththeory import training
    from paththeory.profiles import current_profile

    profile = current_profile(args.profile)  # an unknown $PATHTHEORY_PROFILE fails here, before any work
    if args.checkpoint is not None:
        if args.experiment != "omniglot":
            raise ValueError(f"--checkpoint applies to `reproduce omniglot` only, not to {args.experiment!r}.")
        training.load_checkpoint(args.checkpoint)  # a missing or damaged checkpoint fails here, before any work
    module = importlib.import_module(f"paththeory.experiments.{args.experiment}")
    options = {} if args.checkpoint is None else {"network": args.checkpoint}
    results = module.run(profile=profile, out_dir=args.out, **options)
    print(f"wrote {Path(args.out) / 'results.json'} (profile {results['profile']})")
    return 0


def _train(args: argparse.Namespace) -> int:
    return train_command(args.rest, command_line=" ".join(["paththeory", "train", "omniglot", *args.rest]))


def train_parser() -> argparse.ArgumentParser:
    """The options of ``paththeory train omniglot``: every :class:`~paththeory.training.TrainConfig` field."""
    from paththeory.training import AUGMENTATIONS, TrainConfig

    d = TrainConfig()
    p = OneLineParser(prog="paththeory train omniglot",
                      description="Train the L-layer attention network on one-shot Omniglot "
                                  "(the paper's Appendix H.1).")
    for flag, kind, help_ in [
        ("steps", int, "optimiser steps"), ("batch_size", int, "sequences per step"),
        ("lr", float, "peak learning rate (AdamW)"), ("warmup", int, "linear warm-up steps"),
        ("clip", float, "global gradient-norm clip"), ("weight_decay", float, "AdamW weight decay"),
        ("d_model", int, "width n of every layer"), ("qk_dim", int, "query/key dimension G"),
        ("heads", int, "heads per layer H"), ("layers", int, "attention layers L"),
        ("qk_scale", float, "Q/K init std times sqrt(N0)"), ("seed", int, "initialisation and batch seed"),
        ("val_every", int, "steps between validations"), ("n_eval", int, "sequences per evaluation set"),
        ("split_seed", int, "seed of the character split"),
        ("time_limit_minutes", float, "stop after this wall time (keeps the best validation model)"),
    ]:
        p.add_argument("--" + flag.replace("_", "-"), type=kind, default=getattr(d, flag), help=help_)
    p.add_argument("--channels", type=int, choices=(1, 3), default=d.channels, help="pixel copies: N0 = 64 * channels")
    p.add_argument("--qk-init", choices=("random", "shared"), default=d.qk_init, help="'shared': K = Q at init")
    p.add_argument("--augment", choices=tuple(AUGMENTATIONS), default=d.augment,
                   help="rotations/reflections of training characters as new classes")
    p.add_argument("--out", required=True, type=checkpoint_stem,
                   help="checkpoint name: writes OUT.npz and OUT.json (a dot in the name is kept)")
    p.add_argument("--data-root", default=None, type=existing_folder,
                   help="an existing folder holding omniglot/ and mnist/ (see paththeory.tasks.data)")
    return p


def train_command(argv: list[str], command_line: str) -> int:
    """``paththeory train omniglot ...``: train, write the checkpoint, evaluate on every set, write it again.

    The best model is written as soon as training ends, before the (long) evaluation; Ctrl-C during
    training keeps the best model so far, like the time limit, and ends with exit status 130.
    """
    from paththeory import training
    from paththeory.experiments.records import environment

    args = vars(train_parser().parse_args(argv))
    out, root = args.pop("out"), args.pop("data_root")
    config = training.TrainConfig(**args)
    data = training.omniglot_data(config, root)
    mnist_context = training.default_mnist_context(root)
    sets = training.evaluation_sets(config, data, root=root, mnist_context=mnist_context)
    result = training.train(config, training.omniglot_batches(config, data), sets["validation"])
    env = environment()
    metadata = {
        "format": "paththeory checkpoint v1: npz float32 arrays Q, K [L, H, G, N0], V0 [n, N0], V1..VL [H, n, n], a [n]",
        "command_line": command_line,
        "config": dataclasses.asdict(config),
        "data": {
            "source": data.source, "characters": {k: len(getattr(data.split, k)) for k in ("train", "validation", "test")},
            "training_classes_after_augmentation": len(set(data.pool_labels.tolist())),
            "mnist_context": mnist_context, "n_eval": config.n_eval,
        },
        "steps_done": result.steps_done, "best_step": result.best_step, "stopped": result.stopped,
        "wall_time_s": round(result.wall_time_s, 1),
        "history": result.history,
        "package_version": env["paththeory"], "device": env["device"], "environment": env,
    }
    npz, _ = training.save_checkpoint(out, result.params, metadata)
    if result.stopped == "interrupted":
        print(f"paththeory: interrupted at step {result.steps_done}; wrote the best model so far "
              f"(step {result.best_step}) to {npz}, without its accuracies.", file=sys.stderr)
        return 130
    if result.stopped == "time limit":  # a budget the user asked for: the checkpoint records it, and so do we
        print(f"paththeory: stopped by --time-limit-minutes {config.time_limit_minutes:g} after {result.steps_done} "
              f"of {config.steps} steps; the checkpoint is the best model so far (step {result.best_step}) and its "
              "metadata say it was cut short.", file=sys.stderr)
    metadata["accuracies"] = {name: training.evaluate(result.params, x, y) for name, (x, y) in sets.items()}
    training.save_checkpoint(out, result.params, metadata)
    print(json.dumps({"checkpoint": str(npz), "steps_done": result.steps_done, "best_step": result.best_step,
                      "stopped": result.stopped, "wall_time_s": metadata["wall_time_s"],
                      "accuracies": metadata["accuracies"]}, indent=1))
    return 0


def _scan(args, experiment: str) -> int | None:
    """``--scan``: the longer Gibbs runs of the validity chapter's prefactor question, instead of the profile's points."""
    if not args.scan:
        return None
    from paththeory.experiments import prefactor

    if args.sampler != "gibbs":
        raise ValueError("--scan samples with the exact Gibbs sampler: add --sampler gibbs.")
    path = prefactor.write_scan(experiment, args.profile, args.out, progress=not args.quiet)
    print(f"the Gibbs scan of the validity chapter: {path}")
    return 0


#: The experiments whose records a command samples, and what their records are for, in words.
RECORDED = {"validity": "the validity figure", "residual": "the residual-stream chapter",
            "multiclass": "the many-outputs chapter", "nonlinear": "the nonlinear-block chapter",
            "nonlinear_between": "the nonlinear-block chapter's block between attention layers"}


def _records(args) -> int:
    """Sample one experiment's records (``args.command``: a key of :data:`RECORDED`) and write them, or its scan."""
    import importlib

    if _scan(args, args.command) is not None:
        return 0
    module = importlib.import_module(f"paththeory.experiments.{args.command}")
    path = module.write_samples(args.profile, args.out, sampler=args.sampler, progress=not args.quiet)
    print(f"the {module.SAMPLER_NAMES[args.sampler]} records of {RECORDED[args.command]}: {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="paththeory",
        description="Attention paths in transformers (Tiberi et al., NeurIPS 2024): benchmark the solver, "
                    "reproduce a chapter's experiment, or train the Omniglot network.",
        epilog=f"Sizes follow --profile or $PATHTHEORY_PROFILE (smoke, colab or paper). Errors are one line; "
               f"--debug or {DEBUG_ENV_VAR}=1 shows the full traceback.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help=f"show the full traceback of an error (same as {DEBUG_ENV_VAR}=1)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = sub.add_parser("bench", help="time the order-parameter solver against the Adam baseline",
                           description="Time the order-parameter solver against the Adam baseline.")
    bench.add_argument("--json", action="store_true", help="print JSON instead of a table")
    bench.add_argument("--case", choices=("markov", "omniglot", "multioutput", "multioutput_omniglot", "all",
                                          "sampling", "large_p"),
                       default="all",
                       help="which problem to time (default: all; multioutput: the Markov size with 3 outputs; "
                            "multioutput_omniglot: 3 outputs at P = 600 with 16 paths, about a minute; sampling: "
                            "Gibbs against NUTS on the Markov task at N = 10, 30, 100, 300, about 20 minutes on "
                            "2 CPU cores, not part of all; large_p: the Markov task at P = 1,000 to 10,000 with "
                            "the feature-space and the P x P backends, time and peak memory, about 20 minutes, "
                            "not part of all)")
    bench.add_argument("--baseline-max-steps", type=positive_int, default=50_000,
                       help="cap on the baseline's Adam steps (the original rule is 50,000)")
    bench.set_defaults(func=_bench)

    rep = sub.add_parser("reproduce", help="run a chapter's experiment and write results.json, features.npz, figures",
                         description="Run a chapter's experiment and write results.json, features.npz and figures.")
    rep.add_argument("experiment", choices=REPRODUCIBLE,
                     help="the chapter: markov (Fig. 2), omniglot (Fig. 3), multiclass (Many outputs), residual "
                          "(The residual stream) or nonlinear (Nonlinear MLP blocks)")
    rep.add_argument("--profile", choices=("smoke", "colab", "paper"), default=None,
                     help="scale (default: $PATHTHEORY_PROFILE, else colab with a GPU, smoke without)")
    rep.add_argument("--out", required=True, type=output_folder, help="output folder (created if missing)")
    rep.add_argument("--checkpoint", default=None,
                     help="omniglot only: another trained network by name, e.g. omniglot_l3h3 or omniglot_l2h8 "
                          "(looked up by paththeory.training.locate_checkpoint)")
    rep.set_defaults(func=_reproduce)

    train = sub.add_parser("train", help="gradient-descent training (see: paththeory train omniglot --help)",
                           description="Gradient-descent training of the attention network.")
    train.add_argument("task", choices=("omniglot",), help="the task to train on")
    train.add_argument("rest", nargs=argparse.REMAINDER, metavar="...",
                       help="options of the task (paththeory train omniglot --help lists them)")
    train.set_defaults(func=_train)

    for name, func, help_text, description in (
        ("validity", _records, "sample the networks for the figure of where the saddle point stops being "
         "accurate", "Sample the Markov (4 paths) and Omniglot (16 paths) networks with NUTS or Gibbs at the "
         "profile's widths for that sampler and write the records the validity chapter compares with the theory "
         "(default: the package's own file for the profile and sampler)."),
        ("residual", _records, "sample the networks with MLP blocks and skip connections for the "
         "residual-stream chapter", "Sample the four networks of the residual-stream chapter (attention only, with "
         "MLP blocks, with skip connections, two residual blocks) with NUTS or Gibbs at the profile's points and write the "
         "records the chapter compares with the theory (default: the package's own file for the profile)."),
        ("multiclass", _records, "sample the three-output network of the many-outputs chapter",
         "Sample the three-output network of the many-outputs chapter with NUTS or Gibbs at the profile's widths for "
         "that sampler and write the records the chapter compares with the theory (default: the package's own file "
         "for the profile and sampler)."),
        ("nonlinear", _records, "sample the networks with a nonlinear MLP block for the nonlinear-block chapter",
         "Sample the network with a ReLU or erf MLP block after its attention layers with NUTS at the profile's widths "
         "and write the records the chapter compares with the heuristic, the nonlinear GP and the linear theory "
         "(default: the package's own file for the profile). The exact Gibbs sampler needs a network linear in "
         "each weight matrix: NUTS only."),
        ("nonlinear_between", _records, "sample the networks with a nonlinear MLP block between their attention "
         "layers for the nonlinear-block chapter", "Sample the network with a ReLU or erf MLP block between its two "
         "attention layers with NUTS at the profile's widths and write the records the chapter compares with the "
         "heuristic, the nonlinear GP and the linear theory (default: the package's own file for the profile). NUTS "
         "only."),
    ):
        records = sub.add_parser(name, help=help_text, description=description)
        records.add_argument("--profile", choices=("smoke", "colab", "paper"), default=None,
                             help="scale (default: $PATHTHEORY_PROFILE, else colab with a GPU, smoke without)")
        records.add_argument("--out", default=None, help="the JSON file to write (default: the package's own)")
        records.add_argument("--quiet", action="store_true", help="no progress bars or summaries")
        records.add_argument("--sampler", choices=SAMPLERS, default="nuts",
                             help="NUTS (default) or the exact Gibbs sampler at the profile's wider points")
        records.add_argument("--scan", action="store_true",
                             help="with --sampler gibbs: the longer Gibbs scan at widths N >= |Pi| of the validity "
                                  "chapter's prefactor question instead of the profile's points")
        records.set_defaults(func=func)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; an error becomes one line on stderr (``SystemExit``) unless debugging."""
    argv = sys.argv[1:] if argv is None else list(argv)
    moved = next((a for a in argv if not a.startswith("-")), None)
    if moved in MOVED_COMMANDS:
        raise SystemExit(f"paththeory: error: `paththeory {moved}` is `paththeory-tools {moved}` now, the repository's "
                         "tooling (from a clone: make install, or pip install -e tools)")
    return run_parsed(build_parser().parse_args(argv))


def run_parsed(args: argparse.Namespace, prog: str = "paththeory") -> int:
    """Run the parsed command ``args.func(args)`` of ``prog``; an error becomes one line on stderr
    (``SystemExit``) unless ``--debug`` or ``$PATHTHEORY_DEBUG`` asks for the traceback."""
    try:
        debug = args.debug or _io.env_flag(DEBUG_ENV_VAR)
    except ValueError as err:
        raise SystemExit(error_line(err, prog)) from None
    if debug:
        return args.func(args)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        raise SystemExit(f"{prog}: interrupted") from None
    except Exception as exc:  # noqa: BLE001 (every error becomes one line; --debug shows the traceback)
        raise SystemExit(error_line(exc, prog)) from None


if __name__ == "__main__":
    sys.exit(main())
