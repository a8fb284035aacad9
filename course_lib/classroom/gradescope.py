"""The Gradescope autograder zip of one chapter (teacher side).

    python -m course_lib gradescope CHAPTER OUT.zip


Gradescope's spec: a zip with `setup.sh` (run once, as root, when Gradescope builds the
image) and `run_autograder` (run for each submission, from /autograder, with the zip's
contents in /autograder/source, the student's files in /autograder/submission; it must
write /autograder/results/results.json). Ours holds the teacher's course (course_lib WITH
the answer key and the grader, the chapter's notebook and its support files) under
`course/`, and `autograder.json` (chapter, limits); for a teacher's own assignment
(`gradescope --assignment OUT/ OUT.zip`) the release folder too, under `assignment/`, and
`autograder.json` names it. `run_autograder` runs
`course_lib.classroom.autograder`: the course's own grader, with its isolation, on the one
submitted notebook. The zip is for Gradescope only: it holds the answer key.
"""

import io
import json
import os
import re
import zipfile
from pathlib import Path

from .. import notebooks
from .assignments import NoSuchChapter, assignment

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu).
# It installs Python, torch pinned as the course pins it, and the course's dependencies.
set -euo pipefail
TORCH_VERSION="{torch}"
# Set TORCH_INDEX_URL to a pip index of CPU-only torch wheels (PyTorch's own, see pytorch.org,
# "Get started") to leave out the CUDA libraries: grading runs on the CPU.
TORCH_INDEX_URL="${{TORCH_INDEX_URL:-}}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y python3 python3-venv python3-pip
python3 -m venv /autograder/venv
PIP=(/autograder/venv/bin/python -m pip install --disable-pip-version-check -q)
if [ -n "$TORCH_INDEX_URL" ]; then
  "${{PIP[@]}}" "torch==$TORCH_VERSION" --index-url "$TORCH_INDEX_URL"
else
  "${{PIP[@]}}" "torch==$TORCH_VERSION"
fi
"${{PIP[@]}}" {dependencies}
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission, from /autograder: /autograder/source holds this
# zip, /autograder/submission the student's files; results go to /autograder/results/results.json.
# COURSE_AUTOGRADER_ROOT and COURSE_AUTOGRADER_PYTHON move the tree and the interpreter (tests).
set -uo pipefail
ROOT="${COURSE_AUTOGRADER_ROOT:-/autograder}"
PYTHON="${COURSE_AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
export PYTHONPATH="$ROOT/source/course${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
exec "$PYTHON" -m course_lib.classroom.autograder "$ROOT"
"""

LEFT_OUT = re.compile(r"(^|/)(__pycache__|\.ipynb_checkpoints)(/|$)|\.py[co]$|\.egg-info(/|$)")


class NotTheTeachersCopy(RuntimeError):
    """The autograder needs the answer key and the grader: build it from the teacher's checkout."""


def _checkout() -> Path:
    import course_lib

    return Path(course_lib.__file__).resolve().parent.parent


def torch_pin(root: Path) -> str:
    """The torch version course.py installs (the one the grader is tested with)."""
    found = re.search(r'^TORCH_VERSION = "([\d.]+)"', (root / "course.py").read_text(), re.M)
    return found.group(1) if found else "2.13.0"


def dependencies(root: Path) -> list:
    """pyproject.toml's dependencies, torch left out (setup.sh installs it pinned, first)."""
    import tomllib

    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if not re.match(r"torch\b", d)]


def files(number: str, released=None) -> dict:
    """{path in the zip: local file} of the course part: course_lib whole, the chapter notebook
    (or the teacher's release, under assignment/) and the notebooks folder's support files,
    pyproject.toml."""
    root = _checkout()
    lib = root / "course_lib"
    if not (lib / "key").is_dir() or not (lib / "grading").is_dir():
        raise NotTheTeachersCopy(
            "the Gradescope autograder needs the answer key and the grader: "
            "build it from the teacher's copy of the course, not from the "
            "student bundle"
        )
    chosen = {
        f"course/{p.relative_to(root).as_posix()}": p
        for p in lib.rglob("*")
        if p.is_file() and not LEFT_OUT.search(p.relative_to(root).as_posix())
    }
    handed = [] if released is not None else [notebooks.path_of(number)]
    for p in [*handed, *notebooks.support_files()]:
        chosen[f"course/notebooks/{p.name}"] = p
    if released is not None:
        for relative in (
            released.notebook,
            "index.json",
            released.key.relative_to(released.folder),
        ):
            chosen[f"assignment/{Path(relative).as_posix()}"] = released.folder / relative
    chosen["course/pyproject.toml"] = root / "pyproject.toml"
    return chosen


def config(
    number: str, cell_timeout: float = 60.0, timeout: float = 600.0, memory_mb: int = 4096
) -> dict:
    a = assignment(number)
    return {
        "chapter": a.number,
        "title": a.title,
        "notebook": a.notebook,
        "points": a.points,
        "cell_timeout": cell_timeout,
        "timeout": timeout,
        "memory_mb": memory_mb,
    }


def _add(zf: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    zf.writestr(info, data)


def release_config(released, cell_timeout=60.0, timeout=600.0, memory_mb=4096) -> dict:
    """autograder.json of a teacher's release (authoring.released.Released)."""
    return {
        "chapter": released.number,
        "title": released.title,
        "label": released.title,
        "notebook": released.notebook,
        "points": released.points,
        "assignment": "assignment",
        "cell_timeout": cell_timeout,
        "timeout": timeout,
        "memory_mb": memory_mb,
    }


def build(chapter: str, out_zip, released=None, **limits) -> dict:
    """Write the autograder zip of `chapter` (or of a teacher's `released` assignment) to
    `out_zip` (whole, or not at all)."""
    if released is not None:
        if str(chapter) != released.number:
            raise NoSuchChapter(
                f"{released.folder} releases the assignment {released.number!r}, not {chapter!r}"
            )
        settings = release_config(released, **limits)
    else:
        settings = config(chapter, **limits)  # NoSuchChapter for a chapter the course lacks
    number, root = settings["chapter"], _checkout()
    if released is None and not notebooks.path_of(number).is_file():
        raise NotTheTeachersCopy(
            f"chapter {number}'s notebook {settings['notebook']} is not in {notebooks.FOLDER}"
        )
    members = files(number, released)
    quoted = " ".join(f'"{d}"' for d in dependencies(root))
    setup = SETUP_SH.format(torch=torch_pin(root), dependencies=quoted)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        _add(zf, "setup.sh", setup.encode(), executable=True)
        _add(zf, "run_autograder", RUN_AUTOGRADER.encode(), executable=True)
        _add(zf, "autograder.json", (json.dumps(settings, indent=1) + "\n").encode())
        for name, path in sorted(members.items()):
            _add(zf, name, path.read_bytes())
    out = Path(out_zip)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, out)
    return {
        "zip": str(out),
        "chapter": number,
        "notebook": settings["notebook"],
        "files": len(members) + 3,
        "bytes": out.stat().st_size,
    }
