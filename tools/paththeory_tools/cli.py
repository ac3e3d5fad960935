"""Command line of the repository's tooling: ``paththeory-tools notebooks``, ``paththeory-tools student``,
``paththeory-tools course ...``.

Also available as ``python -m paththeory_tools ...``. Errors are one line on stderr, as with the
``paththeory`` command (``--debug`` or ``PATHTHEORY_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from paththeory import __version__
from paththeory.cli import DEBUG_ENV_VAR, OneLineParser, run_parsed

PROG = "paththeory-tools"


def _notebooks(args: argparse.Namespace) -> int:
    from paththeory_tools import notebooks

    root = Path(args.root)
    if not (root / "_toc.yml").is_file():
        raise FileNotFoundError(f"{root} has no _toc.yml; run from the repository root or give --root.")
    if args.check:
        stale = notebooks.stale_notebooks(root)
        for line in stale:
            print(line)
        if stale:
            print(f"run `{notebooks.REGENERATE}` from the repository root to regenerate them")
            return 1
        print(f"{notebooks.NOTEBOOKS_DIR}/: {len(notebooks.toc_chapters(root))} notebooks, up to date")
        return 0
    written = notebooks.write_colab_notebooks(root)
    print(f"wrote {len(written)} notebooks in {root / notebooks.NOTEBOOKS_DIR}")
    return 0


def _course(args) -> int:
    from paththeory_tools import grading

    if args.action == "release":
        print(grading.release(args.target, args.course))
    elif args.action == "collect":
        if not args.uploads:
            raise ValueError("collect needs --uploads FOLDER (one <student>.ipynb per student).")
        print("collected:", ", ".join(grading.collect(args.course, args.target, args.uploads)))
    elif args.action == "mark":
        if args.student is None or args.question is None or args.points is None:
            raise ValueError("mark needs --student NAME --question ID --points P (and, if you like, --comment TEXT).")
        path = grading.mark(args.course, args.target, args.student, args.question, args.points, args.comment)
        score, top = grading.read_grades(path)[args.student]["total"]
        print(f"{path}\n  {args.student}: {score:g} / {top:g}")
    else:
        path = grading.grade(args.course, args.target)
        totals = {s: q["total"] for s, q in grading.read_grades(path).items()}
        print(f"{path}\n" + "\n".join(f"  {s}: {score:g} / {top:g}" for s, (score, top) in totals.items()))
    return 0


def _student(args) -> int:
    from paththeory_tools import edition

    print(f"the student edition: {edition.build(args.root, args.out)}/index.html")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="The paththeory repository's tooling: the Colab notebooks, the student edition and grading.",
        epilog=f"Errors are one line; --debug or {DEBUG_ENV_VAR}=1 shows the full traceback.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help=f"show the full traceback of an error (same as {DEBUG_ENV_VAR}=1)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    nbs = sub.add_parser("notebooks", help="write the Colab notebooks (plain Markdown) of the book's chapters",
                         description="Write notebooks/<chapter>.ipynb for every notebook chapter of _toc.yml: "
                                     "plain Markdown, captions kept, links to the web book, solutions kept.")
    nbs.add_argument("--root", default=".", help="the repository root (default: the current folder)")
    nbs.add_argument("--check", action="store_true",
                     help="write nothing; list the stale notebooks and exit 1 if any")
    nbs.set_defaults(func=_notebooks)

    student = sub.add_parser("student", help="build the student edition of the web book (after make book)",
                             description="Build the web book without its solutions into OUT/html from the full "
                                         "build's executed notebooks (run make book first), and check that no "
                                         "solution, written answer or answer value shows.")
    student.add_argument("--root", default=".", help="the repository root (default: the current folder)")
    student.add_argument("--out", default=None, help="output folder (default: ROOT/_build/student)")
    student.set_defaults(func=_student)

    course = sub.add_parser("course", help="grade a chapter's exercises with nbgrader: release, collect, grade",
                            description="Grading with nbgrader, no JupyterHub needed (paththeory_tools.grading). "
                                        "release book/problems.md: the students' notebook (hidden tests and keys "
                                        "frozen now); collect problems --uploads DIR: DIR/<student>.ipynb become "
                                        "submissions; grade problems: autograde, feedback and grades-problems.csv; "
                                        "mark problems --student S --question Q --points P: grade a written answer.")
    course.add_argument("action", choices=("release", "collect", "grade", "mark"))
    course.add_argument("target", help="release: a chapter's .md; collect and grade: the assignment's name")
    course.add_argument("--course", default="course", help="the nbgrader course folder (default: ./course)")
    course.add_argument("--uploads", default=None, help="collect: the folder of uploaded <student>.ipynb")
    course.add_argument("--student", default=None, help="mark: the student whose written answer is graded")
    course.add_argument("--question", default=None, help="mark: the written answer's id (a manual row of the CSV)")
    course.add_argument("--points", type=float, default=None, help="mark: the points given")
    course.add_argument("--comment", default=None, help="mark: a comment for the student's feedback")
    course.set_defaults(func=_course)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; an error becomes one line on stderr (``SystemExit``) unless debugging."""
    return run_parsed(build_parser().parse_args(argv), PROG)


if __name__ == "__main__":
    sys.exit(main())
