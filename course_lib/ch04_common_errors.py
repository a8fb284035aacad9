"""Chapter 04, common errors: checkpoint fixtures, exercises and quizzes.

Every error the chapter teaches is produced for real: device mismatches with
`device.second_device()`, and a checkpoint whose storages name a GPU this machine does not
have (written by `save_for_missing_gpu`), so `torch.load` fails as it does on a colleague's
CPU-only laptop.
"""
import zipfile
from pathlib import Path

import torch
from torch import nn

from .exercises import Chapter, Fail, Test

chapter = Chapter(__name__, title="Common errors")


# ---------------------------------------------------------------- checkpoints from other machines
def missing_gpu() -> str:
    """A CUDA device name this machine does not have: cuda:0 on a CPU-only one, cuda:N with N GPUs."""
    return f"cuda:{torch.cuda.device_count() if torch.cuda.is_available() else 0}"


def save_for_missing_gpu(state_dict: dict, path, location: str = "") -> Path:
    """Save `state_dict` as if it had been saved on the GPU `location` (default: one this machine lacks).

    torch.save records each storage's device as a string inside the file's data.pkl; we
    save on the CPU and rewrite that string, which is all that differs (chapter 04).
    """
    location = location or missing_gpu()
    path = Path(path)
    tmp = path.with_suffix(".cpu-tmp")
    torch.save({k: v.detach().cpu() for k, v in state_dict.items()}, tmp)
    old = b"X\x03\x00\x00\x00cpu"
    new = b"X" + len(location).to_bytes(4, "little") + location.encode()
    with zipfile.ZipFile(tmp) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("/data.pkl"):
                assert old in data, "unexpected checkpoint layout"
                data = data.replace(old, new)
            dst.writestr(info, data)
    tmp.unlink()
    return path


def stored_devices(path) -> set:
    """The device names written inside a checkpoint file, read without loading it (chapter 04)."""
    with zipfile.ZipFile(path) as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
    names = {"cpu", "meta"} | {f"cuda:{i}" for i in range(16)}
    return {n for n in names if b"X" + len(n).to_bytes(4, "little") + n.encode() in data}


def wrapped_state_dict(model: nn.Module) -> dict:
    """The state_dict a DataParallel/DDP-wrapped model saves: every key starts with 'module.'."""
    return {f"module.{k}": v for k, v in model.state_dict().items()}


