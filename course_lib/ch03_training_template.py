"""Chapter 03, the training template: its exercises and quizzes, then the demos the notebook runs.

The checks (course_lib/checks/loops.py) run the learner's loop on a tiny "rig": a model, loss
and optimizer with probes that record, per batch, where the data arrived, train or eval mode,
whether autograd was recording, and the state of the gradients; each mistake changes one value
the judge recomputes (the weights, BatchNorm's statistics, a returned number) and shows as one
precise message.
"""

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from . import chapters, data, training
from .checks import loops
from .checks.loops import averaging_fail as _averaging_fail  # noqa: F401 (the table of known mistakes)
from .checks.rig import MovesData
from .exercises import Declarations, Test
from .i18n import tr
from .i18n.catalogue import join
from .i18n.plots import plot_text
from .sections import section
from .seed import seed_everything

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "train_one_epoch",
    "evaluate",
    "seed_dynamicnet",
    "seed_branch",
    "eval_vs_no_grad",
    # teaching helpers: the demos, widgets and models the notebook uses
    "yours_or_reference",
    "StepLog",
    "zero_grad_experiment",
    "describe_run",
    "plot_zero_grad",
    "SeedDynamicNet",
    "DynamicNet",
    "graph_follows_python",
    "ScaleMadeInForward",
    "trainable_report",
]


def __dir__():
    return __all__


# ================================================================ exercises and quizzes
# ---------------------------------------------------------------- exercise: train_one_epoch
train_one_epoch = declare.function_exercise(
    "train_one_epoch",
    title="Article A's exercise: train one epoch on any device",
    prompt=(
        "Write train_one_epoch(model, loader, device, optimizer, criterion) -> float. `model` is "
        "already on `device`; the loader yields CPU batches (x, y). Put the model in training "
        "mode, and for every batch: move x and y to `device`, clear the old gradients, forward, "
        "loss, backward, step. Return the epoch's mean loss over all samples (each batch weighted "
        "by its size) as a Python float."
    ),
    points=6,
    tests=[
        Test("moves the inputs and the labels to `device`", MovesData("train")),
        Test("puts the model in training mode", loops.TrainMode()),
        Test("clears gradients each batch, in the right order", loops.GradientOrder()),
        Test("returns a Python float", loops.ReturnsFloat()),
        Test(
            "returns the mean over samples (the last batch is smaller)",
            loops.MeanLoss(70, 32, " (70 samples in batches of 32, 32, 6)"),
        ),
        Test("goes through every batch", loops.EveryBatch("train")),
    ],
    hints=[
        (
            f"Start from the template in {section('03', 'One training step')}: `model.train()` "
            "once, then a for loop over the loader."
        ),
        (
            f"Inside the loop go the lines of {section('03', 'One training step')}'s single step, "
            "in the same order: move x AND y (assigning the results), clear the gradients, "
            "forward and loss, backward, step."
        ),
        (
            "For the mean: before the loop, a running total and a sample count at 0; per batch, "
            "add `loss.item()` times the batch size to the total and the batch size to the count; "
            "after the loop, return their ratio."
        ),
    ],
)


