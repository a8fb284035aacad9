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

What students control is read as nbgrader's collect reads it, or more carefully: no symbolic
link is followed (each folder from the home down is opened with O_NOFOLLOW relative to the one
above, the file too), each home and exchange folder, and the notebook, must belong to the system
user it names (`--no-owner-check` where every home belongs to one user), a file over the size
limit is refused by its size before a byte is read (and at most limit + 1 bytes are ever read),
and a folder, a named pipe (opened without waiting), a device or a socket is refused: each such
user's status is `rejected`, with the reason.
"""

import csv
import hashlib
import io
import os
import pwd
import re
import shutil
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..grading import csvsafe
from ..grading.cells import MAX_NOTEBOOK_BYTES
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
COLUMNS = ["user", "status", "source", "note", "when"]
USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")
PROBLEMS = ("missing", "ambiguous", "kept", "rejected")
# (test of st_mode, what the file is): anything but a regular file is refused
NOT_A_FILE = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class CollectError(ValueError):
    """Nothing can be collected as asked (no such folder, no such chapter)."""


class Refused(Exception):
    """A path collect does not read: a link, not a regular file, too large, someone else's."""


def uid_of(name: str):
    """The uid of the system user `name`, or None when there is none (tests replace this)."""
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def owner_name(uid: int) -> str:
    """'bob' for bob's uid; 'uid 1234' for a uid without a user."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


@dataclass
class Owner:
    """Who must own what is collected for one user: the system user `name` (None: no check)."""

    name: str
    uid: object = None  # int, or None when not checked

    def check(self, shown: str, st) -> None:
        """Refused unless `st` (of the path `shown`) belongs to this user."""
        if self.uid is not None and st.st_uid != self.uid:
            raise Refused(
                f"{shown} belongs to {owner_name(st.st_uid)}, not to {self.name}: "
                "not collected (someone else's file in this user's name?)"
            )


def owner_for(name: str, checked: bool) -> Owner:
    """The Owner of system user `name`; Refused when owners are checked and there is none."""
    if not checked:
        return Owner(name)
    uid = uid_of(name)
    if uid is None:
        raise Refused(
            f"there is no system user {name!r} to check its owner against: not collected "
            "(pass --no-owner-check where every home belongs to one user)"
        )
    return Owner(name, uid)


def _kind(mode: int) -> str:
    return next((what for test, what in NOT_A_FILE if test(mode)), "not a regular file")


def _unreadable(shown: str, err: OSError) -> str:
    return f"{shown} could not be read: {err.strerror or type(err).__name__}"


def _link(shown: str) -> Refused:
    return Refused(
        f"{shown} is a symbolic link: not followed (a link is never collected as its owner's work)"
    )


def open_folder(path: Path, owner: Owner) -> int:
    """A descriptor of folder `path`, never through a link, owned by `owner`; Refused if not."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _link(str(path))
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(f"{path} is {_kind(st.st_mode)}, not a folder: not collected")
    owner.check(str(path), st)
    fd = os.open(path, FOLDER_FLAGS)
    if os.fstat(fd).st_ino != st.st_ino:
        os.close(fd)
        raise Refused(f"{path} was replaced while it was read: not collected")
    return fd


def open_under(root: Path, parts: tuple, owner: Owner, limit: int) -> tuple:
    """(descriptor, stat) of the regular file root/parts, each folder on the way opened relative
    to the one above without following a link, root and the file owned by `owner`, its size at
    most `limit`; FileNotFoundError if a part is missing, Refused for anything else."""
    fd = open_folder(root, owner)
    try:
        for i, part in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            st = os.lstat(part, dir_fd=fd)
            if stat.S_ISLNK(st.st_mode):
                raise _link(shown)
            if i < len(parts) - 1:
                if not stat.S_ISDIR(st.st_mode):  # a file where a folder should be: not there
                    raise FileNotFoundError(shown)
                fd, above = os.open(part, FOLDER_FLAGS, dir_fd=fd), fd
                os.close(above)
                continue
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"{shown} is {_kind(st.st_mode)}, not a notebook file: not collected")
            owner.check(shown, st)
            if st.st_size > limit:
                raise Refused(
                    f"{shown} is {st.st_size / 2**20:.0f} MB; notebooks over "
                    f"{limit / 2**20:.0f} MB are not collected"
                )
            file_fd = os.open(part, FILE_FLAGS, dir_fd=fd)
            now = os.fstat(file_fd)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
                os.close(file_fd)
                raise Refused(f"{shown} was replaced while it was read: not collected")
            return file_fd, now
        raise Refused(f"{root} is a folder, not a notebook file: not collected")
    finally:
        os.close(fd)


def read_limited(fd: int, limit: int) -> bytes:
    """At most limit + 1 bytes of `fd`."""
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


@dataclass
class Found:
    """One user's outcome: collected, unchanged, kept, missing, ambiguous or rejected."""

    user: str
    status: str
    source: str = ""
    note: str = ""
    modified: float = 0.0
    root: Path = None  # the home or exchange folder the file is read under
    parts: tuple = ()  # the file's path under root
    owner: Owner = None


