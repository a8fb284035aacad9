"""Chapter 05's amp_train_step checks: autocast and GradScaler on the CPU.

amp_train_step runs on chapter 03's rig without dropout, one batch, the previous batch's gradients
still there (0.01 everywhere). Each test judges a value the judge recomputes from the same start:
the first layer's output under autocast, the first weight's gradient right after backward (scaled
or not, stale or not), the weights and the scaler's state after the step, the returned loss.
What the spies logged (which autocast was entered, the order of the scaler's calls) only words
the feedback.
"""

import math
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from unittest import mock

import torch
from torch import nn

from ..exercises.spec import Fail
from ..exercises.wire import TensorValue, roundtrip
from .base import (
    Check,
    attempt,
    check,
    matches,
    raised,
    same_values,
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
                raise raised(seen["error"])
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
                raise raised(seen["error"])
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
                raise raised(error)
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
                    raise raised(
                        error
                    )  # the learner's own exception, or the scaler refused to step
                raise Fail(message, got=(got or "") + _scaler_said(error), hint=hint)
        if error is not None:
            raise raised(error)


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
            raise raised(seen["error"])
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
            raise raised(seen["error"])
        if ref is None or not same_values(seen["params"], ref, atol=1e-5):
            if _loss_outside(seen):
                raise _loss_outside_fail()
            raise Fail(
                f"After one step from the same start, your weights differ from the reference step's"
                f"{self.where}."
            )
