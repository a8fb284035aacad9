"""Chapter 02, the same-device rule: exercises, the warehouse-and-workshop widget, demo helpers.

Every demo takes the second device from `course_lib.device.second_device()`: the GPU on a GPU
machine, else `meta`, which PyTorch treats as a genuine second device. The device-mismatch
errors shown here are therefore PyTorch's real errors on any machine.
"""
import itertools
import re
from dataclasses import dataclass
from html import escape

import torch
import torch.nn.functional as F
from torch import nn

from .device import device_report, devices_of, second_device  # noqa: F401 (used by the notebook)
from .exercises import Chapter, Fail, Test
from .sections import section

chapter = Chapter(__name__, title="The same-device rule")

PARTS = ("model", "inputs", "labels", "loss")
N_FEATURES, N_CLASSES, BATCH = 4, 3, 8


# ---------------------------------------------------------------- losses used in the demos
class ScaledCrossEntropy(nn.Module):
    """Cross-entropy with a learnable scale per class: a loss that OWNS a parameter (chapter 02)."""

    def __init__(self, n_classes: int = N_CLASSES):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(n_classes))

    def forward(self, logits, labels):
        return F.cross_entropy(logits * self.scale, labels)


class WeightedCrossEntropy(nn.Module):
    """Class-weighted cross-entropy; the weights are a buffer, or (the trap) a plain attribute (chapter 02)."""

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
    """An Adam state_dict after one step on a CPU `nn.Linear(4, 3)`, as a checkpoint holds it (chapter 02)."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
    return optimizer.state_dict()


def adam_state_devices(optimizer) -> dict:
    """{'exp_avg': 'cpu', ...}: where an optimizer's per-parameter state of its first parameter lives (chapter 02)."""
    state = next(iter(optimizer.state.values()), {})
    return {name: str(value.device) for name, value in state.items()}


# ---------------------------------------------------------------- one training step, for real
@dataclass
class StepOutcome:
    """What happened when a training step ran on a placement (chapter 02 widget)."""
    ran: bool
    detail: str


def make_step_parts(placement: dict):
    """A tiny model, a batch, its labels and a loss with a parameter, each on its own device (chapter 02)."""
    model = nn.Linear(N_FEATURES, N_CLASSES).to(placement["model"])
    x = torch.randn(BATCH, N_FEATURES).to(placement["inputs"])
    y = torch.randint(0, N_CLASSES, (BATCH,)).to(placement["labels"])
    loss_fn = ScaledCrossEntropy(N_CLASSES).to(placement["loss"])
    return model, x, y, loss_fn


def _loss_text(loss: torch.Tensor) -> str:
    if loss.device.type == "meta":
        return "loss computed on meta (meta tensors hold shapes, not numbers)"
    return f"loss = {loss.item():.4f} on {loss.device}"


def run_step(placement: dict) -> StepOutcome:
    """Forward, loss and backward on a placement; PyTorch's own error text if it fails (chapter 02)."""
    model, x, y, loss_fn = make_step_parts(placement)
    try:
        loss = loss_fn(model(x), y)
        loss.backward()
    except RuntimeError as err:
        return StepOutcome(False, f"RuntimeError: {str(err).strip().splitlines()[0]}")
    return StepOutcome(True, f"{_loss_text(loss)}; backward reached the model (weight.grad on "
                             f"{model.weight.grad.device})")


def all_placements(other=None) -> list:
    """All 16 ways to put model, inputs, labels and loss on the CPU or the other device (chapter 02)."""
    other = str(other or second_device())
    return [dict(zip(PARTS, devices)) for devices in itertools.product(["cpu", other], repeat=len(PARTS))]


def runs_expected(placement: dict) -> bool:
    """The rule: the step runs exactly when all four parts share one device (chapter 02)."""
    return len(set(placement.values())) == 1


def prediction_verdict(predicted_runs: bool, outcome: StepOutcome) -> bool:
    """True when the learner's prediction matches what really happened (chapter 02 widget)."""
    return predicted_runs == outcome.ran


