"""Check: one test's run half and judge half, built from plain parameters (all chapters).

    @check
    class Choice(Check):
        machine: str                        # an input: the child may see it
        def run(self, candidate): ...       # child: call the candidate, return plain data
        def reference(self, solution): ...  # judge: trusted code only (optional)
        def judge(self, seen, ref): ...     # judge: raise Fail, or return for a pass

A field declared with `expected(...)` is the judge's alone: `for_child()` leaves it out, so the
process that runs student code never holds a hidden test's expected values. `rebuild` makes
the child's copy of a check from its builder's name and its inputs (after the wire).
"""

import dataclasses
import importlib
import math
from dataclasses import dataclass, field

from ..exercises.runner import describe_exception, is_stub
from ..exercises.spec import Fail
from ..exercises.wire import ErrorValue, ObjectValue, TensorValue

REGISTRY = {}


def expected(default=None, **kwargs):
    """A field only the judge receives (an expected value of a hidden test, say)."""
    return field(default=default, metadata={"judge": True}, **kwargs)


def check(cls):
    """Class decorator: a dataclass registered under 'module.Name' (e.g. 'devices.Choice')."""
    cls = dataclass(eq=False)(cls)
    REGISTRY[cls.builder()] = cls
    return cls


class Check:
    """One test of a function exercise, split in two halves (see the module docstring)."""

    splittable = True  # False only for engine-level inline tests (exercises.spec.Inline)
    # The judge half runs only on observations without NaN or inf (exercises.spec.nonfinite_at):
    # a check whose right answers hold them would set this False and judge them itself.
    finite_only = True

    def run(self, candidate):
        raise NotImplementedError

    def reference(self, solution):
        return None

    def judge(self, seen, ref) -> None:
        return None

    # ------------------------------------------------------------ plumbing
    @classmethod
    def builder(cls) -> str:
        return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__qualname__}"

    def inputs(self) -> dict:
        """The parameters the run half needs: every field but the judge's own."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if not f.metadata.get("judge")
        }

    def for_child(self) -> tuple:
        """(builder name, inputs): what a child process gets to rebuild this check's run half."""
        return self.builder(), self.inputs()

    def reference_value(self, solution=None):
        """`reference(solution)`, computed once per solution
        and kept (it never depends on a candidate)."""
        cache = self.__dict__.setdefault("_references", {})
        if id(solution) not in cache:
            import torch

            with torch.random.fork_rng():
                cache[id(solution)] = (solution, self.reference(solution))
        return cache[id(solution)][1]

    def __call__(self, candidate, solution=None) -> None:
        """Both halves in this process, through the wire: raise Fail when the candidate fails."""
        from ..exercises.runner import observe
        from ..exercises.wire import roundtrip

        seen = roundtrip(observe(self, candidate, None))
        if seen.get("stub"):
            raise NotImplementedError
        if "raised" in seen:
            raise Fail(f"Your code raised {seen['raised']}")
        self.judge(seen.get("value"), self.reference_value(solution))


def rebuild(builder: str, params: dict) -> Check:
    """The check `builder` ('devices.Choice') with
    these inputs; only course_lib.checks modules load."""
    module, _, name = builder.partition(".")
    if builder not in REGISTRY:
        if not module.isidentifier():
            raise KeyError(f"no check builder {builder!r}")
        importlib.import_module(f"course_lib.checks.{module}")
    return REGISTRY[builder](**materialize(params))


def materialize(value):
    """Tensors that came over the wire become real tensors again (inputs of a child's run half)."""
    if isinstance(value, TensorValue):
        return value.tensor()
    if isinstance(value, list):
        return [materialize(v) for v in value]
    if isinstance(value, tuple):
        return tuple(materialize(v) for v in value)
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- run-half helpers
def error_record(err: BaseException, candidate=None) -> dict:
    """An exception the learner's code raised, as data;
    the untouched stub is re-raised (not attempted)."""
    if candidate is not None and is_stub(err, candidate):
        raise err
    return {
        "type": type(err).__name__,
        "kinds": [c.__name__ for c in type(err).__mro__][:12],
        "message": str(err)[:2000],
        "text": describe_exception(err),
    }


