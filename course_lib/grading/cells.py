"""Reading a notebook's cells and running them in-process, without a Jupyter kernel (grader).

Self-contained on purpose (standard library, plus IPython when present): the release test
loads this file by path to run the student bundle's notebooks against the bundle's own
course_lib. Used by the grader's notebook process (`executor.py`) and by the release test.
"""

import builtins
import io
import json
import re
import signal
import sys
import time
import traceback

MAX_NOTEBOOK_BYTES = 50 * 2**20
# What reading one student's notebook may cost the grader's parent, checked before the costly
# step (IPython's input transformer is superlinear in a cell's escape lines: 400 `!` lines take
# seconds, 45 KB of them over a minute): a notebook over any of these is "too large" for that
# student alone. The handed-out notebooks use a small fraction of each
# (tests/test_grading_intake_budget.py).
BUDGET = {
    "cells": 3000,  # cells of any kind
    "cell_bytes": 256 * 2**10,  # characters of one code cell
    "code_lines": 60_000,  # lines of code over all code cells
    "escape_lines": 64,  # IPython escape lines (!shell, %magic, help?) in one code cell
    "notebook_escape_lines": 600,  # ... and over the whole notebook
    "transform_seconds": 20.0,  # time spent in IPython's transformer over the whole notebook
}
ESCAPE_LINE = re.compile(r"^[ \t]*[!%]|\?[ \t]*$|=[ \t]*[!%](?!=)", re.M)
# Cell magics whose body is ordinary Python that runs once: `%%time` and friends.
TRANSPARENT_CELL_MAGICS = ("time", "timeit", "capture", "prun")


class UnreadableNotebook(Exception):
    """The file is not a notebook we can read (not JSON, truncated, wrong structure)."""


class TooLarge(UnreadableNotebook):
    """The notebook is over the grader's reading budget (`BUDGET`): not read further."""


def too_large(what: str, size, limit) -> TooLarge:
    return TooLarge(
        f"the notebook is too large to grade: {what} is {size:g}, over the limit of {limit:g}; "
        "make it smaller (remove pasted data, long shell or magic scripts) and hand it in again"
    )


def check_budget(cells: list) -> None:
    """Raise TooLarge when the cells (as `read_cells` gives them) are over `BUDGET`."""
    if len(cells) > BUDGET["cells"]:
        raise too_large("the number of cells", len(cells), BUDGET["cells"])
    lines = escapes = 0
    for kind, source in cells:
        if kind != "code":
            continue
        if len(source) > BUDGET["cell_bytes"]:
            raise too_large("one code cell's size in characters", len(source), BUDGET["cell_bytes"])
        here = len(ESCAPE_LINE.findall(source))
        if here > BUDGET["escape_lines"]:
            raise too_large(
                "the number of !shell/%magic lines in one cell", here, BUDGET["escape_lines"]
            )
        lines, escapes = lines + source.count("\n") + 1, escapes + here
    for what, size, key in (
        ("the number of code lines", lines, "code_lines"),
        ("the number of !shell/%magic lines", escapes, "notebook_escape_lines"),
    ):
        if size > BUDGET[key]:
            raise too_large(what, size, BUDGET[key])


