"""Tests a teacher writes without a check class (issue 37, item 2): `generic.Returns`,
`Raises` and `StateAfter`, each judged against a reference that runs in the judge only, and
sent to the child as inputs alone (the grader's way)."""

import pytest
import torch

from course_lib.checks import generic
from course_lib.checks.base import rebuild
from course_lib.exercises.runner import observe
from course_lib.exercises.spec import Fail
from course_lib.exercises.wire import roundtrip


def add_positions(x):
    return x + torch.arange(x.shape[-1], dtype=x.dtype, device=x.device)


def child_then_judge(test, candidate, solution):
    """The grader's path: the child rebuilds the run half from its inputs, the judge decides."""
    builder, inputs = test.for_child()
    seen = roundtrip(observe(rebuild(builder, roundtrip(inputs)), candidate, None))
    if seen.get("stub"):
        raise NotImplementedError
    test.judge(seen["value"], test.reference_value(solution))


RETURNS = generic.Returns(args=(torch.ones(2, 3),), where=" (a 2x3 batch)")


@pytest.mark.parametrize("path", [RETURNS.__call__, None])
def test_returns_passes_the_reference(path):
    if path is None:
        child_then_judge(RETURNS, add_positions, add_positions)
    else:
        RETURNS(add_positions, add_positions)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda x: (x + torch.arange(3.0)).to("meta"), "wrong device"),
        (lambda x: (x + torch.arange(3.0)).double(), "wrong dtype"),
        (lambda x: x + torch.arange(1.0, 4.0), "wrong values (off by up to 1)"),
        (lambda x: (x + torch.arange(3.0))[0], "wrong shape"),
        (lambda x: float("nan") * x, "NaN or inf"),
        (lambda x: [x], "should be a tensor, not list"),
        (lambda x: x.reshape(-1)[10], "raised IndexError"),
    ],
)
def test_returns_fails_realistic_wrong_answers_with_feedback(wrong, words):
    with pytest.raises(Fail, match=words.replace("(", r"\(").replace(")", r"\)")):
        child_then_judge(RETURNS, wrong, add_positions)


def test_the_stub_is_not_attempted_and_the_child_never_holds_the_reference():
    def stub(x):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        child_then_judge(RETURNS, stub, add_positions)
    assert "reference" not in repr(RETURNS.for_child())


def test_numbers_lists_and_dicts_within_the_tolerance():
    test = generic.Returns(args=(2.0,), rtol=1e-3)

    def solution(v):
        return {"twice": [v * 2, v * 2]}

    child_then_judge(test, lambda v: {"twice": [4.001, 4.0]}, solution)
    for wrong, words in (
        (lambda v: {"twice": [4.1, 4.0]}, r"\['twice'\]\[0\] is wrong"),
        (lambda v: {"double": [4, 4]}, "should have the keys"),
        (lambda v: {"twice": (4.0, 4.0)}, "should be a list of 2"),
        (lambda v: {"twice": [True, 4.0]}, "should be a number, not bool"),
        (lambda v: {"twice": [float("inf"), 4.0]}, "not a finite number"),
    ):
        with pytest.raises(Fail, match=words):
            child_then_judge(test, wrong, solution)


def check_2d(x):
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D batch, got {x.dim()}-D")
    return x


def test_raises():
    test = generic.Raises("ValueError", args=(torch.zeros(3),), contains="2-D")
    child_then_judge(test, check_2d, check_2d)
    with pytest.raises(Fail, match="returned a Tensor; it should raise ValueError"):
        child_then_judge(test, lambda x: x, check_2d)
    with pytest.raises(Fail, match="raised TypeError; it should raise ValueError"):
        child_then_judge(test, lambda x: (_ for _ in ()).throw(TypeError("no")), check_2d)
    with pytest.raises(Fail, match="should say '2-D'"):
        child_then_judge(test, lambda x: (_ for _ in ()).throw(ValueError("bad")), check_2d)


def one_step(model, optimizer):
    optimizer.zero_grad()
    model(torch.ones(5, 4)).sum().backward()
    optimizer.step()


def test_state_after():
    test = generic.StateAfter(model="linear", optimizer="adam")
    child_then_judge(test, one_step, one_step)

    def no_step(model, optimizer):
        model(torch.ones(5, 4)).sum().backward()

    def two_steps(model, optimizer):
        one_step(model, optimizer)
        one_step(model, optimizer)

    with pytest.raises(Fail, match="parameters"):
        child_then_judge(test, no_step, one_step)
    with pytest.raises(Fail, match="wrong values"):
        child_then_judge(test, two_steps, one_step)


@pytest.mark.parametrize(
    "test, wrong, said",
    [
        (RETURNS, lambda x: (x + torch.arange(3.0))[0], "你返回的结果 (a 2x3 batch)的形状不对。"),
        (RETURNS, lambda x: x + torch.arange(1.0, 4.0), "的数值不对（最多差 1）"),
        (
            generic.Raises("ValueError", args=(torch.zeros(3),)),
            lambda x: x,
            "它应该抛出 ValueError",
        ),
    ],
)
def test_the_feedback_speaks_chinese(test, wrong, said):
    from course_lib.i18n import tr
    from course_lib.i18n.catalogue import in_language

    with pytest.raises(Fail) as err:
        child_then_judge(test, wrong, add_positions if test is RETURNS else check_2d)
    with in_language("zh"):
        text = tr(err.value.message if hasattr(err.value, "message") else str(err.value))
    assert said in text, text
