"""Chapter 01, device check: its exercises and quizzes, then the widgets the notebook shows.

The checks (and the machine simulator they run choices on) are in course_lib/checks/devices.py.
"""

import torch

from . import chapters
from .checks import devices
from .checks.devices import MACHINES, expected_device_type, simulated_machine
from .checks.rig import trace_devices
from .doctor import doctor_widget
from .exercises import Declarations, Test
from .i18n import tr
from .sections import section
from .widgets import code, html_table, widget

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "choose_device",
    "gpu_names",
    "make_batch",
    "device_label",
    "model_vs_input",
    "tensor_bytes",
    "created_on_device",
    # teaching helpers: the demos, widgets and models the notebook uses
    "environment_panel",
    "machine_explorer",
    "verdict_on",
    "DEVICE_CHOICES",
    "trace_devices",
]


def __dir__():
    return __all__


# ================================================================ exercises and quizzes
# ---------------------------------------------------------------- exercise 1: choose_device
choose_device = declare.function_exercise(
    "choose_device",
    title="Choose the device without hard-coding it",
    prompt=(
        "Write choose_device() -> torch.device: cuda when a CUDA GPU is available, else mps when "
        "Apple's GPU is, else cpu."
    ),
    points=3,
    tests=[
        Test("returns a torch.device that exists on this machine", devices.ChoiceHere()),
        Test("picks cuda on a 1-GPU workstation", devices.Choice("1-GPU workstation")),
        Test("uses the Apple GPU on a Mac", devices.Choice("Mac with Apple GPU")),
        Test("falls back to cpu on a CPU-only laptop", devices.Choice("CPU-only laptop")),
    ],
    hints=[
        (
            "Start from article A's one-liner: "
            "`torch.device('cuda' if torch.cuda.is_available() else 'cpu')`."
        ),
        (
            "Add the middle case: `torch.backends.mps.is_available()` tells whether a Mac's GPU "
            "can be used."
        ),
        "Shape: if (cuda available): return the cuda device; elif (mps available): return the mps "
        "device; else: return the cpu device.",
    ],
)


# ---------------------------------------------------------------- exercise 2: gpu_names
gpu_names = declare.function_exercise(
    "gpu_names",
    title="List the GPUs (and survive having none)",
    prompt="Write gpu_names() -> list[str]: the name of every visible CUDA GPU, in index order; "
    "an empty list on a machine without one.",
    points=3,
    tests=[
        Test("works on this machine", devices.NamesHere()),
        Test("returns [] on a CPU-only laptop without crashing", devices.Names("CPU-only laptop")),
        Test("lists all four GPUs of a 4-GPU server", devices.Names("4-GPU server")),
    ],
    hints=[
        "`torch.cuda.device_count()` says how many; `torch.cuda.get_device_name(i)` names GPU i.",
        "On a CPU-only machine `get_device_name(0)` raises, so only call it for the indices "
        "`range(device_count())` gives.",
        "Shape: if there is no CUDA GPU, return an empty list; else build a list with one name per "
        "index, in order.",
    ],
)


