"""Tests a teacher writes without a check class: each still a run half and a judge half.

    Test("adds the positions", generic.Returns(args=(torch.zeros(2, 3),)))
    Test("refuses a 1-D input", generic.Raises("ValueError", args=(torch.zeros(3),)))
    Test("one SGD step", generic.StateAfter(model="digits_mlp", optimizer="sgd"))

`Returns`: called on these inputs, the candidate returns what the reference solution returns
(numbers and tensors within a tolerance; a tensor's shape, dtype and device compared; lists,
tuples and dicts item by item). `Raises`: it raises this error (or a subclass) on this input.
`StateAfter`: after it is called with a fresh model and optimizer, their parameters and the
optimizer's state equal the reference's. The reference runs in the judge only; the process
that runs student code receives the inputs, never an expected value.
"""

import copy
import math

from ..exercises.spec import Fail
from ..exercises.wire import ErrorValue, ObjectValue, TensorValue, roundtrip
from .base import Check, attempt, check, is_error, shown, type_name


def _copied(value):
    """A fresh copy of an input, so a candidate that changes it in place changes nothing else."""
    return copy.deepcopy(value)


def _finite(x: float) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def compare(got, want, rtol: float, atol: float, path: str = "the result") -> None:
    """Raise Fail naming the first place where `got` differs from `want` (both as the wire
    delivers them)."""
    if isinstance(want, TensorValue):
        return _compare_tensor(got, want, rtol, atol, path)
    if isinstance(want, bool) or want is None or isinstance(want, str):
        if got != want or type(got) is not type(want):
            raise Fail(f"{path} is wrong.", expected=shown(want), got=shown(got))
        return None
    if isinstance(want, (int, float)):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise Fail(f"{path} should be a number, not {type_name(got)}.", shown(want), shown(got))
        if not _finite(got) and _finite(want):
            raise Fail(f"{path} is {got}, not a finite number.", shown(want), shown(got))
        if not math.isclose(got, want, rel_tol=rtol, abs_tol=atol) and got != want:
            raise Fail(f"{path} is wrong.", expected=shown(want), got=shown(got))
        return None
    if isinstance(want, (list, tuple)):
        if type(got) is not type(want) or len(got) != len(want):
            raise Fail(
                f"{path} should be a {type(want).__name__} of {len(want)}.",
                expected=shown(want),
                got=shown(got),
            )
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, rtol, atol, f"{path}[{i}]")
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            raise Fail(f"{path} should have the keys {sorted(want)}.", got=shown(got))
        for key in sorted(want):
            compare(got[key], want[key], rtol, atol, f"{path}[{key!r}]")
        return None
    if isinstance(want, (ObjectValue, ErrorValue)) and got != want:
        raise Fail(f"{path} is wrong.", expected=shown(want), got=shown(got))
    return None


def _compare_tensor(got, want: TensorValue, rtol: float, atol: float, path: str) -> None:
    if not isinstance(got, TensorValue):
        raise Fail(f"{path} should be a tensor, not {type_name(got)}.", shown(want), shown(got))
    for what, a, b in (
        ("shape", tuple(got.shape), tuple(want.shape)),
        ("dtype", got.dtype, want.dtype),
        ("device", got.device, want.device),
    ):
        if a != b:
            raise Fail(f"{path} has the wrong {what}.", shown(want), shown(got))
    if want.values is None or got.values is None:
        return None
    import torch

    g, w = got.values, want.values
    if not bool(torch.isfinite(g.double()).all()) and bool(torch.isfinite(w.double()).all()):
        raise Fail(f"{path} holds NaN or inf values.", shown(want), shown(got))
    if not torch.allclose(g.double(), w.double(), rtol=rtol, atol=atol, equal_nan=True):
        worst = (g.double() - w.double()).abs().max().item()
        raise Fail(f"{path} has the wrong values (off by up to {worst:.3g}).", shown(want))
    return None


