"""Chapter 02, the same-device rule: the demos and the
warehouse-and-workshop widget, then the exercises.

Every demo takes the second device from `course_lib.device.second_device()`: the GPU on a GPU
machine, else `meta`, which PyTorch treats as a genuine second device. The device-mismatch
errors shown here are therefore PyTorch's real errors on any machine.
"""

import itertools
from dataclasses import dataclass
from html import escape

import torch
import torch.nn.functional as F
from torch import nn

from . import chapters
from .checks import batches
from .device import device_report, second_device
from .exercises import Declarations, Test
from .i18n import tr
from .i18n.catalogue import join
from .sections import section
from .widgets import Html, code, html_table, reveal, widget

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "move_to",
    "where_is",
    "failing_placements",
    "forgot_assignment",
    # teaching helpers: the demos, widgets and models the notebook uses
    "ScaledCrossEntropy",
    "WeightedCrossEntropy",
    "adam_checkpoint",
    "adam_state_devices",
    "device_report",
    "PARTS",
    "StepOutcome",
    "make_step_parts",
    "run_step",
    "all_placements",
    "runs_expected",
    "prediction_verdict",
    "rooms",
    "outcome_html",
    "placements_table",
    "warehouse_and_workshop",
    "placements_reveal",
]


def __dir__():
    return __all__


PARTS = ("model", "inputs", "labels", "loss")
N_FEATURES, N_CLASSES, BATCH = 4, 3, 8


# ================================================================ teaching helpers
# ---------------------------------------------------------------- losses used in the demos
class ScaledCrossEntropy(nn.Module):
    """Cross-entropy with a learnable scale per class: a loss that OWNS a parameter (chapter 02)."""

    def __init__(self, n_classes: int = N_CLASSES):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(n_classes))

    def forward(self, logits, labels):
        return F.cross_entropy(logits * self.scale, labels)


class WeightedCrossEntropy(nn.Module):
    """Class-weighted cross-entropy; the weights are a
    buffer, or (the trap) a plain attribute (chapter 02)."""

    def __init__(self, class_weights: torch.Tensor, as_buffer: bool = True):
        super().__init__()
        if as_buffer:
            self.register_buffer("class_weights", class_weights)
        else:
            self.class_weights = class_weights  # a plain attribute: Module.to never sees it

    def forward(self, logits, labels):
        return F.cross_entropy(logits, labels, weight=self.class_weights)


# ---------------------------------------------------------------- the optimizer and the move
def adam_checkpoint() -> dict:
    """An Adam state_dict after one step on a CPU
    `nn.Linear(4, 3)`, as a checkpoint holds it (chapter 02)."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
    return optimizer.state_dict()


def adam_state_devices(optimizer) -> dict:
    """{'exp_avg': 'cpu', ...}: where an optimizer's per-parameter
    state of its first parameter lives (chapter 02)."""
    state = next(iter(optimizer.state.values()), {})
    return {name: str(value.device) for name, value in state.items()}


# ---------------------------------------------------------------- one training step, for real
@dataclass
class StepOutcome:
    """What happened when a training step ran on a placement (chapter 02 widget)."""

    ran: bool
    detail: str


def make_step_parts(placement: dict):
    """A tiny model, a batch, its labels and a loss with
    a parameter, each on its own device (chapter 02)."""
    model = nn.Linear(N_FEATURES, N_CLASSES).to(placement["model"])
    x = torch.randn(BATCH, N_FEATURES).to(placement["inputs"])
    y = torch.randint(0, N_CLASSES, (BATCH,)).to(placement["labels"])
    loss_fn = ScaledCrossEntropy(N_CLASSES).to(placement["loss"])
    return model, x, y, loss_fn


def _loss_text(loss: torch.Tensor) -> str:
    if loss.device.type == "meta":
        return tr("loss computed on meta (meta tensors hold shapes, not numbers)")
    return tr(f"loss = {loss.item():.4f} on {loss.device}")


def run_step(placement: dict) -> StepOutcome:
    """Forward, loss and backward on a placement;
    PyTorch's own error text if it fails (chapter 02)."""
    model, x, y, loss_fn = make_step_parts(placement)
    try:
        loss = loss_fn(model(x), y)
        loss.backward()
    except RuntimeError as err:
        return StepOutcome(False, f"RuntimeError: {str(err).strip().splitlines()[0]}")
    return StepOutcome(
        True,
        tr(
            f"{_loss_text(loss)}; backward reached the model (weight.grad on "
            f"{model.weight.grad.device})"
        ),
    )


