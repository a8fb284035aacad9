"""One real course exercise written in the assignment source form (issue 37, item 5): chapter
03's `evaluate` declared once in a source notebook, released, and compared with what the course
holds today in four places (the chapter module's declaration, the key, the notebook's stub cell,
index.json). The course's exercises are not migrated yet; this shows the form carries one."""

import dataclasses
import inspect
import json

import pytest

from course_lib import ch03_training_template as ch03
from course_lib import notebooks
from course_lib.authoring import release
from course_lib.exercises import index
from course_lib.key import ch03_training_template as key03

ASSIGNMENT = """### ASSIGNMENT
import torch

from course_lib.authoring import Assignment, Test
from course_lib.checks import loops
from course_lib.checks.rig import MovesData

hw = Assignment("c03", "The training template")"""

EXERCISE = """### EXERCISE
hw.function_exercise(
    "evaluate",
    title="The evaluation loop: eval mode, no graph, data moved too",
    prompt=(
        "Write evaluate(model, loader, device, criterion) -> (mean_loss, accuracy), both Python "
        "floats. `model` is on `device`; the loader yields CPU batches (x, y). Switch the model "
        "to evaluation mode, build no autograd graph, move every batch to `device`. mean_loss: "
        "the mean of the loss over all samples (each batch weighted by its size); accuracy: the "
        "fraction (0 to 1) of samples whose highest logit (argmax over dim 1) is the label."
    ),
    points=5,
    tests=[
        Test("moves the inputs and the labels to `device`", MovesData("evaluate")),
        Test("puts the model in evaluation mode", loops.EvalMode()),
        Test("builds no autograd graph", loops.NoGraph()),
        Test("returns two Python floats", loops.EvalReturns()),
        Test(
            "returns the loss and accuracy over samples (the last batch is smaller)",
            loops.EvalValues(70, 32, " (70 samples in batches of 32, 32, 6)"),
        ),
        Test("goes through every batch", loops.EveryBatch("evaluate")),
    ],
    hints=[
        (
            "The mirror image of training: `model.eval()`, then `with torch.no_grad():` around "
            "the loop."
        ),
        (
            "Move the data exactly as in training, inputs and labels. Forgetting it here is "
            "article A's error 2."
        ),
        (
            "Three running numbers: the loss times the batch size, the number of correct "
            "predictions (`argmax` over dim 1 equal to the label, summed), the number of samples. "
            "Return two ratios, as Python floats."
        ),
    ],
)
### BEGIN HIDDEN TESTS
from course_lib.key.ch03_training_template import buggy_evaluate

hw.hidden(
    "evaluate",
    Test("leaves the weights alone and computes no gradients", loops.LeavesWeightsAlone()),
    Test(
        "loss and accuracy on another loader",
        loops.EvalValues(50, 7, " (50 samples in batches of 7)", strict=True),
    ),
    Test(
        "works when `device` is given as a string",
        MovesData("evaluate", as_string=True, where=" (device given as a string)"),
    ),
)
for label, feedback, flags in [
    ("averages the batch means", "a mean over batches", {"loss_mean": "batches"}),
    ("forgets model.eval()", "call model.eval()", {"eval_mode": False}),
    ("forgets torch.no_grad()", "torch.no_grad()", {"no_grad": False}),
    (
        "forgets to move the inputs (article A's error 2)",
        "The inputs x reached the model",
        {"move_x": False},
    ),
    ("accuracy in percent", "a fraction between 0 and 1", {"accuracy": "percent"}),
    ("returns tensors", "not a Python float", {"as_tensors": True}),
]:
    hw.wrong("evaluate", label, buggy_evaluate(**flags), feedback=feedback)
### END HIDDEN TESTS"""

SOLUTION = """def evaluate(model, loader, device, criterion):
    ### BEGIN SOLUTION
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total += criterion(logits, y).item() * x.size(0)
            correct += (logits.argmax(dim=1) == y).sum().item()
            count += x.size(0)
    return total / count, correct / count
    ### END SOLUTION"""


@pytest.fixture(scope="module")
def derived(tmp_path_factory):
    cells = [
        {"cell_type": "code", "id": f"s{i}", "metadata": {}, "outputs": [], "source": text}
        for i, text in enumerate([ASSIGNMENT, EXERCISE, SOLUTION, "hw.evaluate.check(evaluate)"])
    ]
    for cell in cells:
        cell.update(execution_count=None, source=cell["source"].splitlines(keepends=True))
    path = tmp_path_factory.mktemp("c03") / "c03.source.ipynb"
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    return release.derive(path)  # proves: the reference passes, each wrong fails, stub untried


def fields_of(test) -> tuple:
    check = test.check
    return test.name, test.weight, type(check), dataclasses.asdict(check)


def test_the_student_stub_is_the_chapter_notebook_s_stub_cell(derived):
    nb = json.loads(derived.files["c03.ipynb"])
    stub = "".join(nb["cells"][2]["source"])
    assert stub == notebooks.cell("03", "c32")


def test_the_declaration_is_the_chapter_module_s(derived):
    ours, today = derived.assignment.exercises["evaluate"], ch03.evaluate
    for what in ("title", "prompt", "points", "hints", "time_limit", "kind"):
        assert getattr(ours, what) == getattr(today, what), what
    assert [fields_of(t) for t in ours.tests] == [fields_of(t) for t in today.tests]


def test_the_key_is_the_answer_key_s(derived):
    ours, today = derived.assignment.exercises["evaluate"].key(), key03.KEY["evaluate"]
    assert [fields_of(t) for t in ours.hidden_tests] == [fields_of(t) for t in today.hidden_tests]
    assert [(w.label, w.feedback_contains) for w in ours.wrong_answers] == [
        (w.label, w.feedback_contains) for w in today.wrong_answers
    ]
    assert inspect.getsource(today.solution) == SOLUTION.replace(
        "    ### BEGIN SOLUTION\n", ""
    ).replace("\n    ### END SOLUTION", "\n")


def test_the_index_row_is_index_json_s_but_for_its_id(derived):
    row = json.loads(derived.files["index.json"])["exercises"][0]
    today = next(r for r in json.loads(index.INDEX_PATH.read_text()) if r["id"] == "ch03.evaluate")
    assert {k: v for k, v in row.items() if k not in ("id", "chapter")} == {
        k: v for k, v in today.items() if k not in ("id", "chapter")
    }
