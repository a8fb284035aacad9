"""The class roster: a CSV of student id, name and email, and which student a submission is.

Columns (header names are case-insensitive; spaces, hyphens and underscores are alike):
`id` (or `student_id`), `name` (or `first_name` and `last_name`), `email`; optional
`username` (the hub user or submission file name), `section`, `canvas_id`, `sis_login_id`.
A submission named NAME is the student whose username, id or email is NAME, or whose email
starts with NAME@. A roster that is ambiguous (one id, username or email on two rows) or
lacks a column is refused with the row numbers, never half read.
"""

import csv
import io
from dataclasses import dataclass
from pathlib import Path

REQUIRED = ("id", "name", "email")
ALIASES = {
    "student_id": "id",
    "studentid": "id",
    "e_mail": "email",
    "email_address": "email",
    "first": "first_name",
    "firstname": "first_name",
    "given_name": "first_name",
    "last": "last_name",
    "lastname": "last_name",
    "surname": "last_name",
    "family_name": "last_name",
    "user": "username",
    "login": "username",
    "hub_user": "username",
    "submission": "username",
    "canvas_user_id": "canvas_id",
    "sis_login": "sis_login_id",
}
OPTIONAL = {"first_name", "last_name", "username", "section", "canvas_id", "sis_login_id"}
KNOWN = set(REQUIRED) | OPTIONAL


class RosterError(ValueError):
    """The roster cannot be used as it is; the message says where and what to change."""


@dataclass(frozen=True)
class Student:
    id: str
    name: str
    email: str
    first_name: str = ""
    last_name: str = ""
    username: str = ""
    section: str = ""
    canvas_id: str = ""
    sis_login_id: str = ""
    row: int = 0  # line in the roster file


def canonical(header: str) -> str:
    """'Student ID' / 'student-id' -> 'student_id' -> 'id'."""
    words = header.strip().lstrip("\ufeff").lower().replace("-", " ").replace("_", " ").split()
    key = "_".join(words)
    return ALIASES.get(key, key)


def split_name(name: str) -> tuple:
    """(first, last) of 'Ada Lovelace' or 'Lovelace, Ada'; a single word is a first name."""
    name = " ".join(name.split())
    if "," in name:
        last, first = (part.strip() for part in name.split(",", 1))
        return first, last
    first, _, last = name.rpartition(" ")
    return (first, last) if first else (last, "")


def _rows(text: str, source: str) -> tuple:
    """(canonical header, [(line, row dict)]) of CSV text; comma, semicolon or tab separated."""
    first = text.splitlines()[0] if text.strip() else ""
    delimiter = max(",;\t", key=first.count)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = [canonical(h) for h in next(reader)]
    except StopIteration:
        raise RosterError(
            f"{source} is empty; a roster needs a header line with {', '.join(REQUIRED)}"
        ) from None
    if "name" not in header and {"first_name", "last_name"} <= set(header):
        header.append("name")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        names = " or ".join(repr(m) for m in missing)
        raise RosterError(
            f"{source} has no {names} column (its columns: "
            f"{', '.join(h for h in header if h) or 'none'}); a roster needs "
            f"{', '.join(REQUIRED)} (docs/classroom.md)"
        )
    doubled = sorted({h for h in header if h and header.count(h) > 1})
    if doubled:
        raise RosterError(f"{source} has the column {doubled[0]!r} twice; keep one")
    rows = []
    for values in reader:
        if not any(v.strip() for v in values):
            continue
        row = {h: v.strip() for h, v in zip(header, values) if h in KNOWN}
        rows.append((reader.line_num, row))
    return header, rows


def _student(line: int, row: dict) -> Student:
    first, last = row.get("first_name", ""), row.get("last_name", "")
    name = row.get("name", "") or " ".join(p for p in (first, last) if p)
    if not (first or last):
        first, last = split_name(name)
    return Student(
        id=row.get("id", ""),
        name=name,
        email=row.get("email", ""),
        first_name=first,
        last_name=last,
        username=row.get("username", ""),
        section=row.get("section", ""),
        canvas_id=row.get("canvas_id", ""),
        sis_login_id=row.get("sis_login_id", ""),
        row=line,
    )


class Roster:
    """Students by the names their submissions may carry (see the module docstring)."""

    def __init__(self, students: list, source: str = "the roster"):
        self.students, self.source = list(students), source
        self._by_key, self._by_local = {}, {}
        for st in self.students:
            if not st.id:
                raise RosterError(f"{source}, line {st.row}: no student id; every row needs one")
            for field in ("id", "username", "email"):
                key = getattr(st, field).lower()
                other = self._by_key.get(key)
                if key and other is not None and other is not st:
                    raise RosterError(
                        f"{source}: {key!r} is the {field} of lines {other.row} and "
                        f"{st.row}; each student once, each id, username and "
                        "email on one line only"
                    )
                if key:
                    self._by_key[key] = st
            local = st.email.lower().partition("@")[0]
            if local:
                self._by_local.setdefault(local, []).append(st)

    @classmethod
    def read(cls, path) -> "Roster":
        """The roster in CSV file `path` (UTF-8, with or without a byte-order mark)."""
        path = Path(path)
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except OSError as err:
            raise RosterError(f"cannot read the roster {path}: {err.strerror or err}") from None
        except UnicodeDecodeError:
            raise RosterError(f"{path} is not UTF-8 text; save the roster as 'CSV UTF-8'") from None
        _, rows = _rows(text, str(path))
        return cls([_student(line, row) for line, row in rows], str(path))

    def match(self, submission: str):
        """The Student a submission name stands for (its last path part), or None."""
        key = submission.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()
        if key in self._by_key:
            return self._by_key[key]
        by_local = self._by_local.get(key, [])
        return by_local[0] if len(by_local) == 1 else None
