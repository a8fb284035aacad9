"""Step 3 of grading: verdicts from what the processes
reported, and from the notebook's text (parent).

The parent decides only what needs no judging: a notebook that cannot be read, a function that
is missing, a process that crashed, ran out of time or wrote lines its harness did not write.
Everything else goes to the judge (judge.py) as data: a check process's report lines, a
notebook's quiz answers.
"""

import time

from ..exercises import scoring
from ..exercises.scoring import flag_names
from .analyze import ANSWER_PREFIX, TEXT_PREFIX, check_source
from .gradebook import GRADER_ERROR
from .judge import JudgeDied
from .records import (
    CRASHED,
    ERROR,
    MISSING,
    TAMPERED,
    TIMED_OUT,
    UNREADABLE,
    Task,
    Verdict,
    unjudged,
)

PLAIN = (str, int, float, bool, type(None))


def plain_answer(value):
    """An answer as the notebook process reported it, kept only if it is plain data (a letter, a
    number, a short list of those, or the executor's {"unreadable": type} note)."""
    if isinstance(value, PLAIN):
        return value
    if isinstance(value, list) and len(value) <= 64 and all(isinstance(v, PLAIN) for v in value):
        return value
    if (
        isinstance(value, dict)
        and set(value) == {"unreadable"}
        and isinstance(value["unreadable"], str)
    ):
        return value
    return {"unreadable": type(value).__name__}


def on_notebook_message(child, message, cell_timeout: float) -> None:
    """A notebook process's report as it runs: cells started and finished, answers so far."""
    sub = child.task.submission
    kind = message.get("kind")
    if kind == "start":
        sub.run["held"] = message["held"]
    elif kind == "cell":
        child.current_cell = message["cell"]
        child.cell_deadline = time.monotonic() + cell_timeout
    elif kind == "cell_done":
        child.cell_deadline = child.kill_at = 0
        sub.answers.update(
            {k: plain_answer(v) for k, v in message["answers"].items() if isinstance(k, str)}
        )
        sub.run.setdefault("cells", []).append(
            {k: message[k] for k in ("cell", "status", "error", "seconds")}
        )


def _run_summary(sub, child, limits) -> None:
    run, cells = sub.run, sub.run.setdefault("cells", [])
    done, total = child.last("done"), len(sub.analysis.cells)
    errors = sum(c.get("status") == "error" for c in cells)
    interrupted = sum(c.get("status") == "interrupted" for c in cells)
    run["status"] = (
        "empty" if not total else "ok" if not errors and not interrupted else "cell errors"
    )
    run["summary"] = (
        f"ran all {total} code cells"
        + (f"; {errors} raised an error" if errors else "")
        + (f"; {interrupted} stopped at the cell time limit" if interrupted else "")
    )
    run.update(stdout=done["stdout"], stderr=done["stderr"], output_chars=done["output_chars"])
    if run["output_chars"] > limits.output_chars:
        run["summary"] += (
            f"; printed {run['output_chars']:,} characters (kept the first and last part)"
        )


def _fatal_text(child) -> str:
    fatal = child.last("fatal")
    lines = fatal["error"].strip().splitlines() if fatal else []
    return lines[-1][:200] if lines else ""


def _stopped_summary(sub, child, limits) -> None:
    run, cells = sub.run, sub.run.setdefault("cells", [])
    where = f"cell {child.current_cell}" if child.current_cell else "the start"
    how, fatal = child.exit_text(), _fatal_text(child)
    run["status"] = child.limit or (
        "timed out" if child.killed_for else "crashed" if "crashed" in how else "exited"
    )
    run["summary"] = (
        (
            f"stopped at {where}: {how}"
            if child.killed_for
            else f"the notebook's process ended at {where}: {how}"
        )
        + (f" ({fatal})" if fatal else "")
        + f"; {len(cells)} of {len(sub.analysis.cells)} code cells finished"
    )
    cells.append({"cell": child.current_cell, "status": "error", "error": run["summary"]})
    last_done = max((c["cell"] for c in cells[:-1] if isinstance(c.get("cell"), int)), default=0)
    for name, (cell, value, literal) in sub.analysis.literals.items():
        if name not in sub.answers and literal and cell > last_done:
            sub.answers[name] = value  # read from the text: the run never reached that line


