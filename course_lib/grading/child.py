"""What runs in a graded process, the only place student code runs (child).

Forked from a zygote that never imported the answer key and never saw another submission;
isolated by the kernel before the job is read (sandbox.py, isolation.py). It holds no secret:
no key, no reference solution, no expected value, no verdict. Whatever it reports is data.

- `notebook_body`: every code cell, like `Run All`; after each cell, the quiz answers
  (`answer_<name>`) and free-text answers (`text_<name>`) as plain data.
- `check_body`: one function exercise. The notebook's imports and the definitions the function
  needs, then each test's run half (rebuilt from its builder's name and its inputs, the only
  part of a test this process receives), one observation per test.
"""

import sys

from ..checks.base import rebuild
from ..exercises import wire
from ..exercises.runner import observe
from .cells import CappedStream, notebook_namespace, run_notebook_cells

MAX_TEXT = 10000


# ---------------------------------------------------------------- the notebook process
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
    return {
        k: plain(v)
        for k, v in list(namespace.items())
        if isinstance(k, str) and k.startswith(prefixes)
    }


def notebook_body(channel, held: dict, job: dict) -> None:
    """Run every code cell; report as data."""
    cap = job["limits"]["output_chars"] // 2
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
    outcomes = run_notebook_cells([tuple(c) for c in job["cells"]], namespace, on_start, on_end)
    channel.send(
        "done",
        cells=len(outcomes),
        stdout=out.text(),
        stderr=err.text(),
        output_chars=out.total + err.total,
    )


# ---------------------------------------------------------------- the check process
def define(source: dict) -> tuple:
    """The notebook's imports and the definitions the function needs: (namespace, problems)."""
    namespace = notebook_namespace()
    problems = []
    for statement in source["imports"]:
        try:
            exec(compile(statement, "<your imports>", "exec"), namespace)
        except BaseException as err:  # noqa: BLE001
            problems.append(f"import failed: {statement.strip()[:120]} ({type(err).__name__})")
    for name, cell, text in source["definitions"]:
        try:
            exec(compile(text, f"<cell {cell}>", "exec"), namespace)
        except BaseException as err:  # noqa: BLE001
            problems.append(
                f"defining {name} (cell {cell}) raised {type(err).__name__}: {str(err)[:300]}"
            )
    return namespace, problems


def check_body(channel, held: dict, job: dict) -> None:
    """Define the learner's function, then observe it through each test's run half, in order."""
    channel.send("sandbox", held=sorted(k for k, v in held.items() if v is True))
    namespace, problems = define(job["source"])  # from here on, student code has run
    candidate = namespace.get(job["name"])
    channel.send(
        "defined",
        problems=problems[:5],
        callable=callable(candidate),
        type=type(candidate).__name__[:80],
    )
    count = 0
    if callable(candidate):
        for index, (builder, inputs) in enumerate(job["tests"]):
            seen = observe(rebuild(builder, wire.loads(inputs)), candidate, job["limit"])
            channel.send("test", index=index, seen=seen)
            count += 1
            if seen.get("stub"):
                break
    channel.send("done", tests=count)


def write_job(path, job: dict) -> None:
    """(parent) A job as JSON, a private file (0600, never through a link); a check's tests are
    [builder name, inputs as one wire line]."""
    import json

    from .environment import write_private

    write_private(path, json.dumps(job).encode("ascii"))


def read_job(path: str) -> dict:
    """The job the grader wrote for this process (plain data, read after the fork: the zygote that
    forked it never held a submission's code)."""
    import json

    with open(path, "rb") as f:
        return json.loads(f.read())