def rooms(placement: dict) -> str:
    """'warehouse (cpu): model, labels | workshop (meta): inputs, loss' for a placement (chapter 02)."""
    groups = {}
    for part in PARTS:
        groups.setdefault(placement[part], []).append(part)
    name = lambda dev: "warehouse" if dev == "cpu" else "workshop"
    return " | ".join(f"{name(dev)} ({dev}): {', '.join(parts)}" for dev, parts in groups.items())


def _placement_row(placement: dict) -> str:
    return "".join(f"<td><code>{escape(placement[p])}</code></td>" for p in PARTS)


_PARTS_HEAD = "".join(f"<th>{p}</th>" for p in PARTS)


def outcome_html(placement: dict, predicted_runs: bool, outcome: StepOutcome) -> str:
    """The widget's answer: the placement, the prediction, the real outcome, right or wrong (chapter 02)."""
    right = prediction_verdict(predicted_runs, outcome)
    colour = "#1a7f37" if outcome.ran else "#cf222e"
    said = "it will run" if predicted_runs else "it will raise an error"
    verdict = "<b style='color:#1a7f37'>✔ right</b>" if right else "<b style='color:#cf222e'>✘ wrong</b>"
    return (f"<table class='course-workshop'><tr>{_PARTS_HEAD}</tr><tr>{_placement_row(placement)}</tr></table>"
            f"<div>{escape(rooms(placement))}</div>"
            f"<div>Your prediction: {said}. {verdict}</div>"
            f"<div>What PyTorch really did: <span style='color:{colour}'>"
            f"{'ran' if outcome.ran else 'raised'}</span></div>"
            f"<pre style='white-space:pre-wrap;background:#f6f8fa;color:#1f2328;padding:4px'>"
            f"{escape(outcome.detail)}</pre>")


def placements_table(other=None) -> str:
    """Run all 16 placements for real; an HTML table of what each one did (chapter 02)."""
    rows = []
    for placement in all_placements(other):
        outcome = run_step(placement)
        mark = "ran" if outcome.ran else "error"
        rows.append(f"<tr>{_placement_row(placement)}<td style='text-align:left'><b>{mark}</b>: "
                    f"{escape(outcome.detail)}</td></tr>")
    return (f"<table class='course-workshop'><tr>{_PARTS_HEAD}<th>what really happened</th></tr>"
            f"{''.join(rows)}</table>")


class WarehouseAndWorkshop:
    """Article A's second interactive component: place, predict, then run the step for real."""

    def __init__(self, other=None):
        import ipywidgets as W
        other = str(other or second_device())
        choices = [("warehouse (cpu)", "cpu"), (f"workshop ({other})", other)]
        self.pickers = {p: W.ToggleButtons(options=choices, value="cpu", description=f"{p}:") for p in PARTS}
        self.prediction = W.ToggleButtons(options=[("it will run", True), ("it will raise an error", False)],
                                          value=None, description="You predict:")
        self.button = W.Button(description="Run the step for real", button_style="primary",
                               layout=W.Layout(width="auto"))
        self.result = W.HTML()
        self.button.on_click(self._on_click)
        for toggle in [*self.pickers.values(), self.prediction]:
            toggle.observe(self._on_change, names="value")
        intro = W.HTML("<b>The warehouse and the workshop.</b> Put each part in the warehouse (the CPU) or the "
                       "workshop (the other device), predict, then run forward, loss and backward for real.")
        self.box = W.VBox([intro, *self.pickers.values(), self.prediction, self.button, self.result],
                          layout=W.Layout(border="1px solid #d0d7de", padding="6px"))

    def placement(self) -> dict:
        """The devices chosen in the widget, part -> device string."""
        return {p: w.value for p, w in self.pickers.items()}

    def _on_change(self, _=None):
        """A new placement or prediction: the old verdict no longer applies, so it goes."""
        if self.result.value:
            self.result.value = "<i>Changed: press the button to run this placement.</i>"

    def _on_click(self, _=None):
        if self.prediction.value is None:
            self.result.value = "<i>Choose your prediction first, then run.</i>"
            return
        self.result.value = outcome_html(self.placement(), self.prediction.value, run_step(self.placement()))

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def warehouse_and_workshop(other=None) -> WarehouseAndWorkshop:
    """Show the chapter 02 widget (the GPU, or meta on a CPU-only machine, is the workshop)."""
    return WarehouseAndWorkshop(other)


