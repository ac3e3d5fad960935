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


def _course_files(args) -> int:
    """``course new-set NAME`` and ``course mark ASSIGNMENT --template FILE | --import FILE``."""
    from paththeory_tools import grading

    if args.action == "new-set":
        md = grading.new_set(args.course, args.target)
        print(f"{md}\n{md.parent / grading.SET_REGISTRY}\nedit both (the problems in the book's format; points, "
              f"rubric, reference and cases), then: {PROG} course release {md} --course {args.course}")
    elif args.template and args.import_csv:
        raise ValueError("mark takes --template FILE or --import FILE, not both.")
    elif args.template:
        path, rows, waiting = grading.marks_template(args.course, args.target, args.template)
        print(f"{path}: {rows} hand-marked answers; fill in points (and comment), then "
              f"course mark {args.target} --import {path}"
              + (f"\n  not graded yet, left out: {', '.join(waiting)}" if waiting else ""))
    else:
        path, count, students = grading.import_marks(args.course, args.target, args.import_csv)
        print(f"{path}\n  imported {count} marks of {len(students)} students\n"
              f"  pending: {grading.pending(args.course, args.target)} written answers to mark")
    return 0


def _course(args) -> int:
    from paththeory_tools import grading, sandbox

    if args.action in ("new-set", "mark") and (args.action == "new-set" or args.template or args.import_csv):
        return _course_files(args)
    if args.action == "release":
        print(grading.release(args.target, args.course))
    elif args.action == "collect":
        if not args.uploads:
            raise ValueError("collect needs --uploads FOLDER (one <student>.ipynb per student).")
        print("collected:", ", ".join(grading.collect(args.course, args.target, args.uploads)))
    elif args.action == "mark":
        if args.student is None or args.question is None or args.points is None:
            raise ValueError("mark needs --student NAME --question ID --points P (and --comment TEXT: the reason, "
                             "required to override an automatic score).")
        path = grading.mark(args.course, args.target, args.student, args.question, args.points, args.comment)
        score, top = grading.read_grades(path)[args.student]["total"]
        print(f"{path}\n  {args.student}: {score:g} / {top:g}\n"
              f"  pending: {grading.pending(args.course, args.target)} written answers to mark")
    elif args.action == "feedback":
        students = [args.student] if args.student else sorted(grading.read_grades(
            Path(args.course) / f"grades-{args.target}.csv"))
        for student in students:
            print(grading.feedback(args.course, args.target, student))
    elif args.action == "pending":
        print(f"pending: {grading.pending(args.course, args.target)} written answers to mark")
    else:
        box = sandbox.detect()
        print(f"sandbox: {box.kind}" + (f"\n{box.warning}" if box.warning else ""))
        memory = int(args.memory_gb * 2**30) if args.memory_gb else None
        path = grading.grade(args.course, args.target, args.timeout, student=args.student, memory_bytes=memory,
                             function_timeout=args.function_timeout)
        grades, flags = grading.read_grades(path), grading.read_flags(path)
        lines = [f"  {s}: " + ("not graded yet" if q["total"][1] is None else f"{q['total'][0]:g} / {q['total'][1]:g}")
                 + (f"  FLAGGED: {len(flags[s])} question(s)" if s in flags else "") for s, q in grades.items()]
        print(f"{path}\n" + "\n".join(lines) + f"\n  pending: {grading.pending(args.course, args.target)} "
              f"written answers to mark\n  report: {Path(args.course) / f'grading-report-{args.target}.txt'}")
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
                            description="Grading with nbgrader and a sandbox, no JupyterHub needed "
                                        "(paththeory_tools.grading). new-set NAME: start a private problem set "
                                        "from a template in COURSE/sets/NAME/book/ (release it like a chapter); "
                                        "release book/problems.md: the students' "
                                        "notebook (keys and hidden cases frozen into COURSE/keys now); collect "
                                        "problems --uploads DIR: DIR/<student>.ipynb become submissions; grade "
                                        "problems [--student S]: run each submission in the sandbox, score it, "
                                        "feedback and grades-problems.csv; feedback problems [--student S]: "
                                        "rewrite the feedback without running anything; mark problems --student S "
                                        "--question Q --points P [--comment WHY]: a written answer, or an override "
                                        "of an automatic score (the reason is required); mark problems --template "
                                        "FILE, then --import FILE: many marks by a CSV, all or nothing; pending problems: how "
                                        "many written answers wait for marking.")
    course.add_argument("action", choices=("new-set", "release", "collect", "grade", "feedback", "mark", "pending"))
    course.add_argument("target", help="release: a chapter's .md; new-set: the new problem set's name; the other "
                                       "actions: the assignment's name")
    course.add_argument("--course", default="course", help="the nbgrader course folder (default: ./course)")
    course.add_argument("--uploads", default=None, help="collect: the folder of uploaded <student>.ipynb")
    course.add_argument("--student", default=None, help="grade, feedback, mark: one student")
    course.add_argument("--question", default=None, help="mark: the question's id (a row of the grades CSV)")
    course.add_argument("--points", type=float, default=None, help="mark: the points given")
    course.add_argument("--comment", default=None, help="mark: the reason, shown in the student's feedback")
    course.add_argument("--template", default=None, metavar="FILE",
                        help="mark: write a CSV with a row per hand-marked answer of every graded student (columns "
                             "student, question, max_points, points, comment, rubric) to fill in")
    course.add_argument("--import", dest="import_csv", default=None, metavar="FILE",
                        help="mark: import every mark of a CSV written by --template, all or nothing (rows with "
                             "empty points are skipped; any wrong row, and nothing is imported)")
    course.add_argument("--timeout", type=float, default=None, help="grade: seconds per sandboxed run (default 600)")
    course.add_argument("--function-timeout", type=float, default=None,
                        help="grade: seconds for each graded function's run on its public cases and on its hidden "
                             "cases (default 120): a hang costs that function alone")
    course.add_argument("--memory-gb", type=float, default=None,
                        help="grade: memory per sandboxed run, per process and all its processes together (default 4)")
    course.set_defaults(func=_course)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; an error becomes one line on stderr (``SystemExit``) unless debugging."""
    return run_parsed(build_parser().parse_args(argv), PROG)


if __name__ == "__main__":
    sys.exit(main())
