"""A small model, the reference training and evaluation loops, a progress bar and loss curves.

Chapter 03 builds the device-agnostic training template step by step; these are its finished
versions, reused by chapters 05 (speedups), 06 (memory), 07 (DP/DDP) and 08 (sharding).
"""

import contextlib
import math
from dataclasses import dataclass, field

import torch
from torch import nn

from .data import N_CLASSES, N_FEATURES
from .i18n import tr
from .i18n.plots import plot_text


def digits_mlp(
    hidden: int = 64, dropout: float = 0.1, n_in: int = N_FEATURES, n_out: int = N_CLASSES
) -> nn.Module:
    """A small MLP for the 8x8 digits: Linear-ReLU-Dropout-Linear (chapters 03+).

    The dropout layer is what makes ``model.train()`` / ``model.eval()`` matter.
    """
    return nn.Sequential(
        nn.Linear(n_in, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, n_out)
    )


def wide_mlp(hidden: int = 512, layers: int = 2) -> nn.Sequential:
    """Digits in, `layers` hidden Linear+ReLU layers of width `hidden`, 10 scores out (chapter 06
    and its checks)."""
    mods = [nn.Linear(N_FEATURES, hidden), nn.ReLU()]
    for _ in range(layers - 1):
        mods += [nn.Linear(hidden, hidden), nn.ReLU()]
    return nn.Sequential(*mods, nn.Linear(hidden, N_CLASSES))


@dataclass
class Mean:
    """A running mean weighted by counts: ``add(batch_mean, batch_size)`` (chapters 03+)."""

    total: float = 0.0
    count: int = 0

    def add(self, value: float, n: int = 1) -> None:
        self.total += value * n
        self.count += n

    @property
    def value(self) -> float:
        return self.total / self.count if self.count else math.nan


def grad_norm(model: nn.Module) -> float:
    """The L2 norm of all parameter gradients together, as a float (chapters 03, 06)."""
    norms = [p.grad.detach().norm() for p in model.parameters() if p.grad is not None]
    return torch.stack(norms).norm().item() if norms else 0.0


def no_label(name: str):
    """A phase label that does nothing: `train_step`'s default ``phase`` (chapters 03+)."""
    return contextlib.nullcontext()


def train_step(
    model, optimizer, criterion, x, y, *, zero_grad: bool = True, on_batch=None, phase=no_label
):
    """One training step on a batch already on the model's device (chapters 03, 05, 07, 08).

    zero_grad, forward, loss, backward, step: written once, used by `train_epoch`, chapter 05's
    timed step and the DDP worker (under DDP, backward also averages the gradients over the
    processes). Returns the loss detached and still on the device: no `.item()`, so no wait for
    the GPU each step (chapter 06). ``on_batch(loss, model)`` gets the loss as a float after
    backward and before step (for logs); ``zero_grad=False`` only reproduces chapter 03's bug.
    ``phase(name)`` wraps forward (with the loss), backward and step, e.g.
    ``torch.profiler.record_function`` to label them in a profile (chapter 05).
    """
    if zero_grad:
        optimizer.zero_grad(set_to_none=True)
    with phase("forward"):
        loss = criterion(model(x), y)
    with phase("backward"):
        loss.backward()
    if on_batch is not None:
        on_batch(loss.item(), model)
    with phase("step"):
        optimizer.step()
    return loss.detach()


def stepper(model, optimizer, criterion=nn.functional.cross_entropy, device=None, phase=no_label):
    """`train_step` as ``step(x, y)``, the batch moved to `device` first when one is given; the
    one wrapper of the step (chapter 05 times it, the DDP and FSDP workers run it)."""

    def step(x, y):
        if device is not None:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        return train_step(model, optimizer, criterion, x, y, phase=phase)

    return step


def train_epoch(
    model, loader, device, optimizer, criterion, *, zero_grad: bool = True, on_batch=None
) -> float:
    """One epoch of the course's training template;
    returns the mean loss over samples (chapters 03+).

    Every batch is moved to `device`, then `train_step` runs on it; the keywords go to `train_step`.
    The losses are added up on the device and read once, at the end of the epoch.
    """
    model.train()
    mean = Mean()
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = train_step(model, optimizer, criterion, x, y, zero_grad=zero_grad, on_batch=on_batch)
        mean.add(loss, len(y))
    return float(mean.value)