def placements_reveal(other=None):
    """A button that runs all 16 placements and shows the table, once the learner asks (chapter 02)."""
    import ipywidgets as W
    button = W.Button(description="Run all 16 placements", button_style="primary", layout=W.Layout(width="auto"))
    table = W.HTML()

    def reveal(_=None):
        table.value = placements_table(other)
        button.disabled = True

    button.on_click(reveal)
    return W.VBox([button, table])


# ---------------------------------------------------------------- exercise 1: move_to
META = torch.device("meta")
CONTAINERS = (list, tuple, dict)

# the type whose missing .to() crashed move_to -> what to tell the learner
CRASH_HINTS = {
    "tuple": "A tuple is a container, not a tensor: call move_to on each of its items and build a new tuple.",
    "list": "A list is a container, not a tensor: call move_to on each item and build a new list.",
    "dict": "A dict is a container, not a tensor: build a new dict with move_to applied to each value.",
    "int": "Numbers have no `.to()`: give ints and floats back unchanged.",
    "float": "Numbers have no `.to()`: give ints and floats back unchanged.",
    "bool": "`True` and `False` have no `.to()`: give them back unchanged.",
    "str": "Strings have no `.to()`: give them back unchanged.",
    "NoneType": "`None` has no `.to()`: give it back unchanged.",
}
DEFAULT_CRASH_HINT = "Only tensors have `.to()`: give every other value back unchanged."


def _holds_tensor(thing) -> bool:
    return any(True for _ in _tensors_in(thing))


def _moved_tensor(orig, got, device, path, given):
    if not isinstance(got, torch.Tensor):
        raise Fail(f"{path} was a tensor; your move_to returned a {type(got).__name__} there.",
                   expected="a tensor", got=repr(got))
    if got.device.type != device.type:
        same = " (the very tensor it was given)" if got is given else ""
        hint = ("`x.to(device)` returns a NEW tensor and leaves `x` where it was: return that result."
                if got is given else "Move every tensor: `x.to(device)`, and return the moved one.")
        raise Fail(f"{path} came back on {got.device}{same}.", expected=str(device), got=str(got.device), hint=hint)
    if got.shape != orig.shape or got.dtype != orig.dtype:
        raise Fail(f"{path} changed its shape or dtype.", expected=f"{tuple(orig.shape)} {orig.dtype}",
                   got=f"{tuple(got.shape)} {got.dtype}", hint="Only the device should change: use `.to(device)`.")


def _not_looked_inside(got, given, device, path):
    """Fail when a container holding tensors came back as the same object, its tensors not moved."""
    if got is given and any(t.device.type != device.type for _, t in _tensors_in(got)):
        raise Fail(f"{path} came back as the very {type(got).__name__} it was given, its tensors still on "
                   f"{next(t.device for _, t in _tensors_in(got))}: move_to never looked inside it.",
                   hint="Containers can hold containers: call move_to on every item, and the same code then "
                        "handles any depth.")


