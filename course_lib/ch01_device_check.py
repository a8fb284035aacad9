"""Chapter 01, device check: exercises, the machine simulator and the chapter's widgets."""
from contextlib import contextmanager
from unittest import mock

import torch

from .doctor import doctor_widget
from .exercises import Chapter, Fail, Test
from .probes import DeviceLog, trace_devices  # noqa: F401 (trace_devices: used by the notebook)

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


def _check_choice(machine_name, hint):
    def run(candidate):
        got = _device_on(candidate, machine_name)
        if not isinstance(got, torch.device):
            raise Fail(f"On a {machine_name}, choose_device() returned a {type(got).__name__}, not a torch.device.",
                       expected="torch.device(...)", got=repr(got),
                       hint="Wrap the name: torch.device('cuda'). A plain string works in some places but not all.")
        want = expected_device_type(MACHINES[machine_name])
        if got.type != want:
            raise Fail(f"On a {machine_name}, your code picked the wrong device.", expected=f"a {want} device",
                       got=repr(got), hint=hint)
    return run


def _check_this_machine(candidate):
    got = candidate()
    from .device import gpu_available
    want = "cuda" if torch.cuda.is_available() else "mps" if gpu_available() else "cpu"
    if not isinstance(got, torch.device) or got.type != want:
        raise Fail("On this machine your choice differs from what is really available.",
                   expected=f"torch.device('{want}')", got=repr(got),
                   hint="Ask torch.cuda.is_available() first, then torch.backends.mps.is_available().")


choose_device = chapter.function_exercise(
    "choose_device",
    title="Choose the device without hard-coding it",
    prompt="Write choose_device() -> torch.device: cuda when a CUDA GPU is available, else mps when "
           "Apple's GPU is, else cpu.",
    points=3,
    tests=[
        Test("returns a torch.device that exists on this machine", _check_this_machine),
        Test("picks cuda on a 1-GPU workstation", _check_choice(
            "1-GPU workstation", "torch.cuda.is_available() is True here, so the answer is cuda.")),
        Test("falls back to cpu on a CPU-only laptop", _check_choice(
            "CPU-only laptop", "Never hard-code 'cuda': ask torch.cuda.is_available() first.")),
    ],
    hints=["Start from the seed's one-liner: torch.device('cuda' if torch.cuda.is_available() else 'cpu').",
           "Add the middle case: torch.backends.mps.is_available() tells whether a Mac's GPU can be used.",
           "if cuda: return torch.device('cuda'); elif mps: return torch.device('mps'); else: torch.device('cpu')."],
)


# ---------------------------------------------------------------- exercise 2: gpu_names
def _check_names(machine_name):
    def run(candidate):
        machine = MACHINES[machine_name]
        with simulated_machine(**machine):
            got = candidate()
        if not isinstance(got, list):
            raise Fail(f"On a {machine_name}, gpu_names() must return a list.", expected="a list of str",
                       got=repr(got))
        if got != machine["gpus"]:
            hint = ("With no GPU the list is empty; get_device_name(0) raises there, so ask "
                    "is_available() or device_count() first." if not machine["gpus"] else
                    "Loop over range(torch.cuda.device_count()): indices start at 0 and stop before the count.")
            raise Fail(f"On a {machine_name}, the names are not right.", expected=machine["gpus"], got=got, hint=hint)
    return run


def _check_names_here(candidate):
    got = candidate()
    want = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    if got != want:
        raise Fail("On this machine the list is not right.", expected=want, got=repr(got),
                   hint="An empty list is the right answer on a machine without a CUDA GPU.")


gpu_names = chapter.function_exercise(
    "gpu_names",
    title="List the GPUs (and survive having none)",
    prompt="Write gpu_names() -> list[str]: the name of every visible CUDA GPU, in index order; "
           "an empty list on a machine without one.",
    points=3,
    tests=[
        Test("works on this machine", _check_names_here),
        Test("lists all four GPUs of a 4-GPU server", _check_names("4-GPU server")),
    ],
    hints=["torch.cuda.device_count() says how many; torch.cuda.get_device_name(i) names GPU i.",
           "On a CPU-only machine get_device_name(0) raises, so only call it for i in range(device_count()).",
           "return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] "
           "(guarded by torch.cuda.is_available())."],
)