# ---------------------------------------------------------------- exercise: evaluate
evaluate = declare.function_exercise(
    "evaluate",
    title="The evaluation loop: eval mode, no graph, data moved too",
    prompt=(
        "Write evaluate(model, loader, device, criterion) -> (mean_loss, accuracy), both Python "
        "floats. `model` is on `device`; the loader yields CPU batches (x, y). Switch the model "
        "to evaluation mode, build no autograd graph, move every batch to `device`. mean_loss: "
        "the mean of the loss over all samples (each batch weighted by its size); accuracy: the "
        "fraction (0 to 1) of samples whose highest logit (argmax over dim 1) is the label."
    ),
    points=5,
    tests=[
        Test("moves the inputs and the labels to `device`", MovesData("evaluate")),
        Test("puts the model in evaluation mode", loops.EvalMode()),
        Test("builds no autograd graph", loops.NoGraph()),
        Test("returns two Python floats", loops.EvalReturns()),
        Test(
            "returns the loss and accuracy over samples (the last batch is smaller)",
            loops.EvalValues(70, 32, " (70 samples in batches of 32, 32, 6)"),
        ),
        Test("goes through every batch", loops.EveryBatch("evaluate")),
    ],
    hints=[
        (
            "The mirror image of training: `model.eval()`, then `with torch.no_grad():` around "
            "the loop."
        ),
        (
            "Move the data exactly as in training, inputs and labels. Forgetting it here is "
            "article A's error 2."
        ),
        (
            "Three running numbers: the loss times the batch size, the number of correct "
            "predictions (`argmax` over dim 1 equal to the label, summed), the number of samples. "
            "Return two ratios, as Python floats."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
seed_dynamicnet = declare.quiz(
    "seed_dynamicnet",
    title="Does article B's DynamicNet run?",
    kind="error",
    question=(
        "This is article B's DynamicNet (only the hard-coded cuda device removed). What happens "
        "when a batch of 4 samples with 10 features goes through it?"
    ),
    code="class DynamicNet(nn.Module):\n"
    "    def __init__(self, D_in, H, D_out):\n"
    "        super().__init__()\n"
    "        self.linear1 = nn.Linear(D_in, H)\n"
    "        self.linear2 = nn.Linear(H, D_out)\n"
    "        self.relu, self.sigmoid = nn.ReLU(), nn.Sigmoid()\n\n"
    "    def forward(self, x):\n"
    "        if x.shape[1] % 2 == 0:\n"
    "            h = self.relu(self.linear1(x))\n"
    "        else:\n"
    "            h = self.sigmoid(self.linear1(x))\n"
    "        for i in range(2):\n"
    "            h = self.relu(self.linear2(h))\n"
    "        return h\n\n"
    "model = DynamicNet(10, 20, 5)\n"
    "model(torch.randn(4, 10))",
    options={
        "a": (
            "No error: the output has shape (4, 5); the second pass reuses `linear2`'s weights on "
            "the first pass's output"
        ),
        "b": (
            "No error: the graph is fixed when the model is built, so `linear2` runs once and "
            "the output has shape (4, 5)"
        ),
        "c": "RuntimeError: the shapes cannot be multiplied in the second pass through `linear2`",
        "d": (
            "ValueError: `x.shape[1] % 2 == 0` is a Python bool; the branch needs a tensor "
            "condition"
        ),
    },
    hints=[
        "Follow the shapes: what does `linear1` give, and what does `linear2` expect and give?",
        "Can the output of `linear2` (D_out = 5 features) go back into `linear2`?",
    ],
    why={
        "a": (
            "Follow the shapes through both passes: what does `linear2` expect as input, and what "
            "does it return?"
        ),
        "b": (
            "PyTorch builds the graph anew on every call, while forward runs: the loop really "
            "calls `linear2` twice."
        ),
        "d": "`x.shape[1]` is a plain Python int; a Python if on it is fine inside forward.",
    },
    explanation=(
        "`linear2` maps 20 features to 5. The first pass gives 5 features; the second pass feeds "
        "those 5 into a layer that expects 20, and the matrix product fails."
    ),
)

seed_branch = declare.quiz(
    "seed_branch",
    title="When does article B's sigmoid branch run?",
    question="In article B's DynamicNet(10, 20, 5), forward picks sigmoid when x.shape[1] is odd. "
    "For which inputs does the model produce an output through the sigmoid branch?",
    options={
        "a": (
            "For inputs with an odd number of features, such as `torch.randn(4, 11)`: they take "
            "the sigmoid branch"
        ),
        "b": (
            "For batches with an odd number of samples, such as `torch.randn(3, 10)`: "
            "`x.shape[1]` counts the rows"
        ),
        "c": (
            "At random: like dropout, about half of the batches take the sigmoid branch in "
            "training mode"
        ),
        "d": (
            "Never: `linear1` accepts exactly 10 features (even), so any input that gets past it "
            "took relu"
        ),
    },
    digest="f3b660c4c95208fe",
    hints=[
        (
            "The branch is chosen before `linear1` runs. What does `linear1` do with an input "
            "that is not 10 features wide?"
        )
    ],
    why={
        "a": (
            "An 11-feature input does enter the sigmoid branch, but then it must go through "
            "`linear1`, built for 10 inputs: what happens there?"
        ),
        "b": "`x.shape[0]` counts the samples; `x.shape[1]` counts the features of each sample.",
        "c": "Nothing random happens here: the branch depends only on `x.shape[1]`.",
    },
    explanation=(
        "`x.shape[1]` is fixed by `linear1`'s `in_features`: an 11-feature input enters the else "
        "branch and fails in `linear1`. The 'dynamic' choice is made once, by the constructor."
    ),
)

eval_vs_no_grad = declare.quiz(
    "eval_vs_no_grad",
    title="model.eval() or torch.no_grad()?",
    kind="multiple",
    question="Which statements are true? Choose all that apply.",
    options={
        "a": "`model.eval()` switches dropout off and makes batch norm use its running statistics",
        "b": "`model.eval()` stops autograd from recording a graph",
        "c": (
            "`torch.no_grad()` turns autograd's graph recording off, and with it the activations "
            "kept for backward"
        ),
        "d": "`torch.no_grad()` switches dropout off",
    },
    digest="13e49cc2c3e50402",
    hints=[
        (
            f"{section('03', 'The evaluation loop', start=True)}'s cell printed `requires_grad` "
            "of the output after each switch, and compared two passes in train and in eval mode."
        ),
        "Two of the four statements are true: one about each switch.",
    ],
    why={
        "b": "The cell above printed `graph recorded? True` after `model.eval()` alone.",
        "d": (
            "Dropout is a layer's behaviour, set by `train()` / `eval()`; `no_grad` only concerns "
            "autograd."
        ),
    },
    explanation=(
        "They are independent switches: `eval()` changes how layers behave, `no_grad()` whether "
        "autograd records. An evaluation loop needs both."
    ),
)


# ---------------------------------------------------------------- written questions
# Answered in words in the notebook's answer cells, read and graded by the teacher (the review
# page shows each answer beside what it expects); nothing grades them automatically.
chapter.written(
    "eval_and_no_grad",
    title="Why two switches: `model.eval()` and `torch.no_grad()`",
    question=(
        "Why does an evaluation loop need both `model.eval()` and `torch.no_grad()`? Say what "
        "each one changes, and what goes wrong when only one of them is used."
    ),
    expects=[
        "`model.eval()` changes how layers behave: dropout stops dropping and batch norm uses its "
        "running statistics instead of the batch's (and stops updating them)",
        "`torch.no_grad()` only stops autograd from recording a graph: no activations are kept "
        "for a backward pass, which saves memory and time; the layers behave as before",
        "With `eval()` alone the graph is still recorded (the cell printed `requires_grad` True); "
        "with `no_grad()` alone dropout still drops and batch norm uses batch statistics, so the "
        "measured accuracy is wrong",
    ],
    section=section("03", "The evaluation loop"),
    points=3,
)

chapter.written(
    "zero_grad_place",
    title="Article B's missing `zero_grad()`",
    question=(
        "Article B lost two hours to a missing `optimizer.zero_grad()`. Why does leaving it out "
        "make training go wrong, and where in the loop does it belong?"
    ),
    expects=[
        "`backward()` adds into each parameter's `.grad` and never replaces it: without "
        "`zero_grad()` the gradient at step k is the sum of all k batch gradients",
        "So the steps keep growing (like a momentum that never decays): the loss swings back up, "
        "and with a larger learning rate it overflows to inf and nan",
        "It belongs once per batch before `backward()` (or right after `step()`), never between "
        "`backward()` and `step()`, where it erases the gradient the step needs",
    ],
    section=section("03", "`zero_grad` story"),
    points=2,
)


# ================================================================ teaching helpers
def yours_or_reference(candidate, exercise, reference):
    """The learner's function if it passes the exercise's checks (its last check's verdict, when
    that checked this very function), else the course's reference."""
    result = exercise.verdict(candidate)
    if result.correct:
        print(tr(f"Using YOUR {exercise.name} (it passes the checks)."))
        return candidate
    course = f"{reference.__module__}.{reference.__name__}"
    print(tr(f"Using the course's {course} (your {exercise.name} is {result.status})."))
    return reference


@dataclass
class StepLog:
    """Per-step loss and gradient norm of one run (the zero_grad experiment)."""

    loss: list = field(default_factory=list)
    grad_norm: list = field(default_factory=list)
    test_loss: float = math.nan
    test_accuracy: float = math.nan

    def record(self, loss: float, model: nn.Module) -> None:
        self.loss.append(loss)
        self.grad_norm.append(training.grad_norm(model))


def zero_grad_experiment(
    train_set, test_set, device, epochs=3, lr=0.5, batch_size=64, seed=0
) -> dict:
    """Train the same model from the same start twice, with and without zero_grad (chapter 03)."""
    runs = {}
    for label, zero_grad in (("with zero_grad", True), ("without zero_grad", False)):
        seed_everything(seed)
        model = training.digits_mlp(dropout=0.0).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        loader = data.make_loader(train_set, device, batch_size, shuffle=True, seed=seed)
        log, criterion = StepLog(), nn.CrossEntropyLoss()
        for _ in range(epochs):
            training.train_epoch(
                model,
                loader,
                device,
                optimizer,
                criterion,
                zero_grad=zero_grad,
                on_batch=log.record,
            )
        log.test_loss, log.test_accuracy = training.evaluate(
            model, data.make_loader(test_set, device, 256), device, criterion
        )
        runs[label] = log
    return runs


def describe_run(label: str, log: StepLog) -> str:
    """One measured line about a run of the zero_grad experiment."""
    bad = next((i for i, v in enumerate(log.loss) if not math.isfinite(v)), None)
    line = tr(
        f"{label:>18}: last-step loss {log.loss[-1]:.3f}, gradient norm "
        f"{log.grad_norm[0]:.2f} at step 1 -> max {max(log.grad_norm):.2f}; test accuracy "
        f"{log.test_accuracy:.1%}"
    )
    blown = tr(f"loss not finite from step {bad + 1}") if bad is not None else ""
    return join([line, blown], "; ")


def plot_zero_grad(runs: dict):
    """Side by side: loss per step with and without
    zero_grad, and the gradient norms (log scale)."""
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    # fixed margins, not layout="constrained" (which measures every tick label again, half of the
    # drawing); the notebook's display crops the figure to what it draws
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.16, top=0.9, wspace=0.2)
    axes[1].sharey(axes[0])  # both loss panels on one scale, labelled once
    axes[1].tick_params(labelleft=False)
    top = max(max(v for v in log.loss if math.isfinite(v)) for log in runs.values())
    for ax, (label, log) in zip(axes, runs.items()):
        ax.plot(range(1, len(log.loss) + 1), log.loss, lw=0.9)
        ax.set(title=plot_text(f"loss per step, {label}"), xlabel=plot_text("step"))
    axes[0].set(ylabel=plot_text("batch loss"), ylim=(0, 1.05 * top))
    for label, log in runs.items():
        steps = range(1, len(log.grad_norm) + 1)
        axes[2].semilogy(steps, log.grad_norm, lw=0.9, label=plot_text(label))
    axes[2].set(title=plot_text("gradient norm at step()"), xlabel=plot_text("step"))
    # ticks at 1 and 3 per decade as plain numbers (0.3, 1, 3, 10): the default 10^k labels start
    # matplotlib's math-text parser, and its 8 minor ticks per decade cost as much again
    axes[2].yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 3.0)))
    axes[2].yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axes[2].yaxis.set_minor_locator(ticker.NullLocator())
    axes[2].legend()
    for ax in axes:
        ax.grid(alpha=0.3)
    plt.close(fig)  # returned, so it is shown once (as the cell's value), not twice
    return fig