def _moved_sequence(orig, got, device, path, given):
    _not_looked_inside(got, given, device, path)
    if type(got) is not type(orig):
        raise Fail(f"{path} was a {type(orig).__name__}; your move_to returned a {type(got).__name__}.",
                   expected=type(orig).__name__, got=type(got).__name__,
                   hint="Keep the container's type: a tuple stays a tuple, a list stays a list.")
    if len(got) != len(orig):
        raise Fail(f"{path} had {len(orig)} items; yours has {len(got)}: something was dropped.",
                   expected=len(orig), got=len(got),
                   hint="Keep every item: non-tensors go back unchanged, they are not left out.")
    givens = given if isinstance(given, (list, tuple)) and len(given) == len(orig) else [None] * len(orig)
    for i, (a, b, g) in enumerate(zip(orig, got, givens)):
        _compare_moved(a, b, device, f"{path}[{i}]", g)


def _moved_dict(orig, got, device, path, given):
    _not_looked_inside(got, given, device, path)
    if not isinstance(got, dict):
        raise Fail(f"{path} was a dict; your move_to returned a {type(got).__name__}.", expected="dict",
                   got=type(got).__name__, hint="Build a new dict, with the same keys, from the moved values.")
    if list(got) != list(orig):
        dropped = [k for k in orig if k not in got]
        what = f"keys were dropped: {dropped}" if dropped else "the keys changed"
        raise Fail(f"In {path}, {what}.", expected=list(orig), got=list(got),
                   hint="Keep every key, in order; non-tensor values go back unchanged.")
    for k in orig:
        _compare_moved(orig[k], got[k], device, f"{path}[{k!r}]", given.get(k) if isinstance(given, dict) else None)


def _compare_moved(orig, got, device, path="batch", given=None):
    """Fail unless `got` is `orig` with every tensor on `device`, all else unchanged (chapter 02 checks).
    `given` is what the learner's function received, to tell 'result dropped' from 'never visited'."""
    if isinstance(orig, torch.Tensor):
        _moved_tensor(orig, got, device, path, given)
    elif isinstance(orig, (list, tuple)):
        _moved_sequence(orig, got, device, path, given)
    elif isinstance(orig, dict):
        _moved_dict(orig, got, device, path, given)
    elif type(got) is not type(orig) or got != orig:
        raise Fail(f"{path} is not a tensor, so it must come back unchanged.", expected=repr(orig), got=repr(got),
                   hint="Return ints, strings, None and other non-tensors as they are.")


def _call_move_to(candidate, batch, device, container_hint=""):
    """Call the learner's move_to; a `.to()` on a non-tensor becomes feedback that fits what crashed."""
    try:
        return candidate(batch, device)
    except AttributeError as err:
        found = re.match(r"'(\w+)' object has no attribute 'to'", str(err))
        if not found:
            raise
        kind = found.group(1)
        hint = CRASH_HINTS.get(kind, DEFAULT_CRASH_HINT)
        if container_hint and kind in {c.__name__ for c in CONTAINERS}:
            hint = container_hint
        article = "an" if kind[0].lower() in "aeiou" else "a"
        raise Fail(f"move_to called `.to()` on {article} {kind}, which is not a tensor: AttributeError: {err}.",
                   hint=hint) from None


def _tensors_in(batch, path="batch"):
    """(path, tensor) for every tensor inside a nested batch (chapter 02 checks)."""
    if isinstance(batch, torch.Tensor):
        yield path, batch
    elif isinstance(batch, (list, tuple)):
        for i, item in enumerate(batch):
            yield from _tensors_in(item, f"{path}[{i}]")
    elif isinstance(batch, dict):
        for k, item in batch.items():
            yield from _tensors_in(item, f"{path}[{k!r}]")


def check_move(make_batch, device=META, container_hint=""):
    """A test: move_to(make_batch(), device) moves every tensor and keeps everything else (chapter 02)."""
    def run(candidate):
        given = make_batch()
        got = _call_move_to(candidate, given, device, container_hint)
        _compare_moved(make_batch(), got, torch.device(device), "batch", given)
    return run


