"""The judge: every verdict, decided from data in a process that never runs student code (judge).

    python -m course_lib.grading.judge REQUEST_FD REPLY_FD     (a restarted judge)

Forked by the zygote (zygote.py) once torch and the public course are imported (and torch's first
use), before matplotlib and any job, so the run imports torch once; a judge that dies is restarted
as a fresh interpreter by the grader. Either way it starts with every GPU hidden like the zygote
(so "this machine" means the same thing to the judge as to a graded process). It is the only
grading process that imports the answer key, after it is forked: nothing forked from the zygote
ever held it. At `prepare` it builds every test of the exercises to grade, computes each test's
reference data once (`Check.reference`: trusted code, and the key's reference solution for tests
that compare with it) and proves the key right (every reference solution through its own checks,
here). Then, for each function exercise of each submission, it receives the observations a check
process reported (plain data, parsed strictly) and returns the verdict; for each quiz, the answer
the notebook gave. It sends the grader each test's builder name and inputs, never a reference or an
expected value.

`Judge` is the pure part (unit-tested in process); `serve` is the process's loop; `JudgeClient`
is the grader's handle on the process (parent side).
"""

import gc
import json
import os
import select
import shutil
import subprocess
import sys
import time

from ..exercises import INCORRECT, get, scoring, wire
from ..i18n import LANGUAGES, tr
from ..i18n.catalogue import in_language, join, labelled
from . import environment
from .protocol import close_quietly, parse
from .records import CRASHED, MISSING, Verdict

ANSWER_TYPES = (str, int, float, bool, type(None))
REPLY_TIMEOUT = 180.0


def valid_answer(value) -> bool:
    if isinstance(value, ANSWER_TYPES):
        return True
    return (
        isinstance(value, list)
        and len(value) <= 64
        and all(isinstance(v, ANSWER_TYPES) for v in value)
    )


def _crashed(ex, n_tests: int, why: str) -> Verdict:
    """No points: the check process's report cannot be judged (not the student's fault)."""
    return Verdict(ex.id, CRASHED, 0.0, float(ex.points), 0, n_tests, why)


