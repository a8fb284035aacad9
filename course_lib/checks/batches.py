"""Chapter 02's checks: move_to (a whole nested batch
to a device) and where_is (a device diagnostic).

The batch a test gives is an input (it travels to the learner's process by value); what comes
back travels by value too, with the paths where the learner returned the very object it was
given (identity, seen with `is`, which no object can fake). The judge compares that with the
batch it gave.
"""

import copy
import re

import torch
from torch import nn

from ..exercises.spec import Fail
from ..exercises.wire import TensorValue, roundtrip
from .base import Check, attempt, check, expected, shown, type_name

META = torch.device("meta")
CONTAINERS = (list, tuple, dict)


def randn(*shape, seed: int = 0) -> torch.Tensor:
    """Standard-normal test data from a private generator (the same in every process)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def tuple_batch():
    """(inputs, labels), as a DataLoader over a TensorDataset yields it (chapter 02 tests)."""
    return (randn(4, 3), torch.arange(4))


def dict_batch():
    """A dict batch with tensors and non-tensors side by side (chapter 02 tests)."""
    return {
        "x": randn(2, 5),
        "y": torch.tensor([0, 1]),
        "ids": [7, 8],
        "name": "batch-0",
        "mask": None,
    }


def nested_batch():
    """Containers inside containers (chapter 02 tests)."""
    return {
        "inputs": (randn(2, 3), [torch.zeros(2), torch.ones(2, 2)]),
        "extra": {"lengths": torch.tensor([3, 1]), "source": "train.csv", "epoch": 0},
    }


def list_batch():
    """A list batch, as a caller builds it and then keeps using it (chapter 02 tests)."""
    return {"images": [randn(3, 2), randn(3, 4, seed=1)], "labels": torch.tensor([1, 0])}


# ---------------------------------------------------------------- move_to
# the type whose missing .to() crashed move_to -> what to tell the learner
CRASH_HINTS = {
    "tuple": (
        "A tuple is a container, not a tensor: call move_to on each of its items and build a new "
        "tuple."
    ),
    "list": "A list is a container, not a tensor: call move_to on each item and build a new list.",
    "dict": (
        "A dict is a container, not a tensor: build a new dict with move_to applied to each value."
    ),
    "int": "Numbers have no `.to()`: give ints and floats back unchanged.",
    "float": "Numbers have no `.to()`: give ints and floats back unchanged.",
    "bool": "`True` and `False` have no `.to()`: give them back unchanged.",
    "str": "Strings have no `.to()`: give them back unchanged.",
    "NoneType": "`None` has no `.to()`: give it back unchanged.",
}
DEFAULT_CRASH_HINT = "Only tensors have `.to()`: give every other value back unchanged."


def _is_tensor(value) -> bool:
    return isinstance(value, (torch.Tensor, TensorValue))


def _device_type(t) -> str:
    return t.device_type if isinstance(t, TensorValue) else t.device.type


def _dtype_name(t) -> str:
    return t.dtype if isinstance(t, TensorValue) else str(t.dtype).replace("torch.", "")


def _tensors_in(batch, path="batch"):
    """(path, tensor) for every tensor inside a nested batch (chapter 02 checks)."""
    if _is_tensor(batch):
        yield path, batch
    elif isinstance(batch, (list, tuple)):
        for i, item in enumerate(batch):
            yield from _tensors_in(item, f"{path}[{i}]")
    elif isinstance(batch, dict):
        for k, item in batch.items():
            yield from _tensors_in(item, f"{path}[{k!r}]")


def same_paths(got, given, path="batch") -> list:
    """Paths where the learner returned the very object it was given (run half, with `is`)."""
    if got is given and not isinstance(given, (int, float, str, bool, type(None))):
        return [path]
    if (
        isinstance(got, (list, tuple))
        and isinstance(given, (list, tuple))
        and len(got) == len(given)
    ):
        return [
            p for i, (a, b) in enumerate(zip(got, given)) for p in same_paths(a, b, f"{path}[{i}]")
        ]
    if isinstance(got, dict) and isinstance(given, dict):
        return [
            p for k in given if k in got for p in same_paths(got[k], given[k], f"{path}[{k!r}]")
        ]
    return []


def _moved_tensor(orig, got, device, path, same):
    if not isinstance(got, TensorValue):
        raise Fail(
            f"{path} was a tensor; your move_to returned a {type_name(got)} there.",
            expected="a tensor",
            got=shown(got),
        )
    if got.device_type != device.type:
        given = path in same
        hint = (
            "`x.to(device)` returns a NEW tensor and leaves `x` where it was: return that result."
            if given
            else "Move every tensor: `x.to(device)`, and return the moved one."
        )
        raise Fail(
            (
                f"{path} came back on "
                f"{got.device}{' (the very tensor it was given)' if given else ''}."
            ),
            expected=str(device),
            got=got.device,
            hint=hint,
        )
    if got.shape != tuple(orig.shape) or got.dtype != _dtype_name(orig):
        raise Fail(
            f"{path} changed its shape or dtype.",
            expected=f"{tuple(orig.shape)} {orig.dtype}",
            got=f"{got.shape} torch.{got.dtype}",
            hint="Only the device should change: use `.to(device)`.",
        )


def _not_looked_inside(got, device, path, same):
    """Fail when a container holding tensors came back as the same object, its tensors not moved."""
    stayed = [t for _, t in _tensors_in(got) if _device_type(t) != device.type]
    if path in same and stayed:
        raise Fail(
            f"{path} came back as the very {type_name(got)} it was given, its tensors still on "
            f"{stayed[0].device}: move_to never looked inside it.",
            hint=(
                "Containers can hold containers: call move_to on every item, and the same code "
                "then handles any depth."
            ),
        )


def _moved_sequence(orig, got, device, path, same):
    _not_looked_inside(got, device, path, same)
    if type(got) is not type(orig):
        raise Fail(
            f"{path} was a {type(orig).__name__}; your move_to returned a {type_name(got)}.",
            expected=type(orig).__name__,
            got=type_name(got),
            hint="Keep the container's type: a tuple stays a tuple, a list stays a list.",
        )
    if len(got) != len(orig):
        raise Fail(
            f"{path} had {len(orig)} items; yours has {len(got)}: something was dropped.",
            expected=len(orig),
            got=len(got),
            hint="Keep every item: non-tensors go back unchanged, they are not left out.",
        )
    for i, (a, b) in enumerate(zip(orig, got)):
        _compare(a, b, device, f"{path}[{i}]", same)


def _moved_dict(orig, got, device, path, same):
    _not_looked_inside(got, device, path, same)
    if not isinstance(got, dict):
        raise Fail(
            f"{path} was a dict; your move_to returned a {type_name(got)}.",
            expected="dict",
            got=type_name(got),
            hint="Build a new dict, with the same keys, from the moved values.",
        )
    if list(got) != list(orig):
        dropped = [k for k in orig if k not in got]
        what = f"keys were dropped: {dropped}" if dropped else "the keys changed"
        raise Fail(
            f"In {path}, {what}.",
            expected=list(orig),
            got=list(got),
            hint="Keep every key, in order; non-tensor values go back unchanged.",
        )
    for k in orig:
        _compare(orig[k], got[k], device, f"{path}[{k!r}]", same)


def _compare(orig, got, device, path, same):
    if isinstance(orig, torch.Tensor):
        _moved_tensor(orig, got, device, path, same)
    elif isinstance(orig, (list, tuple)):
        _moved_sequence(orig, got, device, path, same)
    elif isinstance(orig, dict):
        _moved_dict(orig, got, device, path, same)
    elif type(got) is not type(orig) or got != orig:
        raise Fail(
            f"{path} is not a tensor, so it must come back unchanged.",
            expected=repr(orig),
            got=shown(got),
            hint="Return ints, strings, None and other non-tensors as they are.",
        )


def compare_moved(orig, got, device, path="batch", same=()):
    """Fail unless `got` (what came back, as data) is `orig` with every tensor on `device`, all else
    unchanged. `same`: the paths where the learner returned the very object it was given."""
    _compare(orig, roundtrip(got), torch.device(device), path, set(same))


def _crash_fail(error: dict, container_hint: str) -> Fail:
    """A `.to()` on a non-tensor becomes feedback
    that fits what crashed; other errors as they are."""
    found = re.match(r"'(\w+)' object has no attribute 'to'", error["message"])
    if error["type"] != "AttributeError" or not found:
        return Fail(f"Your code raised {error['text']}")
    kind = found.group(1)
    hint = CRASH_HINTS.get(kind, DEFAULT_CRASH_HINT)
    if container_hint and kind in {c.__name__ for c in CONTAINERS}:
        hint = container_hint
    article = "an" if kind[0].lower() in "aeiou" else "a"
    return Fail(
        f"move_to called `.to()` on {article} {kind}, which is not a tensor: AttributeError: "
        f"{error['message']}.",
        hint=hint,
    )


@check
class Moves(Check):
    """move_to(batch, device) moves every tensor and keeps everything else."""

    batch: object
    device: object = META
    container_hint: str = ""

    def run(self, candidate):
        given = copy.deepcopy(self.batch)
        got, error = attempt(lambda: candidate(given, self.device), candidate)
        return {"got": got, "same": same_paths(got, given), "error": error}

    def judge(self, seen, ref):
        if seen["error"] is not None:
            raise _crash_fail(seen["error"], self.container_hint)
        compare_moved(self.batch, seen["got"], self.device, "batch", seen["same"])


@check
class Untouched(Check):
    """move_to leaves the caller's batch as it was (the batch, by value, after the call)."""

    batch: object

    def run(self, candidate):
        given = copy.deepcopy(self.batch)
        got, error = attempt(lambda: candidate(given, META), candidate)
        return {"after": given, "returned_it": got is given, "error": error}

    def judge(self, seen, ref):
        if seen["error"] is not None:
            raise _crash_fail(seen["error"], "")
        after = seen["after"]
        moved = [
            f"{p} is now on {t.device}" for p, t in _tensors_in(after) if t.device_type != "cpu"
        ]
        lost = len(list(_tensors_in(after))) != len(list(_tensors_in(self.batch)))
        if moved or lost:
            same = " and returned that same object" if seen["returned_it"] is True else ""
            raise Fail(
                f"Your move_to changed the batch it was given{same}: the caller's own data moved.",
                expected="the caller's batch still on cpu",
                got=", ".join(moved) or "tensors went missing",
                hint="Build and return new containers; leave the caller's batch as it was.",
            )


