"""Verdicts that fail closed (issue 34, item 5).

(a) every judge decides only on finite numbers: a NaN or an infinity anywhere in an observation
fails the test with a clear message, whatever the judge's comparisons do with NaN (`nan < 8` is
False, so `if forwards < total: raise Fail(...)` let a NaN through to a pass); missing fields and
wrong types fail too. (b) a function under test that hands back the course's own reference loop
is flagged for review. (c) a run half replaced while the function is defined is not the one
the tests run, and the row is flagged.
"""

import json
import math

import pytest
import torch

from course_lib.checks import base, loops
from course_lib.exercises import all_exercises, get, wire
from course_lib.exercises.spec import judge_outcome
from course_lib.grading.analyze import analyze, check_source
from course_lib.grading.cells import read_cells

NAN = math.nan
FORGED = {
    "nan": NAN,
    "inf": math.inf,
    "-inf": -math.inf,
    "nan in a dict": {"forwards": NAN, "loss": 1.0},
    "inf in a list": [1.0, math.inf],
    "nan in a tensor": wire.TensorValue("float32", (2,), "cpu", False, torch.tensor([1.0, NAN])),
}


def _tests_by_builder() -> dict:
    found = {}
    for ex in all_exercises():
        if ex.kind != "function":
            continue
        for test in ex.graded_tests():
            if isinstance(test.check, base.Check) and test.check.splittable:
                found.setdefault(test.check.builder(), test)
    return found


TESTS = _tests_by_builder()


def test_every_registered_check_is_covered():
    assert len(TESTS) >= 20 and set(TESTS) <= set(base.REGISTRY)


@pytest.mark.parametrize("forged", list(FORGED))
@pytest.mark.parametrize("builder", sorted(TESTS))
def test_a_nonfinite_observation_fails_every_check_with_a_message(builder, forged):
    outcome = judge_outcome(TESTS[builder], {"value": FORGED[forged], "seconds": 0.1}, None)
    assert not outcome.passed
    assert "NaN or an infinite number" in outcome.message, outcome.message


def _every_batch_evaluate():
    ex = get("ch03.evaluate")
    test = next(t for t in ex.graded_tests() if isinstance(t.check, loops.EveryBatch))
    return ex, test


def test_a_nan_count_no_longer_falls_through_to_a_pass():
    """`if forwards < total` is False for NaN: before, this observation passed."""
    ex, test = _every_batch_evaluate()
    ref = test.check.reference_value(ex.reference_solution())
    total = ref["total"]
    assert judge_outcome(test, {"value": {"forwards": total}}, ref).passed  # the right answer
    outcome = judge_outcome(test, {"value": {"forwards": NAN}}, ref)
    assert not outcome.passed and "the result['forwards']" in outcome.message


@pytest.mark.parametrize(
    "value", [{}, {"forwards": "8"}, {"forwards": None}, "8", None, [8]], ids=repr
)
def test_missing_fields_and_wrong_types_fail_with_a_message(value):
    ex, test = _every_batch_evaluate()
    ref = test.check.reference_value(ex.reference_solution())
    outcome = judge_outcome(test, {"value": value}, ref)
    assert not outcome.passed and outcome.message


# ---------------------------------------------------------------- (b) the course's own loops
LOOPS = {
    "module attribute": (
        "from course_lib import training",
        "def train_one_epoch(model, loader, optimizer, device):\n"
        "    return training.train_epoch(model, loader, optimizer, device)",
    ),
    "imported name": (
        "from course_lib.training import train_epoch as te",
        "def train_one_epoch(model, loader, optimizer, device):\n"
        "    return te(model, loader, optimizer, device)",
    ),
    "import inside": (
        "import torch",
        "def train_one_epoch(model, loader, optimizer, device):\n"
        "    from course_lib.training import train_epoch\n"
        "    return train_epoch(model, loader, optimizer, device)",
    ),
    "a check's rig": (
        "from course_lib.checks import rig",
        "def train_one_epoch(model, loader, optimizer, device):\n    return rig.anything()",
    ),
}


@pytest.mark.parametrize("how", list(LOOPS))
def test_a_function_that_calls_the_courses_own_loop_is_flagged(how):
    analysis = analyze([("code", c) for c in LOOPS[how]])
    assert "course reference code" in check_source(analysis, "train_one_epoch")["flags"]


def test_own_work_using_course_names_is_not_flagged():
    own = (
        "from course_lib import training",
        "def train_epoch(model, loader):\n    return 1.0",
        "def train_one_epoch(model, loader, optimizer, device):\n"
        "    meter = training.Mean()\n    return train_epoch(model, loader)",
    )
    assert check_source(analyze([("code", c) for c in own]), "train_one_epoch")["flags"] == []


# ---------------------------------------------------------------- (c) a run half replaced
ATTACK = (
    "@(lambda f: (type.__setattr__(loops.EveryBatch, 'run',\n"
    "    lambda self, c: {'forwards': 8}), f)[1])\n"
    "def evaluate(model, loader, device, criterion):\n"
    "    return 0.0, 0.0\n"
)


class _Channel:
    def __init__(self):
        self.sent = []

    def send(self, kind, **data):
        self.sent.append((kind, data))


def test_a_run_half_replaced_when_the_function_is_defined_is_not_the_one_tested(monkeypatch):
    from course_lib.grading import child, protocol

    original = loops.EveryBatch.run
    monkeypatch.setattr(loops.EveryBatch, "run", original)  # put back after the attack
    ex, test = _every_batch_evaluate()
    builder, inputs = test.check.for_child()
    job = {
        "source": {
            "imports": ["from course_lib.checks import loops"],
            "definitions": [("evaluate", 3, ATTACK)],
        },
        "name": "evaluate",
        "tests": [[builder, wire.dumps(inputs)]],
        "limit": 30,
    }
    channel = _Channel()
    child.check_body(channel, {}, job)
    assert loops.EveryBatch.run is not original  # the attack did replace the class's run half
    defined = next(data for kind, data in channel.sent if kind == "defined")
    assert "loops.EveryBatch.run" in defined["changed"]  # reported: the row is flagged
    line = wire.dumps({"kind": "defined", **defined})
    assert protocol.parse(line.encode() if isinstance(line, str) else line, "check") is not None
    seen = next(data["seen"] for kind, data in channel.sent if kind == "test")
    ref = test.check.reference_value(ex.reference_solution())
    assert not judge_outcome(test, wire.roundtrip(seen), ref).passed  # the real run half ran


def test_replacing_a_run_half_is_flagged_statically_too():
    analysis = analyze([("code", "from course_lib.checks import loops"), ("code", ATTACK)])
    assert "patching" in check_source(analysis, "evaluate")["flags"]


def _function_exercises():
    return [ex for ex in all_exercises() if ex.kind == "function"]


@pytest.mark.parametrize("ex", _function_exercises(), ids=lambda ex: ex.id)
def test_defining_the_reference_answer_changes_no_run_half(ex):
    """No false alarm: the handed-out notebook's imports and the key's function change nothing."""
    from course_lib.grading import child
    from support import submissions

    data = json.dumps(submissions.bases()["reference"]).encode()
    source = check_source(analyze(read_cells(data)), ex.name)
    for test in ex.graded_tests():
        if isinstance(test.check, base.Check):
            child.pinned(base.rebuild(*test.check.for_child()))
    before = child.run_half_state()
    child.define(source)
    assert child.changed_names(before, child.run_half_state()) == []