@dataclass
class Collection:
    out: Path
    found: list = field(default_factory=list)
    warnings: list = field(default_factory=list)  # folders refused that no user's row shows

    def count(self, *statuses) -> int:
        return sum(f.status in statuses for f in self.found)

    def problems(self) -> list:
        return [f for f in self.found if f.status in PROBLEMS]

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
        return out + [tr(f"WARNING {w}") for w in self.warnings]


def _candidates(home: Path, notebook: str) -> list:
    """Relative paths (tuples) of everything named `notebook` under `home` (a link, a folder or
    a pipe too: refused later, with the reason), not in hidden, checkpoint or environment
    folders; links to folders are not entered."""
    found = []
    for folder, dirs, files in os.walk(home):
        if notebook in files or notebook in dirs:
            found.append(Path(folder).relative_to(home).parts + (notebook,))
        dirs[:] = sorted(
            d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".") and d != notebook
        )
    return sorted(found)


def _locate(user: str, root: Path, parts: tuple, owner: Owner, limit: int) -> Found:
    """Found (status found) for root/parts if it can be collected, else rejected with why;
    FileNotFoundError when a part of it is missing."""
    shown = str(root.joinpath(*parts))
    try:
        fd, _ = open_under(root, parts, owner, limit)
    except FileNotFoundError:
        raise
    except Refused as why:
        return Found(user, "rejected", shown, note=str(why))
    except OSError as err:
        return Found(user, "rejected", shown, note=_unreadable(shown, err))
    os.close(fd)
    return Found(user, "found", shown, root=root, parts=parts, owner=owner)


def from_home(
    user: str, home: Path, notebook: str, path: str = None, owner: Owner = None, limit=None
) -> Found:
    """Where `user`'s notebook is in their home: the given relative path, else the course
    folder, else the only file of that name."""
    owner = owner or Owner(home.name)
    limit = MAX_NOTEBOOK_BYTES if limit is None else limit
    expected = Path(path or f"{COURSE_FOLDER}/notebooks/{notebook}")
    try:
        return _locate(user, home, expected.parts, owner, limit)
    except FileNotFoundError:
        pass
    if path:
        return Found(user, "missing", note=f"not found: {home / expected}")
    candidates = _candidates(home, notebook)
    if len(candidates) == 1:
        try:
            return _locate(user, home, candidates[0], owner, limit)
        except FileNotFoundError:
            candidates = []
    if not candidates:
        return Found(user, "missing", note=f"no {notebook} anywhere in {home}")
    shown = ", ".join("/".join(c) for c in candidates[:5])
    return Found(
        user,
        "ambiguous",
        note=f"{len(candidates)} copies of {notebook} ({shown}); none "
        "collected: pass --path with the one to grade, relative "
        "to the home folder",
    )


def homes(source: Path, prefix: str = "") -> list:
    """(user, home folder) of each user's home under `source` (with `prefix` removed); a link
    there is listed too, to be refused."""
    users = []
    for home in sorted(source.iterdir()):
        mode = os.lstat(home).st_mode
        if home.name.startswith(".") or not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            continue
        if prefix and not home.name.startswith(prefix):
            continue
        users.append((home.name[len(prefix) :], home))
    return users


def _from_home_checked(user, home, notebook, path, checked, limit) -> Found:
    """from_home, with the home folder itself refused when it is a link or someone else's."""
    try:
        owner = owner_for(home.name, checked)
        os.close(open_folder(home, owner))
    except Refused as why:
        return Found(user, "rejected", str(home), note=str(why))
    except OSError as err:
        return Found(user, "rejected", str(home), note=_unreadable(str(home), err))
    return from_home(user, home, notebook, path, owner, limit)


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


def _exchange_folders(inbound: Path, assignment_id, checked: bool, prefix: str) -> tuple:
    """([(student, time, folder, Owner)] of the inbound folders that are what they claim,
    {student: [why]} of those refused: a link, or a folder its student does not own)."""
    genuine, refused = [], {}
    for folder in sorted(inbound.iterdir()):
        parsed = parse_exchange_name(folder.name)
        if parsed is None or (assignment_id and parsed[1] != assignment_id):
            continue
        student, _, when = parsed
        mode = os.lstat(folder).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            continue
        try:
            owner = owner_for(prefix + student, checked)
            os.close(open_folder(folder, owner))
        except (Refused, OSError) as why:
            refused.setdefault(student, []).append(
                f"inbound/{folder.name} claims to be {student}'s submission: {why}"
            )
            continue
        genuine.append((student, when, folder, owner))
    return genuine, refused


