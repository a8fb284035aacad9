"""`python -m course_lib.i18n check|sync`: keep the Chinese notebooks in step with the English ones.

    check                      list every drift (notebook, cell, what to do); exit 1 if any
    sync [NB ...] [--accept NB:ID ...]
                               copy code, cell order, ids and metadata from the English notebooks
                               (all, or those named; a missing twin is created); --accept stamps the
                               English cell's current fingerprint on a Chinese markdown cell whose
                               translation you updated
"""
import argparse
import sys
from pathlib import Path

from .editions import check, checkout_root, sync


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_lib.i18n",
                                     description="Keep notebooks/zh/ in step with notebooks/.")
    parser.add_argument("--root", type=Path, default=None,
                        help="the checkout (holding notebooks/); default: the one course_lib is in")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="list every drift of the Chinese notebooks; exit 1 if any")
    sync_cmd = commands.add_parser("sync", help="copy code, structure and metadata from English")
    sync_cmd.add_argument("notebooks", nargs="*", metavar="NOTEBOOK",
                          help="only these (e.g. 03_training_template or 03); default: all")
    sync_cmd.add_argument("--accept", nargs="+", default=[], metavar="NB:ID",
                          help="translations you updated, e.g. 03_training_template:c04 or 03:c04")
    args = parser.parse_args(argv)
    root = (args.root or checkout_root()).resolve()
    if not (root / "notebooks").is_dir():
        print(f"{root}: no notebooks/ folder here (give the checkout with --root)", file=sys.stderr)
        return 2
    if args.command == "check":
        drifts = check(root)
        for drift in drifts:
            print(drift)
        print(f"{len(drifts)} drift(s): the Chinese edition is behind the English one" if drifts
              else "the Chinese edition is in step with the English one")
        return 1 if drifts else 0
    try:
        changes = sync(root, accept=args.accept, only=args.notebooks)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    for change in changes:
        print(change)
    left = check(root)
    print(f"{len(left)} drift(s) left (run check to list them)" if left else "in step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