def check_batch_untouched(make_batch):
    """A test: move_to leaves the caller's batch as it was (chapter 02)."""
    def run(candidate):
        batch = make_batch()
        got = _call_move_to(candidate, batch, META)
        moved = [f"{p} is now on {t.device}" for p, t in _tensors_in(batch) if t.device.type != "cpu"]
        lost = len(list(_tensors_in(batch))) != len(list(_tensors_in(make_batch())))
        if moved or lost:
            same = " and returned that same object" if got is batch else ""
            raise Fail(f"Your move_to changed the batch it was given{same}: the caller's own data moved.",
                       expected="the caller's batch still on cpu", got=", ".join(moved) or "tensors went missing",
                       hint="Build and return new containers; leave the caller's batch as it was.")
    return run


def tuple_batch():
    """(inputs, labels), as a DataLoader over a TensorDataset yields it (chapter 02 tests)."""
    return (torch.randn(4, 3), torch.arange(4))


def dict_batch():
    """A dict batch with tensors and non-tensors side by side (chapter 02 tests)."""
    return {"x": torch.randn(2, 5), "y": torch.tensor([0, 1]), "ids": [7, 8], "name": "batch-0", "mask": None}


def nested_batch():
    """Containers inside containers (chapter 02 tests)."""
    return {"inputs": (torch.randn(2, 3), [torch.zeros(2), torch.ones(2, 2)]),
            "extra": {"lengths": torch.tensor([3, 1]), "source": "train.csv", "epoch": 0}}


def list_batch():
    """A list batch, as a caller builds it and then keeps using it (chapter 02 tests)."""
    return {"images": [torch.randn(3, 2), torch.randn(3, 4)], "labels": torch.tensor([1, 0])}


move_to = chapter.function_exercise(
    "move_to",
    title="Move a whole batch to the device",
    prompt="Write move_to(batch, device) that returns the batch with every tensor moved to `device`. "
           "A batch may be a tensor, or a tuple, list or dict holding tensors, non-tensors (ints, strings, "
           "None) and further tuples, lists and dicts, nested to any depth. Keep the container types (a tuple "
           "stays a tuple, a list a list, a dict keeps its keys in order), return non-tensors unchanged, and "
           "build new containers: the batch you were given is left as it was.",
    points=4,
    tests=[
        Test("a single tensor lands on the device", check_move(lambda: torch.randn(3, 2))),
        Test("an (inputs, labels) tuple stays a tuple", check_move(tuple_batch)),
        Test("a dict keeps its keys; non-tensors are left alone", check_move(dict_batch)),
        Test("containers inside containers are moved too", check_move(
            nested_batch, container_hint="Containers hold containers here: call move_to on every item of a "
                                         "container, and the same code then handles any depth.")),
        Test("the batch you were given is left as it was", check_batch_untouched(list_batch)),
    ],
    hints=["Three cases: a tensor (return its moved copy), a container (handle each item), anything else "
           "(return it unchanged).",
           "For a container, call move_to on each item: that one idea makes any depth of nesting work.",
           "Shape: if tensor -> its `.to(device)`; if dict -> a new dict of move_to(value); if list or tuple -> "
           "a new one of the same type, move_to on each item; else -> the value itself."],
)


# ---------------------------------------------------------------- exercise 2: where_is
WHERE_KEYS = ("model", "tensors", "same_device")


def _where_type_checks(got):
    if not isinstance(got, dict) or set(got) != set(WHERE_KEYS):
        raise Fail("where_is must return a dict with exactly the keys 'model', 'tensors' and 'same_device'.",
                   expected="{'model': [...], 'tensors': [...], 'same_device': ...}", got=repr(got))
    listed = list(got["model"]) + list(got["tensors"]) if isinstance(got["model"], list) and \
        isinstance(got["tensors"], list) else None
    if listed is None:
        raise Fail("'model' and 'tensors' must both be lists.", got=repr(got))
    if any(not isinstance(d, str) for d in listed):
        raise Fail("Report devices as strings such as 'cpu', 'cuda:0' or 'meta', not torch.device objects.",
                   got=repr(got), hint="`str(t.device)` turns a device into its string.")
    if not isinstance(got["same_device"], bool):
        raise Fail("'same_device' must be True or False.", got=repr(got["same_device"]))