# ---------------------------------------------------------------- exercise 3: make_batch
make_batch = declare.function_exercise(
    "make_batch",
    title="Create a batch directly on the device",
    prompt=(
        "Write make_batch(batch_size, n_features, device) -> a float32 tensor of standard-normal "
        "noise, shape (batch_size, n_features), created directly on `device` (no CPU detour)."
    ),
    points=3,
    tests=[
        Test("shape, dtype and device on the CPU", devices.Batch(4, 3, "cpu")),
        Test("lands on a second device (meta)", devices.Batch(8, 5, "meta", detour_check=False)),
        Test("is created there, not copied from the CPU", devices.Batch(8, 5, "meta")),
    ],
    hints=[
        (
            "Factory functions such as `torch.randn`, `torch.zeros` and `torch.ones` take a "
            "`device=` argument."
        ),
        (
            "`torch.randn(32, 10).to(device)` makes the tensor on the CPU and then copies it: "
            "twice the work."
        ),
        (
            "Shape: one call to the standard-normal factory, with the two sizes and the device "
            "keyword."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
device_label = declare.quiz(
    "device_label",
    title="What does torch.device('cuda') do?",
    question="On a laptop WITHOUT a GPU you run `d = torch.device('cuda')`. What happens?",
    options={
        "a": "PyTorch raises a RuntimeError at once: this laptop has no CUDA GPU",
        "b": "A small block of GPU memory is reserved for the first tensor",
        "c": "Nothing happens on a GPU: `d` names a place; a tensor put there fails",
        "d": "`d` quietly becomes the CPU device, so later code runs there",
    },
    digest="50d4fd0c137e169d",
    hints=[
        (
            f"{section('01', 'only a label', start=True)} runs this very line on your machine: "
            "look at what it printed."
        ),
        (
            "Ask yourself when memory is needed: when a name is written down, or when a tensor is "
            "put there?"
        ),
    ],
    why={
        "a": (
            "Making a `torch.device` checks only the spelling (`cuda`, `cuda:1`); it never asks "
            "the driver whether a GPU exists."
        ),
        "b": "A `torch.device` owns no memory at all, on any machine.",
        "d": (
            "PyTorch never swaps the device for you: `d.type` stays `'cuda'`, as printing it shows."
        ),
    },
    explanation=(
        "`torch.device` is an address label; memory is used only when a tensor or model is put "
        "there."
    ),
)

model_vs_input = declare.quiz(
    "model_vs_input",
    title="Which error will this raise?",
    kind="error",
    question=(
        "The model stays on the CPU; the input lives on another device. What happens at `model(x)`?"
    ),
    code="model = nn.Linear(4, 2)                  # on the CPU\n"
    'x = torch.randn(8, 4, device="meta")     # on another device\n'
    "model(x)",
    options={
        "a": "TypeError: `nn.Linear` accepts only input tensors that live on the CPU",
        "b": "No error: PyTorch copies the weights over to the input, just slowly",
        "c": "ValueError: the input's shape does not fit a layer on another device",
        "d": "RuntimeError: the input and the layer's weight are on two devices",
    },
    hints=[
        "Which claim of article B does this code test?",
        (
            "Chapter 02 breaks this rule on purpose; think of what an operation needs from all "
            "its tensors."
        ),
    ],
    why={
        "a": (
            "`x` is a tensor like any other: nothing about its type is wrong, only where it lives."
        ),
        "b": (
            'That is article B\'s "silently slow" claim: PyTorch does not move the model to make '
            "an operation work."
        ),
        "c": "The shapes fit: `nn.Linear(4, 2)` takes 4 features, and `x` has 4.",
    },
    explanation=(
        "Mixing devices is an error, not a slowdown: PyTorch does not move the model or the data "
        "for you (two narrow exceptions, 0-dim CPU tensors and CPU indices, come right after this "
        "quiz)."
    ),
)

tensor_bytes = declare.quiz(
    "tensor_bytes",
    title="How big is a tensor?",
    kind="numeric",
    question="How many BYTES does `torch.zeros(256, 1024)` hold (default dtype float32)? "
    "Answer with a number; check yourself with `t.element_size() * t.nelement()`.",
    digest="40a78a0a5a0e7273",
    hints=[
        "Bytes, not elements: count the elements (rows times columns), then the bytes each float32 "
        "element takes.",
        "Let PyTorch count: `t = torch.zeros(256, 1024)`, then `t.element_size() * t.nelement()`.",
    ],
    explanation="256 * 1024 elements * 4 bytes each: one mebibyte.",
    why={
        262144: "That is the number of elements (256 x 1024); the question asks for bytes.",
        8388608: "8 bytes per element is float64; the default dtype is float32.",
        2097152: "2 bytes per element is float16 or bfloat16; the default dtype is float32.",
    },
)

created_on_device = declare.quiz(
    "created_on_device",
    title="Which lines create the tensor directly on the device?",
    kind="multiple",
    question=(
        "`device` is your GPU and `x` already lives there. Which lines make the new tensor on the "
        "GPU with no copy from the CPU? Choose all that apply."
    ),
    options={
        "a": "`torch.randn(32, 10, device=device)`",
        "b": "`torch.randn(32, 10).to(device)`",
        "c": "`torch.zeros_like(x)`",
        "d": "`torch.tensor([1.0, 2.0]).cuda()`",
    },
    digest="389eb561566447d9",
    hints=[
        (
            "For each line, ask: does the device appear at the moment the tensor is made, or "
            "afterwards?"
        ),
        "`*_like` functions copy the shape, dtype and device of the tensor they are given.",
    ],
    why={
        "b": "`torch.randn(32, 10)` is born on the CPU; `.to(device)` then copies it over "
        f"({section('01', 'Create tensors where they will be used')} traced it).",
        "d": (
            "`torch.tensor([...])` is made on the CPU first; `.cuda()` is a copy, and it "
            "hard-codes CUDA too."
        ),
    },
    explanation=(
        "Factory functions with `device=`, and `*_like` functions, create in place; `.to`/`.cuda` "
        "copy."
    ),
)


# ================================================================ teaching helpers
# ---------------------------------------------------------------- widgets
def environment_panel():
    """Article A's first interactive component: is the workshop open? (doctor report)."""
    return doctor_widget()


DEVICE_CHOICES = {
    "hard-coded torch.device('cuda:0')": lambda: torch.device("cuda:0"),
    "article A's cuda-or-cpu one-liner": lambda: torch.device(
        "cuda" if torch.cuda.is_available() else "cpu"
    ),
    "cuda, then mps, then cpu": lambda: (
        torch.device("cuda")
        if torch.cuda.is_available()
        else torch.device("mps")
        if torch.backends.mps.is_available()
        else torch.device("cpu")
    ),
}


def verdict_on(machine_name: str, choice) -> str:
    """What a device choice does on a machine: runs it under the simulator (chapter 01 widget)."""
    machine = MACHINES[machine_name]
    with simulated_machine(**machine):
        device = choice()
    best = expected_device_type(machine)
    if device.type == "cuda" and not machine["gpus"]:
        return tr(f"{device} -> CRASHES at the first .to(device): this machine has no CUDA GPU")
    if device.type != best:
        return tr(f"{device} -> runs, but leaves the {best.upper()} GPU idle")
    return tr(f"{device} -> ok")


def machine_explorer():
    """Pick a machine; see what three ways of choosing the device do there."""
    import ipywidgets as W

    picker = widget(
        W.Dropdown,
        options=[(tr(name), name) for name in MACHINES],
        description=tr("Machine:"),
        layout={"width": "360px"},
    )
    table = widget(W.HTML)

    def redraw(_=None):
        rows = [
            (code(tr(name)), verdict_on(picker.value, fn)) for name, fn in DEVICE_CHOICES.items()
        ]
        table.value = html_table([tr("code"), tr("on this machine")], rows, name="explorer")

    picker.observe(redraw, names="value")
    redraw()
    return widget(W.VBox, [picker, table])
