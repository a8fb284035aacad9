"""Chapter 05's checks: amp_train_step (autocast and GradScaler on the CPU) and time_it (a simulated
GPU clock).

amp_train_step runs on chapter 03's rig without dropout, one batch, the previous batch's gradients
still there (0.01 everywhere). Each test judges a value the judge recomputes from the same start:
the first layer's output under autocast, the first weight's gradient right after backward (scaled
or not, stale or not), the weights and the scaler's state after the step, the returned loss.
What the spies logged (which autocast was entered, the order of the scaler's calls) only words
the feedback. time_it's verdict is the number it returns, against the simulation's own clock.
phase_ms reads the events of a real profile the judge makes and sends as the test's input; its
totals are judged against what the profiler itself added up (key_averages) for that profile.
"""

import copy
import math
import statistics
import time
import warnings
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from unittest import mock

import torch
from torch import nn
from torch.profiler import record_function
from torch.utils.data import DataLoader, TensorDataset

from .. import profiling, training
from ..exercises.spec import Fail
from ..exercises.wire import TensorValue, roundtrip
from .base import (
    Check,
    attempt,
    check,
    matches,
    number,
    same_values,
    shown,
    tensor_fail,
    type_name,
)
from .rig import checker_threads, first_linear, make_rig


# ------------------------------------------------------------ amp_train_step: the rig and its spies
@dataclass
class AmpTrace:
    """What the probes saw during one call of amp_train_step."""

    events: list = field(
        default_factory=list
    )  # scale, backward, backward(scaled), unscale_, step...
    layer_dtypes: list = field(default_factory=list)
    losses: list = field(default_factory=list)  # unscaled loss values
    stale_at_backward: list = field(default_factory=list)
    autocasts: list = field(default_factory=list)  # each autocast entered: AutocastEntry
    active_at_forward: list = field(
        default_factory=list
    )  # per layer call: {device type: dtype} switched on
    active_at_loss: list = field(default_factory=list)  # per criterion call: what was switched on
    first_output: torch.Tensor = None  # the first layer's output at its first call (values)
    first_grad: torch.Tensor = (
        None  # the first weight's .grad right after the first backward (values)
    )


@dataclass
class AutocastEntry:
    """One autocast context the learner entered: for
    which device type, switched on or not, which dtype."""

    spelling: str
    device_type: str
    enabled: bool
    dtype: torch.dtype


AUTOCAST_DEVICE_TYPES = ("cpu", "cuda")


def autocast_state() -> dict:
    """{device type: dtype} for every device type autocast is switched on for right now."""
    return {
        t: torch.get_autocast_dtype(t)
        for t in AUTOCAST_DEVICE_TYPES
        if torch.is_autocast_enabled(t)
    }


@contextmanager
def recording_autocast(trace: AmpTrace):
    """Log every autocast context entered (any spelling:
    they all share torch.autocast's __enter__)."""
    base = torch.amp.autocast_mode.autocast
    real_enter = base.__enter__

    def enter(self):
        spelling = (
            "torch.cuda.amp.autocast"
            if isinstance(self, torch.cuda.amp.autocast)
            else "torch.autocast"
        )
        trace.autocasts.append(
            AutocastEntry(spelling, self.device, bool(self._enabled), self.fast_dtype)
        )
        return real_enter(self)

    with mock.patch.object(base, "__enter__", enter):
        yield


class ScalerSpy:
    """A real torch.amp.GradScaler whose calls are logged; anything else passes through."""

    def __init__(self, real: torch.amp.GradScaler, trace: AmpTrace):
        self.real, self.trace, self.inside_step = real, trace, False

    def scale(self, outputs):
        self.trace.events.append("scale")
        scaled = self.real.scale(outputs)
        if isinstance(scaled, torch.Tensor) and scaled.requires_grad:
            scaled.register_hook(lambda g: self.trace.events.append("backward(scaled)"))
        return scaled

    def unscale_(self, optimizer):
        self.trace.events.append("unscale_")
        return self.real.unscale_(optimizer)

    def step(self, optimizer, *args, **kwargs):
        self.trace.events.append("scaler.step")
        self.inside_step = True
        try:
            return self.real.step(optimizer, *args, **kwargs)
        finally:
            self.inside_step = False

    def update(self, new_scale=None):
        self.trace.events.append("update")
        return self.real.update(new_scale)

    def __getattr__(self, name):
        return getattr(self.real, name)


