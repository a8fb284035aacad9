"""The probed training rig and the checks every training loop shares (chapters 01, 03, 05, 06).

A rig is a tiny model, loader, optimizer and loss. Hooks record, per batch, where the data
arrived, train/eval mode, whether autograd was recording, and the gradients' state at
backward() and step(); the records live in the hooks' closures (the learner's function gets a
plain nn.Sequential, a DataLoader, an SGD optimizer and an nn.CrossEntropyLoss). Records made
in the learner's process are evidence for feedback; wherever a mistake changes a value (the
weights, BatchNorm's running statistics, a returned number), the judge decides on that value,
recomputed from the same seed and data.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.data import DataLoader, TensorDataset

from ..exercises.spec import Fail
from ..i18n import tr
from ..seed import manual_seed
from .base import Check, check, error_record, raised

N_IN, N_HIDDEN, N_OUT = 12, 16, 4  # the checker's tiny classification problem


class DeviceLog(TorchDispatchMode):
    """Records every tensor operation and the device of what it produced (chapters 01, 03)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.ops.append(
                    (
                        str(func).replace("aten.", "").replace(".default", ""),
                        str(t.device),
                        tuple(t.shape),
                    )
                )
        return out

    def report(self) -> str:
        return "\n".join(
            "  " + tr(f"{op:<12} -> made a {list(shape)} tensor on {dev}")
            for op, dev, shape in self.ops
        )


def made_elsewhere(ops, device, shape=None) -> list:
    """The operations in a DeviceLog's `ops` that made a tensor (of `shape`, when given) on a
    device other than `device`: a detour through another device (chapters 01, 04)."""
    return [
        op
        for op, dev, made in ops
        if dev != str(device) and (shape is None or tuple(made) == tuple(shape))
    ]


def trace_devices(fn):
    """Run fn() and print which operations made tensors on which device (chapter 01)."""
    with DeviceLog() as log:
        fn()
    print(log.report() or "  " + tr("(no tensor operations)"))
    return log


# ---------------------------------------------------------------- probes
@dataclass
class Forward:
    device: torch.device
    shape: tuple
    training: bool
    grad_enabled: bool


@dataclass
class LossCall:
    logits_device: torch.device
    labels_device: torch.device
    labels_shape: tuple
    n: int
    value: float = None  # the batch's mean loss (None on meta, which holds no values)
    correct: int = None  # how many argmax predictions were right


@dataclass
class Trace:
    """What the probes saw during one call of the learner's function."""

    forwards: list = field(default_factory=list)
    losses: list = field(default_factory=list)
    backwards: list = field(default_factory=list)  # per backward(): were the old grads clean?
    steps: list = field(default_factory=list)  # per step(): (backwards so far, grad state)


def probe_model(net: nn.Module, trace: Trace) -> nn.Module:
    """Record the input's device, train/eval mode and grad mode of each forward (a pre-hook: the
    record exists even when the forward then raises a device mismatch)."""

    def before(module, args):
        x = args[0]
        trace.forwards.append(
            Forward(x.device, tuple(x.shape), module.training, torch.is_grad_enabled())
        )

    net.register_forward_pre_hook(before)
    return net


def probe_loss(trace: Trace) -> nn.Module:
    """Cross-entropy that records the devices it was given and each batch's loss and hits."""
    loss = nn.CrossEntropyLoss()

    def before(module, args):
        logits, y = args[0], args[1]
        trace.losses.append(LossCall(logits.device, y.device, tuple(y.shape), len(y)))

    def after(module, args, out):
        logits, y = args[0], args[1]
        if out.device.type != "meta":
            call = trace.losses[-1]
            call.value = out.detach().item()
            call.correct = (logits.detach().argmax(dim=1) == y).sum().item()

    loss.register_forward_pre_hook(before)
    loss.register_forward_hook(after)
    return loss


def watch_gradients(param: torch.Tensor, optimizer, trace: Trace) -> None:
    """Record the gradient's state at each backward() (before accumulation) and each step()."""

    def at_backward(fresh):
        old = param.grad
        trace.backwards.append(
            dict(clean=old is None or not old.any(), fresh=fresh.detach().clone())
        )

    def at_step(opt, args, kwargs):
        grad = param.grad
        state = "none" if grad is None else "zero" if not grad.any() else "set"
        trace.steps.append(dict(backwards=len(trace.backwards), grad=state))

    param.register_hook(at_backward)
    optimizer.register_step_pre_hook(at_step)


@contextmanager
def checker_threads(n: int = 1):
    """Run a check's tiny tensors on one CPU thread, then restore the learner's setting.

    Intra-op threads buy nothing on a 16-unit layer, and on a busy machine (a class graded in
    parallel) waiting for a second thread made a check tens of times slower.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass
class Rig:
    """A tiny model, loader, optimizer and loss on `device`, with probes recording into `trace`."""

    model: nn.Module
    loader: DataLoader
    device: torch.device
    optimizer: torch.optim.Optimizer
    criterion: nn.Module
    trace: Trace

    def train(self, candidate):
        with torch.random.fork_rng(), checker_threads():  # the learner's random state is left alone
            manual_seed(1)
            return candidate(self.model, self.loader, self.device, self.optimizer, self.criterion)

    def evaluate(self, candidate):
        with torch.random.fork_rng(), checker_threads():
            manual_seed(1)
            return candidate(self.model, self.loader, self.device, self.criterion)

    def accumulate(self, candidate, accum_steps: int = 2):
        with torch.random.fork_rng(), checker_threads():
            manual_seed(1)
            return candidate(
                self.model, self.loader, self.optimizer, self.criterion, self.device, accum_steps
            )

    def parameters(self) -> list:
        return [p.detach().clone() for p in self.model.parameters()]

    def statistics(self) -> list:
        """BatchNorm's running mean and variance (a rig built with norm=True)."""
        norm = self.model[0]
        return [norm.running_mean.detach().clone(), norm.running_var.detach().clone()]