def all_placements(other=None) -> list:
    """All 16 ways to put model, inputs, labels and
    loss on the CPU or the other device (chapter 02)."""
    other = str(other or second_device())
    return [
        dict(zip(PARTS, devices))
        for devices in itertools.product(["cpu", other], repeat=len(PARTS))
    ]


def runs_expected(placement: dict) -> bool:
    """The rule: the step runs exactly when all four parts share one device (chapter 02)."""
    return len(set(placement.values())) == 1


def prediction_verdict(predicted_runs: bool, outcome: StepOutcome) -> bool:
    """True when the learner's prediction matches what really happened (chapter 02 widget)."""
    return predicted_runs == outcome.ran


def rooms(placement: dict) -> str:
    """'warehouse (cpu): model, labels | workshop
    (meta): inputs, loss' for a placement (chapter 02)."""
    groups = {}
    for part in PARTS:
        groups.setdefault(placement[part], []).append(part)
    name = lambda dev: tr("warehouse" if dev == "cpu" else "workshop")
    return " | ".join(
        join([f"{name(dev)} ({dev})", join([tr(p) for p in parts], ", ")], ": ")
        for dev, parts in groups.items()
    )


def _placement_cells(placement: dict) -> list:
    return [code(placement[p]) for p in PARTS]


def outcome_html(placement: dict, predicted_runs: bool, outcome: StepOutcome) -> str:
    """The widget's answer: the placement, the prediction,
    the real outcome, right or wrong (chapter 02)."""
    right = prediction_verdict(predicted_runs, outcome)
    colour = "#1a7f37" if outcome.ran else "#cf222e"
    said = tr("it will run" if predicted_runs else "it will raise an error")
    verdict = (
        f"<b style='color:#1a7f37'>✔ {tr('right')}</b>"
        if right
        else f"<b style='color:#cf222e'>✘ {tr('wrong')}</b>"
    )
    did = tr("ran" if outcome.ran else "raised")
    return (
        html_table([tr(p) for p in PARTS], [_placement_cells(placement)], name="workshop")
        + f"<div>{escape(rooms(placement))}</div>"
        f"<div>{tr(f'Your prediction: {said}.')} {verdict}</div>"
        f"<div>{tr('What PyTorch really did:')} <span style='color:{colour}'>{did}</span></div>"
        f"<pre style='white-space:pre-wrap;background:#f6f8fa;color:#1f2328;padding:4px'>"
        f"{escape(outcome.detail)}</pre>"
    )


def placements_table(other=None) -> str:
    """Run all 16 placements for real; an HTML table of what each one did (chapter 02)."""
    rows = []
    for placement in all_placements(other):
        outcome = run_step(placement)
        mark = tr("ran" if outcome.ran else "error")
        rows.append(
            _placement_cells(placement) + [Html(f"<b>{escape(mark)}</b>: {escape(outcome.detail)}")]
        )
    header = [tr(p) for p in (*PARTS, "what really happened")]
    return html_table(header, rows, name="workshop")


class WarehouseAndWorkshop:
    """Article A's second interactive component: place, predict, then run the step for real."""

    def __init__(self, other=None):
        import ipywidgets as W

        other = str(other or second_device())
        choices = [(tr("warehouse (cpu)"), "cpu"), (tr(f"workshop ({other})"), other)]
        self.pickers = {
            p: widget(W.ToggleButtons, options=choices, value="cpu", description=tr(f"{p}:"))
            for p in PARTS
        }
        self.prediction = widget(
            W.ToggleButtons,
            options=[(tr("it will run"), True), (tr("it will raise an error"), False)],
            value=None,
            description=tr("You predict:"),
        )
        self.button = widget(
            W.Button,
            description=tr("Run the step for real"),
            button_style="primary",
            layout={"width": "auto"},
        )
        self.result = widget(W.HTML)
        self.button.on_click(self._on_click)
        for toggle in [*self.pickers.values(), self.prediction]:
            toggle.observe(self._on_change, names="value")
        intro = widget(
            W.HTML,
            tr(
                "<b>The warehouse and the workshop.</b> Put each part in the warehouse (the CPU) "
                "or the workshop (the other device), predict, then run forward, loss and backward "
                "for real."
            ),
        )
        self.box = widget(
            W.VBox,
            [intro, *self.pickers.values(), self.prediction, self.button, self.result],
            layout={"border": "1px solid #d0d7de", "padding": "6px"},
        )

    def placement(self) -> dict:
        """The devices chosen in the widget, part -> device string."""
        return {p: w.value for p, w in self.pickers.items()}

    def _on_change(self, _=None):
        """A new placement or prediction: the old verdict no longer applies, so it goes."""
        if self.result.value:
            self.result.value = f"<i>{tr('Changed: press the button to run this placement.')}</i>"

    def _on_click(self, _=None):
        if self.prediction.value is None:
            self.result.value = f"<i>{tr('Choose your prediction first, then run.')}</i>"
            return
        self.result.value = outcome_html(
            self.placement(), self.prediction.value, run_step(self.placement())
        )

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def warehouse_and_workshop(other=None) -> WarehouseAndWorkshop:
    """Show the chapter 02 widget (the GPU, or meta on a CPU-only machine, is the workshop)."""
    return WarehouseAndWorkshop(other)