@dataclass
class AmpRig:
    model: nn.Module
    x: torch.Tensor
    y: torch.Tensor
    optimizer: torch.optim.Optimizer
    criterion: nn.Module
    scaler: ScalerSpy
    trace: AmpTrace
    losses: list = field(default_factory=list)  # the criterion's probe: unscaled loss values
    error: dict = None

    def run(self, candidate, device_type="cpu", dtype=torch.bfloat16):
        """Call the learner's step; an exception is
        kept in `error` (the values are judged first)."""
        with (
            torch.random.fork_rng(),
            checker_threads(),
            recording_autocast(self.trace),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")  # judged by what autocast did, never by what it warned
            torch.manual_seed(1)
            result, self.error = attempt(
                lambda: candidate(
                    self.model,
                    self.x,
                    self.y,
                    self.optimizer,
                    self.criterion,
                    self.scaler,
                    device_type,
                    dtype,
                ),
                candidate,
            )
        return result

    @property
    def scale(self) -> float:
        return self.scaler.real._init_scale

    def parameters(self) -> list:
        return [p.detach().clone() for p in self.model.parameters()]

    def scaler_state(self) -> dict:
        tracker = getattr(self.scaler.real, "_growth_tracker", None)
        return {
            "tracker": None if tracker is None else int(tracker),
            "scale": float(self.scaler.real.get_scale()),
        }


def make_amp_rig(init_scale: float = 2.0**16, enabled: bool = True, seed: int = 0) -> AmpRig:
    """Chapter 03's tiny probed model and loss (no dropout),
    plus dtype probes, stale gradients and a spied scaler."""
    rig, trace = make_rig("cpu", seed=seed, dropout=0.0), AmpTrace()
    net = rig.model
    first = first_linear(net)

    def at_layer(module, inputs, output):
        trace.layer_dtypes.append(output.dtype)
        trace.active_at_forward.append(autocast_state())
        if module is first and trace.first_output is None:
            trace.first_output = output.detach().clone()

    for layer in (m for m in net.modules() if isinstance(m, nn.Linear)):
        layer.register_forward_hook(at_layer)

    def at_backward(fresh):
        old = first.weight.grad
        trace.events.append("backward")
        trace.stale_at_backward.append(old is not None and bool(old.any()))

    def after_accumulation(param):
        if trace.first_grad is None:
            trace.first_grad = param.grad.detach().clone()

    first.weight.register_hook(at_backward)
    first.weight.register_post_accumulate_grad_hook(after_accumulation)
    rig.criterion.register_forward_pre_hook(
        lambda module, args: trace.active_at_loss.append(autocast_state())
    )
    scaler = ScalerSpy(torch.amp.GradScaler("cpu", init_scale=init_scale, enabled=enabled), trace)
    rig.optimizer.register_step_pre_hook(
        lambda opt, a, k: trace.events.append(
            "optimizer.step" + (" (by scaler)" if scaler.inside_step else "")
        )
    )
    for p in rig.model.parameters():  # the previous batch's gradients, still there
        p.grad = torch.full_like(p, STALE)
    x, y = next(iter(rig.loader))
    amp = AmpRig(rig.model, x, y, rig.optimizer, rig.criterion, scaler, trace)
    amp.losses = rig.trace.losses
    return amp


STALE, LR = 0.01, 0.1  # the gradients left over in every parameter; the rig's learning rate
FORWARDS = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": None}


def amp_reference(init_scale: float = 2.0**16) -> dict:
    """What one forward and backward give from the rig's start, for each precision of the forward:
    the first layer's output, the loss, every parameter's (unscaled) gradient. Trusted code only."""
    out = {"start": make_amp_rig(init_scale).parameters(), "scale": init_scale, "variants": {}}
    for name, dtype in FORWARDS.items():
        rig = make_amp_rig(init_scale)
        with torch.random.fork_rng(), checker_threads(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(1)
            rig.model.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=dtype) if dtype is not None else nullcontext():
                loss = nn.functional.cross_entropy(rig.model(rig.x), rig.y)
            loss.backward()
        out["variants"][name] = {
            "first_output": rig.trace.first_output,
            "loss": loss.item(),
            "grads": [p.grad.detach().clone() for p in rig.model.parameters()],
        }
    return roundtrip(out)


def _gradients(ref, scaled: bool, stale: bool) -> dict:
    """{forward precision: [each parameter's .grad after backward]} for a backward scaled or not,
    onto stale gradients or clean ones."""
    s = ref["scale"] if scaled else 1.0
    return {
        name: [(STALE if stale else 0.0) + s * g.values for g in v["grads"]]
        for name, v in ref["variants"].items()
    }


STEP_MODES = ("scaler", "direct", "both", "none")


def _after_step(start, grads, scale, mode):
    """The weights after `mode`: the scaler's step (grads divided by the scale),
    optimizer.step on the raw grads, both (the scaler's, then again directly), or no step."""
    factor = {"scaler": LR / scale, "direct": LR, "both": 2 * LR / scale, "none": 0.0}[mode]
    return [w.values - factor * g for w, g in zip(start, grads)]


def _step_match(ref, params, tracker) -> tuple:
    """(step mode, scaled backward) whose weights equal `params`, or (None, None). The scaler's
    growth tracker tells apart what the weights alone cannot: it exists only once `scaler.scale` ran
    (its step refuses to run before), and is 1 after a step and an update. After an unscaled
    backward the scaler's step barely moves the weights: it is preferred to "no step" only when the
    update ran."""
    updated = tracker == 1
    order = [
        (m, s)
        for m in STEP_MODES
        for s in (True, False)
        if tracker is not None or m in ("direct", "none")
    ]
    if not updated and ("scaler", False) in order:
        order.remove(("scaler", False))
        order.append(("scaler", False))
    for mode, scaled in order:
        for stale in (False, True):
            for grads in _gradients(ref, scaled, stale).values():
                if matches(params, _after_step(ref["start"], grads, ref["scale"], mode)):
                    return mode, scaled
    return None, None


def _raised(error) -> Fail:
    return Fail(f"Your code raised {error['text']}")


def _where_autocast(rig: AmpRig) -> dict:
    """Whether autocast was on at each layer call and at each criterion call, as data."""
    shown_ = lambda states: [bool(a) for a in states][:20]
    return {
        "forward_on": shown_(rig.trace.active_at_forward),
        "loss_on": shown_(rig.trace.active_at_loss),
    }


def _loss_outside(seen) -> bool:
    """The model ran under autocast, the loss did not: the loss line is after the `with` block."""
    where = seen.get("autocast_at", {})
    forward, loss = where.get("forward_on", []), where.get("loss_on", [])
    return any(forward) and bool(loss) and not any(loss)


def _loss_outside_fail() -> Fail:
    return Fail(
        (
            "The loss was computed outside the autocast block: the model ran under autocast, "
            "`criterion(logits, y)` did not. So cross_entropy computed in bfloat16, the dtype of "
            "the logits, instead of the float32 autocast chooses for losses, and the gradients, "
            "the step and the loss you return all carry that rounding."
        ),
        got="the loss line after the `with` block",
        hint=(
            "Move the loss line into the autocast block, next to the forward pass; only the "
            "backward and the scaler's calls come after the block."
        ),
    )


def _scaler_said(error) -> str:
    """GradScaler's own complaint, if it raised one, for the feedback."""
    if error is not None and error["type"] == "AssertionError":
        return f" (PyTorch's GradScaler also raised: {error['message'].splitlines()[0]})"
    return ""


def _other_device(entries, device_type: str) -> str:
    return next((e.device_type for e in entries if e.device_type != device_type), "")


# Why the forward pass ran in float32, judged from what autocast did: (test(entries, active,
# device_type), message, hint). `entries`: the autocast contexts entered; `active`: what was
# switched on while the layers ran. The first row that matches is the feedback.
FLOAT32_FORWARD = (
    (
        lambda entries, active, dt: any(e.spelling == "torch.cuda.amp.autocast" for e in entries),
        (
            "You used `torch.cuda.amp.autocast()`, the deprecated spelling: it only ever switches "
            "autocast on for CUDA, and the model ran on '{dt}' here, so the forward ran in "
            "float32."
        ),
        "`torch.autocast` takes the device type as its first argument and works on every device.",
    ),
    (
        lambda entries, active, dt: _other_device(entries, dt) != "",
        (
            "Your autocast was for '{other}', but the model and the data are on '{dt}' here: "
            "autocast for one device type leaves another's operations alone, so the forward ran "
            "in float32."
        ),
        (
            "Use the device_type your function is given instead of a device name written into the "
            "code."
        ),
    ),
    (
        lambda entries, active, dt: entries and not any(e.enabled for e in entries),
        "autocast was entered switched off (`enabled=False`), so the forward ran in float32.",
        "An autocast context does nothing unless it is enabled (the default).",
    ),
    (
        lambda entries, active, dt: entries and not any(active),
        (
            "autocast was entered, but not while the model ran: the forward happened outside the "
            "`with` block."
        ),
        "The forward pass and the loss both belong inside the autocast block.",
    ),
    (
        lambda entries, active, dt: True,
        "The forward pass ran in float32: no autocast was on while the model ran.",
        "Autocast is a context manager: the forward pass and the loss run inside its `with` block.",
    ),
)


def _no_autocast_fail(entries, active, dtype, device_type: str = "cpu") -> Fail:
    other = _other_device(entries, device_type)
    for test, message, hint in FLOAT32_FORWARD:
        if test(entries, active, device_type):
            return Fail(
                message.format(dt=device_type, other=other),
                expected=f"layers computing in {dtype}",
                got="float32",
                hint=hint,
            )


def _entries(trace: AmpTrace) -> list:
    return [
        [e.spelling, e.device_type, e.enabled, str(e.dtype).replace("torch.", "")]
        for e in trace.autocasts
    ]


@check
class Autocast(Check):
    """The forward ran under autocast with the given dtype: the first layer's output (values and
    dtype) must be what autocast for bfloat16 gives on this input."""

    def run(self, candidate):
        rig = make_amp_rig()
        rig.run(candidate)
        t = rig.trace
        return {
            "first_output": t.first_output,
            "error": rig.error,
            "entries": _entries(t)[:20],
            "active": [
                sorted(str(v).replace("torch.", "") for v in a.values())
                for a in t.active_at_forward
            ][:20],
            "dtypes": [str(d).replace("torch.", "") for d in t.layer_dtypes][:20],
        }

    def reference(self, solution):
        return amp_reference()

    def judge(self, seen, ref):
        got, variants = seen["first_output"], ref["variants"]
        if got is None:
            if seen["error"] is not None:
                raise _raised(seen["error"])
            raise Fail("Your function never called the model.")
        if same_values(got, variants["bfloat16"]["first_output"], atol=0, rtol=0):
            return
        if same_values(got, variants["float32"]["first_output"], atol=1e-6):
            entries = [AutocastEntry(*e) for e in seen["entries"]]
            active = [{t: t for t in a} for a in seen["active"]]
            raise _no_autocast_fail(entries, active, torch.bfloat16)
        dtypes = sorted(
            set(seen["dtypes"]) | ({got.dtype} if isinstance(got, TensorValue) else set())
        )
        raise Fail(
            "Autocast ran, but not with the dtype you were given.",
            expected="torch.bfloat16",
            got=", ".join(f"torch.{d}" for d in dtypes),
            hint=(
                "The dtype argument says which low precision to use; a dtype written into the "
                "code ignores it."
            ),
        )


@check
class ScaledBackward(Check):
    """Gradients cleared, backward on the scaled loss: the first weight's gradient right after
    backward must be the scale times this batch's gradient (with whatever forward precision)."""

    def run(self, candidate):
        rig = make_amp_rig()
        rig.run(candidate)
        return {
            "grad": rig.trace.first_grad,
            "events": rig.trace.events[:40],
            "error": rig.error,
            "autocast_at": _where_autocast(rig),
        }

    def reference(self, solution):
        return amp_reference()

    def judge(self, seen, ref):
        got, events = seen["grad"], seen["events"]
        if got is None:
            if seen["error"] is not None:
                raise _raised(seen["error"])
            raise Fail(
                "No backward pass reached the model's weights.",
                hint="The gradients come from a backward pass that starts at the (scaled) loss.",
            )
        matches = lambda scaled, stale: any(
            isinstance(got, TensorValue)
            and got.values is not None
            and got.shape == tuple(g[0].shape)
            and torch.allclose(got.values, g[0], atol=1e-6, rtol=1e-5)
            for g in _gradients(ref, scaled, stale).values()
        )
        if matches(True, False):
            return
        if _loss_outside(seen):
            raise _loss_outside_fail()
        if matches(False, False) or matches(False, True):
            what = (
                "The scaler never saw the loss"
                if "scale" not in events
                else (
                    "`scaler.scale(loss)` was computed, but `backward()` started from the loss "
                    "itself"
                )
            )
            raise Fail(
                (
                    f"{what}: `backward()` ran on the unscaled loss. With float16, small "
                    "gradients underflow to 0 in exactly that case, before the scaler can help."
                ),
                got="`backward()` on the unscaled loss" + _scaler_said(seen["error"]),
                hint=(
                    f"The scaler multiplies the loss (by {ref['scale']:g} here) BEFORE backward, "
                    "so the gradients are big enough for float16; backward must start from what "
                    "the scaler returns."
                ),
            )
        if matches(True, True):
            raise Fail(
                (
                    "Gradients accumulate: the previous batch's gradients were still there at "
                    "`backward()`."
                ),
                hint="Clear the old gradients first, as in every training step (chapter 03).",
            )
        raise Fail(
            "After backward, the gradients are not the scaled gradients of this batch's loss.",
            hint="Clear the old gradients, then backward on what `scaler.scale(loss)` returns.",
        )


# What went wrong with the update, judged from the order of calls: (test(events), message, got,
# hint). "direct": optimizer.step() called by the learner; "scaled": backward started from the
# scaled loss.
def _step_rows(scale: float):
    return (
        (
            lambda e: e["direct"] and not e["via_scaler"] and e["scaled"],
            (
                "`optimizer.step()` used the gradients as backward left them: multiplied by the "
                f"scale ({scale:g} here), so the update was {scale:g} times too big."
            ),
            "`optimizer.step()` after a scaled backward",
            (
                "Only the scaler knows the scale: its own step divides the gradients back, skips "
                "the update if any is inf or nan, and then calls `optimizer.step()` for you."
            ),
        ),
        (
            lambda e: e["direct"] and not e["via_scaler"],
            (
                "`optimizer.step()` was called directly, so the scaler never saw this step: it "
                "cannot skip a step whose gradients overflowed to inf or nan, and its scale never "
                "adapts."
            ),
            "`optimizer.step()` without the scaler",
            "The GradScaler steps the optimizer for you, after checking the gradients.",
        ),
        (
            lambda e: e["direct"] and e["via_scaler"],
            "The optimizer stepped twice: once through the scaler and once directly.",
            "two optimizer steps per call",
            "The scaler's step already calls `optimizer.step()`.",
        ),
        (
            lambda e: not e["via_scaler"],
            "The weights were never updated: nothing stepped the optimizer.",
            "no optimizer step",
            "After backward, the scaler steps the optimizer.",
        ),
        (
            lambda e: not e["update"],
            "The scaler's scale was never updated: after an overflow it would keep skipping steps.",
            "the scale left as it was",
            "A GradScaler step ends by updating the scale for the next step.",
        ),
        (
            lambda e: e["order"][-3:] != ["backward(scaled)", "scaler.step", "update"],
            "The scaler's calls are out of order.",
            None,
            "Backward on the scaled loss, then the scaler's step, then its update.",
        ),
    )


@check
class ScalerStep(Check):
    """The scaler steps the optimizer, then updates its scale: the weights after the step (against
    every way of stepping, from the same start) and the scaler's growth tracker decide."""

    def run(self, candidate):
        rig = make_amp_rig()
        rig.run(candidate)
        return {
            "params": rig.parameters(),
            **rig.scaler_state(),
            "events": rig.trace.events[:40],
            "error": rig.error,
            "autocast_at": _where_autocast(rig),
        }

    def reference(self, solution):
        return amp_reference()

    def judge(self, seen, ref):
        updated, error = seen["tracker"] == 1, seen["error"]
        mode, scaled = _step_match(ref, seen["params"], seen["tracker"])
        if mode is None:
            order = [
                e for e in seen["events"] if e in ("backward(scaled)", "scaler.step", "update")
            ]
            if error is not None:
                raise _raised(error)
            if _loss_outside(seen):
                raise _loss_outside_fail()
            raise Fail(
                "The scaler's calls are out of order.",
                got=", ".join(order) + _scaler_said(error),
                hint="Backward on the scaled loss, then the scaler's step, then its update.",
            )
        seen_as = dict(
            direct=mode in ("direct", "both"),
            via_scaler=mode in ("scaler", "both"),
            scaled=scaled and mode != "none",
            update=updated,
            order=["backward(scaled)", "scaler.step", "update"],
        )
        if mode == "scaler" and updated:
            return
        for test, message, got, hint in _step_rows(ref["scale"]):
            if test(seen_as):
                if (mode == "none" or "update" not in seen["events"]) and error is not None:
                    raise _raised(
                        error
                    )  # the learner's own exception, or the scaler refused to step
                raise Fail(message, got=(got or "") + _scaler_said(error), hint=hint)
        if error is not None:
            raise _raised(error)


@check
class ReturnsLoss(Check):
    """The step returns this step's (unscaled) loss as a Python float, against the judge's loss."""

    def run(self, candidate):
        rig = make_amp_rig()
        result = rig.run(candidate)
        return {
            "result": result,
            "error": rig.error,
            "losses": len(rig.losses),
            "autocast_at": _where_autocast(rig),
        }

    def reference(self, solution):
        return amp_reference()

    def judge(self, seen, ref):
        result, scale = seen["result"], ref["scale"]
        if seen["error"] is not None:
            raise _raised(seen["error"])
        if isinstance(result, TensorValue):
            raise tensor_fail(result, "the loss")
        if not isinstance(result, float):
            raise Fail(
                "Return the loss as a Python float.", expected="float", got=type_name(result)
            )
        if not seen["losses"]:
            raise Fail("Your function never called criterion(logits, y).")
        losses = [v["loss"] for v in ref["variants"].values()]
        if any(math.isclose(result, want, rel_tol=1e-3, abs_tol=1e-5) for want in losses):
            return
        want = ref["variants"]["bfloat16"]["loss"]
        if any(math.isclose(result, v * scale, rel_tol=1e-3) for v in losses):
            raise Fail(
                f"You returned the scaled loss (multiplied by the scaler's {scale:g}).",
                expected=f"{want:.6f}",
                got=f"{result:.6g}",
                hint=(
                    "The scaled loss exists only for backward; report the loss the criterion "
                    "computed."
                ),
            )
        if _loss_outside(seen):
            raise _loss_outside_fail()
        raise Fail(
            "The value you returned is not this step's loss.",
            expected=f"{want:.6f}",
            got=f"{result:.6f}",
        )


@check
class AmpMatchesReference(Check):
    """Same start, same batch: the learner's step and the exercise's reference solution (the answer
    key's, run by the judge) leave the same weights."""

    dtype: object
    init_scale: float
    enabled: bool
    where: str = ""

    def _weights(self, candidate) -> dict:
        rig = make_amp_rig(self.init_scale, self.enabled)
        rig.run(candidate, dtype=self.dtype)
        return {"params": rig.parameters(), "error": rig.error, "autocast_at": _where_autocast(rig)}

    def run(self, candidate):
        return self._weights(candidate)

    def reference(self, solution):
        return roundtrip(self._weights(solution)["params"]) if solution is not None else None

    def judge(self, seen, ref):
        if seen["error"] is not None:
            raise _raised(seen["error"])
        if ref is None or not same_values(seen["params"], ref, atol=1e-5):
            if _loss_outside(seen):
                raise _loss_outside_fail()
            raise Fail(
                f"After one step from the same start, your weights differ from the reference step's"
                f"{self.where}."
            )


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
            raise _raised(seen["error"])
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


# ---------------------------------------------------- phase_ms: a real trace, the profiler's totals
def tiny_profile(steps: int = 3, seed: int = 0, train: bool = True) -> tuple:
    """A real CPU profile of `steps` labelled steps of a tiny model (train: all four phases; else
    data and forward only, as an evaluation loop): (its trace events, the profiler's own ms per
    phase) (chapter 05)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer, criterion = torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss()
    loader = DataLoader(
        TensorDataset(torch.randn(16 * steps, 12), torch.randint(0, 4, (16 * steps,))),
        batch_size=16,
    )

    def step(x, y):
        training.train_step(model, optimizer, criterion, x, y, phase=record_function)

    def evaluate(x, y):
        with torch.no_grad(), record_function("forward"):
            criterion(model(x), y)

    with checker_threads():
        prof, _ = profiling.profile_training(
            step if train else evaluate, loader, "cpu", steps=steps
        )
    return profiling.events_of(prof), profiling.label_totals(prof)


def as_cuda_trace(events: list) -> list:
    """The events as a CUDA trace lists them: each label also
    on the GPU's row ("gpu_user_annotation") (chapter 05)."""
    copies = [
        dict(e, cat="gpu_user_annotation", ts=e["ts"] + 5.0, dur=e["dur"] / 2, pid=1, tid=7)
        for e in events
        if e.get("cat") == "user_annotation"
    ]
    return events + copies


def phase_ms_mistakes(events: list, want: dict) -> list:
    """(what a typical mistake returns, the problem, a
    hint) for these events: the judge's table (chapter 05)."""
    complete = [e for e in events if e.get("ph") == "X"]
    labels = [e for e in complete if e.get("cat") == "user_annotation"]
    mine = [e for e in labels if e.get("name") in profiling.PHASES]
    last = {p: next((e["dur"] / 1000 for e in reversed(mine) if e["name"] == p), 0.0) for p in want}
    both = {p: sum(e["dur"] / 1000 for e in complete if e.get("name") == p) for p in want}
    loose = {p: sum(e["dur"] / 1000 for e in labels if p in str(e.get("name"))) for p in want}
    looser = {p: sum(e["dur"] / 1000 for e in complete if p in str(e.get("name"))) for p in want}
    counts = {p: float(sum(e["name"] == p for e in mine)) for p in want}
    substring = (
        "too large: other events whose names contain a phase's word were added "
        '(e.g. "Optimizer.step#SGD.step")',
        "Compare names exactly (`==`), not with `in`.",
    )
    return [
        (
            {p: v * 1000 for p, v in want.items()},
            "in microseconds, not milliseconds",
            "A trace's `dur` (and `ts`) are microseconds: divide by 1000.",
        ),
        (
            last,
            "the duration of one step only (each phase's last event)",
            (
                "Every step has its own event for each phase: add them all up (`+=`), do not "
                "overwrite."
            ),
        ),
        (
            counts,
            "the number of events per phase, not their duration",
            "Add up each event's `dur`.",
        ),
        (
            both,
            "too large: the GPU's copies of the labels were added too",
            (
                'In a CUDA trace each label appears twice: on the CPU (`cat` "user_annotation") '
                "and on the GPU's row (\"gpu_user_annotation\"). Count the CPU's only."
            ),
        ),
        (loose, *substring),
        (looser, *substring),
    ]


def _same_ms(got: dict, want: dict) -> bool:
    return all(
        got.get(p) is not None and math.isclose(got[p], v, rel_tol=1e-3, abs_tol=2e-3)
        for p, v in want.items()
    )


def _ms(totals: dict) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in totals.items())


