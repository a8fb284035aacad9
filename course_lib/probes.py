"""Probes for checking learners' training code (chapters 01, 03, 05, 06).

`DeviceLog` records every tensor operation and the device of its result. A "rig" is a tiny
model, loader, optimizer and loss wrapped in probes that record, per batch, where the data
arrived, train/eval mode, whether autograd was recording, and the gradients' state at
backward() and step(); the shared checks turn each mistake into one precise message.
"""
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.data import DataLoader, TensorDataset

from .device import second_device
from .exercises import Fail

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
                self.ops.append((str(func).replace("aten.", "").replace(".default", ""), str(t.device), tuple(t.shape)))
        return out

    def report(self) -> str:
        return "\n".join(f"  {op:<12} -> made a {list(shape)} tensor on {dev}" for op, dev, shape in self.ops)


def trace_devices(fn):
    """Run fn() and print which operations made tensors on which device (chapter 01)."""
    with DeviceLog() as log:
        fn()
    print(log.report() or "  (no tensor operations)")
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
    value: float = None    # the batch's mean loss (None on meta, which holds no values)
    correct: int = None    # how many argmax predictions were right


@dataclass
class Trace:
    """What the probes saw during one call of the learner's function."""
    forwards: list = field(default_factory=list)
    losses: list = field(default_factory=list)
    backwards: list = field(default_factory=list)  # per backward(): were the old grads clean?
    steps: list = field(default_factory=list)      # per step(): (backwards so far, grad state)


class ModelProbe(nn.Module):
    """Wraps a model; records the input's device, train/eval mode and grad mode of each forward."""

    def __init__(self, inner: nn.Module, trace: Trace):
        super().__init__()
        self.inner, self.trace = inner, trace

    def forward(self, x):
        self.trace.forwards.append(Forward(x.device, tuple(x.shape), self.training, torch.is_grad_enabled()))
        return self.inner(x)


class LossProbe(nn.Module):
    """Cross-entropy that records the devices it was given and each batch's loss and hits."""

    def __init__(self, trace: Trace):
        super().__init__()
        self.inner, self.trace = nn.CrossEntropyLoss(), trace

    def forward(self, logits, y):
        call = LossCall(logits.device, y.device, tuple(y.shape), len(y))
        self.trace.losses.append(call)  # recorded first: the real loss may raise on mixed devices
        loss = self.inner(logits, y)
        if loss.device.type != "meta":
            call.value = loss.detach().item()
            call.correct = (logits.detach().argmax(dim=1) == y).sum().item()
        return loss


def watch_gradients(param: torch.Tensor, optimizer, trace: Trace) -> None:
    """Record the gradient's state at each backward() (before accumulation) and each step()."""
    def at_backward(fresh):
        old = param.grad
        trace.backwards.append(dict(clean=old is None or not old.any(), fresh=fresh.detach().clone()))

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
    """A tiny model, loader, optimizer and loss on `device`, all wrapped in probes."""
    model: nn.Module
    loader: DataLoader
    device: torch.device
    optimizer: torch.optim.Optimizer
    criterion: nn.Module
    trace: Trace

    def train(self, candidate):
        with torch.random.fork_rng(), checker_threads():  # the learner's random state is left alone
            torch.manual_seed(1)
            return candidate(self.model, self.loader, self.device, self.optimizer, self.criterion)

    def evaluate(self, candidate):
        with torch.random.fork_rng(), checker_threads():
            torch.manual_seed(1)
            return candidate(self.model, self.loader, self.device, self.criterion)

    def parameters(self) -> list:
        return [p.detach().clone() for p in self.model.parameters()]


