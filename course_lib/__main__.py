"""Command line: python -m course_lib {doctor, exercises, digest, grade, report, review,
release, assignment, explain, collect, gradescope}.

What a command prints (summaries, progress, errors) is in the course's language: --lang where a
command has it, else $COURSE_LANG, else English. Files it writes (gradebooks, exports, manifests)
keep their English columns; each student's feedback is in the language of their notebook.
"""

import argparse
import json
import sys


def _speak(args) -> None:
    """--lang: the language of everything this command says (else $COURSE_LANG, else English)."""
    if getattr(args, "lang", None):
        from .i18n import use_language

        use_language(args.lang)


def _say(text) -> str:
    """A line this command prints, in the course's language."""
    from .i18n import tr

    return tr(text)


def _why(what: str, err) -> str:
    """'nothing collected: <the reason>', each part said in the course's language."""
    from .i18n.catalogue import join

    return join([_say(what), _say(str(err))])


def _lang_option(parser, what: str) -> None:
    from .i18n import LANGUAGES

    parser.add_argument(
        "--lang", choices=LANGUAGES, help=f"the language of {what} (default: $COURSE_LANG, else en)"
    )


def cmd_doctor(args) -> int:
    _speak(args)
    from .doctor import environment_report, format_report

    report = environment_report()
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0


def cmd_exercises(args) -> int:
    _speak(args)
    from .exercises import all_exercises

    rows = [ex.info() for ex in all_exercises()]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(
                f"{r['id']:<34} chapter {r['chapter']}  {r['kind']:<8} {r['points']:>2} pt  "
                f"{_say(r['title'])}"
            )
        print(_say(f"{len(rows)} exercises, {sum(r['points'] for r in rows)} points"))
    return 0


def cmd_digest(args) -> int:
    from .exercises import answer_digest, get

    quiz = get(args.quiz_id)
    print(answer_digest(quiz.id, quiz.normalize(args.answer)))
    return 0


def cmd_release(args) -> int:
    try:
        from .grading.release import release
    except ImportError:
        print(
            _say("release is part of the teacher's copy of the course, not of the student bundle")
        )
        return 2
    try:
        report = release(
            args.out_dir,
            force=args.force,
            lang=args.lang,
            hosted_from=args.hosted_from,
            branch=args.branch,
        )
    except (ValueError, FileExistsError) as err:
        print(_why("no bundle written:", err), file=sys.stderr)
        return 2
    editions = ", ".join(f"{n} {lang}" for lang, n in report["editions"].items())
    print(
        _say(
            f"student bundle written to {report['out']}: {report['notebooks']} notebooks "
            f"({editions}), {report['files']} files (answer key and grader left out)"
        )
    )
    return 0


def cmd_assignment(args) -> int:
    """`assignment release|check SOURCE OUT`: a teacher's assignment (course_lib/authoring)."""
    from .authoring import release
    from .authoring.source import SourceError

    try:
        if args.action == "release":
            derived = release.release(args.source, args.out_dir)
        else:
            drifted = release.drift(args.source, args.out_dir)
    except SourceError as err:
        print(_why("nothing released:", err), file=sys.stderr)
        return 2
    out = args.out_dir
    if args.action == "check":
        for path, what in drifted:
            print(_say(f"{out}/{path}: {what}; run `assignment release` again"))
        return 1 if drifted else 0
    name, notebook, key = derived.assignment.name, derived.assignment.notebook, derived.key_path
    names, files = ", ".join(sorted(derived.assignment.exercises)), len(derived.files)
    print(
        _say(
            f"{name}: {files} files written to {out} (hand out {notebook}; {key} is the "
            f"teacher's); exercises: {names}"
        )
    )
    return 0


def cmd_grade(args) -> int:
    _speak(args)
    try:
        from .grading.gradebook import NotAGradebook
        from .grading.grader import Grader
        from .grading.sandbox import Limits
    except ImportError:
        print(
            _say("grading is part of the teacher's copy of the course, not of the student bundle")
        )
        return 2
    released = _released(args)
    if released is False:
        return 2
    exporter = _grade_exporter(args, released)
    if exporter is False:
        return 2
    import os

    # Grading runs on the CPU: verdicts must not depend on the grading machine (the grader's
    # zygotes also start with every GPU hidden, whatever this process has seen).
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ["COURSE_DEVICE"] = "cpu"
    limits = Limits(
        cell_timeout=args.cell_timeout,
        timeout=args.timeout,
        test_timeout=args.test_timeout,
        memory_mb=args.memory_mb,
        disk_mb=args.disk_mb,
        cpu_seconds=args.cpu_seconds,
    )
    chapters = [c.zfill(2) for c in args.chapter or []]
    grader = Grader(
        args.submissions,
        args.out,
        workers=args.workers,
        chapters=chapters,
        limits=limits,
        progress=not args.no_progress,
        fresh=args.fresh,
        keep_scratch=args.keep_scratch,
        assignment=released,
    )
    try:
        report = grader.run()
    except NotAGradebook as err:
        print(_say(str(err)), file=sys.stderr)
        return 2
    print(
        json.dumps(report, indent=1)
        if args.json
        else _say(
            f"graded {report['graded']} submission(s) in {report['seconds']:g} s"
            f" ({report['skipped']} already graded); gradebook: {report['gradebook']}"
        )
    )
    status = 1 if report["key_problems"] else 0
    status = max(status, _apply_reviews(args.out))
    _class_report(args.out)
    return (
        max(status, exporter.run(lambda line: print(_say(line), file=sys.stderr)))
        if exporter
        else status
    )