def is_error(error, kind: str) -> bool:
    """Is an observed error record of the class named `kind`, or of a subclass of it?"""
    return isinstance(error, dict) and kind in (error.get("kinds") or [error.get("type")])


def attempt(call, candidate):
    """(value, None) or (None, error record) of `call()`;
    the stub's NotImplementedError passes through."""
    try:
        return call(), None
    except Exception as err:  # judged by the judge half
        return None, error_record(err, candidate)


# ---------------------------------------------------------------- judge-half helpers
def raised(error: dict) -> Fail:
    """The Fail for an error record the run half observed."""
    return Fail(f"Your code raised {error['text']}")


def close(a: float, b: float, rel: float = 1e-4, abs_: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def number(value):
    """A returned value as a float for comparing, or None if it is not a number at all."""
    if isinstance(value, TensorValue):
        if value.numel() == 1 and value.values is not None:
            return float(value.values.reshape(-1)[0].item())
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def type_name(value) -> str:
    """The learner-facing type name of an observed value ('float', 'Tensor', 'NoneType', ...)."""
    if isinstance(value, TensorValue):
        return "Tensor"
    if isinstance(value, ObjectValue):
        return value.type.split(" ")[0]
    if isinstance(value, ErrorValue):
        return value.type
    if isinstance(value, frozenset):
        return "set"
    return type(value).__name__


def shown(value, limit: int = 80) -> str:
    """A short repr of an observed value for feedback."""
    if isinstance(value, TensorValue):
        return (
            f"tensor(shape={list(value.shape)}, dtype=torch.{value.dtype}, device='{value.device}')"
        )
    if isinstance(value, ObjectValue):
        return f"<{value.type}>"
    return repr(value)[:limit]


def tensor_fail(value: TensorValue, what: str) -> Fail:
    """A tensor returned where a Python float belongs (chapters 03, 05)."""
    why = (
        (
            "A tensor that still requires grad keeps the graph of every batch behind it alive "
            "(chapter 06 measures the memory)."
        )
        if value.requires_grad
        else (
            "A tensor is not a plain number: on a GPU it stays there, and every print or "
            "comparison of it is another tensor operation."
        )
    )
    return Fail(
        f"You returned {what} as a tensor, not a Python float.",
        expected="a float, e.g. built from loss.item()",
        got=f"a tensor (requires_grad={value.requires_grad})",
        hint=f"{why} .item() gives a plain number.",
    )


def matches(seen, want, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Observed tensors (a list of TensorValue) hold the values of the tensors `want`, one by one,
    shapes included."""
    import torch

    return (
        isinstance(seen, list)
        and len(seen) == len(want)
        and all(
            isinstance(p, TensorValue)
            and p.values is not None
            and p.shape == tuple(q.shape)
            and torch.allclose(p.values, q, rtol=rtol, atol=atol)
            for p, q in zip(seen, want)
        )
    )


def same_values(a, b, atol: float = 1e-6, rtol: float = 1e-5) -> bool:
    """Two observed tensors (or lists of them) hold
    the same values (shapes, dtypes and devices too)."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (
            isinstance(a, (list, tuple))
            and isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(same_values(x, y, atol, rtol) for x, y in zip(a, b))
        )
    if a is None or b is None:
        return a is None and b is None
    if not (isinstance(a, TensorValue) and isinstance(b, TensorValue)):
        return False
    if (a.shape, a.dtype, a.device_type) != (b.shape, b.dtype, b.device_type):
        return False
    if a.values is None or b.values is None:
        return a.values is None and b.values is None
    import torch

    return bool(
        torch.allclose(a.values.double(), b.values.double(), atol=atol, rtol=rtol, equal_nan=False)
    )