@check
class PhaseMs(Check):
    """phase_ms on the events of a real profile (as a CUDA trace lists them, with `cuda`): the dict
    it returns against the profiler's own totals (key_averages) of that same profile, which the
    judge made.

    The judge makes the profile and sends its events as this test's input (`inputs()`); the
    learner's check makes its own. The run half only reports what the function returned."""

    steps: int
    seed: int = 0
    train: bool = True
    cuda: bool = False
    where: str = ""
    events: list = None  # the trace the run half reads: made once, by whoever holds the check first

    def profile(self) -> tuple:
        """(events, ms per phase): a profile made here once, or the events this check was given."""
        made = self.__dict__.get("_profile")
        if made is None:
            if self.events is not None:  # rebuilt from its inputs: the labels' own totals
                made = (self.events, profiling.phase_totals(self.events))
            else:
                events, want = tiny_profile(self.steps, self.seed, self.train)
                made = (as_cuda_trace(events) if self.cuda else events, want)
            self.events = made[0]
            self.__dict__["_profile"] = made
        return made

    def inputs(self) -> dict:
        self.profile()
        return super().inputs()

    def run(self, candidate):
        events = self.profile()[0]
        with checker_threads():
            return {"returned": candidate(copy.deepcopy(events))}

    def reference(self, solution):
        events, want = self.profile()
        return {"want": want, "mistakes": phase_ms_mistakes(events, want)}

    def judge(self, seen, ref):
        got, want, where = seen["returned"], ref["want"], self.where
        if isinstance(got, TensorValue):
            raise Fail(
                f"Return a dict of Python floats{where}, not a tensor.",
                expected="{'data': ms, ...}",
            )
        if not isinstance(got, dict):
            raise Fail(
                f"Return a dict phase -> milliseconds{where}.",
                expected="a dict with the four phases",
                got=f"{type_name(got)}: {shown(got)}",
            )
        got = {str(k): number(v) for k, v in got.items()}
        missing = [p for p in want if p not in got]
        if missing:
            raise Fail(
                f"Your dict has no entry for {', '.join(missing)}{where}.",
                expected=f"keys {list(want)}",
                got=f"keys {list(got)}",
                hint=(
                    "Give every phase a value, 0.0 for a phase that never ran (an evaluation loop "
                    "has no backward and no step)."
                ),
            )
        if any(got[p] is None for p in want):
            raise Fail(f"Each value must be a number of milliseconds{where}.")
        for value, problem, hint in ref["mistakes"]:
            if _same_ms(got, value) and not _same_ms(value, want):
                raise Fail(
                    f"Your totals are {problem}{where}.",
                    expected=_ms(want),
                    got=_ms(got),
                    hint=hint,
                )
        if not _same_ms(got, want):
            raise Fail(
                f"Your totals differ from what the profiler itself adds up (key_averages){where}.",
                expected=_ms(want),
                got=_ms(got),
                hint=(
                    'Take the complete events (`ph` "X") whose `cat` is "user_annotation" and '
                    "whose name is one of the phases; add up their `dur` per phase; divide by "
                    "1000."
                ),
            )
