"""The notebook process: runs a submission's code cells in-process, like `Run All` (grader).

It reports each cell's start and outcome, and after each cell the current values of the
quiz answers (`answer_<name>`) and free-text answers (`text_<name>`) as plain data. No
verdict is computed here: whatever this process says is the student's answer, never a grade,
so a notebook that forges its own report gains nothing it could not have typed.
"""
import sys

from .cells import CappedStream, notebook_namespace, run_notebook_cells

MAX_TEXT = 10000


def plain(value, depth: int = 0):
    """A JSON-able copy of an answer: str, number, bool, None or a short list of those."""
    try:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return value[:MAX_TEXT]
        if isinstance(value, (list, tuple, set, frozenset)) and depth == 0:
            items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
            return [plain(v, 1) for v in items[:64]]
        item = getattr(value, "item", None)  # a one-element tensor or a numpy scalar
        if callable(item) and getattr(value, "size", None) is not None and _numel(value) == 1:
            return plain(item(), depth)
    except Exception:  # noqa: BLE001 - a strange object is simply not an answer
        pass
    return {"unreadable": type(value).__name__[:80]}


def _numel(value) -> int:
    numel = getattr(value, "numel", None)
    return numel() if callable(numel) else int(getattr(value, "size", 0))


def answers(namespace: dict, prefixes) -> dict:
    return {k: plain(v) for k, v in list(namespace.items())
            if isinstance(k, str) and k.startswith(prefixes)}


def notebook_body(channel, held: dict, job: dict) -> None:
    """Child entry point: run every code cell; report as data."""
    cap = job["limits"].output_chars // 2
    out, err = CappedStream(cap), CappedStream(cap)
    sys.stdout, sys.stderr = out, err
    namespace = notebook_namespace()
    prefixes = ("answer_", "text_")
    last = {}

    def on_start(number):
        channel.send("cell", cell=number)

    def on_end(outcome):
        nonlocal last
        now = answers(namespace, prefixes)
        changed = {k: v for k, v in now.items() if last.get(k, ...) != v}
        last = now
        channel.send("cell_done", answers=changed, **outcome)

    channel.send("start", held=held)
    outcomes = run_notebook_cells(job["cells"], namespace, on_start, on_end)
    channel.send("done", cells=len(outcomes), stdout=out.text(), stderr=err.text(),
                 output_chars=out.total + err.total)