def finish_notebook(sub, child, limits, judge) -> None:
    """The run's summary, then every quiz's verdict
    from the answers (plain data, judged by the judge)."""
    sub.run["seconds"] = round(time.monotonic() - child.started, 3)
    if child.last("done") and child.exited_cleanly():
        _run_summary(sub, child, limits)
    else:
        _stopped_summary(sub, child, limits)
    quizzes = [ex for ex in sub.exercises if ex.kind != "function"]
    answers = {
        ex.id: [
            sub.answers.get(ANSWER_PREFIX + ex.name),
            ANSWER_PREFIX + ex.name in sub.analysis.literals
            or ANSWER_PREFIX + ex.name in sub.answers,
        ]
        for ex in quizzes
    }
    if answers:
        try:
            judged = judge.ask("quizzes", answers=answers, lang=sub.language)
            for ex in quizzes:
                sub.verdicts[ex.id] = Verdict.from_dict(judged[ex.id])
        except (JudgeDied, RuntimeError, KeyError, TypeError, ValueError) as err:
            for ex in quizzes:
                sub.verdicts[ex.id] = unjudged(
                    ex, CRASHED, f"the judge could not read these answers ({err})", 1
                )
    texts = {
        k[len(TEXT_PREFIX) :]: v
        for k, v in sub.answers.items()
        if k.startswith(TEXT_PREFIX) and isinstance(v, str)
    }
    sub.run["texts"] = {**sub.analysis.markdown_texts, **texts}


def finish_check(sub, child, ex, total: int, limit: float, judge) -> None:
    """A function exercise's verdict: from the judge, when the check process's report is complete
    and every line of it is the harness's; else the reason it is not."""
    done, defined = child.last("done"), child.last("defined")
    if child.forged:
        verdict = Verdict.from_dict(
            scoring.zeroed(
                unjudged(ex, TAMPERED, "", total).as_dict(),
                TAMPERED,
                "the process wrote report lines the grader did not send",
                "review:forged-report-lines",
            )
        )
    elif child.overflow:
        verdict = unjudged(
            ex, CRASHED, "the check process reported more than the grader reads", total
        )
    elif done is not None and defined is not None:
        try:
            verdict = Verdict.from_dict(
                judge.ask(
                    "function",
                    exercise=ex.id,
                    lines=child.tests,
                    limit=limit,
                    defined=defined,
                    lang=sub.language,
                )
            )
        except (JudgeDied, RuntimeError, TypeError, ValueError) as err:
            verdict = unjudged(
                ex, CRASHED, f"the judge could not judge this function ({err})", total
            )
    elif child.killed_for:
        verdict = unjudged(
            ex, child.limit or TIMED_OUT, f"checking your function was {child.killed_for}", total
        )
    else:
        fatal = _fatal_text(child)
        problems = "; ".join((defined or {}).get("problems") or [])
        verdict = unjudged(
            ex,
            CRASHED,
            f"the check process {child.exit_text()} while testing your function"
            + (f": {fatal}" if fatal else "")
            + (f" ({problems})" if problems else ""),
            total,
        )
    verdict.flags += flag_names(check_source(sub.analysis, ex.name)["flags"])
    if (defined or {}).get("changed"):  # the grader's run halves changed while it was defined
        verdict.flags.append(RUN_HALF_CHANGED)
    verdict.seconds = round(time.monotonic() - child.started, 3)
    sub.verdicts[ex.id] = verdict


RUN_HALF_CHANGED = "review:run-half-changed"


def decide_statically(sub, totals: dict) -> None:
    """Verdicts that need no process: unreadable notebooks, missing or unreadable functions (a
    function's number of tests, when the judge has not said it yet, is filled in at record time)."""
    for ex in sub.exercises:
        total = totals.get(ex.id) if ex.kind == "function" else 1
        if sub.unreadable:
            stopped = sub.run.get("status") in ("stopped the grader", GRADER_ERROR)
            status = CRASHED if stopped else sub.refused or UNREADABLE
            sub.verdicts[ex.id] = unjudged(ex, status, sub.unreadable, total)
        elif ex.kind == "function" and not sub.analysis.defines(ex.name):
            broken = sub.analysis.cell_with_text(ex.name)
            detail = (
                f"cell {broken[0]} mentions {ex.name} but is not valid Python: "
                f"{sub.analysis.syntax_errors[broken[0]][:300]}"
                if broken
                else (
                    f"no function `{ex.name}` is defined at the top level of the notebook "
                    "(renamed or deleted?)"
                )
            )
            sub.verdicts[ex.id] = unjudged(ex, ERROR if broken else MISSING, detail, total)
        elif ex.kind == "function" and sub.analysis.bindings[ex.name].kind == "other":
            sub.verdicts[ex.id] = unjudged(
                ex,
                ERROR,
                (
                    f"`{ex.name}` is defined inside a loop, `if`, `with` or `try` at the top "
                    "level; the grader reads only plain top-level definitions"
                ),
                total,
            )


def tasks_of(sub) -> list:
    """The processes a submission still needs: its notebook run, then one per function exercise."""
    if sub.unreadable:
        return []
    checks = [
        Task(sub, "check", ex)
        for ex in sub.exercises
        if ex.kind == "function" and ex.id not in sub.verdicts
    ]
    return [Task(sub, "notebook")] + checks