def placements_reveal(other=None):
    """A button that runs all 16 placements and shows
    the table, once the learner asks (chapter 02)."""
    return reveal(placements_table, other, label=tr("Run all 16 placements"))


# ================================================================ exercises and quizzes
# ---------------------------------------------------------------- exercise 1: move_to
# The checks live in course_lib/checks/batches.py.

move_to = declare.function_exercise(
    "move_to",
    title="Move a whole batch to the device",
    prompt=(
        "Write move_to(batch, device) that returns the batch with every tensor moved to `device`. "
        "A batch may be a tensor, or a tuple, list or dict holding tensors, non-tensors (ints, "
        "strings, None) and further tuples, lists and dicts, nested to any depth. Keep the "
        "container types (a tuple stays a tuple, a list a list, a dict keeps its keys in order), "
        "return non-tensors unchanged, and build new containers: the batch you were given is left "
        "as it was."
    ),
    points=4,
    tests=[
        Test("a single tensor lands on the device", batches.Moves(batches.randn(3, 2))),
        Test("an (inputs, labels) tuple stays a tuple", batches.Moves(batches.tuple_batch())),
        Test(
            "a dict keeps its keys; non-tensors are left alone", batches.Moves(batches.dict_batch())
        ),
        Test(
            "containers inside containers are moved too",
            batches.Moves(
                batches.nested_batch(),
                container_hint="Containers hold containers here: call move_to on every item of a "
                "container, and the same code then handles any depth.",
            ),
        ),
        Test("the batch you were given is left as it was", batches.Untouched(batches.list_batch())),
    ],
    hints=[
        (
            "Three cases: a tensor (return its moved copy), a container (handle each item), "
            "anything else (return it unchanged)."
        ),
        (
            "For a container, call move_to on each item: that one idea makes any depth of nesting "
            "work."
        ),
        (
            "Shape: if tensor -> its `.to(device)`; if dict -> a new dict of move_to(value); if "
            "list or tuple -> a new one of the same type, move_to on each item; else -> the value "
            "itself."
        ),
    ],
)


# ---------------------------------------------------------------- exercise 2: where_is
def _where(layers, tensors, model, tensor_devices, same):
    return batches.Where(
        layers, tensors, {"model": model, "tensors": tensor_devices, "same_device": same}
    )


