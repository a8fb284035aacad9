"""Chapter 01, device check: exercises, the machine simulator and the chapter's widgets."""
from contextlib import contextmanager
from unittest import mock

import torch

from .doctor import doctor_widget
from .exercises import Chapter, Fail, Test
from .probes import DeviceLog, trace_devices  # noqa: F401 (trace_devices: used by the notebook)
from .sections import section

chapter = Chapter(__name__, title="Device check")

# Machines a learner's code may meet; the simulator makes torch believe it runs on them.
MACHINES = {
    "CPU-only laptop": dict(gpus=[], mps=False),
    "Mac with Apple GPU": dict(gpus=[], mps=True),
    "1-GPU workstation": dict(gpus=["NVIDIA GeForce RTX 4090"], mps=False),
    "4-GPU server": dict(gpus=[f"NVIDIA A100-SXM4-80GB #{i}" for i in range(4)], mps=False),
}


@contextmanager
def simulated_machine(gpus=(), mps=False):
    """Make torch's availability queries answer as on another machine (no tensors are made)."""
    gpus = list(gpus)

    def device_name(device=None):
        index = 0 if device is None else torch.device("cuda", device).index if isinstance(device, int) \
            else (torch.device(device).index or 0)
        if not gpus:
            raise RuntimeError("No CUDA GPUs are available")
        if not 0 <= index < len(gpus):
            raise AssertionError("Invalid device id")
        return gpus[index]

    accelerator = torch.device("cuda") if gpus else torch.device("mps") if mps else None
    patches = [
        mock.patch.object(torch.cuda, "is_available", lambda: bool(gpus)),
        mock.patch.object(torch.cuda, "device_count", lambda: len(gpus)),
        mock.patch.object(torch.cuda, "get_device_name", device_name),
        mock.patch.object(torch.backends.mps, "is_available", lambda: mps),
    ]
    if hasattr(torch, "accelerator"):
        patches += [
            mock.patch.object(torch.accelerator, "is_available", lambda: accelerator is not None),
            mock.patch.object(torch.accelerator, "current_accelerator", lambda *a, **k: accelerator),
            mock.patch.object(torch.accelerator, "device_count", lambda: len(gpus) or int(mps)),
        ]
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in reversed(patches):
            p.stop()


def expected_device_type(machine: dict) -> str:
    return "cuda" if machine["gpus"] else "mps" if machine["mps"] else "cpu"


# ---------------------------------------------------------------- exercise 1: choose_device
def _device_on(candidate, machine_name):
    with simulated_machine(**MACHINES[machine_name]):
        return candidate()


# (device the machine wants, device the code chose) -> what to tell the learner
CHOICE_HINTS = {
    ("cuda", "cpu"): "`torch.cuda.is_available()` is True here: a CUDA GPU is waiting and the cpu leaves it idle.",
    ("cuda", "mps"): "Ask for CUDA first: this machine has an NVIDIA GPU and no Apple GPU.",
    ("mps", "cpu"): "There is no CUDA GPU on a Mac, but `torch.backends.mps.is_available()` is True: "
                    "the cpu leaves Apple's GPU idle.",
    ("mps", "cuda"): "A Mac has no CUDA GPU: ask `torch.cuda.is_available()` before choosing cuda, then try mps.",
    ("cpu", "cuda"): "This machine has no CUDA GPU: never hard-code `cuda`; ask `torch.cuda.is_available()` first.",
    ("cpu", "mps"): "This machine has no Apple GPU either: ask `torch.backends.mps.is_available()` before mps.",
}
DEFAULT_CHOICE_HINT = "Ask `torch.cuda.is_available()` first, then `torch.backends.mps.is_available()`, else cpu."


NOT_A_DEVICE_HINTS = {  # the type choose_device returned instead -> what to tell the learner
    "str": "Wrap the name in `torch.device(...)`. A plain string works in some places but not all.",
    "NoneType": "`torch.accelerator.current_accelerator()` is None on a machine without an accelerator: "
                "fall back to the cpu device there.",
}


def _judge_choice(got, want: str, where: str):
    if not isinstance(got, torch.device):
        kind = type(got).__name__
        raise Fail(f"{where}, choose_device() returned a {kind}, not a torch.device.",
                   expected="a torch.device", got=repr(got),
                   hint=NOT_A_DEVICE_HINTS.get(kind, "Return a `torch.device`, made with `torch.device(...)`."))
    if got.type != want:
        raise Fail(f"{where}, your choose_device() returned {got}.", expected=f"a device of type {want}",
                   got=repr(got), hint=CHOICE_HINTS.get((want, got.type), DEFAULT_CHOICE_HINT))