# ---------------------------------------------------------------- where_is
WHERE_KEYS = ("model", "tensors", "same_device")
LAYERS = {"Linear": nn.Linear, "ReLU": nn.ReLU, "BatchNorm1d": nn.BatchNorm1d}


def build_model(layers: list) -> nn.Module:
    """A model from plain data: [(kind, args, device,
    {buffer: device})]; one layer is the module itself."""
    modules = []
    for kind, args, device, *buffers in layers:
        module = LAYERS[kind](*args).to(device)
        for name, where in (buffers[0] if buffers else {}).items():
            setattr(
                module, name, torch.ones_like(getattr(module, name), device=where)
            )  # a buffer moved back
        modules.append(module)
    return modules[0] if len(modules) == 1 else nn.Sequential(*modules)


def _where_type_checks(got):
    if not isinstance(got, dict) or set(got) != set(WHERE_KEYS):
        raise Fail(
            (
                "where_is must return a dict with exactly the keys 'model', 'tensors' and "
                "'same_device'."
            ),
            expected="{'model': [...], 'tensors': [...], 'same_device': ...}",
            got=shown(got),
        )
    listed = (
        list(got["model"]) + list(got["tensors"])
        if isinstance(got["model"], list) and isinstance(got["tensors"], list)
        else None
    )
    if listed is None:
        raise Fail("'model' and 'tensors' must both be lists.", got=shown(got))
    if any(not isinstance(d, str) for d in listed):
        raise Fail(
            (
                "Report devices as strings such as 'cpu', 'cuda:0' or 'meta', not torch.device "
                "objects."
            ),
            got=repr(got),
            hint="`str(t.device)` turns a device into its string.",
        )
    if not isinstance(got["same_device"], bool):
        raise Fail("'same_device' must be True or False.", got=shown(got["same_device"]))