def from_exchange(
    source: Path,
    notebook: str,
    assignment_id: str = None,
    checked: bool = True,
    prefix: str = "",
    limit=None,
    warnings=None,
) -> list:
    """Found for each student of an nbgrader exchange: their latest submission (of `assignment_id`,
    else of any assignment that holds `notebook`), among the folders they own; a folder that is a
    link or another user's is refused, and a warning says so."""
    limit = MAX_NOTEBOOK_BYTES if limit is None else limit
    inbound = source if source.name == "inbound" else source / "inbound"
    if not inbound.is_dir():
        raise CollectError(f"{source} is not an nbgrader exchange course folder (no inbound/)")
    genuine, refused = _exchange_folders(inbound, assignment_id, checked, prefix)
    latest = {}
    for student, when, folder, owner in genuine:
        if not assignment_id and not _candidates(folder, notebook):
            continue
        if student not in latest or when > latest[student][0]:
            latest[student] = (when, folder, owner)
    found = []
    for student, (when, folder, owner) in sorted(latest.items()):
        candidates = _candidates(folder, notebook)
        if len(candidates) == 1:
            item = _locate(student, folder, candidates[0], owner, limit)
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
    for student, reasons in sorted(refused.items()):
        if student not in latest:
            found.append(Found(student, "rejected", note=reasons[0]))
        if warnings is not None:
            warnings.extend(reasons[student not in latest :])
    return found


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(item: Found, limit: int) -> tuple:
    """(bytes, stat) of item's file, read as `open_under` opens it; Refused or OSError."""
    fd, st = open_under(item.root, item.parts, item.owner, limit)
    try:
        data = read_limited(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Refused(
            f"{'/'.join(item.parts)} grew past {limit / 2**20:.0f} MB while it was read: "
            "not collected"
        )
    return data, st


def _write(path: Path, data: bytes, mtime_ns: int) -> None:
    """`data` into a new private file `path` (never through a link), with the given time."""
    if path.is_symlink() or path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def _place(item: Found, out: Path, update: bool, limit: int = MAX_NOTEBOOK_BYTES) -> None:
    """Copy item's file to out/USER.ipynb (atomically, keeping its time); never lose a copy."""
    dst = out / f"{item.user}.ipynb"
    try:
        data, st = _read(item, limit)
    except Refused as why:
        item.status, item.note = "rejected", str(why)
        return
    except OSError as err:
        item.status, item.note = "rejected", _unreadable(item.source, err)
        return
    existed = dst.exists()
    if existed and _sha(dst.read_bytes()) == _sha(data):
        item.status, item.note = "unchanged", "same file as collected before"
        return
    if existed and not update:
        item.status = "kept"
        item.note = (
            f"{dst.name} collected before differs from {item.source}; pass --update to replace it"
        )
        return
    if existed:
        backup = out.with_name(out.name + ".replaced")
        backup.mkdir(exist_ok=True)
        stamp = datetime.fromtimestamp(dst.stat().st_mtime, timezone.utc).strftime("%Y%m%dT%H%M%S")
        shutil.copy2(dst, backup / f"{item.user}-{stamp}.ipynb")
    tmp = out / f".{item.user}.ipynb.tmp"
    _write(tmp, data, int(item.modified * 1e9) if item.modified else st.st_mtime_ns)
    os.replace(tmp, dst)
    item.status, item.note = ("updated" if existed else "collected"), ""


def write_manifest(collection: Collection) -> None:
    """SUBMISSIONS_DIR/collected.csv: every user, status, source and note (earlier runs kept);
    written by the course's one CSV writer, so no cell is a spreadsheet formula."""
    path = collection.out / MANIFEST
    rows = {}
    if path.exists():
        rows = {r["user"]: r for r in csv.DictReader(io.StringIO(path.read_text(errors="replace")))}
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    for f in collection.found:
        rows[f.user] = {"user": f.user, "status": f.status, "source": f.source, "note": f.note}
        rows[f.user]["when"] = when
    table = [COLUMNS] + [[rows[u].get(c) or "" for c in COLUMNS] for u in sorted(rows)]
    path.write_text(csvsafe.text(table))


def collect(
    source,
    out,
    chapter: str,
    exchange: bool = False,
    user_prefix: str = "",
    path: str = None,
    assignment_id: str = None,
    update: bool = False,
    owner_check: bool = True,
    max_bytes: int = MAX_NOTEBOOK_BYTES,
) -> Collection:
    """Collect chapter `chapter`'s notebook of every user under `source` into `out`."""
    notebook = assignment(chapter).notebook
    source, out = Path(source).resolve(), Path(out).resolve()
    if not source.is_dir():
        raise CollectError(f"{source} is not a folder")
    if out == source or source in out.parents:
        raise CollectError(f"the submissions folder {out} must not be inside {source}")
    warnings = []
    if exchange:
        found = from_exchange(
            source, notebook, assignment_id, owner_check, user_prefix, max_bytes, warnings
        )
    else:
        found = [
            _from_home_checked(user, home, notebook, path, owner_check, max_bytes)
            for user, home in homes(source, user_prefix)
        ]
    for item in found:
        if not USERNAME.match(item.user):
            item.status, item.note = "missing", "not collected: the user name cannot be a file name"
    if not found:
        which = f" (folders starting with {user_prefix!r})" if user_prefix else ""
        raise CollectError(f"no users found under {source}{which}")
    out.mkdir(parents=True, exist_ok=True)
    collection = Collection(out, found, warnings)
    for item in found:
        if item.status == "found":
            _place(item, out, update, max_bytes)
    write_manifest(collection)
    return collection
