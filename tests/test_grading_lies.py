"""Answers that lie in what the checks observe, and
code that looks for secrets where it runs (issue 18).

One grader run grades four fixtures beside an honest notebook: a wrong make_batch whose tensor
subclass claims to be whatever batch is asked for; a wrong train_one_epoch that rewrites the
gradient probe's records and makes torch.allclose say "equal" for a moment; a right choose_device
whose worker thread reads every thread's frames; a right gpu_names that unfreezes the garbage
collector and lists every object. The liars must get exactly what their wrong answers earn without
the lie (the engine's own verdict on the honest wrong answer); the searchers must find no key, no
reference solution, no hidden test's expected value and no report key, and say so in their feedback.

COURSE_GRADING_UNDER_TEST=FOLDER grades with the course_lib in FOLDER instead (to show that the
grader before issue 18 fails these tests).
"""

import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from course_lib.exercises import all_exercises, get
from support import submissions  # noqa: E402

LIARS = ["attack7_tensor_liar", "attack7_probe_liar"]
SEARCHERS = {"attack8_thread_frames": "ch01.choose_device", "attack8_gc_unfreeze": "ch01.gpu_names"}
UNDER_TEST = os.environ.get("COURSE_GRADING_UNDER_TEST")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lies")
    subs, out = tmp / "submissions", tmp / "out" / "gradebook.csv"
    subs.mkdir()
    submissions.write_all(subs, LIARS + list(SEARCHERS))
    (subs / "honest.ipynb").write_text(json.dumps(submissions.bases()["reference"]))
    proc = submissions.run_grader(
        subs,
        out,
        "--workers",
        2,
        "--cell-timeout",
        60,
        pythonpath=Path(UNDER_TEST) if UNDER_TEST else None,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {
        p.stem: json.loads(p.read_text())
        for p in out.with_name("gradebook_feedback").glob("*.json")
    }
    return {"book": submissions.read_gradebook(out), "records": records}


def points(graded, name, exercise):
    return float(graded["book"][name][exercise]["points"])


def honest_points(exercise_id: str, wrong_label: str) -> float:
    """What the engine gives the key's known-wrong answer, told no lie."""
    exercise = get(exercise_id)
    wrong = next(w for w in exercise.key().wrong_answers if w.label == wrong_label)
    return exercise.check(wrong.function, include_hidden=True, record=False).points


def test_the_honest_notebook_is_untouched(graded):
    assert float(graded["book"]["honest"]["TOTAL"]["points"]) == 13.0


def test_a_tensor_that_claims_to_be_the_batch_gets_what_one_zero_gets(graded):
    zero = get("ch01.make_batch").check(
        lambda b, n, d: torch.zeros(1), include_hidden=True, record=False
    )
    assert points(graded, "attack7_tensor_liar", "ch01.make_batch") == zero.points == 0.0
    assert float(graded["book"]["attack7_tensor_liar"]["TOTAL"]["points"]) == 13.0 - 3.0
    assert (
        "review:tensor-subclass" in graded["book"]["attack7_tensor_liar"]["TOTAL"]["flags"].split()
    )


def test_rewritten_probe_records_and_a_lying_allclose_earn_nothing(graded):
    want = honest_points("ch03.train_one_epoch", "no zero_grad: gradients accumulate")
    assert want < get("ch03.train_one_epoch").points
    assert points(graded, "attack7_probe_liar", "ch03.train_one_epoch") == pytest.approx(
        want, abs=1e-3
    )
    assert points(graded, "attack7_probe_liar", "ch03.evaluate") == get("ch03.evaluate").points
    assert "review:patching" in graded["book"]["attack7_probe_liar"]["TOTAL"]["flags"].split()


def hidden_expected_values() -> set:
    """Fingerprints (as the fixtures take them) of every value only a judge may hold: the hidden
    tests' judge-only fields."""
    secrets = set()
    for ex in all_exercises():
        key = ex.key() if ex.kind == "function" else None
        for test in key.hidden_tests if key else []:
            for f in fields(test.check) if hasattr(test.check, "__dataclass_fields__") else ():
                if f.metadata.get("judge") and getattr(test.check, f.name) is not None:
                    secrets.add(
                        hashlib.sha1(repr(getattr(test.check, f.name))[:300].encode()).hexdigest()[
                            :10
                        ]
                    )
    return secrets


def leak_report(graded, name, exercise_id) -> dict:
    exercise = next(e for e in graded["records"][name]["exercises"] if e["exercise"] == exercise_id)
    text = " ".join(t.get("feedback", "") for t in exercise["tests"])
    assert "LEAK " in text, text
    return json.JSONDecoder().raw_decode(text.split("LEAK ", 1)[1])[0]


@pytest.mark.parametrize("name", list(SEARCHERS))
def test_a_search_of_the_graded_process_finds_no_secret(graded, name):
    found = leak_report(graded, name, SEARCHERS[name])
    assert found["key_modules"] == [] and found["answer_keys"] == 0 and found["key_code"] == 0, (
        found
    )
    assert found["mac_keys"] == 0 and found["hidden_tests"] == 0, found
    secrets = hidden_expected_values()
    assert secrets and not set(found["expected_values"]) & secrets, found
    assert {"review:frame-walking", "review:grader-internals"} & set(
        graded["book"][name]["TOTAL"]["flags"].split()
    )
