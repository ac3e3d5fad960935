"""Command line: ``paththeory bench``, ``paththeory reproduce CHAPTER``, ``paththeory train omniglot``.

Also available as ``python -m paththeory ...``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Sequence

EXPERIMENTS = ("markov", "omniglot")


def _bench(args: argparse.Namespace) -> int:
    from paththeory import bench

    cases = EXPERIMENTS if args.case == "all" else (args.case,)
    report = bench.run(cases, baseline_max_steps=args.baseline_max_steps)
    print(json.dumps(report, indent=2) if args.json else bench.format_table(report))
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from paththeory.profiles import current_profile

    module = importlib.import_module(f"paththeory.experiments.{args.experiment}")
    if args.checkpoint is not None and args.experiment != "omniglot":
        raise SystemExit(f"--checkpoint applies to `reproduce omniglot` only, not to {args.experiment!r}.")
    options = {} if args.checkpoint is None else {"network": args.checkpoint}
    results = module.run(profile=current_profile(args.profile), out_dir=args.out, **options)
    print(f"wrote {args.out}/results.json (profile {results['profile']})")
    return 0


def _train(args: argparse.Namespace) -> int:
    from paththeory import training

    return training.train_command(args.rest, command_line=" ".join(["paththeory", "train", "omniglot", *args.rest]))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paththeory", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    bench = sub.add_parser("bench", help="time the order-parameter solver against the Adam baseline")
    bench.add_argument("--json", action="store_true", help="print JSON instead of a table")
    bench.add_argument("--case", choices=(*EXPERIMENTS, "all"), default="all")
    bench.add_argument("--baseline-max-steps", type=int, default=50_000,
                       help="cap on the baseline's Adam steps (the original rule is 50,000)")
    bench.set_defaults(func=_bench)

    rep = sub.add_parser("reproduce", help="run a chapter's experiment and write results.json, features.npz, figures")
    rep.add_argument("experiment", choices=EXPERIMENTS)
    rep.add_argument("--profile", choices=("smoke", "colab", "paper"), default=None,
                     help="scale (default: $PATHTHEORY_PROFILE, else colab with a GPU, smoke without)")
    rep.add_argument("--out", required=True, help="output directory")
    rep.add_argument("--checkpoint", default=None,
                     help="omniglot only: another trained network by name, e.g. omniglot_l3h3 or omniglot_l2h8 "
                          "(looked up by paththeory.training.locate_checkpoint)")
    rep.set_defaults(func=_reproduce)

    train = sub.add_parser("train", help="gradient-descent training (see `paththeory train omniglot --help`)")
    train.add_argument("task", choices=("omniglot",))
    train.add_argument("rest", nargs=argparse.REMAINDER)
    train.set_defaults(func=_train)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
