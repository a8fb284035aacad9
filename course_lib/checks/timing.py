"""Chapter 05's time_it checks: a simulated GPU clock.

The learner's timer reads the simulation's clock; its verdict is the number it returns, against
that clock's own account of the timed calls (warm-up, synchronize, median).
"""

import math
import statistics
import time
from contextlib import ExitStack, contextmanager
from unittest import mock

import torch

from ..exercises.spec import Fail
from ..exercises.wire import TensorValue
from .base import (
    Check,
    attempt,
    check,
    number,
    raised,
    shown,
    tensor_fail,
)
from .rig import checker_threads


# ---------------------------------------------------------------- time_it: a simulated GPU clock
class SimulatedGPU:
    """A clock and a GPU queue, simulated: the learner's timer reads this clock, not the real one.

    Calling the timed function costs `host_ms` of Python time and queues `gpu_ms` of device work
    that runs on after the call returns; only a synchronize() waits for it. Call 0 is a slow
    first call (its GPU work `first_ms`), as real first calls are. With `cuda=False` the device
    being timed is the CPU: the work happens during the call, and any CUDA synchronize is logged
    in `cuda_calls`; `machine_has_cuda` says whether the simulated machine has a GPU at all.
    """

    def __init__(
        self,
        gpu_ms,
        host_ms: float = 0.2,
        first_ms: float = 400.0,
        cuda: bool = True,
        machine_has_cuda: bool = None,
    ):
        self.gpu_ms, self.host_ms, self.first_ms, self.cuda = list(gpu_ms), host_ms, first_ms, cuda
        self.machine_has_cuda = cuda if machine_has_cuda is None else machine_has_cuda
        self.now, self.gpu_free_at = 1000.0, 1000.0  # seconds
        self.calls, self.syncs, self.events, self.cuda_calls = 0, 0, [], []

    def work(self) -> None:
        """The function being timed."""
        i = self.calls
        self.calls += 1
        self.events.append(("call", i))
        self.now += self.host_ms / 1000
        gpu = self.first_ms if i == 0 else self.gpu_ms[(i - 1) % len(self.gpu_ms)]
        if self.cuda:
            self.gpu_free_at = max(self.now, self.gpu_free_at) + gpu / 1000
        else:
            self.now += gpu / 1000  # on the CPU the work happens during the call

    def synchronize(self, device=None, *args, **kwargs) -> None:
        if not self.cuda:
            self.cuda_calls.append(device)
            if not self.machine_has_cuda:
                raise AssertionError(
                    "Torch not compiled with CUDA enabled"
                )  # what a CPU-only machine says
            if device is not None and torch.device(device).type != "cuda":
                raise ValueError(
                    f"Expected a cuda device, but got: {torch.device(device)}"
                )  # what torch says
            return  # a GPU machine waits for its (idle) GPU: not the device timed
        self.syncs += 1
        self.events.append(("sync",))
        self.now = max(self.now, self.gpu_free_at)

    def seconds(self) -> float:
        return self.now

    def ns(self) -> int:
        return int(self.now * 1e9)

    def call_ms(self, i: int) -> float:
        """What call i really costs, device work included."""
        return self.host_ms + (self.first_ms if i == 0 else self.gpu_ms[(i - 1) % len(self.gpu_ms)])


CLOCKS = {
    "perf_counter": "seconds",
    "monotonic": "seconds",
    "time": "seconds",
    "perf_counter_ns": "ns",
    "monotonic_ns": "ns",
    "time_ns": "ns",
}


@contextmanager
def simulated(gpu: SimulatedGPU, namespace: dict):
    """Swap the clocks, torch.cuda.synchronize and
    is_available for the simulation's, then restore."""
    real = {getattr(time, name): getattr(gpu, kind) for name, kind in CLOCKS.items()}
    with ExitStack() as stack:
        for name, kind in CLOCKS.items():
            stack.enter_context(mock.patch.object(time, name, getattr(gpu, kind)))
        import timeit

        stack.enter_context(mock.patch.object(timeit, "default_timer", gpu.seconds))
        stack.enter_context(mock.patch.object(torch.cuda, "synchronize", gpu.synchronize))
        stack.enter_context(
            mock.patch.object(torch.cuda, "is_available", lambda: gpu.machine_has_cuda)
        )
        if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "synchronize"):
            stack.enter_context(
                mock.patch.object(torch.accelerator, "synchronize", gpu.synchronize)
            )
        for name, value in list(
            namespace.items()
        ):  # `from time import perf_counter` in the notebook
            fake = next((f for clock, f in real.items() if value is clock), None)
            if fake is not None:
                stack.enter_context(mock.patch.dict(namespace, {name: fake}))
        yield gpu


def _cuda_on_cpu_fail(gpu: SimulatedGPU, where: str) -> Fail:
    machine = (
        "on a machine without CUDA that raises (it did here)"
        if not gpu.machine_has_cuda
        else "on a GPU machine it waits for the GPU, which is not the device you are timing "
        "(and given a CPU device it raises)"
    )
    return Fail(
        f"While timing a CPU device your function called `torch.cuda.synchronize()` "
        f"{len(gpu.cuda_calls)} time(s){where}: {machine}.",
        got=f"{len(gpu.cuda_calls)} CUDA synchronize call(s) for device cpu",
        hint=(
            "Whether to synchronize depends on the device being timed (look at its `.type`), not "
            "on whether the machine has a GPU."
        ),
    )


