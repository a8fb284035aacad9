"""Chapter 01's checks: a machine simulator, choose_device, gpu_names and make_batch.

The simulator makes torch's availability queries answer as on another machine; what the
learner's function returns there travels as data, and the judge compares it with what that
machine wants (the MACHINES table), never with anything the learner's process says it wants.
"""

from contextlib import contextmanager
from unittest import mock

import torch

from ..exercises.spec import Fail
from ..exercises.wire import TensorValue
from .base import Check, check, error_record, shown, type_name
from .rig import DeviceLog, made_elsewhere

# Machines a learner's code may meet; the simulator makes torch believe it runs on them.
MACHINES = {
    "CPU-only laptop": dict(gpus=[], mps=False),
    "Mac with Apple GPU": dict(gpus=[], mps=True),
    "1-GPU workstation": dict(gpus=["NVIDIA GeForce RTX 4090"], mps=False),
    "4-GPU server": dict(gpus=[f"NVIDIA A100-SXM4-80GB #{i}" for i in range(4)], mps=False),
}


@contextmanager
def simulated_machine(gpus=(), mps=False):
    """Make torch's availability queries answer as on another machine (no tensors are made)."""
    gpus = list(gpus)

    def device_name(device=None):
        index = (
            0
            if device is None
            else torch.device("cuda", device).index
            if isinstance(device, int)
            else (torch.device(device).index or 0)
        )
        if not gpus:
            raise RuntimeError("No CUDA GPUs are available")
        if not 0 <= index < len(gpus):
            raise AssertionError("Invalid device id")
        return gpus[index]

    accelerator = torch.device("cuda") if gpus else torch.device("mps") if mps else None
    patches = [
        mock.patch.object(torch.cuda, "is_available", lambda: bool(gpus)),
        mock.patch.object(torch.cuda, "device_count", lambda: len(gpus)),
        mock.patch.object(torch.cuda, "get_device_name", device_name),
        mock.patch.object(torch.backends.mps, "is_available", lambda: mps),
    ]
    if hasattr(torch, "accelerator"):
        patches += [
            mock.patch.object(torch.accelerator, "is_available", lambda: accelerator is not None),
            mock.patch.object(
                torch.accelerator, "current_accelerator", lambda *a, **k: accelerator
            ),
            mock.patch.object(torch.accelerator, "device_count", lambda: len(gpus) or int(mps)),
        ]
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in reversed(patches):
            p.stop()


def expected_device_type(machine: dict) -> str:
    return "cuda" if machine["gpus"] else "mps" if machine["mps"] else "cpu"


# ---------------------------------------------------------------- choose_device
# (device the machine wants, device the code chose) -> what to tell the learner
CHOICE_HINTS = {
    (
        "cuda",
        "cpu",
    ): (
        "`torch.cuda.is_available()` is True here: a CUDA GPU is waiting and the cpu leaves it "
        "idle."
    ),
    ("cuda", "mps"): "Ask for CUDA first: this machine has an NVIDIA GPU and no Apple GPU.",
    (
        "mps",
        "cpu",
    ): "There is no CUDA GPU on a Mac, but `torch.backends.mps.is_available()` is True: "
    "the cpu leaves Apple's GPU idle.",
    (
        "mps",
        "cuda",
    ): "A Mac has no CUDA GPU: ask `torch.cuda.is_available()` before choosing cuda, then try mps.",
    (
        "cpu",
        "cuda",
    ): (
        "This machine has no CUDA GPU: never hard-code `cuda`; ask `torch.cuda.is_available()` "
        "first."
    ),
    (
        "cpu",
        "mps",
    ): "This machine has no Apple GPU either: ask `torch.backends.mps.is_available()` before mps.",
}
DEFAULT_CHOICE_HINT = (
    "Ask `torch.cuda.is_available()` first, then `torch.backends.mps.is_available()`, else cpu."
)

NOT_A_DEVICE_HINTS = {  # the type choose_device returned instead -> what to tell the learner
    "str": "Wrap the name in `torch.device(...)`. A plain string works in some places but not all.",
    "NoneType": (
        "`torch.accelerator.current_accelerator()` is None on a machine without an accelerator: "
        "fall back to the cpu device there."
    ),
}