def read_cells(data: bytes) -> list:
    """[(cell_type, source)] of a .ipynb file's bytes; raises UnreadableNotebook with a reason."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise TooLarge(
            f"the file is {len(data) / 2**20:.0f} MB; notebooks over "
            f"{MAX_NOTEBOOK_BYTES // 2**20} MB are not graded"
        )
    if not data.strip():
        raise UnreadableNotebook("the file is empty (0 bytes of notebook)")
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise UnreadableNotebook("the file is not UTF-8 text: not a notebook") from None
    except ValueError as err:
        raise UnreadableNotebook(
            f"the file is not valid notebook JSON (truncated or corrupt?): {err}"
        ) from None
    if isinstance(nb, dict) and "worksheets" in nb:  # nbformat 3
        cells = [
            c
            for ws in nb.get("worksheets") or []
            if isinstance(ws, dict)
            for c in ws.get("cells") or []
        ]
        nb = {
            "cells": [
                dict(c, source=c.get("input", c.get("source", "")))
                for c in cells
                if isinstance(c, dict)
            ]
        }
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise UnreadableNotebook("the JSON has no list of cells: not a Jupyter notebook")
    out = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            source = ""
        kind = (
            cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown", "raw") else "raw"
        )
        out.append((kind, source))
    check_budget(out)
    return out


def python_source(source: str) -> str:
    """A code cell as plain Python: IPython syntax (%magics, !shell) becomes get_ipython() calls."""
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        magic = lines[0].lstrip()[2:].split(" ", 1)[0]
        if magic in TRANSPARENT_CELL_MAGICS:
            source = "\n".join(lines[1:])
    if "%" not in source and "!" not in source and "?" not in source:
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # no IPython, or a transform failure: drop the magic lines
        return "\n".join(
            "pass  # (magic skipped)" if line.lstrip().startswith(("%", "!")) else line
            for line in source.splitlines()
        )


class CappedStream(io.TextIOBase):
    """A text stream that keeps the first and last `cap` characters and counts the rest."""

    def __init__(self, cap: int = 20000):
        super().__init__()
        self.cap, self.total, self.head, self.tail = cap, 0, [], ""
        self._head_len = 0

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s) -> int:
        s = str(s)
        n = len(s)
        self.total += n
        if self._head_len < self.cap:
            piece = s[: self.cap - self._head_len]
            self.head.append(piece)
            self._head_len += len(piece)
            s = s[len(piece) :]
        if s:
            self.tail = (self.tail + s)[-self.cap :]
        return n

    def text(self) -> str:
        head = "".join(self.head)
        if self.total <= len(head) + len(self.tail):
            return head + self.tail
        return (
            f"{head}\n... [{self.total - len(head) - len(self.tail)} characters of output left "
            f"out] ...\n{self.tail}"
        )


class GraderShell:
    """What `get_ipython()` returns while grading: magics that matter run, the rest are skipped."""

    kernel = None

    def __init__(self, namespace: dict):
        self.user_ns = namespace

    def _note(self, what: str):
        print(f"[grader] skipped {what}: not run while grading")

    def run_line_magic(self, name, line, _stack_depth=1):
        if name in ("time", "timeit", "prun"):
            exec(compile(line, "<magic>", "exec"), self.user_ns)
        elif name not in (
            "matplotlib",
            "load_ext",
            "autoreload",
            "config",
            "reload_ext",
            "aimport",
        ):
            self._note(f"%{name}")

    def run_cell_magic(self, name, line, cell):
        if name in TRANSPARENT_CELL_MAGICS:
            exec(compile(cell, "<magic>", "exec"), self.user_ns)
        elif name == "writefile":
            path = line.split()[-1] if line.split() else "untitled.txt"
            with open(path, "a" if "-a" in line.split() else "w") as f:
                f.write(cell)
        elif name not in ("html", "markdown", "latex", "javascript", "js", "svg"):
            self._note(f"%%{name}")

    def system(self, cmd):
        self._note(f"!{cmd}")

    def getoutput(self, cmd, split=True):
        self._note(f"!{cmd}")
        return []

    def magic(self, line):
        name, _, rest = line.partition(" ")
        return self.run_line_magic(name.lstrip("%"), rest)

    def ev(self, expr):
        return eval(expr, self.user_ns)

    def ex(self, cmd):
        exec(cmd, self.user_ns)


def display(*objs, **kwargs):
    """`display()` outside a kernel: a short text form of each object; never waits for a browser."""
    for obj in objs:
        try:
            text = repr(obj)
        except Exception:
            text = f"<{type(obj).__name__}>"
        print(text[:2000])


def notebook_namespace() -> dict:
    """A fresh __main__-like namespace with the names a Jupyter kernel provides."""
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    shell = GraderShell(namespace)
    namespace.update(get_ipython=lambda: shell, display=display)
    return namespace


class CellInterrupt(KeyboardInterrupt):
    """Raised in a cell that ran past its time limit (the grader sends SIGINT, as Jupyter does)."""


class _State:
    in_cell = False


def _on_sigint(signum, frame):
    if _State.in_cell:
        raise CellInterrupt()


def describe_error(err: BaseException, limit: int = 600) -> str:
    """'NameError: name x is not defined (cell 3, line 2)' for a learner to read."""
    where = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith("<cell ")]
    text = f"{type(err).__name__}: {err}".strip().rstrip(":")
    if len(text) > limit:
        text = text[:limit] + " ..."
    if where:  # its file name is "<cell N>"
        text += f" (cell {where[-1].filename[6:-1]}, line {where[-1].lineno})"
    return text


def run_cell(source: str, number: int, namespace: dict, kept: list = None) -> dict:
    """Run one code cell in `namespace`; the outcome as data (status ok/error/interrupted).
    `kept` keeps the cell's code object alive, as a kernel does (see run_notebook_cells)."""
    start = time.monotonic()
    outcome = {"cell": number, "status": "ok", "error": ""}
    try:
        code = compile(python_source(source), f"<cell {number}>", "exec")
        if kept is not None:
            kept.append(code)
        _State.in_cell = True
        try:
            exec(code, namespace)
        finally:
            _State.in_cell = False
    except CellInterrupt:
        outcome.update(status="interrupted", error="stopped: the cell ran past its time limit")
    except SystemExit as err:
        outcome.update(
            status="error",
            error=f"SystemExit({err.code!r}): the cell called sys.exit(); the notebook went on",
        )
    except BaseException as err:  # noqa: BLE001 - any error in learner code is an outcome
        outcome.update(status="error", error=describe_error(err))
    outcome["seconds"] = round(time.monotonic() - start, 3)
    return outcome


def run_notebook_cells(sources: list, namespace: dict, on_start=None, on_end=None) -> list:
    """Run code cells in order, like `Run All` with errors allowed; returns each cell's outcome.

    `sources` holds (cell number, source) pairs. SIGINT interrupts only the running cell. Every
    cell's code object lives until the last cell has run, as in a Jupyter kernel: a profile
    recorded with Python stacks in one cell (chapter 06) points at that cell's code, and reading
    it in a later cell must not find freed memory there (it raised UnicodeDecodeError).
    """
    previous = signal.signal(signal.SIGINT, _on_sigint)
    outcomes, kept = [], []
    try:
        for number, source in sources:
            if on_start:
                on_start(number)
            outcome = run_cell(source, number, namespace, kept)
            outcomes.append(outcome)
            if on_end:
                on_end(outcome)
    finally:
        signal.signal(signal.SIGINT, previous)
    return outcomes


def code_cells(cells: list) -> list:
    """(cell number counted from 1 over all cells, source) of the code cells."""
    return [(i + 1, src) for i, (kind, src) in enumerate(cells) if kind == "code" and src.strip()]


if __name__ == "__main__":  # python cells.py NOTEBOOK: run it in-process, print each cell's outcome
    with open(sys.argv[1], "rb") as f:
        results = run_notebook_cells(code_cells(read_cells(f.read())), notebook_namespace())
    sys.stdout = sys.__stdout__
    print(json.dumps(results))