def check_choice(machine_name):
    """A test: on the simulated machine, `candidate()` returns a torch.device of the right type (chapter 01)."""
    def run(candidate):
        got = _device_on(candidate, machine_name)
        _judge_choice(got, expected_device_type(MACHINES[machine_name]), f"On a {machine_name}")
    return run


def check_choice_here(candidate):
    """A test: the choice on the real machine matches what torch can use here (chapter 01)."""
    from .device import gpu_available
    want = "cuda" if torch.cuda.is_available() else "mps" if gpu_available() else "cpu"
    _judge_choice(candidate(), want, "On this machine")


choose_device = chapter.function_exercise(
    "choose_device",
    title="Choose the device without hard-coding it",
    prompt="Write choose_device() -> torch.device: cuda when a CUDA GPU is available, else mps when "
           "Apple's GPU is, else cpu.",
    points=3,
    tests=[
        Test("returns a torch.device that exists on this machine", check_choice_here),
        Test("picks cuda on a 1-GPU workstation", check_choice("1-GPU workstation")),
        Test("uses the Apple GPU on a Mac", check_choice("Mac with Apple GPU")),
        Test("falls back to cpu on a CPU-only laptop", check_choice("CPU-only laptop")),
    ],
    hints=["Start from article A's one-liner: `torch.device('cuda' if torch.cuda.is_available() else 'cpu')`.",
           "Add the middle case: `torch.backends.mps.is_available()` tells whether a Mac's GPU can be used.",
           "Shape: if (cuda available): return the cuda device; elif (mps available): return the mps "
           "device; else: return the cpu device."],
)


# ---------------------------------------------------------------- exercise 2: gpu_names
def _names_on(candidate, machine_name):
    """Call candidate() on a simulated machine; a crash becomes feedback that says what it did."""
    try:
        with simulated_machine(**MACHINES[machine_name]):
            return candidate()
    except NotImplementedError:
        raise
    except Exception as err:
        raise Fail(f"On a {machine_name}, gpu_names() crashed: {type(err).__name__}: {err}",
                   hint="With no GPU the list is empty; `get_device_name(0)` raises there, so ask "
                        "`torch.cuda.device_count()` (or `is_available()`) before naming any GPU.") from None


def _compare_names(got, want, where):
    if not isinstance(got, list):
        raise Fail(f"{where}, gpu_names() returned a {type(got).__name__}; it must return a list.",
                   expected="a list of str", got=repr(got))
    if len(got) != len(want):
        raise Fail(f"{where}, gpu_names() returned {len(got)} name(s); the machine has {len(want)} GPU(s).",
                   expected=want, got=got,
                   hint="One name per GPU: loop over `range(torch.cuda.device_count())` (indices start at 0).")
    if got != want:
        raise Fail(f"{where}, the names are not the GPUs' names in index order.", expected=want, got=got,
                   hint="`torch.cuda.get_device_name(i)` names GPU i; keep the order of the indices.")


def check_names(machine_name):
    """A test: gpu_names() on a simulated machine lists its CUDA GPUs in order (chapter 01)."""
    def run(candidate):
        _compare_names(_names_on(candidate, machine_name), MACHINES[machine_name]["gpus"], f"On a {machine_name}")
    return run


def check_names_here(candidate):
    """A test: gpu_names() on the real machine (chapter 01)."""
    want = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    try:
        got = candidate()
    except NotImplementedError:
        raise
    except Exception as err:
        raise Fail(f"On this machine gpu_names() crashed: {type(err).__name__}: {err}",
                   hint="An empty list is the right answer on a machine without a CUDA GPU.") from None
    _compare_names(got, want, "On this machine")


gpu_names = chapter.function_exercise(
    "gpu_names",
    title="List the GPUs (and survive having none)",
    prompt="Write gpu_names() -> list[str]: the name of every visible CUDA GPU, in index order; "
           "an empty list on a machine without one.",
    points=3,
    tests=[
        Test("works on this machine", check_names_here),
        Test("returns [] on a CPU-only laptop without crashing", check_names("CPU-only laptop")),
        Test("lists all four GPUs of a 4-GPU server", check_names("4-GPU server")),
    ],
    hints=["`torch.cuda.device_count()` says how many; `torch.cuda.get_device_name(i)` names GPU i.",
           "On a CPU-only machine `get_device_name(0)` raises, so only call it for the indices "
           "`range(device_count())` gives.",
           "Shape: if there is no CUDA GPU, return an empty list; else build a list with one name per "
           "index, in order."],
)


