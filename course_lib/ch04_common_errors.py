"""Chapter 04, common errors: checkpoint fixtures, exercises and quizzes.

Every error the chapter teaches is produced for real: device mismatches with
`device.second_device()`, and a checkpoint whose storages name a GPU this machine does not
have (written by `save_for_missing_gpu`), so `torch.load` fails as it does on a colleague's
CPU-only laptop.
"""

import zipfile
from dataclasses import dataclass

from . import chapters
from .checks import checkpoints
from .checks.checkpoints import Loading, Strip, TinyNet, save_for_missing_gpu
from .exercises import Declarations, Test

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "add_positions",
    "strip_module_prefix",
    "load_for_inference",
    "what_is_wrong",
    "dp_checkpoint",
    "state_dict_device",
    "input_type",
    "which_tensor",
    # teaching helpers: the demos, widgets and models the notebook uses
    "TinyNet",
    "save_for_missing_gpu",
    "stored_devices",
    "TrainConfig",
    "UNSEEN_MESSAGES",
]


def __dir__():
    return __all__


# ================================================================ teaching helpers
# ---------------------------------------------------------------- checkpoints from other machines
# save_for_missing_gpu and TinyNet live beside the checks that use them
# (course_lib/checks/checkpoints.py); the notebook reaches them through this module.
def stored_devices(path) -> set:
    """The device names written inside a checkpoint file, read without loading it (chapter 04)."""
    with zipfile.ZipFile(path) as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
    names = {"cpu", "meta"} | {f"cuda:{i}" for i in range(16)}
    return {n for n in names if b"X" + len(n).to_bytes(4, "little") + n.encode() in data}


@dataclass
class TrainConfig:
    """A training configuration saved beside the weights:
    a class torch.load must be told to trust (chapter 04)."""

    lr: float = 0.1
    epochs: int = 3


# ================================================================ exercises and quizzes
# ---------------------------------------------------------------- exercise 1: add_positions
add_positions = declare.function_exercise(
    "add_positions",
    title="A forward pass that creates a tensor: on which device?",
    prompt=(
        "Write add_positions(x) -> x + [0, 1, 2, ...] along x's last dimension, working for x on "
        "ANY device (the new tensor must be made where x lives)."
    ),
    points=3,
    tests=[
        Test(
            "adds 0..n-1 along the last dimension on the CPU", checkpoints.Positions((2, 5), "cpu")
        ),
        Test("works when x lives on another device", checkpoints.Positions((2, 5), "meta")),
    ],
    hints=[
        "`torch.arange(n)` makes 0..n-1, on the CPU by default.",
        "Factory functions take `device=`: make the new tensor where `x` already lives.",
        "Shape: `return x + torch.arange(<size of the last dimension>, device=<x's device>, "
        "dtype=<x's dtype>)`.",
    ],
)


# ---------------------------------------------------------------- exercise 2: strip_module_prefix


strip_module_prefix = declare.function_exercise(
    "strip_module_prefix",
    title="Load a wrapped model's checkpoint into a plain model",
    prompt=(
        "Write strip_module_prefix(state_dict) -> a NEW dict in the same order, where every key "
        "loses the wrapper prefixes at its start: 'module.' (DataParallel/DDP) and '_orig_mod.' "
        "(torch.compile), as many as there are ('_orig_mod.module.fc.weight' -> 'fc.weight'); "
        "other keys unchanged; the input untouched."
    ),
    points=3,
    tests=[
        Test(
            "strips a DataParallel checkpoint",
            Strip(["module.weight", "module.bias"], ["weight", "bias"]),
        ),
        Test("strips a torch.compile checkpoint", Strip(["_orig_mod.weight"], ["weight"])),
        Test(
            "strips both prefixes of a compiled DDP model",
            Strip(["_orig_mod.module.fc.weight"], ["fc.weight"]),
        ),
        Test("leaves plain keys alone", Strip(["weight", "bias"], ["weight", "bias"])),
        Test(
            "keeps 'submodule.' keys intact",
            Strip(
                ["module.submodule.weight", "submodule.bias"],
                ["submodule.weight", "submodule.bias"],
            ),
        ),
    ],
    hints=[
        "Loop over `state_dict.items()` and build a new dict with the new key and the same value.",
        (
            "A `while` loop on `key.startswith(('module.', '_orig_mod.'))` removes one prefix per "
            "turn; `key.removeprefix(...)` cuts one."
        ),
        (
            "Shape: `for key, value in ...:` / "
            "`while key.startswith(WRAPPERS): key = key.split('.', 1)[1]` / `new[key] = value`."
        ),
    ],
)


