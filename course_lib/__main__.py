"""Command line: python -m course_lib {doctor, exercises, digest, grade, release}."""
import argparse
import json
import sys


def cmd_doctor(args) -> int:
    from .doctor import environment_report, format_report
    report = environment_report()
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0


def cmd_exercises(args) -> int:
    from .exercises import all_exercises
    rows = [ex.info() for ex in all_exercises()]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(f"{r['id']:<34} chapter {r['chapter']}  {r['kind']:<8} {r['points']:>2} pt  {r['title']}")
        print(f"{len(rows)} exercises, {sum(r['points'] for r in rows)} points")
    return 0


def cmd_digest(args) -> int:
    from .exercises import answer_digest, get
    quiz = get(args.quiz_id)
    print(answer_digest(quiz.id, quiz.normalize(args.answer)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m course_lib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("doctor", help="environment report: torch, devices, widgets")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_doctor)
    p = sub.add_parser("exercises", help="list every exercise: id, chapter, kind, points")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_exercises)
    p = sub.add_parser("digest", help="(authors) the fingerprint of a quiz answer for the chapter module")
    p.add_argument("quiz_id")
    p.add_argument("answer")
    p.set_defaults(run=cmd_digest)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