where_is = declare.function_exercise(
    "where_is",
    title="Where is everything? A device diagnostic",
    prompt=(
        "Write where_is(model, *tensors) returning a dict with exactly three keys: 'model': a "
        "sorted list of the distinct devices of ALL the model's parameters and buffers; "
        "'tensors': a list with each tensor's device, in the order given; 'same_device': True "
        "when the model and every tensor are on one device, else False. Devices are strings: "
        "str(t.device), e.g. 'cpu', 'cuda:0', 'meta'."
    ),
    points=3,
    tests=[
        Test(
            "everything on the CPU",
            _where(
                [("Linear", (4, 2), "cpu")],
                [batches.randn(8, 4), torch.arange(8)],
                ["cpu"],
                ["cpu", "cpu"],
                True,
            ),
        ),
        Test(
            "inputs on another device",
            _where(
                [("Linear", (4, 2), "cpu")],
                [torch.empty(8, 4, device="meta"), torch.arange(8)],
                ["cpu"],
                ["meta", "cpu"],
                False,
            ),
        ),
        Test(
            "a model split across two devices",
            _where(
                [("Linear", (4, 8), "cpu"), ("ReLU", (), "cpu"), ("Linear", (8, 2), "meta")],
                [torch.empty(8, 4, device="meta")],
                ["cpu", "meta"],
                ["meta"],
                False,
            ),
        ),
        Test(
            "a buffer left on the CPU",
            _where(  # a model on meta whose BatchNorm buffer was put back
                [("Linear", (4, 3), "meta"), ("BatchNorm1d", (3,), "meta", {"running_var": "cpu"})],
                [torch.empty(8, 4, device="meta")],
                ["cpu", "meta"],
                ["meta"],
                False,
            ),
        ),
    ],
    hints=[
        (
            "`next(model.parameters()).device` is article A's quick look, but it sees only the "
            "first parameter."
        ),
        (
            "Collect the device string of every tensor in `model.parameters()` and in "
            "`model.buffers()`, in a set."
        ),
        (
            "Shape: model = the sorted set of those strings; tensors = one string per tensor; "
            "same_device = whether both together hold exactly one device (an empty model adds "
            "nothing)."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
failing_placements = declare.quiz(
    "failing_placements",
    title="Which training steps fail?",
    kind="multiple",
    points=2,
    question=(
        "`device` is your GPU. For each setup, one training step runs: `logits = model(x)`; "
        "`loss = loss_fn(logits, y)`; `loss.backward()`. Which setups RAISE an error? Choose all "
        "that apply."
    ),
    options={
        "a": "`model`, `x` and `y` all moved to `device`",
        "b": "`model` and `x` moved to `device`; `y` left on the CPU",
        "c": (
            "`model`, `x` and `y` moved; `loss_fn = nn.CrossEntropyLoss()` created on the CPU, "
            "never moved"
        ),
        "d": (
            "`model`, `x` and `y` moved; `loss_fn = ScaledCrossEntropy()` (it owns an "
            "`nn.Parameter`) never moved"
        ),
        "e": "`x` and `y` moved to `device`; the model left on the CPU",
        "f": "nothing moved: `model`, `x`, `y` and the loss all on the CPU",
    },
    digest="21970b071b9b1f3f",
    hints=[
        (
            "For each setup, list every tensor the step touches: the parameters of the model and "
            "of the loss, `x` and `y`. Are they all in one place?"
        ),
        (
            "A loss with no parameters holds nothing that could be left behind; a loss with an "
            "`nn.Parameter` is like a model."
        ),
    ],
    why={
        "a": (
            "Model, inputs and labels share one device, and the standard loss has nothing of its "
            "own to move."
        ),
        "c": (
            "`nn.CrossEntropyLoss()` holds no parameters or buffers: it computes wherever its "
            "inputs are."
        ),
        "f": "Everything in the warehouse is still one device: the CPU alone runs the whole step.",
    },
    explanation=(
        "Every tensor an operation touches must share one device: parameters (model and loss), "
        "inputs and labels. A loss without parameters has nothing to move."
    ),
)

forgot_assignment = declare.quiz(
    "forgot_assignment",
    title="Which error will this raise?",
    kind="error",
    question=(
        "`meta` stands in for the GPU. The model is moved, and so (it seems) is x. What happens "
        "at `model(x)`?"
    ),
    code="model = nn.Linear(4, 2)\n"
    'model.to("meta")                  # a module moves in place\n'
    "x = torch.randn(8, 4)\n"
    'x.to("meta")                      # the moved copy is thrown away\n'
    "model(x)",
    options={
        "a": "RuntimeError: x never left the CPU, and the model's weight is on meta",
        "b": "No error: `model.to` and `x.to` both moved their objects in place",
        "c": "TypeError: `model.to` returned None, so `model` can no longer be called",
        "d": (
            "RuntimeError the other way round: `model.to`'s moved copy was thrown away, so the "
            "weights stayed on the CPU and x moved"
        ),
    },
    hints=[
        "Look at the two `.to` lines: which result is kept, and which is thrown away?",
        (
            f"{section('02', '`Module.to` and `Tensor.to`', start=True)} printed where `x` was "
            "after a lone `x.to(other)`."
        ),
    ],
    why={
        "b": (
            "Only a module moves in place; the comment on the fourth line says what happened to "
            "the copy."
        ),
        "c": (
            "`Module.to` returns the module itself: "
            f"{section('02', '`Module.to` and `Tensor.to`')} printed `returned is model: True`."
        ),
        "d": (
            "The other way round: a module moves in place and returns itself; `Tensor.to` "
            "returns a new tensor, and that is the copy thrown away."
        ),
    },
    explanation=(
        "`Module.to` moves the module in place (and returns it); `Tensor.to` returns a NEW "
        "tensor. Write `x = x.to(device)`."
    ),
)