# ---------------------------------------------------------------- exercise 3: make_batch
def _check_batch(batch_size, n_features, device, detour_check=True):
    def run(candidate):
        with DeviceLog() as log:
            got = candidate(batch_size, n_features, device)
        if not isinstance(got, torch.Tensor):
            raise Fail("make_batch must return a tensor.", expected="torch.Tensor", got=type(got).__name__)
        if tuple(got.shape) != (batch_size, n_features):
            raise Fail("The shape is not (batch_size, n_features).", expected=(batch_size, n_features),
                       got=tuple(got.shape), hint="The batch dimension comes first.")
        if got.device.type != torch.device(device).type:
            raise Fail(f"The batch is not on {device}.", expected=str(device), got=str(got.device),
                       hint="Pass device=device to the factory function.")
        if got.dtype != torch.float32:
            raise Fail("Use the default float32 dtype.", expected="torch.float32", got=got.dtype)
        detour = [op for op, dev, shape in log.ops if dev != str(torch.device(device)) and shape == got.shape]
        if detour_check and detour:
            raise Fail("The batch was first made on another device and then copied.",
                       expected=f"one operation that creates it on {device}",
                       got=f"{detour[0]} made it on the CPU first",
                       hint="torch.randn(..., device=device) creates it in place: no CPU copy, no transfer.")
    return run


make_batch = chapter.function_exercise(
    "make_batch",
    title="Create a batch directly on the device",
    prompt="Write make_batch(batch_size, n_features, device) -> a float32 tensor of standard-normal "
           "noise, shape (batch_size, n_features), created directly on `device` (no CPU detour).",
    points=3,
    tests=[
        Test("shape, dtype and device on the CPU", _check_batch(4, 3, "cpu")),
        Test("lands on a second device (meta)", _check_batch(8, 5, "meta", detour_check=False)),
        Test("is created there, not copied from the CPU", _check_batch(8, 5, "meta")),
    ],
    hints=["Factory functions such as torch.randn, torch.zeros and torch.ones take a device= argument.",
           "torch.randn(32, 10).to(device) makes the tensor on the CPU and then copies it: twice the work.",
           "return torch.randn(batch_size, n_features, device=device)"],
)


# ---------------------------------------------------------------- quizzes
device_label = chapter.quiz(
    "device_label",
    title="What does torch.device('cuda') do?",
    question="On a laptop WITHOUT a GPU you run d = torch.device('cuda'). What happens?",
    options={"a": "PyTorch raises an error at once: there is no GPU",
             "b": "Nothing is allocated: d is only a label; an error comes when a tensor is put there",
             "c": "A small block of GPU memory is reserved for later",
             "d": "d silently becomes the CPU device"},
    digest="e5f26f813b3eb2d1",
    explanation="torch.device is an address label; memory is used only when a tensor or model is moved there.",
)

model_vs_input = chapter.quiz(
    "model_vs_input",
    title="Which error will this raise?",
    kind="error",
    question="The model stays on the CPU; the input lives on another device. What happens at model(x)?",
    code='model = nn.Linear(4, 2)                  # on the CPU\n'
         'x = torch.randn(8, 4, device="meta")     # on another device\n'
         'model(x)',
    options={"a": "RuntimeError: the tensors are on different devices",
             "b": "TypeError: the input has the wrong type",
             "c": "No error: PyTorch moves the model to the input (just slowly)",
             "d": "ValueError: the shapes do not match"},
    explanation="PyTorch never moves a tensor behind your back: mixing devices is an error, not a slowdown.",
)

tensor_bytes = chapter.quiz(
    "tensor_bytes",
    title="How big is a tensor?",
    kind="numeric",
    question="How many BYTES does torch.zeros(256, 1024) hold (default dtype float32)? "
             "Answer with a number; check yourself with t.element_size() * t.nelement().",
    digest="40a78a0a5a0e7273",
    explanation="256 * 1024 elements * 4 bytes each: one mebibyte.",
)

created_on_device = chapter.quiz(
    "created_on_device",
    title="Which lines create the tensor directly on the device?",
    kind="multiple",
    question="`device` is your GPU and `x` already lives there. Which lines make the new tensor on the GPU "
             "with no copy from the CPU? Choose all that apply.",
    options={"a": "torch.randn(32, 10, device=device)",
             "b": "torch.randn(32, 10).to(device)",
             "c": "torch.zeros_like(x)",
             "d": "torch.tensor([1.0, 2.0]).cuda()"},
    digest="389eb561566447d9",
    explanation="Factory functions with device=, and *_like functions, create in place; .to/.cuda copy.",
)


# ---------------------------------------------------------------- widgets
def environment_panel():
    """The seed's first interactive component: is the workshop open? (doctor report)."""
    return doctor_widget()


SEED_CHOICES = {
    "hard-coded torch.device('cuda:0')": lambda: torch.device("cuda:0"),
    "seed's cuda-or-cpu one-liner": lambda: torch.device("cuda" if torch.cuda.is_available() else "cpu"),
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
                       for name, fn in SEED_CHOICES.items())
        table.value = f"<table class='course-explorer'><tr><th>code</th><th>on this machine</th></tr>{rows}</table>"

    picker.observe(redraw, names="value")
    redraw()
    return W.VBox([picker, table])
