"""Chapter 02, the same-device rule: exercises, the warehouse-and-workshop widget, demo helpers.

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

from .device import device_report, devices_of, second_device  # noqa: F401 (used by the notebook)
from .exercises import Chapter, Fail, Test

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
    """The seed's second interactive component: place, predict, then run the step for real."""

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
        intro = W.HTML("<b>The warehouse and the workshop.</b> Put each part in the warehouse (the CPU) or the "
                       "workshop (the other device), predict, then run forward, loss and backward for real.")
        self.box = W.VBox([intro, *self.pickers.values(), self.prediction, self.button, self.result],
                          layout=W.Layout(border="1px solid #d0d7de", padding="6px"))

    def placement(self) -> dict:
        """The devices chosen in the widget, part -> device string."""
        return {p: w.value for p, w in self.pickers.items()}

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


# ---------------------------------------------------------------- exercise 1: move_to
META = torch.device("meta")


def _moved_tensor(orig, got, device, path):
    if not isinstance(got, torch.Tensor):
        raise Fail(f"{path} was a tensor; your move_to returned a {type(got).__name__} there.",
                   expected="a tensor", got=repr(got))
    if got.device.type != device.type:
        if path == "batch":
            raise Fail(f"The tensor is still on {got.device}.", expected=str(device), got=str(got.device),
                       hint="x.to(device) returns a NEW tensor and leaves x where it was: return that result.")
        raise Fail(f"{path} is still on {got.device}.", expected=str(device), got=str(got.device),
                   hint="Two usual causes: a container inside the batch was never visited (call move_to on every "
                        "item: recursion handles any depth), or x.to(device) was called and its result dropped.")
    if got.shape != orig.shape or got.dtype != orig.dtype:
        raise Fail(f"{path} changed its shape or dtype.", expected=f"{tuple(orig.shape)} {orig.dtype}",
                   got=f"{tuple(got.shape)} {got.dtype}", hint="Only the device should change: use .to(device).")


def _moved_sequence(orig, got, device, path):
    if type(got) is not type(orig):
        raise Fail(f"{path} was a {type(orig).__name__}; your move_to returned a {type(got).__name__}.",
                   expected=type(orig).__name__, got=type(got).__name__,
                   hint="Keep the container's type: a tuple stays a tuple (tuple(...)), a list stays a list.")
    if len(got) != len(orig):
        raise Fail(f"{path} had {len(orig)} items; yours has {len(got)}: something was dropped.",
                   expected=len(orig), got=len(got),
                   hint="Keep every item: non-tensors go back unchanged, they are not left out.")
    for i, (a, b) in enumerate(zip(orig, got)):
        _compare_moved(a, b, device, f"{path}[{i}]")


def _moved_dict(orig, got, device, path):
    if not isinstance(got, dict):
        raise Fail(f"{path} was a dict; your move_to returned a {type(got).__name__}.", expected="dict",
                   got=type(got).__name__, hint="Build a dict again: {k: move_to(v, device) for k, v in ...}.")
    if list(got) != list(orig):
        dropped = [k for k in orig if k not in got]
        what = f"keys were dropped: {dropped}" if dropped else "the keys changed"
        raise Fail(f"In {path}, {what}.", expected=list(orig), got=list(got),
                   hint="Keep every key, in order; non-tensor values go back unchanged.")
    for k in orig:
        _compare_moved(orig[k], got[k], device, f"{path}[{k!r}]")


def _compare_moved(orig, got, device, path="batch"):
    """Fail unless `got` is `orig` with every tensor on `device`, all else unchanged (chapter 02 checks)."""
    if isinstance(orig, torch.Tensor):
        _moved_tensor(orig, got, device, path)
    elif isinstance(orig, (list, tuple)):
        _moved_sequence(orig, got, device, path)
    elif isinstance(orig, dict):
        _moved_dict(orig, got, device, path)
    elif type(got) is not type(orig) or got != orig:
        raise Fail(f"{path} is not a tensor, so it must come back unchanged.", expected=repr(orig), got=repr(got),
                   hint="Return ints, strings, None and other non-tensors as they are.")


def _call_move_to(candidate, batch, device):
    try:
        return candidate(batch, device)
    except AttributeError as err:
        if "'to'" not in str(err):
            raise
        raise Fail(f"move_to crashed on a non-tensor: AttributeError: {err}.",
                   hint="Only tensors have .to(): return ints, strings, None unchanged.") from None


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


def _check_move(make_batch, device=META):
    def run(candidate):
        got = _call_move_to(candidate, make_batch(), device)
        _compare_moved(make_batch(), got, torch.device(device))
    return run