def _missed_holder(model, devices) -> tuple:
    """('buffer', 'bn.running_var', 'cpu') for the first parameter or buffer on a device in `devices`."""
    named = [("parameter", n, t) for n, t in model.named_parameters()] + \
            [("buffer", n, t) for n, t in model.named_buffers()]
    return next((kind, name, str(t.device)) for kind, name, t in named if str(t.device) in devices)


MISSED_HINTS = {
    "parameter": "`next(model.parameters())` looks at the first parameter only: look at all of them.",
    "buffer": "`model.parameters()` has no buffers (BatchNorm's running statistics): add `model.buffers()`.",
}


def _check_model_devices(model, got, want):
    missing = [d for d in want if d not in got]
    if missing:
        kind, name, device = _missed_holder(model, missing)
        raise Fail(f"Your 'model' list is {got}, but the model's {kind} `{name}` is on {device}.",
                   expected=want, got=got, hint=MISSED_HINTS[kind])
    if got != want:
        raise Fail(f"Your 'model' list is {got}: list each device once, sorted.", expected=want, got=got,
                   hint="A set keeps each device once; `sorted(...)` turns it into a sorted list.")


def check_where(build, expected):
    """A test: where_is on the (model, tensors) from `build()` returns `expected` (chapter 02)."""
    def run(candidate):
        model, tensors = build()
        got = candidate(model, *tensors)
        _where_type_checks(got)
        _check_model_devices(model, got["model"], expected["model"])
        if got["tensors"] != expected["tensors"]:
            raise Fail(f"Your 'tensors' list is {got['tensors']}: one entry per tensor, in the order given.",
                       expected=expected["tensors"], got=got["tensors"])
        if got["same_device"] != expected["same_device"]:
            seen = sorted(set(expected["model"]) | set(expected["tensors"]))
            raise Fail(f"'same_device' came back {got['same_device']}, with the model and tensors on {seen}.",
                       expected=expected["same_device"], got=got["same_device"],
                       hint="Put the model's devices and the tensors' devices in one set: the same device "
                            "means one element.")
    return run


def _on_cpu():
    return nn.Linear(4, 2), (torch.randn(8, 4), torch.arange(8))


def _inputs_elsewhere():
    return nn.Linear(4, 2), (torch.randn(8, 4, device="meta"), torch.arange(8))


def _split_model():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model[2].to("meta")
    return model, (torch.randn(8, 4, device="meta"),)


def buffer_left_behind():
    """A model on meta whose BatchNorm buffer was put back on the CPU (chapter 02 tests)."""
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).to("meta")
    model[1].running_var = torch.ones(3)  # a buffer put back on the CPU
    return model, (torch.randn(8, 4, device="meta"),)


def all_on_meta():
    """Model and tensors all on meta (chapter 02 tests)."""
    return nn.Linear(4, 2).to("meta"), (torch.randn(8, 4, device="meta"), torch.arange(8, device="meta"))


where_is = chapter.function_exercise(
    "where_is",
    title="Where is everything? A device diagnostic",
    prompt="Write where_is(model, *tensors) returning a dict with exactly three keys: 'model': a sorted list of "
           "the distinct devices of ALL the model's parameters and buffers; 'tensors': a list with each "
           "tensor's device, in the order given; 'same_device': True when the model and every tensor are on "
           "one device, else False. Devices are strings: str(t.device), e.g. 'cpu', 'cuda:0', 'meta'.",
    points=3,
    tests=[
        Test("everything on the CPU", check_where(
            _on_cpu, {"model": ["cpu"], "tensors": ["cpu", "cpu"], "same_device": True})),
        Test("inputs on another device", check_where(
            _inputs_elsewhere, {"model": ["cpu"], "tensors": ["meta", "cpu"], "same_device": False})),
        Test("a model split across two devices", check_where(
            _split_model, {"model": ["cpu", "meta"], "tensors": ["meta"], "same_device": False})),
        Test("a buffer left on the CPU", check_where(
            buffer_left_behind, {"model": ["cpu", "meta"], "tensors": ["meta"], "same_device": False})),
    ],
    hints=["`next(model.parameters()).device` is article A's quick look, but it sees only the first parameter.",
           "Collect the device string of every tensor in `model.parameters()` and in `model.buffers()`, in a set.",
           "Shape: model = the sorted set of those strings; tensors = one string per tensor; same_device = "
           "whether both together hold exactly one device (an empty model adds nothing)."],
)