class TinyNet(nn.Module):
    """A small classifier with dropout (so eval mode matters) for the checkpoint demos (chapter 04)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.body(x))


# ---------------------------------------------------------------- exercise 1: add_positions
def _check_positions(shape, device):
    def run(candidate):
        x = torch.zeros(shape, device=device)
        try:
            got = candidate(x)
        except RuntimeError as err:
            raise Fail(f"On a {device} input your function failed: {str(err).splitlines()[0]}",
                       hint="torch.arange makes its tensor on the CPU unless you say device=x.device.")
        if not isinstance(got, torch.Tensor) or got.shape != x.shape:
            raise Fail("The result must have the input's shape.", expected=tuple(x.shape),
                       got=tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__,
                       hint="Positions run along the LAST dimension: x.shape[-1].")
        if got.device != x.device:
            raise Fail("The result is not on the input's device.", expected=str(x.device), got=str(got.device))
        if device == "cpu":
            want = torch.arange(shape[-1], dtype=x.dtype).expand(shape)
            if not torch.equal(got, want):
                raise Fail("The values are wrong for an input of zeros.", expected=want.tolist(), got=got.tolist(),
                           hint="Add 0, 1, 2, ... along the last dimension.")
    return run


add_positions = chapter.function_exercise(
    "add_positions",
    title="A forward pass that creates a tensor: on which device?",
    prompt="Write add_positions(x) -> x + [0, 1, 2, ...] along x's last dimension, working for x on ANY "
           "device (the new tensor must be made where x lives).",
    points=3,
    tests=[
        Test("adds 0..n-1 along the last dimension on the CPU", _check_positions((2, 5), "cpu")),
        Test("works when x lives on another device", _check_positions((2, 5), "meta")),
    ],
    hints=["torch.arange(n) makes 0..n-1, on the CPU by default.",
           "Pass device=x.device (and dtype=x.dtype if you like) to torch.arange.",
           "return x + torch.arange(x.shape[-1], device=x.device, dtype=x.dtype)"],
)


# ---------------------------------------------------------------- exercise 2: strip_module_prefix
def _check_strip(keys, want):
    def run(candidate):
        state = {k: torch.full((1,), float(i)) for i, k in enumerate(keys)}
        before = dict(state)
        got = candidate(state)
        if state != before or list(state) != list(before):
            raise Fail("Your function changed the state_dict it was given.",
                       hint="Build and return a new dict; the caller may still need the original.")
        if not isinstance(got, dict):
            raise Fail("Return a dict.", expected="dict", got=type(got).__name__)
        if list(got) != want:
            raise Fail(f"Wrong keys for {keys}.", expected=want, got=list(got),
                       hint="Remove 'module.' only at the START of a key, once: 'submodule.weight' must survive.")
        if any(got[w] is not state[k] for w, k in zip(want, keys)):
            raise Fail("The values must be the same tensors, under the new keys.")
    return run


strip_module_prefix = chapter.function_exercise(
    "strip_module_prefix",
    title="Load a DataParallel/DDP checkpoint into a plain model",
    prompt="Write strip_module_prefix(state_dict) -> a NEW dict in the same order, with a leading 'module.' "
           "removed from every key that starts with it (once); other keys unchanged; the input untouched.",
    points=3,
    tests=[
        Test("strips a DataParallel checkpoint", _check_strip(["module.weight", "module.bias"], ["weight", "bias"])),
        Test("leaves plain keys alone", _check_strip(["weight", "bias"], ["weight", "bias"])),
        Test("keeps 'submodule.' keys intact", _check_strip(["module.submodule.weight", "submodule.bias"],
                                                            ["submodule.weight", "submodule.bias"])),
    ],
    hints=["Loop over state_dict.items() and build a new dict.",
           "key.startswith('module.') tells you when to cut; key[len('module.'):] cuts it.",
           "PyTorch has a helper too: torch.nn.modules.utils.consume_prefix_in_state_dict_if_present "
           "(it edits the dict in place)."],
)


# ---------------------------------------------------------------- exercise 3: load_for_inference
def _check_loading(wrapped: bool, on_missing_gpu: bool):
    def run(candidate):
        import tempfile
        torch.manual_seed(0)
        trained = TinyNet()
        state = wrapped_state_dict(trained) if wrapped else trained.state_dict()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "checkpoint.pt"
            if on_missing_gpu:
                save_for_missing_gpu(state, path)
            else:
                torch.save(state, path)
            fresh = TinyNet()
            try:
                got = candidate(str(path), fresh, torch.device("cpu"))
            except RuntimeError as err:
                text = str(err)
                hint = ("Pass map_location=device to torch.load." if "deserialize" in text else
                        "The keys start with 'module.': strip it before load_state_dict." if "module." in text
                        else "")
                raise Fail(f"Loading failed: {text.splitlines()[0]}", hint=hint)
        if not isinstance(got, nn.Module):
            raise Fail("Return the model.", expected="the model you were given", got=type(got).__name__)
        for name, value in trained.state_dict().items():
            if not torch.equal(got.state_dict()[name].cpu(), value):
                raise Fail(f"The weights were not loaded ({name} differs from the checkpoint).",
                           hint="model.load_state_dict(state) copies the checkpoint into the model.")
        if got.training:
            raise Fail("The model is still in training mode: dropout would scramble predictions.",
                       hint="Call model.eval() before inference.")
        if {str(p.device) for p in got.parameters()} != {"cpu"}:
            raise Fail("The model is not on the requested device.", hint="model.to(device)")
    return run


load_for_inference = chapter.function_exercise(
    "load_for_inference",
    title="Load a checkpoint from another machine, ready for inference",
    prompt="Write load_for_inference(path, model, device) -> model: load the state_dict saved at `path` "
           "(it may come from a GPU this machine lacks, and from a DataParallel/DDP model whose keys start "
           "with 'module.') into `model`, put the model on `device`, in evaluation mode, and return it.",
    points=4,
    tests=[
        Test("loads a plain CPU checkpoint, in eval mode", _check_loading(wrapped=False, on_missing_gpu=False)),
        Test("loads a checkpoint saved on a GPU this machine does not have",
             _check_loading(wrapped=False, on_missing_gpu=True)),
        Test("loads a DataParallel checkpoint", _check_loading(wrapped=True, on_missing_gpu=False)),
    ],
    hints=["torch.load(path, map_location=device) puts every tensor on `device` while loading.",
           "Keys from a wrapped model start with 'module.': reuse your strip_module_prefix idea.",
           "state = torch.load(path, map_location=device); state = {k.removeprefix('module.'): v ...}; "
           "model.load_state_dict(state); return model.to(device).eval()"],
)


# ---------------------------------------------------------------- quizzes
what_is_wrong = chapter.quiz(
    "what_is_wrong",
    title="The seed's question: what is wrong with this code?",
    kind="multiple",
    question="Seed 003 asks what is wrong with this loop. Choose every real problem.",
    code='device = "cuda"\nmodel = model.to(device)\nfor x, y in loader:\n'
         '    logits = model(x)\n    loss = criterion(logits, y)',
    options={"a": "'cuda' is hard-coded: the first line that puts something there crashes without a GPU",
             "b": "x and y stay on the CPU: model(x) raises a device-mismatch RuntimeError",
             "c": "model.to(device) does nothing unless written model.cuda()",
             "d": "there is no zero_grad / backward / step, so nothing is learned",
             "e": "criterion (a CrossEntropyLoss) must be moved to the device first"},
    digest="580d568d06ea0105",
    explanation="(c) model.to returns the moved model and moves it in place; (e) standard losses have no "
                "parameters and follow their inputs.",
)

dp_checkpoint = chapter.quiz(
    "dp_checkpoint",
    title="Which error will this raise?",
    kind="error",
    question="A checkpoint saved from a DataParallel-wrapped model is loaded into a plain model.",
    code="wrapped = nn.DataParallel(nn.Linear(3, 2))\n"
         "plain = nn.Linear(3, 2)\n"
         "plain.load_state_dict(wrapped.state_dict())",
    options={"a": "RuntimeError: missing keys 'weight', 'bias' and unexpected keys 'module.weight', ...",
             "b": "KeyError: 'module.weight'",
             "c": "No error: load_state_dict strips the 'module.' prefix for you",
             "d": "TypeError: a DataParallel state_dict cannot be loaded into a Linear"},
    explanation="load_state_dict is strict by default: every key must match. Save model.module.state_dict() "
                "from a wrapped model, or strip the prefix when loading.",
)

state_dict_device = chapter.quiz(
    "state_dict_device",
    title="Does a state_dict remember the device?",
    question="Seed 003 says a state_dict 'is a plain Python dict and carries no device information'. "
             "On a GPU machine you run {k: v.device for k, v in model.cuda().state_dict().items()}. What prints?",
    options={"a": "Nothing device-related: the dict only holds names and numbers",
             "b": "cuda:0 for every entry: each tensor keeps its device, and torch.save writes it into the file",
             "c": "cpu for every entry: state_dict() always copies to the CPU",
             "d": "It raises: state_dict() cannot be called on a GPU model"},
    digest="fc9deaccb29f3f4f",
    explanation="The seed is wrong here: the tensors carry their device, which is exactly why map_location "
                "is needed on a machine without that GPU.",
)