@check
class Returns(Check):
    """Called on `args`/`kwargs`, it returns what the reference returns (see module doc)."""

    args: tuple = ()
    kwargs: dict = None
    rtol: float = 1e-5
    atol: float = 1e-8
    where: str = ""  # how the feedback names this input, e.g. " (a batch of 3)"

    def run(self, candidate):
        value, error = attempt(
            lambda: candidate(*_copied(tuple(self.args)), **_copied(self.kwargs or {})), candidate
        )
        return {"value": value, "error": error}

    def reference(self, solution):
        return roundtrip(solution(*_copied(tuple(self.args)), **_copied(self.kwargs or {})))

    def judge(self, seen, ref) -> None:
        if not isinstance(seen, dict) or not {"value", "error"} <= set(seen):
            raise Fail("The check could not read what your function returned.")
        if seen["error"]:
            raise Fail(f"Your function{self.where} raised {seen['error'].get('text', '')}")
        compare(seen["value"], ref, self.rtol, self.atol, f"What you returned{self.where}")


@check
class Raises(Check):
    """On `args`/`kwargs` it raises `error` (a class name, or one of its subclasses)."""

    error: str = "Exception"
    args: tuple = ()
    kwargs: dict = None
    contains: str = ""  # words the message must hold, if any
    where: str = ""

    def run(self, candidate):
        value, error = attempt(
            lambda: candidate(*_copied(tuple(self.args)), **_copied(self.kwargs or {})), candidate
        )
        return {"returned": type_name(roundtrip(value)) if error is None else None, "error": error}

    def judge(self, seen, ref) -> None:
        if not isinstance(seen, dict) or "error" not in seen:
            raise Fail("The check could not read what your function did.")
        if seen["error"] is None:
            raise Fail(
                f"Your function{self.where} returned a {seen.get('returned')}; it should raise "
                f"{self.error}."
            )
        if not is_error(seen["error"], self.error):
            raise Fail(
                f"Your function{self.where} raised {seen['error'].get('type')}; it should raise "
                f"{self.error}.",
                got=seen["error"].get("message", "")[:200],
            )
        if self.contains and self.contains not in str(seen["error"].get("message", "")):
            raise Fail(
                f"Your {self.error} should say {self.contains!r} on this input{self.where}.",
                got=seen["error"].get("message", "")[:200],
            )


MODELS = {  # name -> a small model made the same way in the child and in the judge
    "digits_mlp": lambda: __import__("course_lib.training", fromlist=["x"]).digits_mlp(),
    "linear": lambda: __import__("torch").nn.Linear(4, 3),
}
OPTIMIZERS = {
    "sgd": lambda params: __import__("torch").optim.SGD(params, lr=0.1),
    "adam": lambda params: __import__("torch").optim.Adam(params, lr=1e-3),
}


def _state(model, optimizer) -> dict:
    """A model's parameters and an optimizer's state, as data."""
    return {
        "parameters": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "optimizer": [
            {k: v.detach().clone() if hasattr(v, "detach") else v for k, v in s.items()}
            for s in optimizer.state.values()
        ],
    }


@check
class StateAfter(Check):
    """After `candidate(model, optimizer, *args)` on a fresh `model` and `optimizer` (seeded the
    same), the parameters and the optimizer's state equal the reference's."""

    model: str = "linear"
    optimizer: str = "sgd"
    args: tuple = ()
    seed: int = 0
    rtol: float = 1e-5
    atol: float = 1e-7
    where: str = ""

    def _call(self, function):
        import torch

        torch.manual_seed(self.seed)
        model = MODELS[self.model]()
        optimizer = OPTIMIZERS[self.optimizer](model.parameters())
        function(model, optimizer, *_copied(tuple(self.args)))
        return _state(model, optimizer)

    def run(self, candidate):
        value, error = attempt(lambda: self._call(candidate), candidate)
        return {"value": value, "error": error}

    def reference(self, solution):
        return roundtrip(self._call(solution))

    def judge(self, seen, ref) -> None:
        if not isinstance(seen, dict) or not {"value", "error"} <= set(seen):
            raise Fail("The check could not read what your function did.")
        if seen["error"]:
            raise Fail(f"Your function{self.where} raised {seen['error'].get('text', '')}")
        got = seen["value"] if isinstance(seen["value"], dict) else {}
        for part, what in (
            ("parameters", "The parameters"),
            ("optimizer", "The optimizer's state"),
        ):
            compare(
                got.get(part),
                ref[part],
                self.rtol,
                self.atol,
                f"{what} after your call{self.where}",
            )