def _check_batch_untouched(make_batch):
    def run(candidate):
        batch = make_batch()
        _call_move_to(candidate, batch, META)
        moved = [(path, t.device) for path, t in _tensors_in(batch) if t.device.type != "cpu"]
        if moved or len(list(_tensors_in(batch))) != len(list(_tensors_in(make_batch()))):
            raise Fail("Your move_to changed the batch it was given (the caller's own containers).",
                       expected="the caller's batch still on cpu", got=", ".join(f"{p} on {d}" for p, d in moved),
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
        Test("a single tensor lands on the device", _check_move(lambda: torch.randn(3, 2))),
        Test("an (inputs, labels) tuple stays a tuple", _check_move(tuple_batch)),
        Test("a dict keeps its keys; non-tensors are left alone", _check_move(dict_batch)),
        Test("containers inside containers are moved too", _check_move(nested_batch)),
    ],
    hints=["Three cases: a tensor (return x.to(device)), a container (handle each item), anything else "
           "(return it unchanged).",
           "For a container, call move_to on each item: that one line makes any depth of nesting work.",
           "dict: {k: move_to(v, device) for k, v in batch.items()}; tuple: tuple(move_to(v, device) for v in "
           "batch); list: [move_to(v, device) for v in batch]."],
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
                   got=repr(got), hint="str(t.device) turns a device into its string.")
    if not isinstance(got["same_device"], bool):
        raise Fail("'same_device' must be True or False.", got=repr(got["same_device"]))


def _check_where(build, expected, hint=""):
    def run(candidate):
        model, tensors = build()
        got = candidate(model, *tensors)
        _where_type_checks(got)
        if got["model"] != expected["model"]:
            raise Fail("The model's devices are not right (a sorted list of the distinct devices of ALL its "
                       "parameters and buffers).", expected=expected["model"], got=got["model"], hint=hint)
        if got["tensors"] != expected["tensors"]:
            raise Fail("The tensors' devices are not right (one entry per tensor, in the order given).",
                       expected=expected["tensors"], got=got["tensors"])
        if got["same_device"] != expected["same_device"]:
            raise Fail("'same_device' is wrong: it must be True only when the model AND every tensor share "
                       "one device.", expected=expected["same_device"], got=got["same_device"],
                       hint="Put the model's devices and the tensors' devices in one set; same means one element.")
    return run


def _on_cpu():
    return nn.Linear(4, 2), (torch.randn(8, 4), torch.arange(8))


def _inputs_elsewhere():
    return nn.Linear(4, 2), (torch.randn(8, 4, device="meta"), torch.arange(8))


def _split_model():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model[2].to("meta")
    return model, (torch.randn(8, 4, device="meta"),)


def _buffer_left_behind():
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).to("meta")
    model[1].running_var = torch.ones(3)  # a buffer put back on the CPU
    return model, (torch.randn(8, 4, device="meta"),)


def _all_on_meta():
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
        Test("everything on the CPU", _check_where(
            _on_cpu, {"model": ["cpu"], "tensors": ["cpu", "cpu"], "same_device": True})),
        Test("inputs on another device", _check_where(
            _inputs_elsewhere, {"model": ["cpu"], "tensors": ["meta", "cpu"], "same_device": False})),
        Test("a model split across two devices", _check_where(
            _split_model, {"model": ["cpu", "meta"], "tensors": ["meta"], "same_device": False},
            hint="The model is split across two devices: next(model.parameters()) only looks at the first "
                 "parameter. Look at all of them.")),
    ],
    hints=["next(model.parameters()).device is the seed's quick look, but it sees only the first parameter.",
           "Collect {str(p.device) for p in model.parameters()} and the same for model.buffers(); sort the set.",
           "same_device: len(set(model_devices) | set(tensor_devices)) == 1 (an empty model adds nothing)."],
)


# ---------------------------------------------------------------- quizzes
failing_placements = chapter.quiz(
    "failing_placements",
    title="Which training steps fail?",
    kind="multiple",
    points=2,
    question="`device` is your GPU. For each setup, one training step runs: logits = model(x); "
             "loss = loss_fn(logits, y); loss.backward(). Which setups RAISE an error? Choose all that apply.",
    options={"a": "model, x and y all moved to device",
             "b": "model and x moved to device; y left on the CPU",
             "c": "model, x and y moved; loss_fn = nn.CrossEntropyLoss() created on the CPU and never moved",
             "d": "model, x and y moved; loss_fn = ScaledCrossEntropy() (it owns an nn.Parameter) never moved",
             "e": "x and y moved to device; the model left on the CPU",
             "f": "nothing moved: model, x, y and the loss all on the CPU"},
    digest="21970b071b9b1f3f",
    explanation="Every tensor an operation touches must share one device: parameters (model and loss), inputs "
                "and labels. A loss without parameters has nothing to move.",
)

forgot_assignment = chapter.quiz(
    "forgot_assignment",
    title="Which error will this raise?",
    kind="error",
    question="`meta` stands in for the GPU. The model is moved, and so (it seems) is x. What happens at model(x)?",
    code='model = nn.Linear(4, 2)\n'
         'model.to("meta")                  # a module moves in place\n'
         'x = torch.randn(8, 4)\n'
         'x.to("meta")                      # the moved copy is thrown away\n'
         'model(x)',
    options={"a": "No error: both lines moved their object",
             "b": "RuntimeError: x is still on the CPU, the model is on meta",
             "c": "AttributeError: a tensor has no .to method",
             "d": "TypeError: model.to returns None, so model is None"},
    explanation="Module.to moves the module in place (and returns it); Tensor.to returns a NEW tensor. "
                "Write x = x.to(device).",
)
