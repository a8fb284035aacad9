"""Collect a class's notebooks from a hub into a submissions folder, one file per user.

    python -m course_lib collect HOMES_DIR SUBMISSIONS_DIR --chapter 01 [--user-prefix jupyter-]
    python -m course_lib collect EXCHANGE/COURSE --exchange SUBMISSIONS_DIR --chapter 01

From home folders (The Littlest JupyterHub: /home/jupyter-NAME; a local spawner: /home/NAME):
each user's chapter notebook where the nbgitpuller link put it
(`pytorch-gpu-course/notebooks/01_device_check.ipynb`), else the one file of that name in
their home. From an nbgrader exchange: each student's latest submission in `inbound/`.
It only copies: the users' files are never changed. Each copy is SUBMISSIONS_DIR/NAME.ipynb
with the student's modification time; `collected.csv` there lists every user and what
happened. A user without the notebook, or with several candidates, is reported and
skipped; a copy already collected is replaced only with --update (the old one is kept in
SUBMISSIONS_DIR.replaced/).
"""

import csv
import hashlib
import io
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..i18n import tr
from ..i18n.catalogue import join
from .assignments import assignment

COURSE_FOLDER = "pytorch-gpu-course"  # the nbgitpuller link's targetpath (README, docs)
SKIPPED_DIRS = {
    ".ipynb_checkpoints",
    ".git",
    ".cache",
    ".local",
    ".Trash",
    ".venv",
    "node_modules",
    "__pycache__",
}
MANIFEST = "collected.csv"
USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")


class CollectError(ValueError):
    """Nothing can be collected as asked (no such folder, no such chapter)."""


@dataclass
class Found:
    """One user's outcome: collected, unchanged, kept, missing or ambiguous."""

    user: str
    status: str
    source: str = ""
    note: str = ""
    modified: float = 0.0


@dataclass
class Collection:
    out: Path
    found: list = field(default_factory=list)

    def count(self, *statuses) -> int:
        return sum(f.status in statuses for f in self.found)

    def problems(self) -> list:
        return [f for f in self.found if f.status in ("missing", "ambiguous", "kept")]

    def lines(self) -> list:
        """The summary, then one line per user to look at, in the course's language."""
        done = self.count("collected", "updated", "unchanged")
        copied, there = self.count("collected", "updated"), self.count("unchanged")
        out = [
            tr(
                f"{done} of {len(self.found)} user(s) have their notebook in {self.out} "
                f"({copied} copied now, {there} already there)"
            )
        ]
        out += [f"  {join([f.user, tr(f.status), tr(f.note)], ': ')}" for f in self.problems()]
        return out


def _candidates(home: Path, notebook: str) -> list:
    """Files named `notebook` under `home` (not in hidden, checkpoint or environment folders)."""
    found = []
    for folder, dirs, files in os.walk(home):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        if notebook in files:
            path = Path(folder) / notebook
            if path.is_file() and not path.is_symlink():
                found.append(path)
    return found


def from_home(user: str, home: Path, notebook: str, path: str = None) -> Found:
    """Where `user`'s notebook is in their home: the given relative path, else the course
    folder, else the only file of that name."""
    expected = home / (path or f"{COURSE_FOLDER}/notebooks/{notebook}")
    if expected.is_file():
        return Found(user, "found", str(expected))
    if path:
        return Found(user, "missing", note=f"not found: {expected}")
    candidates = _candidates(home, notebook)
    if len(candidates) == 1:
        return Found(user, "found", str(candidates[0]))
    if not candidates:
        return Found(user, "missing", note=f"no {notebook} anywhere in {home}")
    shown = ", ".join(str(c.relative_to(home)) for c in candidates[:5])
    return Found(
        user,
        "ambiguous",
        note=f"{len(candidates)} copies of {notebook} ({shown}); none "
        "collected: pass --path with the one to grade, relative "
        "to the home folder",
    )


def homes(source: Path, prefix: str = "") -> list:
    """(user, home folder) of each user's home under `source` (with `prefix` removed)."""
    users = []
    for home in sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if prefix and not home.name.startswith(prefix):
            continue
        users.append((home.name[len(prefix) :], home))
    return users


def parse_exchange_name(name: str):
    """(student, assignment, time) of an nbgrader inbound folder named
    `student+assignment+time[+random]`, or None."""
    parts = name.rsplit("+", 3)
    if len(parts) == 4 and ":" not in parts[3]:
        student, assign, stamp = parts[0], parts[1], parts[2]
    else:
        parts = name.rsplit("+", 2)
        if len(parts) != 3:
            return None
        student, assign, stamp = parts
    when = parse_time(stamp)
    return (student, assign, when) if when is not None else None