class Judge:
    """Verdicts from observations and answers; the answer key is read here and nowhere else."""

    def __init__(self):
        self.tests = {}  # exercise id -> its graded tests (visible, then hidden)

    # ------------------------------------------------------------ preparing a run
    def prepare(self, exercise_ids: list, assignments=()) -> dict:
        """{"specs": {id: [[name, weight, hidden, builder, inputs]]}, "problems": [...]}: what the
        grader needs to start check processes (each test's inputs as one wire line: tensors by
        value), and what is wrong with the key (if anything). `assignments`: the keys of
        teachers' assignments to grade (`grade --assignment`), run here, after the fork."""
        specs, problems = {}, []
        for path in assignments:
            from ..authoring.assignment import load_key

            load_key(path)
        for ex in (get(i) for i in exercise_ids):
            key = ex.key()
            if ex.kind == "function":
                tests = [t for t in ex.graded_tests() if t.check.splittable]
                problems += [
                    (
                        f"{ex.id}: test {t.name!r} is not split into a run half and a judge half; "
                        "not graded"
                    )
                    for t in ex.graded_tests()
                    if not t.check.splittable
                ]
                self.tests[ex.id] = tests
                specs[ex.id] = [
                    [t.name, t.weight, t.hidden, t.check.builder(), wire.dumps(t.check.inputs())]
                    for t in tests
                ]
                if key is None or key.solution is None:
                    problems.append(f"{ex.id}: no answer key; only visible tests are graded")
                    continue
                problems += self._references(ex, tests)
                result = ex.check(key.solution, include_hidden=True, record=False)
            elif key is not None and key.answer is not None:
                result = ex.check(key.answer, record=False)
            else:
                continue
            if not result.correct:
                problems.append(
                    f"{ex.id}: the reference answer fails its own check ({result.status})"
                )
        return {"specs": specs, "problems": problems}

    @staticmethod
    def _references(ex, tests) -> list:
        problems = []
        for t in tests:
            try:
                t.check.reference_value(ex.reference_solution())
            except Exception as err:  # noqa: BLE001 - a broken reference is the key's problem, said once
                problems.append(
                    f"{ex.id}: the reference of test {t.name!r} failed: {type(err).__name__}: {err}"
                )
        return problems

    # ------------------------------------------------------------ verdicts
    def function(self, exercise_id: str, lines: list, limit: float, defined: dict) -> Verdict:
        """The verdict on one function exercise from its check process's report lines ("test"
        messages, in order) and its "defined" message."""
        ex = get(exercise_id)
        tests = self.tests.get(exercise_id)
        if tests is None:
            tests = self.tests[exercise_id] = [t for t in ex.graded_tests() if t.check.splittable]
        if not defined.get("callable"):
            result = ex.unusable(
                None if defined.get("type") == "NoneType" else defined.get("type", "object")
            )
        else:
            outcomes = []
            for test, line in zip(tests, lines):
                message = parse(line.encode("utf-8"), "check")
                seen = message["seen"] if message and message["kind"] == "test" else None
                try:
                    outcomes.append(ex.judge(test, seen, limit))
                except Exception as err:  # noqa: BLE001 - a reference that cannot be computed: not the student's fault
                    why = (
                        f"the check could not judge this test ({type(err).__name__}); "
                        "tell your teacher"
                    )
                    return _crashed(ex, len(tests), why)
                if outcomes[-1].not_attempted:
                    break
            if len(outcomes) < len(tests) and not (outcomes and outcomes[-1].not_attempted):
                return _crashed(ex, len(tests), "the report was incomplete")
            result = ex.result(outcomes, include_hidden=True)
        problems = "; ".join(str(p)[:200] for p in (defined.get("problems") or [])[:5])
        # e.g. a failed import explains a NameError
        detail = join(
            [
                tr(result.summary),
                labelled("Note:", problems) if problems and result.status == INCORRECT else "",
            ]
        )
        shown = [
            {
                "name": o.name,
                "hidden": o.hidden,
                "passed": bool(o.passed),
                "feedback": "" if o.hidden else " ".join(o.public_lines())[:1500],
            }
            for o in result.tests
        ]
        return Verdict(
            ex.id,
            result.status,
            float(result.points),
            float(ex.points),
            sum(o.passed for o in result.tests),
            len(tests),
            detail,
            shown,
        )

    @staticmethod
    def quiz(exercise_id: str, value, present: bool) -> Verdict:
        """A quiz verdict: the answer is plain data, checked against the chapter's digest."""
        quiz = get(exercise_id)
        verdict = Verdict(
            quiz.id,
            MISSING,
            0.0,
            float(quiz.points),
            0,
            1,
            f"no line `answer_{quiz.name} = ...` in the notebook",
            answer=value,
        )
        if not present:
            return verdict
        if isinstance(value, dict) or not valid_answer(value):
            verdict.status = INCORRECT
            verdict.detail = (
                f"`answer_{quiz.name}` is not a plain answer (a letter, a list of letters or a "
                "number)"
            )
            return verdict
        result = quiz.check(value, include_hidden=True, record=False)
        verdict.status, verdict.detail = result.status, result.summary
        verdict.points, verdict.passed = (
            scoring.quiz_points(quiz.points, result.correct),
            int(result.correct),
        )
        return verdict

    def handle(self, request: dict) -> dict:
        """One request, its verdicts' texts in the submission's language (English unless it
        says)."""
        lang = request.get("lang", "en")
        with in_language(lang if lang in LANGUAGES else "en"):
            return self._handle(request)

    def _handle(self, request: dict) -> dict:
        op = request.get("op")
        if op == "prepare":
            return self.prepare(request["exercises"], request.get("assignments", ()))
        if op == "function":
            return self.function(
                request["exercise"], request["lines"], request["limit"], request["defined"]
            ).as_dict()
        if op == "quizzes":
            return {
                ex_id: self.quiz(ex_id, value, present).as_dict()
                for ex_id, (value, present) in request["answers"].items()
            }
        raise ValueError(f"unknown request {op!r}")


# ---------------------------------------------------------------- the judge process
def serve(requests, replies) -> None:
    """One JSON request per line in, one reply per
    line out; a failing request gets an error reply."""
    judge = Judge()
    for line in requests:
        op = None
        try:
            request = json.loads(line)
            op = request.get("op") if isinstance(request, dict) else None
            reply = {"id": request.get("id"), "ok": judge.handle(request)}
        except Exception as err:  # noqa: BLE001 - the judge stays up; the grader decides what it means
            reply = {"id": None, "error": f"{type(err).__name__}: {err}"[:2000]}
            try:
                reply["id"] = json.loads(line).get("id")
            except Exception:  # noqa: BLE001
                pass
        try:
            text = json.dumps(reply)
        except (TypeError, ValueError) as err:  # never a value silently turned into text
            text = json.dumps(
                {"id": reply.get("id"), "error": f"the reply is not plain data ({err})"}
            )
        replies.write(text + "\n")
        replies.flush()
        if op == "prepare":  # the key and its references stay: freeze them, and collect what
            gc.freeze()  # judging makes from here on (the collector is off until now, see run)
            gc.enable()


def main(argv) -> None:
    run(int(argv[0]), int(argv[1]))


def run(request_fd: int, reply_fd: int) -> None:
    """The judge process's life: dies with its parent, ignores ^C, answers until the grader
    closes its pipe (a fresh interpreter, or forked by the zygote before it warms up)."""
    import signal
    import warnings

    from .isolation import _PR_SET_PDEATHSIG, _prctl

    parent = os.getppid()
    os.umask(0o077)  # as the zygote: what it creates is its own
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # a killed grader takes its judge along, busy or not
    if os.getppid() != parent:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")
    gc.disable()  # as in the zygote, until its prepare is done (serve turns it back on)
    requests, replies = os.fdopen(request_fd, "r", encoding="utf-8"), os.fdopen(reply_fd, "w")
    import torch

    torch.set_num_threads(1)
    serve(requests, replies)