# ---------------------------------------------------------------- quizzes
failing_placements = chapter.quiz(
    "failing_placements",
    title="Which training steps fail?",
    kind="multiple",
    points=2,
    question="`device` is your GPU. For each setup, one training step runs: `logits = model(x)`; "
             "`loss = loss_fn(logits, y)`; `loss.backward()`. Which setups RAISE an error? Choose all that apply.",
    options={"a": "`model`, `x` and `y` all moved to `device`",
             "b": "`model` and `x` moved to `device`; `y` left on the CPU",
             "c": "`model`, `x` and `y` moved; `loss_fn = nn.CrossEntropyLoss()` created on the CPU, never moved",
             "d": "`model`, `x` and `y` moved; `loss_fn = ScaledCrossEntropy()` (it owns an `nn.Parameter`) "
                  "never moved",
             "e": "`x` and `y` moved to `device`; the model left on the CPU",
             "f": "nothing moved: `model`, `x`, `y` and the loss all on the CPU"},
    digest="21970b071b9b1f3f",
    hints=["For each setup, list every tensor the step touches: the parameters of the model and of the loss, "
           "`x` and `y`. Are they all in one place?",
           "A loss with no parameters holds nothing that could be left behind; a loss with an `nn.Parameter` "
           "is like a model."],
    why={"a": "Model, inputs and labels share one device, and the standard loss has nothing of its own to move.",
         "c": "`nn.CrossEntropyLoss()` holds no parameters or buffers: it computes wherever its inputs are.",
         "f": "Everything in the warehouse is still one device: the CPU alone runs the whole step."},
    explanation="Every tensor an operation touches must share one device: parameters (model and loss), inputs "
                "and labels. A loss without parameters has nothing to move.",
)

forgot_assignment = chapter.quiz(
    "forgot_assignment",
    title="Which error will this raise?",
    kind="error",
    question="`meta` stands in for the GPU. The model is moved, and so (it seems) is x. What happens at "
             "`model(x)`?",
    code='model = nn.Linear(4, 2)\n'
         'model.to("meta")                  # a module moves in place\n'
         'x = torch.randn(8, 4)\n'
         'x.to("meta")                      # the moved copy is thrown away\n'
         'model(x)',
    options={"a": "RuntimeError: x never left the CPU, and the model's weight is on meta",
             "b": "No error: `model.to` and `x.to` both moved their objects in place",
             "c": "TypeError: `model.to` returned None, so `model` can no longer be called",
             "d": "AttributeError: a plain tensor has no `.to` method; only modules do"},
    hints=["Look at the two `.to` lines: which result is kept, and which is thrown away?",
           f"{section('02', '`Module.to` and `Tensor.to`', start=True)} printed where `x` was after a lone `x.to(other)`."],
    why={"b": "Only a module moves in place; the comment on the fourth line says what happened to the copy.",
         "c": f"`Module.to` returns the module itself: {section('02', '`Module.to` and `Tensor.to`')} printed `returned is model: True`.",
         "d": f"Tensors do have `.to` ({section('02', '`Module.to` and `Tensor.to`')} used `x.to(other)`): the line runs, it just does not move `x`."},
    explanation="`Module.to` moves the module in place (and returns it); `Tensor.to` returns a NEW tensor. "
                "Write `x = x.to(device)`.",
)