def _class_report(book, anonymous=False) -> int:
    """Write the class report beside `book` (course_lib/classroom/report.py) and say where."""
    from .classroom import report
    from .i18n import language

    try:
        written = report.write(book, anonymous=anonymous, lang=language())
    except (report.NoRecords, OSError, ValueError) as err:
        print(_why("no class report written:", err), file=sys.stderr)
        return 2
    print(_say(f"class report: {written['html']} (counts: {written['csv']})"))
    return 0


def _apply_reviews(book) -> int:
    """The teacher's points for written answers (GRADEBOOK.review.csv) into the gradebook."""
    from .classroom import review

    if not review.review_path(book).exists():
        return 0
    try:
        count = review.apply(book)
    except (review.ReviewError, OSError) as err:
        print(_why("the teacher's reviews were not applied:", err), file=sys.stderr)
        return 2
    print(_say(f"written answers reviewed by the teacher: {count}"))
    return 0


def cmd_review(args) -> int:
    """Serve the review page of a gradebook on 127.0.0.1 (course_lib/classroom/review_page.py)."""
    _speak(args)
    from .classroom import report, review, review_page
    from .i18n import language

    try:
        server = review_page.serve(args.gradebook, port=args.port, lang=language())
    except (report.NoRecords, review.ReviewError, OSError) as err:
        print(_why("no review page:", err), file=sys.stderr)
        return 2
    print(_say(f"review page: {review_page.url_of(server)} (Ctrl-C stops it)"), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def cmd_report(args) -> int:
    """Write the class report of an existing gradebook (course_lib/classroom/report.py)."""
    _speak(args)
    return _class_report(args.gradebook, anonymous=args.anonymous)


def _released(args):
    """grade's --assignment OUT: the teacher's release (None without it, False after saying why
    it cannot be graded)."""
    if not args.assignment:
        return None
    from .authoring.released import NotARelease, Released
    from .grading.isolation import check_unreachable

    try:
        released = Released.read(args.assignment)
        check_unreachable(released.key)
    except (NotARelease, ValueError) as err:
        print(_why("nothing graded:", err), file=sys.stderr)
        return False
    return released


def _grade_exporter(args, released=None):
    """grade's --export/--roster step (course_lib/classroom/exports.py), checked before grading:
    None without --export, False (after saying why) for a bad roster."""
    from .classroom.exports import Exporter, ExportError
    from .classroom.roster import RosterError

    try:
        return Exporter.from_args(args, released)
    except (ExportError, RosterError) as err:
        print(_why("nothing graded:", err), file=sys.stderr)
        return False


def cmd_collect(args) -> int:
    """Copy every hub user's chapter notebook into
    SUBMISSIONS_DIR (course_lib/classroom/collect.py)."""
    _speak(args)
    from .classroom.assignments import NoSuchChapter
    from .classroom.collect import CollectError, collect

    try:
        collection = collect(
            args.source,
            args.out_dir,
            args.chapter,
            exchange=args.exchange,
            user_prefix=args.user_prefix,
            path=args.path,
            assignment_id=args.assignment,
            update=args.update,
            owner_check=not args.no_owner_check,
            max_bytes=int(args.max_mb * 2**20),
        )
    except (CollectError, NoSuchChapter) as err:
        print(_why("nothing collected:", err), file=sys.stderr)
        return 2
    print("\n".join(collection.lines()))  # in the course's language
    return 1 if collection.problems() or collection.warnings else 0


def cmd_gradescope(args) -> int:
    """Write the Gradescope autograder zip of one chapter (course_lib/classroom/gradescope.py)."""
    _speak(args)
    from .classroom.assignments import NoSuchChapter
    from .classroom.gradescope import NotTheTeachersCopy, build

    released = _released(args)
    if released is False:
        return 2
    try:
        info = build(
            args.chapter,
            args.out_zip,
            released,
            cell_timeout=args.cell_timeout,
            timeout=args.timeout,
        )
    except (NoSuchChapter, NotTheTeachersCopy) as err:
        print(_why("no autograder written:", err), file=sys.stderr)
        return 2
    print(
        _say(
            f"Gradescope autograder for chapter {info['chapter']} ({info['notebook']}): "
            f"{info['zip']}, {info['files']} files, {info['bytes'] // 1024} KiB; it holds the "
            "answer key: upload it to Gradescope only"
        )
    )
    return 0


def cmd_explain(args) -> int:
    """Explain the error in each FILE (or stdin). Exit 0: every input explained; 1: some input holds
    no error the course knows; 2: a FILE could not be read."""
    _speak(args)
    from .explainer import explain_text

    inputs, status = [], 0
    for name in args.files or ["-"]:
        try:
            text = (
                sys.stdin.read()
                if name == "-"
                else open(name, encoding="utf-8", errors="replace").read()
            )
        except OSError as err:
            print(_say(f"cannot read {name}: {err.strerror}"), file=sys.stderr)
            status = 2
            continue
        inputs.append((name, explain_text(text)))
    for i, (name, explanation) in enumerate(inputs):
        if args.json:
            print(json.dumps({"input": name, **explanation.to_dict()}, ensure_ascii=False))
        else:
            print(
                ("\n" if i else "")
                + (f"== {name} ==\n" if len(inputs) > 1 else "")
                + str(explanation)
            )
        if not explanation.known:
            status = status or 1
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m course_lib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("doctor", help="environment report: torch, devices, widgets")
    p.add_argument("--json", action="store_true")
    _lang_option(p, "the report (--json stays English)")
    p.set_defaults(run=cmd_doctor)
    p = sub.add_parser("exercises", help="list every exercise: id, chapter, kind, points")
    p.add_argument("--json", action="store_true")
    _lang_option(p, "the titles and the summary (--json stays English)")
    p.set_defaults(run=cmd_exercises)
    p = sub.add_parser(
        "digest", help="(authors) the fingerprint of a quiz answer for the chapter module"
    )
    p.add_argument("quiz_id")
    p.add_argument("answer")
    p.set_defaults(run=cmd_digest)
    p = sub.add_parser(
        "release",
        help="(teachers) write the student bundle: notebooks and course_lib, no answer key",
    )
    p.add_argument("out_dir")
    p.add_argument("--force", action="store_true", help="replace OUT_DIR if it exists")
    p.add_argument(
        "--lang",
        choices=["en", "zh", "both"],
        default="en",
        help="the edition to hand out: en (notebooks/), zh (notebooks/zh/) or both (default en)",
    )
    p.add_argument(
        "--hosted-from",
        metavar="https://github.com/ORG/REPO",
        help="the repository the bundle is published at: stamps Open in Colab / Kaggle links and "
        "the bootstrap cell into every notebook, and the links into the README",
    )
    p.add_argument("--branch", default="main", help="the branch of --hosted-from (default main)")
    p.set_defaults(run=cmd_release)
    p = sub.add_parser(
        "assignment",
        help="(teachers) release a source notebook of your own, or check its release for drift",
        description="release: derive the student's copy, the key and the index from SOURCE into "
        "OUT_DIR, after proving the source right. check: say which derived file of OUT_DIR no "
        "longer matches SOURCE (exit 1). The format: docs/teacher-assignment.md.",
    )
    p.add_argument("action", choices=["release", "check"])
    p.add_argument("source", help="the source notebook (### BEGIN SOLUTION ... markers)")
    p.add_argument("out_dir", help="the release folder")
    p.set_defaults(run=cmd_assignment)
    p = sub.add_parser(
        "grade", help="(teachers) grade a folder of submitted notebooks into a gradebook CSV"
    )
    p.add_argument("submissions", help="folder with one .ipynb per student (searched recursively)")
    p.add_argument(
        "--out", required=True, help="gradebook CSV; feedback and summaries are written beside it"
    )
    p.add_argument(
        "--workers", type=int, default=None, help="processes at once (default: all cores)"
    )
    p.add_argument(
        "--chapter",
        action="append",
        help="grade these chapters' exercises (default: from each notebook)",
    )
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell (default 60)")
    p.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per notebook (default 600)"
    )
    p.add_argument(
        "--test-timeout", type=float, default=0.0, help="cap on each exercise's per-test limit"
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=4096,
        help="memory of each graded process and all it starts, together (default 4096)",
    )
    p.add_argument(
        "--cpu-seconds",
        type=float,
        default=1200.0,
        help="CPU time of each graded process and all it starts, together (default 1200)",
    )
    p.add_argument(
        "--disk-mb",
        type=int,
        default=512,
        help="scratch, /tmp and /dev/shm of each graded process, in MB each (default 512)",
    )
    p.add_argument(
        "--assignment",
        metavar="OUT_DIR",
        help="grade a teacher's own assignment, released into OUT_DIR by `assignment release`",
    )
    p.add_argument("--fresh", action="store_true", help="start a new gradebook instead of resuming")
    p.add_argument(
        "--keep-scratch", action="store_true", help="keep the graded processes' scratch folders"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the run's report as JSON")
    p.add_argument(
        "--export",
        action="append",
        choices=["nbgrader", "canvas"],
        help="also write GRADEBOOK.nbgrader.csv / GRADEBOOK.canvas.csv (repeatable)",
    )
    p.add_argument(
        "--roster",
        help="CSV of id, name, email (optional username, section): who each submission is",
    )
    _lang_option(p, "the progress, summary and errors printed (feedback: each notebook's own)")
    p.set_defaults(run=cmd_grade)
    p = sub.add_parser(
        "report",
        help="(teachers) the class report of a gradebook: what the class got wrong, with plots",
    )
    p.add_argument("gradebook", help="the gradebook CSV that `grade --out` wrote")
    p.add_argument(
        "--anonymous", action="store_true", help="students as 'student N', to show the class"
    )
    _lang_option(p, "the report page and what is printed")
    p.set_defaults(run=cmd_report)
    p = sub.add_parser(
        "review",
        help="(teachers) grade the written answers of a gradebook in a local web page",
    )
    p.add_argument("gradebook", help="the gradebook CSV that `grade --out` wrote")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    _lang_option(p, "the page and what is printed")
    p.set_defaults(run=cmd_review)
    p = sub.add_parser(
        "collect",
        help="(teachers) copy each hub user's chapter notebook into a submissions folder",
        description="Copy each user's notebook of one chapter from a hub's home folders (or an "
        "nbgrader exchange) into OUT_DIR/USER.ipynb, ready for `grade`. Exit status: "
        "0 every user's notebook collected, 1 some users reported, 2 nothing collected.",
    )
    p.add_argument(
        "source", help="folder of home folders (e.g. /home), or an nbgrader exchange course folder"
    )
    p.add_argument("out_dir", help="the submissions folder to fill")
    p.add_argument(
        "--chapter", required=True, help="the chapter whose notebook to collect, e.g. 01"
    )
    p.add_argument(
        "--exchange", action="store_true", help="SOURCE is an nbgrader exchange (EXCHANGE/COURSE)"
    )
    p.add_argument(
        "--assignment",
        help="with --exchange: the nbgrader assignment id (default: any with the notebook)",
    )
    p.add_argument(
        "--user-prefix",
        default="",
        help="home folders start with this, removed from the name (jupyter-)",
    )
    p.add_argument(
        "--path",
        help="the notebook's path inside each home (default: pytorch-gpu-course/notebooks/...)",
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="replace copies collected before (kept in OUT_DIR.replaced)",
    )
    p.add_argument(
        "--no-owner-check",
        action="store_true",
        help="do not check that each home, exchange folder and notebook belongs to the system "
        "user it names (only where every home belongs to one user: a single-user hub, tests)",
    )
    p.add_argument(
        "--max-mb",
        type=float,
        default=50,
        help="refuse notebooks larger than this, before reading them (default 50, the grader's)",
    )
    _lang_option(p, "the summary and errors printed")
    p.set_defaults(run=cmd_collect)
    p = sub.add_parser("gradescope", help="(teachers) write a chapter's Gradescope autograder zip")
    p.add_argument("chapter", help="the chapter to grade, e.g. 01 (with --assignment: its name)")
    p.add_argument("out_zip", help="the zip to write (upload it as the assignment's autograder)")
    p.add_argument(
        "--assignment",
        metavar="OUT_DIR",
        help="a teacher's own assignment, released into OUT_DIR by `assignment release`",
    )
    p.add_argument(
        "--cell-timeout", type=float, default=60.0, help="seconds per notebook cell (default 60)"
    )
    p.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per notebook (default 600)"
    )
    _lang_option(p, "the summary and errors printed")
    p.set_defaults(run=cmd_gradescope)
    p = sub.add_parser(
        "explain",
        help="explain a PyTorch GPU-training error from a message, a traceback or a log",
        description="Explain the error in each FILE (a message, a traceback or a whole log; "
        "without FILE, standard input). Exit status: 0 every input explained, "
        "1 some input holds no error the course knows, 2 a FILE could not be read.",
    )
    p.add_argument(
        "files", nargs="*", metavar="FILE", help="text files; '-' or none: standard input"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per input, one per line")
    _lang_option(p, "the explanations")
    p.set_defaults(run=cmd_explain)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