def _missed_holder(model, devices) -> tuple:
    """('buffer', 'bn.running_var', 'cpu') for the
    first parameter or buffer on a device in `devices`."""
    named = [("parameter", n, t) for n, t in model.named_parameters()] + [
        ("buffer", n, t) for n, t in model.named_buffers()
    ]
    return next((kind, name, str(t.device)) for kind, name, t in named if str(t.device) in devices)


MISSED_HINTS = {
    "parameter": (
        "`next(model.parameters())` looks at the first parameter only: look at all of them."
    ),
    "buffer": (
        "`model.parameters()` has no buffers (BatchNorm's running statistics): add "
        "`model.buffers()`."
    ),
}


def _check_model_devices(model, got, want):
    missing = [d for d in want if d not in got]
    if missing:
        kind, name, device = _missed_holder(model, missing)
        raise Fail(
            f"Your 'model' list is {got}, but the model's {kind} `{name}` is on {device}.",
            expected=want,
            got=got,
            hint=MISSED_HINTS[kind],
        )
    if got != want:
        raise Fail(
            f"Your 'model' list is {got}: list each device once, sorted.",
            expected=want,
            got=got,
            hint="A set keeps each device once; `sorted(...)` turns it into a sorted list.",
        )


@check
class Where(Check):
    """where_is on the model built from `layers` and
    the given tensors returns `want` (the judge's)."""

    layers: list
    tensors: list
    want: dict = expected()

    def run(self, candidate):
        return candidate(build_model(self.layers), *self.tensors)

    def judge(self, seen, ref):
        got, want = seen, self.want
        _where_type_checks(got)
        _check_model_devices(build_model(self.layers), got["model"], want["model"])
        if got["tensors"] != want["tensors"]:
            raise Fail(
                (
                    f"Your 'tensors' list is {got['tensors']}: one entry per tensor, in the order "
                    "given."
                ),
                expected=want["tensors"],
                got=got["tensors"],
            )
        if got["same_device"] != want["same_device"]:
            seen_on = sorted(set(want["model"]) | set(want["tensors"]))
            raise Fail(
                (
                    f"'same_device' came back {got['same_device']}, with the model and tensors on "
                    f"{seen_on}."
                ),
                expected=want["same_device"],
                got=got["same_device"],
                hint="Put the model's devices and the tensors' devices in one set: the same device "
                "means one element.",
            )