# ---------------------------------------------------------------- exercise 3: make_batch
def check_batch(batch_size, n_features, device, detour_check=True):
    """A test: make_batch returns the right tensor, made on `device` without a CPU detour (chapter 01)."""
    def run(candidate):
        with DeviceLog() as log:
            got = candidate(batch_size, n_features, device)
        if not isinstance(got, torch.Tensor):
            raise Fail(f"make_batch returned a {type(got).__name__}, not a tensor.", expected="torch.Tensor",
                       got=type(got).__name__)
        if tuple(got.shape) != (batch_size, n_features):
            raise Fail(f"make_batch({batch_size}, {n_features}, ...) returned shape {tuple(got.shape)}.",
                       expected=(batch_size, n_features), got=tuple(got.shape), hint="The batch dimension comes first.")
        if got.device.type != torch.device(device).type:
            raise Fail(f"The batch is not on {device}: it came back on {got.device}.", expected=str(device),
                       got=str(got.device), hint="Pass `device=device` to the factory function.")
        if got.dtype != torch.float32:
            raise Fail(f"The batch came back as {got.dtype}; use the default float32.", expected="torch.float32",
                       got=got.dtype)
        detour = [op for op, dev, shape in log.ops if dev != str(torch.device(device)) and shape == got.shape]
        if detour_check and detour:
            raise Fail("The batch was first made on another device and then copied.",
                       expected=f"one operation that creates it on {device}",
                       got=f"{detour[0]} made it on the CPU first",
                       hint="A factory function given `device=` creates the tensor there: no CPU copy, no transfer.")
    return run


def check_normal(batch_size=2000, n_features=8):
    """A test: the values look standard-normal (mean near 0, spread near 1) on the CPU (chapter 01)."""
    def run(candidate):
        got = candidate(batch_size, n_features, "cpu")
        mean, std = got.float().mean().item(), got.float().std().item()
        if not (abs(mean) < 0.1 and 0.9 < std < 1.1):
            raise Fail(f"The values have mean {mean:.2f} and spread {std:.2f}: not standard-normal noise.",
                       expected="mean near 0, standard deviation near 1", got=f"mean {mean:.2f}, std {std:.2f}",
                       hint="`torch.randn` draws standard-normal noise; `empty`, `zeros` and `rand` do not.")
    return run


make_batch = chapter.function_exercise(
    "make_batch",
    title="Create a batch directly on the device",
    prompt="Write make_batch(batch_size, n_features, device) -> a float32 tensor of standard-normal "
           "noise, shape (batch_size, n_features), created directly on `device` (no CPU detour).",
    points=3,
    tests=[
        Test("shape, dtype and device on the CPU", check_batch(4, 3, "cpu")),
        Test("lands on a second device (meta)", check_batch(8, 5, "meta", detour_check=False)),
        Test("is created there, not copied from the CPU", check_batch(8, 5, "meta")),
    ],
    hints=["Factory functions such as `torch.randn`, `torch.zeros` and `torch.ones` take a `device=` argument.",
           "`torch.randn(32, 10).to(device)` makes the tensor on the CPU and then copies it: twice the work.",
           "Shape: one call to the standard-normal factory, with the two sizes and the device keyword."],
)


# ---------------------------------------------------------------- quizzes
device_label = chapter.quiz(
    "device_label",
    title="What does torch.device('cuda') do?",
    question="On a laptop WITHOUT a GPU you run `d = torch.device('cuda')`. What happens?",
    options={"a": "PyTorch raises a RuntimeError at once: this laptop has no CUDA GPU",
             "b": "A small block of GPU memory is reserved for the first tensor",
             "c": "Nothing is allocated: `d` is a label; using it for a tensor fails",
             "d": "`d` quietly becomes the CPU device, so later code runs there"},
    digest="50d4fd0c137e169d",
    hints=[f"{section('01', 'only a label', start=True)} runs this very line on your machine: look at what it printed.",
           "Ask yourself when memory is needed: when a name is written down, or when a tensor is put there?"],
    why={"a": "Making a `torch.device` checks only the spelling (`cuda`, `cuda:1`); it never asks the "
              "driver whether a GPU exists.",
         "b": "A `torch.device` owns no memory at all, on any machine.",
         "d": "PyTorch never swaps the device for you: `d.type` stays `'cuda'`, as printing it shows."},
    explanation="`torch.device` is an address label; memory is used only when a tensor or model is put there.",
)