class SeedDynamicNet(nn.Module):
    """Article B's DynamicNet as printed (chapter 03
    errata): linear2 (H -> D_out) is applied twice."""

    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.linear1 = nn.Linear(D_in, H)
        self.linear2 = nn.Linear(H, D_out)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        if x.shape[1] % 2 == 0:  # fixed by linear1's in_features: can never change
            h = self.relu(self.linear1(x))
        else:
            h = self.sigmoid(self.linear1(x))
        for _ in range(2):
            h = self.relu(self.linear2(h))  # the second pass gets D_out features, expects H
        return h


class DynamicNet(nn.Module):
    """The corrected DynamicNet (chapter 03): a shared H -> H layer repeated `depth` times.

    ``depth`` is an ordinary Python int chosen per call, and ``show`` prints shapes from
    inside forward: the graph autograd records is whatever this Python code ran.
    """

    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.linear1 = nn.Linear(D_in, H)
        self.middle = nn.Linear(H, H)
        self.linear2 = nn.Linear(H, D_out)
        self.relu = nn.ReLU()

    def forward(self, x, depth: int = 2, show: bool = False):
        h = self.relu(self.linear1(x))
        for i in range(depth):
            h = self.relu(self.middle(h))  # H -> H: may be applied any number of times
            if show:
                print("  " + tr(f"after middle pass {i + 1}: h has shape {tuple(h.shape)}"))
        return self.linear2(h)  # H -> D_out, once, at the end