def checker_data(n: int, batch_size: int, seed: int = 0) -> DataLoader:
    """Random inputs whose short last batch is scaled up, so its loss differs from the others."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, N_IN, generator=g)
    last = n - (n % batch_size or batch_size)
    x[last:] *= 8
    y = torch.randint(0, N_OUT, (n,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size)


def make_rig(device="cpu", n: int = 70, batch_size: int = 32, mode: str = "train", seed: int = 0) -> Rig:
    """A fresh rig; on the CPU its gradients are watched too (meta tensors hold no values)."""
    trace = Trace()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = nn.Sequential(nn.Linear(N_IN, N_HIDDEN), nn.ReLU(), nn.Dropout(0.25), nn.Linear(N_HIDDEN, N_OUT))
    model = ModelProbe(net, trace).to(device)
    model.train(mode == "train")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if torch.device(device).type == "cpu":
        watch_gradients(net[0].weight, optimizer, trace)
    return Rig(model, checker_data(n, batch_size, seed), device, optimizer, LossProbe(trace), trace)


# ---------------------------------------------------------------- shared checks
def _where(device) -> str:
    device = torch.device(device)
    return f"{device} (this machine's stand-in for a GPU)" if device.type == "meta" else str(device)


def _copied_to(log: DeviceLog, device, shape) -> bool:
    """Did some .to(device) produce a tensor of this shape (that was then not used)?"""
    kind = torch.device(device).type
    return any(op == "_to_copy" and torch.device(dev).type == kind and s == shape for op, dev, s in log.ops)


def _moved_fail(name: str, what: str, got, device, discarded: bool) -> Fail:
    if discarded:
        return Fail(f"You called {name}.to(device) but kept using the old {name}: Tensor.to returns a new "
                    f"tensor and leaves {name} where it was.", expected=f"{name} = {name}.to(device)",
                    got=f"{name}.to(device) whose result was thrown away; {name} stayed on {got}",
                    hint="model.to(device) moves a module in place; tensor.to(device) does not. Assign the result.")
    return Fail(f"The {what} reached the {'model' if name == 'x' else 'loss'} on {got}, not on {_where(device)}: "
                f"a DataLoader yields the CPU tensors its Dataset holds, and moving the model does not move the data.",
                expected=f"{name} on {device}", got=f"{name} on {got}",
                hint="Inside the loop, move every batch: x, y = x.to(device), y.to(device).")


def check_moves_data(call, device_fn=second_device, as_string=False, where=""):
    """On a second device (the GPU, or meta): did the inputs and the labels get there?"""
    def run(candidate):
        device = device_fn()
        rig = make_rig(device)
        if as_string:
            rig.device = str(device)
        error = None
        with DeviceLog() as log:
            try:
                call(rig, candidate)
            except Exception as err:  # judged below: what matters is where the tensors arrived
                error = err
        if not rig.trace.forwards:
            if error is not None:
                raise error
            raise Fail(f"Your function never called the model{where}.")
        first = rig.trace.forwards[0]
        if first.device.type != device.type:
            raise _moved_fail("x", f"inputs x{where}", first.device, device, _copied_to(log, device, first.shape))
        if not rig.trace.losses:
            if error is not None:
                raise error
            raise Fail(f"Your function never called criterion(logits, y){where}.")
        loss = rig.trace.losses[0]
        if loss.labels_device.type != device.type:
            raise _moved_fail("y", f"labels y{where}", loss.labels_device, device,
                              _copied_to(log, device, loss.labels_shape))
        if error is not None and device.type != "meta":  # meta refuses .item(): expected there
            raise error
    return run


def check_every_batch(call):
    def run(candidate):
        rig = make_rig()
        call(rig, candidate)
        seen, total = len(rig.trace.forwards), len(rig.loader)
        if seen < total:
            raise Fail(f"The loop stopped after {seen} of {total} batches.", expected=f"{total} batches",
                       got=f"{seen}", hint="No break or return inside the loop: an epoch is one full pass "
                                          "over the loader.")
        if seen > total:
            raise Fail(f"The model ran {seen} times for {total} batches.", expected="one forward per batch",
                       got=f"{seen} forwards")
    return run


def as_number(value):
    """A returned value as a float for comparing, or None if it is not a number at all."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.detach().item()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def tensor_fail(value, what: str) -> Fail:
    why = ("A tensor that still requires grad keeps the graph of every batch behind it alive (chapter 06 "
           "measures the memory)." if value.requires_grad else
           "A tensor is not a plain number: on a GPU it stays there, and every print or comparison of it "
           "is another tensor operation.")
    return Fail(f"You returned {what} as a tensor, not a Python float.",
                expected="a float, e.g. built from loss.item()",
                got=f"a tensor (requires_grad={value.requires_grad})", hint=f"{why} .item() gives a plain number.")