def _timed_calls(gpu: SimulatedGPU, repeats: int) -> list:
    """What a correct timer reports per timed call, device work included: `repeats` calls after the
    warm-up (the pattern repeats every `repeats` calls, so more warm-ups change nothing)."""
    return [gpu.call_ms(i) for i in range(1, repeats + 1)]


def _diagnose_time(got: float, gpu: SimulatedGPU, repeats: int, where: str):
    per_call = _timed_calls(gpu, repeats)
    want = statistics.median(per_call)
    if math.isclose(got, want, rel_tol=1e-6):
        return
    # without a synchronize after the warm-up, the first
    # timed call also waits for the warm-up's GPU work
    first_spill = [gpu.first_ms + per_call[0] - gpu.host_ms] + per_call[1:]
    median_hint = (
        "The median is the middle value of the sorted times (the statistics module computes it)."
    )
    spill_hint = "Wait for the device after the warm-up call too, before the first clock reading."
    known = [
        (want / 1000, "in seconds, not milliseconds", "`time.perf_counter()` counts seconds."),
        (statistics.mean(per_call), "the mean, which one slow run pulls up", median_hint),
        (min(per_call), "the fastest run, not the median", median_hint),
        (
            statistics.median(first_spill),
            "too high: the first timed run still waited for the warm-up's GPU work",
            spill_hint,
        ),
        (
            statistics.mean(first_spill),
            "too high: the first timed run still waited for the warm-up's GPU work",
            spill_hint,
        ),
    ]
    for value, problem, hint in known:
        if math.isclose(got, value, rel_tol=1e-6):
            raise Fail(
                f"The time you returned is {problem}{where}.",
                expected=f"{want:.4f} ms",
                got=f"{got:.4f}",
                hint=hint,
            )
    raise Fail(
        f"The time you returned is not the median of the timed runs{where}.",
        expected=f"{want:.4f} ms",
        got=f"{got:.4f}",
        hint="Read the clock right before and right after each call (after waiting for "
        "the device), and return the median in milliseconds.",
    )


@check
class TimeIt(Check):
    """time_it on a simulated GPU (or CPU) with these per-call times: the number it returns, against
    the simulation's own clock; the calls it made (CUDA ones on a CPU device) as the simulation saw
    them."""

    gpu_ms: list
    repeats: int
    device: object
    where: str = ""
    machine_has_cuda: bool = None

    def _gpu(self) -> SimulatedGPU:
        return SimulatedGPU(
            self.gpu_ms,
            cuda=torch.device(self.device).type == "cuda",
            machine_has_cuda=self.machine_has_cuda,
        )

    def run(self, candidate):
        gpu = self._gpu()

        def fn():  # the function being timed; the simulation stays out of the learner's reach
            gpu.work()

        with simulated(gpu, getattr(candidate, "__globals__", {})), checker_threads():
            result, error = attempt(lambda: candidate(fn, self.device, self.repeats), candidate)
        return {
            "result": result,
            "error": error,
            "calls": gpu.calls,
            "syncs": gpu.syncs,
            "cuda_calls": len(gpu.cuda_calls),
        }

    def judge(self, seen, ref):
        gpu, where, repeats = self._gpu(), self.where, self.repeats
        if seen["cuda_calls"]:
            gpu.cuda_calls = [None] * seen["cuda_calls"]
            raise _cuda_on_cpu_fail(gpu, where)
        if seen["error"] is not None:
            raise raised(seen["error"])
        result = seen["result"]
        if isinstance(result, TensorValue):
            raise tensor_fail(result, "the time")
        got = number(result)
        if got is None:
            raise Fail(
                f"Return one number, the median in milliseconds{where}.",
                expected="a float",
                got=shown(result),
            )
        want = statistics.median(_timed_calls(gpu, repeats))
        if math.isclose(got, want, rel_tol=1e-6):
            return
        calls = seen["calls"] if isinstance(seen["calls"], int) else 0
        if calls < repeats:
            raise Fail(
                f"fn was called {calls} times for repeats={repeats}{where}.",
                expected=f"1 warm-up call + {repeats} timed calls",
                got=f"{calls} calls",
            )
        if calls == repeats:
            raise Fail(
                (
                    f"No warm-up: the slow first call (here {gpu.call_ms(0):.0f} ms) was among "
                    f"the timed runs{where}."
                ),
                expected=f"{repeats + 1} calls (1 untimed warm-up)",
                got=f"{calls} calls",
                hint=(
                    "Call `fn()` once before timing: the first call pays one-off costs (CUDA "
                    "start-up, kernel selection, compilation)."
                ),
            )
        if gpu.cuda and not seen["syncs"]:
            raise Fail(
                (
                    "You never synchronized: the clock measured how long it took to LAUNCH the "
                    f"GPU work, not to do it{where}."
                ),
                got=f"a median of {got:.3f} ms, only the launch time",
                hint=(
                    "CUDA runs asynchronously: the clock may be read only after the GPU has "
                    "finished its queue (`torch.cuda.synchronize` waits for that)."
                ),
            )
        _diagnose_time(got, gpu, repeats, where)
