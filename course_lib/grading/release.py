"""The student bundle: `python -m course_lib release OUT_DIR` (teachers).

Writes the notebooks (outputs cleared) and course_lib WITHOUT the answer key
(course_lib/key: reference solutions, hidden tests, known-wrong answers) and without the
grader, no bytecode, plus pyproject.toml, the launcher (course.sh, course.py), the reference GPU
figures (docs/gpu/figures.json, when a GPU run is recorded) and a student README, so it installs
the same way. In the bundle `Exercise.key()` is None: checks run the visible tests only
and `.solution()` says the teacher withheld it. Before returning, the bundle is scanned
for anything of the key (`find_leaks`); a leaking bundle is an error, never a warning.
"""

import re
import shutil
from pathlib import Path

from .. import notebooks

LEFT_OUT = ("key", "grading", "__pycache__")
TOP_FILES = ("pyproject.toml", "course.sh", "course.py", "environment.yml", "docs/gpu/figures.json")

STUDENT_README = """# PyTorch training on the GPU, hands-on (student copy)

This is your copy of the course. Start it with one command (Python 3.10+ and pip; no GPU needed):

```bash
./course.sh start
```

(Without bash, e.g. on Windows: `python course.py start`.) The first run installs everything
into `.venv/` and opens JupyterLab on the `notebooks/` folder.
Open `01_device_check.ipynb` and run the cells from the top.

## Exercises

Each exercise cell holds a stub that raises `NotImplementedError`: replace that line with your
code, run the cell, then run the check cell below it.

```python
ch.choose_device.check(choose_device)   # Correct / Incorrect (with feedback) / Not attempted
ch.choose_device.hint()                 # a "Show a hint" button: one more hint per click
```

In this copy the reference solutions are withheld by your teacher, and the checks run the
visible tests only; the grader runs more (hidden) tests on what you hand in.

## Handing in

Hand in your notebook file (`.ipynb`). The grader runs it from the top on a CPU, then tests
the functions you defined and reads your quiz answers, so:

- keep each exercise's function name (`def choose_device():`), at the top level of a cell;
- keep each quiz's answer line (`answer_device_label = "b"`) and put your answer there;
- written answers: a variable `text_<name> = "..."`, or a Markdown cell that starts with
  `<!-- answer: name -->`;
- a function may use other functions and values you defined at the top level of the notebook,
  and anything you import; other top-level code (prints, plots, experiments) does not matter
  for the grade.
"""


def _checkout() -> Path:
    import course_lib

    return Path(course_lib.__file__).resolve().parent.parent


def _clean_notebook(path: Path) -> str:
    nb = notebooks.read(path)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return notebooks.dumps(nb)


def _ignore(directory, names):
    return [
        n for n in names if n in LEFT_OUT or n.endswith((".pyc", ".pyo")) or n.endswith(".egg-info")
    ]


def release(out_dir, force: bool = False) -> dict:
    """Write the student bundle to `out_dir`; refuses a non-empty folder unless `force`."""
    root, out = _checkout(), Path(out_dir).resolve()
    if out.exists() and any(out.iterdir()):
        if not force:
            raise FileExistsError(f"{out} is not empty; pass --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(root / "course_lib", out / "course_lib", ignore=_ignore)
    (out / "notebooks").mkdir()
    handed_out = notebooks.chapter_notebooks()
    for nb in handed_out:
        (out / "notebooks" / nb.name).write_text(_clean_notebook(nb))
    for extra in notebooks.support_files():
        shutil.copy(extra, out / "notebooks" / extra.name)
    for name in TOP_FILES:
        if (root / name).exists():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / name, out / name)
    (out / "README.md").write_text(STUDENT_README)
    leaks = find_leaks(out)
    if leaks:
        raise RuntimeError("the bundle would reveal the answer key: " + "; ".join(leaks[:5]))
    return {
        "out": str(out),
        "notebooks": len(handed_out),
        "files": sum(1 for p in out.rglob("*") if p.is_file()),
    }


def _normal(text: str) -> str:
    return " ".join(text.split())


def secret_lines(root: Path = None) -> list:
    """Lines of the answer key that appear nowhere else in the teacher's checkout: the secrets."""
    root = root or _checkout()
    public = "\n".join(
        _normal(p.read_text(errors="replace"))
        for p in (root / "course_lib").rglob("*.py")
        if "key" not in p.relative_to(root / "course_lib").parts[:1]
        and "grading" not in p.relative_to(root / "course_lib").parts[:1]
    )
    public += "\n".join(
        _normal(p.read_text(errors="replace")) for p in notebooks.chapter_notebooks()
    )
    secrets = []
    for path in sorted((root / "course_lib" / "key").glob("*.py")):
        for line in path.read_text().splitlines():
            line = _normal(line)
            if (
                len(line) >= 20
                and not line.startswith(("#", "import ", "from ", '"""'))
                and line not in public
            ):
                secrets.append(line)
    return secrets


def find_leaks(bundle: Path, root: Path = None) -> list:
    """What in `bundle` reveals the key: its files, bytecode, or any secret line of its source."""
    bundle = Path(bundle)
    leaks = [
        f"file {p.relative_to(bundle)}"
        for p in bundle.rglob("*")
        if p.suffix in (".pyc", ".pyo")
        or p.name == "__pycache__"
        or re.search(r"(^|/)course_lib/(key|grading)(/|$)", p.relative_to(bundle).as_posix())
    ]
    texts = [
        _normal(p.read_text(errors="replace"))
        for p in bundle.rglob("*")
        if p.is_file()
        and p.suffix in (".py", ".ipynb", ".md", ".txt", ".toml", ".sh", ".json", ".yml")
    ]
    for line in secret_lines(root):
        if any(line in text for text in texts):
            leaks.append(f"key line {line[:80]!r}")
    return leaks