def judge_choice(got, want: str, where: str) -> None:
    """Fail unless `got` (observed) is a torch.device of type `want`."""
    if not isinstance(got, torch.device):
        kind = type_name(got)
        raise Fail(
            f"{where}, choose_device() returned a {kind}, not a torch.device.",
            expected="a torch.device",
            got=shown(got),
            hint=NOT_A_DEVICE_HINTS.get(
                kind, "Return a `torch.device`, made with `torch.device(...)`."
            ),
        )
    if got.type != want:
        raise Fail(
            f"{where}, your choose_device() returned {got}.",
            expected=f"a device of type {want}",
            got=repr(got),
            hint=CHOICE_HINTS.get((want, got.type), DEFAULT_CHOICE_HINT),
        )


def device_here() -> str:
    """The device type torch can use on this machine: cuda, else mps, else cpu (chapter 01)."""
    from ..device import gpu_available

    return "cuda" if torch.cuda.is_available() else "mps" if gpu_available() else "cpu"


@check
class Choice(Check):
    """On a simulated machine, `candidate()` returns
    a torch.device of the type that machine wants."""

    machine: str

    def run(self, candidate):
        with simulated_machine(**MACHINES[self.machine]):
            return candidate()

    def judge(self, seen, ref):
        judge_choice(seen, expected_device_type(MACHINES[self.machine]), f"On a {self.machine}")


@check
class ChoiceHere(Check):
    """On the real machine, the choice matches what
    torch can use here (seen from the judge's side)."""

    def run(self, candidate):
        return candidate()

    def reference(self, solution):
        return device_here()

    def judge(self, seen, ref):
        judge_choice(seen, ref, "On this machine")


# ---------------------------------------------------------------- gpu_names
def compare_names(got, want, where) -> None:
    if not isinstance(got, list):
        raise Fail(
            f"{where}, gpu_names() returned a {type_name(got)}; it must return a list.",
            expected="a list of str",
            got=shown(got),
        )
    if len(got) != len(want):
        raise Fail(
            (
                f"{where}, gpu_names() returned {len(got)} name(s); the machine has {len(want)} "
                "GPU(s)."
            ),
            expected=want,
            got=got,
            hint=(
                "One name per GPU: loop over `range(torch.cuda.device_count())` (indices start at "
                "0)."
            ),
        )
    if got != want:
        raise Fail(
            f"{where}, the names are not the GPUs' names in index order.",
            expected=want,
            got=got,
            hint="`torch.cuda.get_device_name(i)` names GPU i; keep the order of the indices.",
        )


CRASH_HINT = (
    "With no GPU the list is empty; `get_device_name(0)` raises there, so ask "
    "`torch.cuda.device_count()` (or `is_available()`) before naming any GPU."
)


def _names_run(candidate, machine=None) -> dict:
    try:
        if machine is None:
            return {"names": candidate()}
        with simulated_machine(**MACHINES[machine]):
            return {"names": candidate()}
    except Exception as err:  # a crash is feedback that says what it did
        return {"crash": error_record(err, candidate)}


@check
class Names(Check):
    """gpu_names() on a simulated machine lists its CUDA GPUs in order."""

    machine: str

    def run(self, candidate):
        return _names_run(candidate, self.machine)

    def judge(self, seen, ref):
        where = f"On a {self.machine}"
        if "crash" in seen:
            raise Fail(
                (
                    f"{where}, gpu_names() crashed: {seen['crash']['type']}: "
                    f"{seen['crash']['message']}"
                ),
                hint=CRASH_HINT,
            )
        compare_names(seen["names"], MACHINES[self.machine]["gpus"], where)