def graph_follows_python(net: DynamicNet, x: torch.Tensor, depths=(0, 1, 3)) -> None:
    """For each depth: run forward and backward, print
    the output shape and the middle layer's gradient."""
    for depth in depths:
        net.zero_grad()
        out = net(x, depth=depth)
        out.sum().backward()
        grad = net.middle.weight.grad
        got = (
            tr("None (the layer never ran)")
            if grad is None
            else tr(f"norm {grad.norm().item():.3f}")
        )
        print(tr(f"depth={depth}: output {tuple(out.shape)}, middle.weight.grad: {got}"))


class ScaleMadeInForward(nn.Module):
    """A layer whose "learnable" scale is created
    inside forward, so it never learns (chapter 03)."""

    def __init__(self, n: int = 4):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def forward(self, x):
        scale = torch.ones(
            x.shape[1], device=x.device
        )  # meant to be learned: should be an nn.Parameter
        print("  " + tr(f"inside forward: scale.requires_grad = {scale.requires_grad}"))
        return self.linear(x) * scale


def trainable_report(module: nn.Module) -> None:
    """Print every parameter with its shape and
    requires_grad, and the trainable count (chapter 03)."""
    for name, p in module.named_parameters():
        print(f"  {name:16} {str(tuple(p.shape)):10} requires_grad={p.requires_grad}")
    total = sum(p.numel() for p in module.parameters())
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    print("  " + tr(f"trainable: {trainable} of {total} numbers"))