def checker_data(n: int, batch_size: int, seed: int = 0) -> DataLoader:
    """Random inputs whose short last batch is scaled up, so its loss differs from the others."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, N_IN, generator=g)
    last = n - (n % batch_size or batch_size)
    x[last:] *= 8
    y = torch.randint(0, N_OUT, (n,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size)


def rig_net(seed: int = 0, dropout: float = 0.25, norm: bool = False) -> nn.Sequential:
    """The rig's model: [BatchNorm1d,] Linear, ReLU, Dropout, Linear, from a fixed seed."""
    with torch.random.fork_rng():
        manual_seed(seed)
        layers = [
            nn.Linear(N_IN, N_HIDDEN),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(N_HIDDEN, N_OUT),
        ]
        return nn.Sequential(*([nn.BatchNorm1d(N_IN)] if norm else []), *layers)


def first_linear(net: nn.Module) -> nn.Linear:
    return next(m for m in net.modules() if isinstance(m, nn.Linear))


def make_rig(
    device="cpu",
    n: int = 70,
    batch_size: int = 32,
    mode: str = "train",
    seed: int = 0,
    dropout: float = 0.25,
    norm: bool = False,
    lr: float = 0.1,
) -> Rig:
    """A fresh rig; on the CPU its gradients are watched too (meta tensors hold no values)."""
    trace = Trace()
    net = probe_model(rig_net(seed, dropout, norm), trace).to(device)
    net.train(mode == "train")
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    if torch.device(device).type == "cpu":
        watch_gradients(first_linear(net).weight, optimizer, trace)
    return Rig(net, checker_data(n, batch_size, seed), device, optimizer, probe_loss(trace), trace)


RIG_CALLS = {"train": Rig.train, "evaluate": Rig.evaluate, "accumulate": Rig.accumulate}


# ---------------------------------------------------------------- shared checks: moving the data
def _where(device) -> str:
    device = torch.device(device)
    return f"{device} (this machine's stand-in for a GPU)" if device.type == "meta" else str(device)


def _copied_to(copies: list, device, shape) -> bool:
    """Did some .to(device) produce a tensor of this shape (that was then not used)?"""
    kind = torch.device(device).type
    return any(torch.device(dev).type == kind and tuple(s) == tuple(shape) for dev, s in copies)


def _moved_fail(name: str, what: str, got, device, discarded: bool) -> Fail:
    if discarded:
        return Fail(
            f"You called {name}.to(device) but kept using the old {name}: Tensor.to returns a new "
            f"tensor and leaves {name} where it was.",
            expected=f"{name} = {name}.to(device)",
            got=f"{name}.to(device) whose result was thrown away; {name} stayed on {got}",
            hint=(
                "model.to(device) moves a module in place; tensor.to(device) does not. Assign the "
                "result."
            ),
        )
    return Fail(
        (
            f"The {what} reached the {'model' if name == 'x' else 'loss'} on {got}, not on "
            f"{_where(device)}: a DataLoader yields the CPU tensors its Dataset holds, and moving "
            "the model does not move the data."
        ),
        expected=f"{name} on {device}",
        got=f"{name} on {got}",
        hint="Inside the loop, move every batch: x, y = x.to(device), y.to(device).",
    )


@check
class MovesData(Check):
    """On a second device (the GPU, or meta): did the inputs and the labels get there?

    What the probes saw is in-process evidence: on a real second device a missed move raises
    PyTorch's own device-mismatch error, and that is what this test can prove (see
    docs/grading-threat-model.md for what it cannot)."""

    call: str = "train"  # how the function is called on the rig: train, evaluate or accumulate
    as_string: bool = False
    where: str = ""

    def run(self, candidate):
        from ..device import second_device

        device = second_device()
        rig = make_rig(device)
        if self.as_string:
            rig.device = str(device)
        error = None
        with DeviceLog() as log:
            try:
                RIG_CALLS[self.call](rig, candidate)
            except (
                Exception
            ) as err:  # judged by the judge: what matters is where the tensors arrived
                error = error_record(err, candidate)
        trace = rig.trace
        return {
            "device": str(device),
            "error": error,
            "forwards": [[str(f.device), list(f.shape)] for f in trace.forwards[:50]],
            "losses": [[str(c.labels_device), list(c.labels_shape)] for c in trace.losses[:50]],
            "copies": [[dev, list(shape)] for op, dev, shape in log.ops if op == "_to_copy"][:200],
        }

    def reference(self, solution):
        from ..device import second_device

        return str(second_device())

    # (what the probes recorded, the tensor, how the text names it, the call that receives it)
    ARRIVALS = (
        ("forwards", "x", "inputs x", "the model"),
        ("losses", "y", "labels y", "criterion(logits, y)"),
    )

    def judge(self, seen, ref):
        device, where, error = torch.device(ref), self.where, seen["error"]
        if torch.device(seen["device"]).type != device.type:
            raise Fail(f"The check ran on {seen['device']}, not on the second device {ref}.")
        for record, name, what, receiver in self.ARRIVALS:
            if not seen[record]:
                if error is not None:
                    raise raised(error)
                raise Fail(f"Your function never called {receiver}{where}.")
            arrived, shape = seen[record][0]
            if torch.device(arrived).type != device.type:
                raise _moved_fail(
                    name,
                    f"{what}{where}",
                    arrived,
                    device,
                    _copied_to(seen["copies"], device, shape),
                )
        if error is not None and device.type != "meta":  # meta refuses .item(): expected there
            raise raised(error)