# ---------------------------------------------------------------- exercise 3: load_for_inference
load_for_inference = declare.function_exercise(
    "load_for_inference",
    title="Load a checkpoint from another machine, ready for inference",
    prompt=(
        "Write load_for_inference(path, model, device) -> model: load the state_dict saved at "
        "`path` (it may come from a GPU this machine lacks, and from a DataParallel/DDP model "
        "whose keys start with 'module.') into `model`, put the model on `device`, in evaluation "
        "mode, and return it."
    ),
    points=4,
    tests=[
        Test(
            "loads a plain CPU checkpoint, in eval mode",
            Loading(wrapped=False, on_missing_gpu=False),
        ),
        Test(
            "loads a checkpoint saved on a GPU this machine does not have",
            Loading(wrapped=False, on_missing_gpu=True),
        ),
        Test("loads a DataParallel checkpoint", Loading(wrapped=True, on_missing_gpu=False)),
    ],
    hints=[
        "`torch.load(path, map_location=device)` puts every tensor on `device` while loading.",
        "Keys from a wrapped model start with `module.`: reuse your `strip_module_prefix` idea.",
        (
            "Four steps: load with map_location, strip the prefix, `model.load_state_dict(...)`, "
            "then return the model moved to `device` and switched to evaluation mode."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
# Two messages the chapter does not show before its
# quizzes on them (section 6): read, then explain().
UNSEEN_MESSAGES = {
    "input_type": (
        "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) "
        "should be the same or input should be a MKLDNN tensor and weight is a dense tensor"
    ),
    "which_tensor": (
        "RuntimeError: Expected all tensors to be on the same device, but got index is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA__index_select)"
    ),
}

what_is_wrong = declare.quiz(
    "what_is_wrong",
    title="Article A's question: what is wrong with this code?",
    kind="multiple",
    question="Article A asks what is wrong with this loop. Choose every real problem.",
    code='device = "cuda"\nmodel = model.to(device)\nfor x, y in loader:\n'
    "    logits = model(x)\n    loss = criterion(logits, y)",
    options={
        "a": "`'cuda'` is hard-coded: on a machine without a GPU the first `.to(device)` crashes",
        "b": "`x` and `y` stay on the CPU: `model(x)` raises a device-mismatch RuntimeError",
        "c": "`model.to(device)` returns a copy, so `model` keeps pointing at the CPU weights",
        "d": "there is no `zero_grad` / `backward` / `step`, so the model never learns anything",
        "e": (
            "`criterion` (a CrossEntropyLoss) stays on the CPU and must be moved to the device too"
        ),
    },
    digest="580d568d06ea0105",
    hints=[
        "Run each line in your head on a laptop without a GPU, then on a GPU box.",
        "Which tensors does the loop move? Which objects have parameters of their own?",
    ],
    why={
        "c": (
            "`Module.to` moves the parameters in place and returns the same module; the "
            "assignment is harmless (chapter 02)."
        ),
        "e": (
            "`CrossEntropyLoss` has no parameters or buffers: it computes wherever its inputs are."
        ),
    },
    explanation=(
        "(c) `model.to` moves the module in place and returns it; (e) standard losses have no "
        "parameters and follow their inputs."
    ),
)

dp_checkpoint = declare.quiz(
    "dp_checkpoint",
    title="Which error will this raise?",
    kind="error",
    question="A checkpoint saved from a DataParallel-wrapped model is loaded into a plain model.",
    code="wrapped = nn.DataParallel(nn.Linear(3, 2))\n"
    "plain = nn.Linear(3, 2)\n"
    "plain.load_state_dict(wrapped.state_dict())",
    options={
        "a": "KeyError: 'module.weight' is not a parameter of Linear (the first unknown key)",
        "b": (
            "RuntimeError: Missing key(s) 'weight', 'bias'; Unexpected key(s) 'module.weight', ..."
        ),
        "c": "No error: load_state_dict notices the common 'module.' prefix and strips it first",
        "d": "TypeError: a DataParallel state_dict cannot be loaded into a plain nn.Linear",
    },
    hints=[
        "`load_state_dict` is strict by default: it compares the two lists of names.",
        "Print `list(wrapped.state_dict())` and `list(plain.state_dict())`: which names differ?",
    ],
    why={
        "a": (
            "`load_state_dict` does not stop at the first odd key: it collects every difference "
            "first."
        ),
        "c": "Nothing strips prefixes for you; `strict=True` is the default.",
        "d": (
            "A state_dict is a plain dict of tensors: its type is never the problem, its names are."
        ),
    },
    explanation=(
        "load_state_dict is strict by default: every key must match. Save "
        "model.module.state_dict() from a wrapped model, or strip the prefix when loading."
    ),
)

state_dict_device = declare.quiz(
    "state_dict_device",
    title="Does a state_dict remember the device?",
    question=(
        "Article A says a state_dict 'is a plain Python dict and carries no device information'. "
        "On a GPU machine you run `{k: v.device for k, v in model.cuda().state_dict().items()}`. "
        "What prints?"
    ),
    options={
        "a": "Nothing device-related: a state_dict maps names to plain numbers, not tensors",
        "b": "`cpu` for every entry: `state_dict()` copies the weights to the CPU for saving",
        "c": "`cuda:0` for every entry: tensors remember their device, and `torch.save` records it",
        "d": "It raises: `state_dict()` refuses a model on the GPU until `.cpu()` is called",
    },
    digest="910d807b8c6b9a2f",
    hints=[
        "A state_dict's values are the model's own tensors (detached), not copies.",
        "Where do the model's tensors live after `model.cuda()`?",
    ],
    why={
        "a": (
            "The values are tensors: `state_dict()` returns the parameters and buffers themselves."
        ),
        "b": "`state_dict()` copies nothing; it returns references to the tensors where they are.",
        "d": "A model on any device has a state_dict; saving it from the GPU is the usual case.",
    },
    explanation=(
        "Article A is wrong here: the tensors carry their device, and torch.save writes it into "
        "the file; that is exactly why map_location is needed on a machine without that GPU."
    ),
)

input_type = declare.quiz(
    "input_type",
    title="A message you have not seen: read it",
    question=(
        f"A colleague's image model stops on the GPU box with: `{UNSEEN_MESSAGES['input_type']}`. "
        "What went wrong?"
    ),
    options={
        "a": "The images are float64 and the weights float32: call `x.float()` before the model",
        "b": (
            "The model was saved on a GPU and reloaded without `map_location`, so the weights broke"
        ),
        "c": (
            "The images lack a batch dimension: `Conv2d` wants `(N, C, H, W)`, add one with "
            "`unsqueeze`"
        ),
        "d": "The batch is still on the CPU while the layer's weights are on the GPU: move `x` too",
    },
    digest="0970b09c883cc656",
    hints=[
        (
            "Compare the two type names letter by letter: what differs, the number format or "
            "something else?"
        ),
        "`torch.cuda.FloatTensor` and `torch.FloatTensor` are both float32.",
    ],
    why={
        "a": "Both names say `FloatTensor` (float32); a float64 input would read `DoubleTensor`.",
        "b": (
            "A checkpoint from a missing GPU fails in `torch.load` with a message about "
            "`map_location`."
        ),
        "c": (
            "A missing batch dimension is reported as "
            "`Expected 3D (unbatched) or 4D (batched) input`."
        ),
    },
    explanation=(
        "`torch.cuda.FloatTensor` lives on the GPU, `torch.FloatTensor` on the CPU: the "
        "same-device rule in an older wording. `x = x.to(device)` fixes it."
    ),
)

which_tensor = declare.quiz(
    "which_tensor",
    title="Which tensor was forgotten?",
    question=f"A language model on the GPU stops with: `{UNSEEN_MESSAGES['which_tensor']}`. "
    "Which tensor is on the CPU?",
    options={
        "a": "The batch of token ids fed to the `nn.Embedding` layer (its `index` argument)",
        "b": "The embedding's own weight table, left behind on the CPU when the model was moved",
        "c": "The labels given to the loss: `index` is the name of the loss's `target`",
        "d": "The optimizer's state, created on the CPU before the model was moved",
    },
    digest="84ba636e13aea9d5",
    hints=[
        "The message names the argument that is on the CPU, then the device of all the others.",
        (
            "An embedding looks rows up in its weight table with `index_select`: which tensor is "
            "the index?"
        ),
    ],
    why={
        "b": "The weight table is one of the 'other tensors': those are on `cuda:0`.",
        "c": (
            "A loss's labels are called `target` in these messages, and no loss runs "
            "`index_select`."
        ),
        "d": "The optimizer is not part of the forward pass, where this error is raised.",
    },
    explanation=(
        "`index` is the input of the embedding's `index_select`: the token ids. Move the batch: "
        "`tokens = tokens.to(device)`."
    ),
)