@check
class NamesHere(Check):
    """gpu_names() on the real machine."""

    def run(self, candidate):
        return _names_run(candidate)

    def reference(self, solution):
        return (
            [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            if torch.cuda.is_available()
            else []
        )

    def judge(self, seen, ref):
        if "crash" in seen:
            raise Fail(
                (
                    f"On this machine gpu_names() crashed: {seen['crash']['type']}: "
                    f"{seen['crash']['message']}"
                ),
                hint="An empty list is the right answer on a machine without a CUDA GPU.",
            )
        compare_names(seen["names"], ref, "On this machine")


# ---------------------------------------------------------------- make_batch
RNG_SEED, RNG_PROBE = 1234, 4


def _after_rng(call):
    """call() from a fixed CPU random state; then what
    the CPU generator gives next (its fingerprint)."""
    with torch.random.fork_rng():
        torch.manual_seed(RNG_SEED)
        result = call()
        return result, torch.rand(RNG_PROBE)


@check
class Batch(Check):
    """make_batch returns the right tensor, made on `device` without a CPU detour.

    A detour shows twice: in the operations a dispatch log saw (in-process), and in the CPU's
    random generator, which a tensor drawn on the CPU first has moved on (the judge knows where
    it must stand, from the same seed)."""

    batch_size: int
    n_features: int
    device: object
    detour_check: bool = True

    def run(self, candidate):
        with DeviceLog() as log:
            got, after = _after_rng(
                lambda: candidate(self.batch_size, self.n_features, self.device)
            )
        return {"got": got, "ops": log.ops[:200], "rng_after": after}

    def reference(self, solution):
        return _after_rng(lambda: None)[1]

    def judge(self, seen, ref):
        got, device = seen["got"], torch.device(self.device)
        b, n = self.batch_size, self.n_features
        if not isinstance(got, TensorValue):
            raise Fail(
                f"make_batch returned a {type_name(got)}, not a tensor.",
                expected="torch.Tensor",
                got=type_name(got),
            )
        if got.shape != (b, n):
            raise Fail(
                f"make_batch({b}, {n}, ...) returned shape {got.shape}.",
                expected=(b, n),
                got=got.shape,
                hint="The batch dimension comes first.",
            )
        if got.device_type != device.type:
            raise Fail(
                f"The batch is not on {self.device}: it came back on {got.device}.",
                expected=str(self.device),
                got=got.device,
                hint="Pass `device=device` to the factory function.",
            )
        if got.dtype != "float32":
            raise Fail(
                f"The batch came back as torch.{got.dtype}; use the default float32.",
                expected="torch.float32",
                got=f"torch.{got.dtype}",
            )
        if not self.detour_check or device.type == "cpu":
            return
        detour = made_elsewhere(seen["ops"], device, got.shape)
        drew = not (
            isinstance(seen["rng_after"], TensorValue)
            and seen["rng_after"].values is not None
            and torch.equal(seen["rng_after"].values, ref)
        )
        if detour or drew:
            raise Fail(
                "The batch was first made on another device and then copied.",
                expected=f"one operation that creates it on {self.device}",
                got=f"{detour[0]} made it on the CPU first"
                if detour
                else "its random numbers were drawn on the CPU first",
                hint=(
                    "A factory function given `device=` creates the tensor there: no CPU copy, no "
                    "transfer."
                ),
            )


@check
class Normal(Check):
    """The values look standard-normal (mean near 0,
    spread near 1) on the CPU; judged on the values."""

    batch_size: int = 2000
    n_features: int = 8

    def run(self, candidate):
        return candidate(self.batch_size, self.n_features, "cpu")

    def judge(self, seen, ref):
        if not isinstance(seen, TensorValue) or seen.values is None or seen.numel() < 2:
            raise Fail(
                f"make_batch returned {shown(seen)}, not a tensor of values on the CPU.",
                expected="torch.Tensor",
                got=type_name(seen),
            )
        values = seen.values.double()
        mean, std = values.mean().item(), values.std().item()
        if not (abs(mean) < 0.1 and 0.9 < std < 1.1):
            raise Fail(
                f"The values have mean {mean:.2f} and spread {std:.2f}: not standard-normal noise.",
                expected="mean near 0, standard deviation near 1",
                got=f"mean {mean:.2f}, std {std:.2f}",
                hint=(
                    "`torch.randn` draws standard-normal noise; `empty`, `zeros` and `rand` do not."
                ),
            )