@torch.no_grad()
def evaluate(model, loader, device, criterion):
    """Mean loss and accuracy (a fraction) over all samples, with no graph kept (chapters 03+)."""
    model.eval()
    loss, accuracy = Mean(), Mean()
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        logits = model(x)
        loss.add(criterion(logits, y).item(), len(y))
        accuracy.add((logits.argmax(dim=1) == y).float().mean().item(), len(y))
    return loss.value, accuracy.value


@dataclass
class History:
    """Per-epoch numbers of a training run (chapters 03+)."""

    train_loss: list = field(default_factory=list)
    test_loss: list = field(default_factory=list)
    test_accuracy: list = field(default_factory=list)

    def add(self, train_loss: float, test_loss: float, test_accuracy: float) -> None:
        self.train_loss.append(train_loss)
        self.test_loss.append(test_loss)
        self.test_accuracy.append(test_accuracy)

    @property
    def epochs(self) -> int:
        return len(self.train_loss)

    def summary(self) -> str:
        if not self.epochs:
            return tr("no epochs yet")
        return tr(
            f"{self.epochs} epochs: train loss {self.train_loss[0]:.3f} -> "
            f"{self.train_loss[-1]:.3f}, test loss {self.test_loss[-1]:.3f}, test accuracy "
            f"{self.test_accuracy[-1]:.1%}"
        )


class TickingLoader:
    """Wraps a DataLoader and advances a progress bar per batch; other attributes pass through."""

    def __init__(self, loader, bar):
        self.loader, self.bar = loader, bar

    def __iter__(self):
        for batch in self.loader:
            yield batch
            self.bar.update(1)

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name):
        return getattr(self.loader, name)


def fit(
    model,
    train_loader,
    test_loader,
    device,
    optimizer,
    criterion,
    epochs: int,
    *,
    train_fn=train_epoch,
    eval_fn=evaluate,
    progress: bool = True,
) -> History:
    """Train for `epochs`, evaluating after each, with a tqdm progress bar (chapters 03+).

    `train_fn` and `eval_fn` have the signatures of `train_epoch` and `evaluate`, so a
    learner's own functions can be plugged in.
    """
    from tqdm.auto import tqdm

    history = History()
    # redrawn at most twice a second (a redraw in a notebook updates its widgets: ~5 ms each); the
    # epoch's numbers join the bar at its next redraw, and the last ones when it closes
    with tqdm(
        total=epochs * len(train_loader),
        desc=tr("training"),
        unit="batch",
        disable=not progress,
        mininterval=0.5,
    ) as bar:
        ticking = TickingLoader(train_loader, bar)
        for _ in range(epochs):
            train_loss = train_fn(model, ticking, device, optimizer, criterion)
            test_loss, test_accuracy = eval_fn(model, test_loader, device, criterion)
            history.add(train_loss, test_loss, test_accuracy)
            bar.set_postfix(
                train_loss=f"{train_loss:.3f}", test_acc=f"{test_accuracy:.1%}", refresh=False
            )
    return history


def plot_history(history: History, title: str = ""):
    """Loss curves (train and test) and test accuracy per epoch, as a Figure (chapters 03+)."""
    import matplotlib.pyplot as plt

    epochs = range(1, history.epochs + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    # fixed margins, not layout="constrained" (it measures every tick label again: half the
    # drawing); the notebook's display crops the figure to what it draws
    fig.subplots_adjust(left=0.08, right=0.99, bottom=0.16, top=0.8 if title else 0.9, wspace=0.25)
    left.plot(epochs, history.train_loss, "o-", label=plot_text("train (mean over the epoch)"))
    left.plot(epochs, history.test_loss, "s-", label=plot_text("test (after the epoch)"))
    left.set(xlabel="epoch", ylabel=plot_text("cross-entropy loss"), title=plot_text("loss"))
    left.legend()
    right.plot(epochs, [100 * a for a in history.test_accuracy], "s-", color="tab:green")
    right.set(
        xlabel="epoch",
        ylabel=plot_text("accuracy (%)"),
        title=plot_text("test accuracy"),
        ylim=(0, 100),
    )
    for ax in (left, right):
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(plot_text(title))
    plt.close(fig)  # returned, so it is shown once (as the cell's value), not twice
    return fig
