"""Step 3 of grading: verdicts from what the processes reported, and from the notebook's text (grader)."""
import time

from ..exercises.scoring import flag_names
from .analyze import ANSWER_PREFIX, TEXT_PREFIX, check_source
from .verdict import check_quiz, judge


def on_notebook_message(child, message, cell_timeout: float) -> None:
    """A notebook process's report as it runs: cells started and finished, answers so far."""
    sub = child.task[0]
    kind = message.get("kind")
    if kind == "start":
        sub.run["held"] = message.get("held") if isinstance(message.get("held"), dict) else {}
    elif kind == "cell":
        child.current_cell = message.get("cell", 0)
        child.cell_deadline = time.monotonic() + cell_timeout
    elif kind == "cell_done":
        child.cell_deadline = child.kill_at = 0
        answers = message.get("answers")
        if isinstance(answers, dict):
            sub.answers.update(answers)
        sub.run.setdefault("cells", []).append({k: message.get(k) for k in ("cell", "status", "error", "seconds")})


def _run_summary(sub, child, limits) -> None:
    run, cells = sub.run, sub.run.setdefault("cells", [])
    done, total = child.last("done"), len(sub.analysis.cells)
    errors = sum(c.get("status") == "error" for c in cells)
    interrupted = sum(c.get("status") == "interrupted" for c in cells)
    run["status"] = "empty" if not total else "ok" if not errors and not interrupted else "cell errors"
    run["summary"] = f"ran all {total} code cells" + (f"; {errors} raised an error" if errors else "") \
        + (f"; {interrupted} stopped at the cell time limit" if interrupted else "")
    run.update(stdout=str(done.get("stdout", "")), stderr=str(done.get("stderr", "")),
               output_chars=done.get("output_chars", 0) if isinstance(done.get("output_chars"), int) else 0)
    if run["output_chars"] > limits.output_chars:
        run["summary"] += f"; printed {run['output_chars']:,} characters (kept the first and last part)"


def _stopped_summary(sub, child, limits) -> None:
    run, cells = sub.run, sub.run.setdefault("cells", [])
    fatal = child.last("fatal")
    where = f"cell {child.current_cell}" if child.current_cell else "the start"
    how = child.exit_text()
    run["status"] = "timed out" if child.killed_for else "crashed" if "crashed" in how else "exited"
    run["summary"] = (f"stopped at {where}: {how}" if child.killed_for else
                      f"the notebook's process ended at {where}: {how}") + \
        (f" ({str(fatal.get('error', '')).strip().splitlines()[-1][:200]})" if fatal and fatal.get("error") else "") \
        + f"; {len(cells)} of {len(sub.analysis.cells)} code cells finished"
    cells.append({"cell": child.current_cell, "status": "error", "error": run["summary"]})
    last_done = max((c["cell"] for c in cells[:-1] if isinstance(c.get("cell"), int)), default=0)
    for name, (cell, value, literal) in sub.analysis.literals.items():
        if name not in sub.answers and literal and cell > last_done:
            sub.answers[name] = value  # read from the text: the run never reached that line


def finish_notebook(sub, child, limits) -> None:
    """The run's summary, then every quiz's verdict from the answers (plain data, checked here)."""
    sub.run["seconds"] = round(time.monotonic() - child.started, 3)
    if child.last("done") and child.exited_cleanly():
        _run_summary(sub, child, limits)
    else:
        _stopped_summary(sub, child, limits)
    for ex in sub.exercises:
        if ex.kind != "function":
            name = ANSWER_PREFIX + ex.name
            sub.verdicts[ex.id] = check_quiz(ex, sub.answers.get(name),
                                             name in sub.analysis.literals or name in sub.answers)
    texts = {k[len(TEXT_PREFIX):]: v for k, v in sub.answers.items()
             if k.startswith(TEXT_PREFIX) and isinstance(v, str)}
    sub.run["texts"] = {**sub.analysis.markdown_texts, **texts}


def finish_check(sub, child, ex, spec) -> None:
    """A function exercise's verdict, judged here from the check process's sealed lines."""
    verdict = judge(child.sealed, child.forged, ex, spec)
    if verdict["status"] == "crashed":
        if child.killed_for:
            verdict.update(status="timed out", detail=f"checking your function was {child.killed_for}")
        else:
            fatal = child.last("fatal")
            verdict["detail"] = (f"the check process {child.exit_text()} while testing your function"
                                 + (f": {str(fatal.get('error', '')).strip().splitlines()[-1][:200]}"
                                    if fatal and fatal.get("error") else "")
                                 + (f" ({verdict['detail']})" if verdict["detail"] else ""))
    verdict["flags"] += flag_names(check_source(sub.analysis, ex.name)["flags"])
    verdict["seconds"] = round(time.monotonic() - child.started, 3)
    sub.verdicts[ex.id] = verdict


def decide_statically(sub, specs: dict) -> None:
    """Verdicts that need no process: unreadable notebooks, missing or unreadable functions."""
    for ex in sub.exercises:
        base = {"points": 0.0, "max_points": ex.points, "tests": [], "passed": 0,
                "total": len(specs.get(ex.id, [])) if ex.kind == "function" else 1, "flags": []}
        if sub.unreadable:
            stopped = sub.run.get("status") == "stopped the grader"
            sub.verdicts[ex.id] = dict(base, status="crashed" if stopped else "unreadable", detail=sub.unreadable)
        elif ex.kind == "function" and not sub.analysis.defines(ex.name):
            broken = sub.analysis.cell_with_text(ex.name)
            detail = (f"cell {broken[0]} mentions {ex.name} but is not valid Python: "
                      f"{sub.analysis.syntax_errors[broken[0]][:300]}" if broken else
                      f"no function `{ex.name}` is defined at the top level of the notebook (renamed or deleted?)")
            sub.verdicts[ex.id] = dict(base, status="error" if broken else "missing", detail=detail)
        elif ex.kind == "function" and sub.analysis.bindings[ex.name].kind == "other":
            sub.verdicts[ex.id] = dict(base, status="error", detail=(
                f"`{ex.name}` is defined inside a loop, `if`, `with` or `try` at the top level; "
                "the grader reads only plain top-level definitions"))


def tasks_of(sub) -> list:
    """(submission, role, exercise) of the processes a submission still needs."""
    if sub.unreadable:
        return []
    checks = [(sub, "check", ex) for ex in sub.exercises if ex.kind == "function" and ex.id not in sub.verdicts]
    return [(sub, "notebook", None)] + checks