# ---------------------------------------------------------------- the grader's side
class JudgeDied(RuntimeError):
    """The judge process ended or stopped answering."""


def judge_pipes() -> tuple:
    """((to_judge, from_judge), (requests, replies)): the grader's ends and the judge's ends of
    the two pipes of a judge that the zygote forks (the judge's ends go to the zygote)."""
    requests, to_judge = os.pipe()
    from_judge, replies = os.pipe()
    return (to_judge, from_judge), (requests, replies)


class JudgeClient:
    """The grader's handle on the judge process: start, ask, restart (parent side)."""

    def __init__(self, env=None, cwd=None, forked=None):
        """`forked`: this end's two fds of a judge the zygote forks (`judge_pipes`); else (and
        for every restart) the judge is a fresh interpreter started here."""
        self.own_root = None
        if cwd is None:  # a folder of its own for a restart's cwd, HOME and TMPDIR
            cwd = self.own_root = environment.private_root("course-judge-")
        environment.check_private(cwd)  # its cwd: nothing planted there is imported
        # the allow-list alone, never the grader's environment (environment.py)
        self.env = environment.graded_environment(cwd, env)
        self.cwd, self.process, self.counter, self.prepared = str(cwd), None, 0, None
        self.restarts, self.preparing, self.prepare_reply = 0, None, None
        self.assignments = []
        if forked is None:
            self.start()
        else:
            self.to_judge, self.from_judge = forked
            self.buffer = b""

    def start(self) -> None:
        (self.to_judge, self.from_judge), (to_judge_r, from_judge_w) = judge_pipes()
        self.process = subprocess.Popen(
            environment.python_command(
                "-m", "course_lib.grading.judge", str(to_judge_r), str(from_judge_w)
            ),
            pass_fds=[to_judge_r, from_judge_w],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.cwd,
        )
        os.close(to_judge_r)
        os.close(from_judge_w)
        self.buffer = b""

    def _send(self, op: str, **data) -> int:
        self.counter += 1
        line = (json.dumps({"op": op, "id": self.counter, **data}) + "\n").encode()
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self.to_judge, view) :]
        except OSError as err:
            raise JudgeDied(f"the judge process is gone ({err})") from None
        return self.counter

    def request(self, op: str, timeout: float = REPLY_TIMEOUT, **data):
        """The judge's answer to one request; JudgeDied
        when it ends or stays silent past `timeout`."""
        self.finish_prepare()
        return self._reply(self._send(op, **data), timeout)

    def _reply(self, number: int, timeout: float):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.from_judge], [], [], max(0.0, left))
            if not ready:
                raise JudgeDied(f"the judge did not answer within {timeout:g} s")
            chunk = os.read(self.from_judge, 1 << 20)
            if not chunk:
                status = self.process.wait() if self.process is not None else "unknown"
                raise JudgeDied(f"the judge process ended (exit status {status})")
            self.buffer += chunk
        reply, _, self.buffer = self.buffer.partition(b"\n")
        reply = json.loads(reply)
        if reply.get("id") != number:
            raise JudgeDied("the judge answered another request")
        if "error" in reply:
            raise RuntimeError(f"the judge could not answer: {reply['error']}")
        return reply["ok"]

    def prepare(self, exercise_ids: list, assignments=()) -> dict:
        """Ask the judge to prepare these exercises (and to run these assignments' keys first) and
        return at once; `finish_prepare` waits."""
        self.prepared, self.assignments = list(exercise_ids), [str(a) for a in assignments]
        try:
            self.preparing = self._send_prepare()
        except JudgeDied:  # a forked judge that never started (its zygote failed): a fresh one
            self.stop()
            self.restarts += 1
            self.start()
            self.preparing = self._send_prepare()

    def _send_prepare(self) -> int:
        return self._send("prepare", exercises=self.prepared, assignments=self.assignments)

    def ready(self) -> bool:
        """Has the judge's answer to `prepare` arrived (or been read)? Never blocks."""
        if self.preparing is None:
            return True
        return b"\n" in self.buffer or bool(select.select([self.from_judge], [], [], 0)[0])

    def finish_prepare(self):
        """The answer to `prepare` ({"specs", "problems"}), waiting for it if need be."""
        if self.preparing is not None:
            number, self.preparing = self.preparing, None
            try:
                self.prepare_reply = self._reply(number, 1800)
            except JudgeDied:  # it ended while preparing: a fresh one prepares again
                self.restart()
        return self.prepare_reply

    def ask(self, op: str, **data):
        """`request`, with one restart of a judge that died (a fresh one prepares again)."""
        try:
            return self.request(op, **data)
        except JudgeDied:
            self.restart()
            return self.request(op, **data)

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        self.start()
        self.preparing = None
        if self.prepared is not None:
            self.prepare_reply = self._reply(self._send_prepare(), 1800)

    def stop(self) -> None:
        """End the judge process (a restart starts another in the same folder)."""
        close_quietly(self.to_judge, self.from_judge)
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait()

    def close(self) -> None:
        self.stop()
        if self.own_root is not None:
            shutil.rmtree(self.own_root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