model_vs_input = chapter.quiz(
    "model_vs_input",
    title="Which error will this raise?",
    kind="error",
    question="The model stays on the CPU; the input lives on another device. What happens at `model(x)`?",
    code='model = nn.Linear(4, 2)                  # on the CPU\n'
         'x = torch.randn(8, 4, device="meta")     # on another device\n'
         'model(x)',
    options={"a": "TypeError: `nn.Linear` accepts only input tensors that live on the CPU",
             "b": "No error: PyTorch copies the weights over to the input, just slowly",
             "c": "ValueError: the input's shape does not fit a layer on another device",
             "d": "RuntimeError: the input and the layer's weight are on two devices"},
    hints=["Which claim of article B does this code test?",
           "Chapter 02 breaks this rule on purpose; think of what an operation needs from all its tensors."],
    why={"a": "`x` is a tensor like any other: nothing about its type is wrong, only where it lives.",
         "b": "That is article B's \"silently slow\" claim: PyTorch does not move the model to make an "
              "operation work.",
         "c": "The shapes fit: `nn.Linear(4, 2)` takes 4 features, and `x` has 4."},
    explanation="Mixing devices is an error, not a slowdown: PyTorch does not move the model or the data "
                "for you (two narrow exceptions, 0-dim CPU tensors and CPU indices, come right after "
                "this quiz).",
)

tensor_bytes = chapter.quiz(
    "tensor_bytes",
    title="How big is a tensor?",
    kind="numeric",
    question="How many BYTES does `torch.zeros(256, 1024)` hold (default dtype float32)? "
             "Answer with a number; check yourself with `t.element_size() * t.nelement()`.",
    digest="40a78a0a5a0e7273",
    hints=["Bytes, not elements: count the elements (rows times columns), then the bytes each float32 "
           "element takes.",
           "Let PyTorch count: `t = torch.zeros(256, 1024)`, then `t.element_size() * t.nelement()`."],
    explanation="256 * 1024 elements * 4 bytes each: one mebibyte.",
    why={262144: "That is the number of elements (256 x 1024); the question asks for bytes.",
         8388608: "8 bytes per element is float64; the default dtype is float32.",
         2097152: "2 bytes per element is float16 or bfloat16; the default dtype is float32."},
)

created_on_device = chapter.quiz(
    "created_on_device",
    title="Which lines create the tensor directly on the device?",
    kind="multiple",
    question="`device` is your GPU and `x` already lives there. Which lines make the new tensor on the GPU "
             "with no copy from the CPU? Choose all that apply.",
    options={"a": "`torch.randn(32, 10, device=device)`",
             "b": "`torch.randn(32, 10).to(device)`",
             "c": "`torch.zeros_like(x)`",
             "d": "`torch.tensor([1.0, 2.0]).cuda()`"},
    digest="389eb561566447d9",
    hints=["For each line, ask: does the device appear at the moment the tensor is made, or afterwards?",
           "`*_like` functions copy the shape, dtype and device of the tensor they are given."],
    why={"b": "`torch.randn(32, 10)` is born on the CPU; `.to(device)` then copies it over "
              f"({section('01', 'Create tensors where they will be used')} traced it).",
         "d": "`torch.tensor([...])` is made on the CPU first; `.cuda()` is a copy, and it hard-codes CUDA too."},
    explanation="Factory functions with `device=`, and `*_like` functions, create in place; `.to`/`.cuda` copy.",
)


# ---------------------------------------------------------------- widgets
def environment_panel():
    """Article A's first interactive component: is the workshop open? (doctor report)."""
    return doctor_widget()


DEVICE_CHOICES = {
    "hard-coded torch.device('cuda:0')": lambda: torch.device("cuda:0"),
    "article A's cuda-or-cpu one-liner": lambda: torch.device("cuda" if torch.cuda.is_available() else "cpu"),
    "cuda, then mps, then cpu": lambda: torch.device("cuda") if torch.cuda.is_available()
    else torch.device("mps") if torch.backends.mps.is_available() else torch.device("cpu"),
}


def verdict_on(machine_name: str, choice) -> str:
    """What a device choice does on a machine: runs it under the simulator (chapter 01 widget)."""
    machine = MACHINES[machine_name]
    with simulated_machine(**machine):
        device = choice()
    best = expected_device_type(machine)
    if device.type == "cuda" and not machine["gpus"]:
        return f"{device} -> CRASHES at the first .to(device): this machine has no CUDA GPU"
    if device.type != best:
        return f"{device} -> runs, but leaves the {best.upper()} GPU idle"
    return f"{device} -> ok"


def machine_explorer():
    """Pick a machine; see what three ways of choosing the device do there."""
    import ipywidgets as W
    from html import escape
    picker = W.Dropdown(options=list(MACHINES), description="Machine:", layout=W.Layout(width="360px"))
    table = W.HTML()

    def redraw(_=None):
        rows = "".join(f"<tr><td style='text-align:left'><code>{escape(name)}</code></td>"
                       f"<td style='text-align:left'>{escape(verdict_on(picker.value, fn))}</td></tr>"
                       for name, fn in DEVICE_CHOICES.items())
        table.value = f"<table class='course-explorer'><tr><th>code</th><th>on this machine</th></tr>{rows}</table>"

    picker.observe(redraw, names="value")
    redraw()
    return W.VBox([picker, table])