def parse_time(text: str):
    """A UTC datetime of nbgrader's timestamps ('2026-11-29 10:00:00.123456 UTC'), or None."""
    text = text.strip().replace(" UTC", "").replace("Z", "")
    for fmt in (
        "%Y-%m-%d %H:%M:%S.%f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S.%f",
        "%Y-%m-%dT%H:%M:%S",
    ):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def from_exchange(source: Path, notebook: str, assignment_id: str = None) -> list:
    """Found for each student of an nbgrader exchange: their latest submission (of `assignment_id`,
    else of any assignment that holds `notebook`)."""
    inbound = source if source.name == "inbound" else source / "inbound"
    if not inbound.is_dir():
        raise CollectError(f"{source} is not an nbgrader exchange course folder (no inbound/)")
    latest = {}
    for folder in inbound.iterdir():
        parsed = parse_exchange_name(folder.name) if folder.is_dir() else None
        if parsed is None or (assignment_id and parsed[1] != assignment_id):
            continue
        student, _, when = parsed
        if not assignment_id and not _candidates(folder, notebook):
            continue
        if student not in latest or when > latest[student][0]:
            latest[student] = (when, folder)
    found = []
    for student, (when, folder) in sorted(latest.items()):
        candidates = _candidates(folder, notebook)
        if len(candidates) == 1:
            item = Found(student, "found", str(candidates[0]))
        elif not candidates:
            item = Found(
                student, "missing", note=f"their latest submission {folder.name} has no {notebook}"
            )
        else:
            item = Found(
                student,
                "ambiguous",
                note=f"{len(candidates)} copies of {notebook} in {folder.name}; none collected",
            )
        item.modified = when.timestamp()
        found.append(item)
    return found


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _place(item: Found, out: Path, update: bool) -> None:
    """Copy item's file to out/USER.ipynb (atomically, keeping its time); never lose a copy."""
    src, dst = Path(item.source), out / f"{item.user}.ipynb"
    existed = dst.exists()
    if existed and _sha(dst) == _sha(src):
        item.status, item.note = "unchanged", "same file as collected before"
        return
    if dst.exists() and not update:
        item.status = "kept"
        item.note = f"{dst.name} collected before differs from {src}; pass --update to replace it"
        return
    if dst.exists():
        backup = out.with_name(out.name + ".replaced")
        backup.mkdir(exist_ok=True)
        stamp = datetime.fromtimestamp(dst.stat().st_mtime, timezone.utc).strftime("%Y%m%dT%H%M%S")
        shutil.copy2(dst, backup / f"{item.user}-{stamp}.ipynb")
    tmp = out / f".{item.user}.ipynb.tmp"
    shutil.copy2(src, tmp)
    if item.modified:
        os.utime(tmp, (item.modified, item.modified))
    os.replace(tmp, dst)
    item.status, item.note = ("updated" if existed else "collected"), ""


def write_manifest(collection: Collection) -> None:
    """SUBMISSIONS_DIR/collected.csv: every user, status, source and note (earlier runs kept)."""
    path = collection.out / MANIFEST
    rows = {}
    if path.exists():
        rows = {r["user"]: r for r in csv.DictReader(io.StringIO(path.read_text(errors="replace")))}
    for f in collection.found:
        rows[f.user] = {
            "user": f.user,
            "status": f.status,
            "source": f.source,
            "note": f.note,
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        }
    buf = io.StringIO()
    writer = csv.DictWriter(
        buf,
        ["user", "status", "source", "note", "when"],
        lineterminator="\n",
        extrasaction="ignore",
    )
    writer.writeheader()
    for user in sorted(rows):
        writer.writerow(rows[user])
    path.write_text(buf.getvalue())


def collect(
    source,
    out,
    chapter: str,
    exchange: bool = False,
    user_prefix: str = "",
    path: str = None,
    assignment_id: str = None,
    update: bool = False,
) -> Collection:
    """Collect chapter `chapter`'s notebook of every user under `source` into `out`."""
    notebook = assignment(chapter).notebook
    source, out = Path(source).resolve(), Path(out).resolve()
    if not source.is_dir():
        raise CollectError(f"{source} is not a folder")
    if out == source or source in out.parents:
        raise CollectError(f"the submissions folder {out} must not be inside {source}")
    if exchange:
        found = from_exchange(source, notebook, assignment_id)
    else:
        found = [from_home(user, home, notebook, path) for user, home in homes(source, user_prefix)]
    for item in found:
        if not USERNAME.match(item.user):
            item.status, item.note = "missing", "not collected: the user name cannot be a file name"
    if not found:
        which = f" (folders starting with {user_prefix!r})" if user_prefix else ""
        raise CollectError(f"no users found under {source}{which}")
    out.mkdir(parents=True, exist_ok=True)
    collection = Collection(out, found)
    for item in found:
        if item.status == "found":
            _place(item, out, update)
    write_manifest(collection)
    return collection
