"""The errors this course explains: one entry per error family, as data (the explainer, chapter 04).

Each entry says what the error means in plain words, its likely causes in the course's terms,
the fix as code, and the notebook section that teaches it. `patterns` are regular expressions
(matched case-insensitively) on fragments of the message that stay the same across torch 2.x
releases; several alternatives cover the wordings of different releases and devices. A pattern
is never a single common word: "cuda", "device" or "memory" alone explain nothing.

`readings` pick numbers and names out of the message (named groups) into a sentence.
Order matters: the first entry that matches wins, so specific entries come before general ones;
`unless` lets an entry step aside for a later one when the message also says something else.
Warnings (`UserWarning`, `FutureWarning`) are entries too: the notebook panel explains them once.
The patterns were written from a corpus of real messages posted in public issue threads
(`tests/data/explain_corpus.jsonl`, torch 0.4 to 2.x), not only from the errors the course raises.
"""

from dataclasses import dataclass

from ..sections import section


@dataclass(frozen=True)
class Entry:
    """One error family: how to recognise it and what to tell the learner (chapter 04)."""

    id: str
    title: str
    signature: str  # what PyTorch prints, shortened, for the cheat sheet
    patterns: tuple
    meaning: str
    causes: tuple
    fix: str
    chapter: str = None  # "04", a number declared in course_lib/chapters.py
    section: str = None  # the heading in that notebook, as written there
    readings: tuple = ()  # (regex with named groups, sentence with {names})
    wrapper: bool = False  # says "a process failed"; the real error is earlier in the log
    wordings: tuple = ()  # (where it is printed, the text): the same error across releases/devices
    unless: tuple = ()  # patterns that, when also in the message, make this entry step aside
    closest: bool = (
        False  # no chapter teaches it: `section` is the closest one, the entry says what to do
    )
    frames: tuple = ()  # a family's torch source folders: a traceback frame there is evidence
    tier: str = "specific"  # "family": the general case of a subject, when no entry matches
    needs: tuple = ()  # PyTorch evidence that must also be in the paste (a plain Python wording)


_DEVICE = r"[a-z]+(?::\d+)?"
# torch.OutOfMemoryError / torch.cuda.OutOfMemoryError, not cupy.cuda.memory's nor OpenCV's
# cv::OutOfMemoryError
TORCH_OOM_CLASS = r"(?<![\w.:])(?:torch\.(?:cuda\.)?)?OutOfMemoryError\b"
_SIZE = r"[\d.]+ ?(?:[KMGT]i?B|bytes)"
# a checkpoint saved as {'state_dict': ..., 'optimizer':
# ...}: its only "unexpected key" is the container's
_WRAPPED_CHECKPOINT = (
    r'Unexpected key\(s\) in state_dict: "(?P<key>state_dict|model|model_state_dict|net|'
    r'network|params|ema|module)"\.'
)

# Text that every CUDA program prints (issue 35): the CUDA runtime's and its libraries' error
# strings and status codes, the driver's and the loader's messages. PyTorch prints them, and so do
# TensorFlow, onnxruntime, GGML, Caffe, CTranslate2...: alone they say nothing about PyTorch.
SHARED_CUDA = (
    r"\b(?:CUBLAS|CUDNN|CUSOLVER|CUFFT|CURAND|CUSPARSE)_STATUS_\w+|\bcu(?:DNN|BLAS) error\b|"
    r"\b(?:CUDA|HIP) error\b[^\n]*|\bcuda\w*Error\w*|\bnccl\w*Error\b|\bunhandled cuda error\b|"
    r"\bout of memory\b|CUDA driver version is insufficient|\bno CUDA-capable device\b|"
    r"forward compatibility was attempted|unsupported display driver / cuda driver combination|"
    r"no kernel image is available|an illegal memory access|device-side assert triggered|"
    r"\binvalid device function\b|\blib(?:cudart|nvrtc|cudnn|cublas\w*|nccl)\w*\.so[\w.]*"
)
# PyTorch's own words: its modules and frames (torch., torch/, torchrun, torchvision...), its C++
# namespaces (aten::, c10::, at::, c10d), its environment variables (TORCH_*, PYTORCH_*), the
# classes of its exceptions, the sentences its CUDA checks add, and the exact form in which PyTorch
# raises shared text: Python's RuntimeError around it (other Python CUDA libraries raise classes of
# their own: CuPy's CUDARuntimeError, TensorFlow's InternalError, JAX's XlaRuntimeError), ATen's
# "cuDNN error: CUDNN_STATUS_..." and "CUDA error: CUBLAS_STATUS_...", THC's "cuda runtime error
# (N)" (torch 1.x).
TORCH_EVIDENCE = (
    r"\b(?:py)?torch\w*\b|\b(?:aten|c10|at)::|\bc10d?\b|\b(?:PY)?TORCH_[A-Z_]+|"
    r"\b(?:aten|ATen|THC)[/\\]|(?<![\w.])RuntimeError: [^\n]*?(?:CUDA error|cuDNN error|"
    r"CUDNN_STATUS_|CUBLAS_STATUS_|cuda runtime error|cudaError|CUDA out of memory)|"
    r"\b(?:CUDA|cuDNN) error: \w+_STATUS_|"
    r"\bcuda runtime error ?\(\d+\)|\bCUDA initialization: |\(Triggered internally at |"
    # c10's sentences around a driver error, and the MPS allocator's own words (collection 5)
    r"Unexpected error from cudaGetDeviceCount\(\)|\bNumCudaDevices\(\)|"
    r"\bMPS backend out of memory|"
    r"(?<![\w.:])(?:OutOfMemoryError|AcceleratorError|DistBackendError|DistNetworkError|"
    r"DistStoreError|ChildFailedError)\b|CUDA kernel errors might be asynchronously reported|"
    r"CUDA out of memory\. Tried to allocate|reserved in total by PyTorch|"
    r"^[ \t]*RuntimeError: (?:CUDA|HIP) error: "
)

# ------------------------------------------------------------ issue 35, item 3: wordings that only
# a family answered (collections 1-3) or that PyTorch raises with one cause; each raised live on
# torch 2.13 (CPU) by tests/test_explain_specific.py, the wordings of other releases named.
SPECIFIC_35 = (
    Entry(
        "meta_no_data",
        "A tensor on the meta device has no data to copy or read",
        "Cannot copy out of meta tensor; no data! / Tensor.item() cannot be called on meta tensors",
        (r"Cannot copy out of meta tensor", r"cannot be called on meta tensors"),
        (
            "A 'meta' tensor has a shape and a dtype but no values. Moving it with `.to(device)`, "
            "reading it with `.item()` or copying it would need values that do not exist: the "
            "model (or this tensor) was built on the meta device and its weights were never loaded."
        ),
        (
            "a model created under `torch.device('meta')`, `init_empty_weights()` or "
            "`device_map=...`, then moved with `.to(device)` before its weights were loaded",
            "a library that offloaded some layers (`device_map='auto'` with too little GPU memory) "
            "and left them on the meta device",
        ),
        "model = model.to_empty(device=device)   # real (uninitialised) storage on the device\n"
        "model.load_state_dict(state)             # then the weights\n"
        "# or straight from meta: model.load_state_dict(state, assign=True)",
        "04",
        "## 1. Model on the device, data on the CPU",
        wordings=(
            (
                "`Module.to()`, torch 2.3 and later",
                "NotImplementedError: Cannot copy out of meta tensor; no data! Please use "
                "torch.nn.Module.to_empty() instead of torch.nn.Module.to() when moving module "
                "from meta to a different device.",
            ),
            (
                "`Tensor.to()`, and `Module.to()` before torch 2.3",
                "NotImplementedError: Cannot copy out of meta tensor; no data!",
            ),
            ("`.item()`", "RuntimeError: Tensor.item() cannot be called on meta tensors"),
        ),
        closest=True,
    ),
    Entry(
        "mean_integer",
        "`mean()` of an integer tensor",
        "mean(): could not infer output dtype. Input dtype must be either a floating point or "
        "complex dtype. Got: Long",
        (
            r"mean\(\): could not infer output dtype",
            r"mean\(\): input dtype should be either floating point or complex",
            r"mean\(\): at least one of \(i\) the input dtype and \(ii\) the desired output dtype",
            r"Can only calculate the mean of floating types",
        ),
        (
            "`mean` returns a floating-point average, and PyTorch does not pick a float type for "
            "an integer (or bool) tensor: counts, labels, `argmax` results and comparisons are "
            "int64 or bool and need a float dtype first."
        ),
        (
            "an accuracy averaged from a comparison or a count (`(pred == y)`, `correct`)",
            "a metric over `argmax` indices, labels or token ids",
        ),
        "acc = (pred == y).float().mean()    # or x.mean(dtype=torch.float32)",
        "03",
        "## 6. The evaluation loop: `model.eval()`, `torch.no_grad()`, and the data moved too",
        wordings=(
            (
                "torch 1.12 and later",
                "RuntimeError: mean(): could not infer output dtype. Input dtype must be either a "
                "floating point or complex dtype. Got: Long",
            ),
            (
                "torch 1.10 and 1.11",
                "RuntimeError: mean(): input dtype should be either floating point or complex "
                "dtypes. Got Long instead.",
            ),
            (
                "torch 1.9 and earlier",
                "RuntimeError: Can only calculate the mean of floating types. Got Long instead.",
            ),
        ),
        closest=True,
    ),
    Entry(
        "cat_sizes",
        "`torch.cat`: the tensors differ in a dimension other than the one joined",
        "Sizes of tensors must match except in dimension 1. Expected size 3 but got size 4 for "
        "tensor number 1 in the list.",
        (r"Sizes of tensors must match except in dimension \d+",),
        (
            "`torch.cat` joins tensors along one dimension; every other dimension must have the "
            "same size in all of them. The message names the joined dimension, the size expected "
            "and the tensor (its place in the list) that differs."
        ),
        (
            "two branches' features concatenated with different spatial sizes (a convolution's "
            "padding or stride, an odd image size)",
            "`dim=` pointing at the wrong axis (batch-first against sequence-first)",
            "a last, smaller batch concatenated with full-size ones",
        ),
        "print([t.shape for t in tensors])   # equal everywhere except along dim\n"
        "torch.cat(tensors, dim=1)",
        "03",
        "### Errata: article B's own `DynamicNet`",
        (
            (
                r"Expected size (?P<want>\d+) but got size (?P<got>\d+) for tensor number "
                r"(?P<n>\d+)",
                "Tensor number {n} in the list has size {got} where {want} was expected.",
            ),
        ),
        wordings=(
            (
                "later releases (2.13 checked)",
                "RuntimeError: Sizes of tensors must match except in dimension 0. Expected size 3 "
                "but got size 4 for tensor number 1 in the list.",
            ),
            (
                "older 1.x releases (seen in threads, release not checked)",
                "RuntimeError: Sizes of tensors must match except in dimension 0. Got 3 and 4 in "
                "dimension 1 (The offending index is 1)",
            ),
        ),
        closest=True,
    ),
    Entry(
        "stack_unequal",
        "`torch.stack` (or the DataLoader's collate) got tensors of different sizes",
        "stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and "
        "[1, 224, 224] at entry 3",
        (r"stack expects each tensor to be equal size",),
        (
            "`torch.stack` puts tensors side by side in a new dimension, so all must have the same "
            "shape. In a DataLoader it is `default_collate` stacking the samples of one batch: a "
            "sample differs from the first one."
        ),
        (
            "images of different sizes, or a grayscale image among RGB ones, without a resize in "
            "the transform",
            "sequences of different lengths batched without padding",
            "a Dataset whose `__getitem__` returns another shape for some items",
        ),
        "transform = T.Compose([T.Resize((224, 224)), T.ToTensor()])   # one size for images\n"
        "# sequences: a collate_fn that pads them (torch.nn.utils.rnn.pad_sequence)",
        "03",
        "## 2. The data: a Dataset and a DataLoader",
        (
            (
                r"but got \[(?P<a>[\d, ]*)\] at entry (?P<i>\d+) and \[(?P<b>[\d, ]*)\] at entry "
                r"(?P<j>\d+)",
                "Entry {i} has shape [{a}], entry {j} has shape [{b}].",
            ),
        ),
        closest=True,
    ),
    Entry(
        "grad_unused_input",
        "`torch.autograd.grad`: an input the output does not depend on",
        "The differentiated Tensor at index 0 appears to not have been used in the graph. Set "
        "allow_unused=True if this is the desired behavior.",
        (r"appears (?:to not|not to) have been used in the graph",),
        (
            "`torch.autograd.grad(outputs, inputs)` found no path from the output back to one of "
            "`inputs`: that tensor took no part in computing the output, or was cut off on the "
            "way, so there is no gradient to return."
        ),
        (
            "an input or parameter that the forward pass never used for this output (a branch "
            "not taken, a layer skipped)",
            "a `.detach()`, `.item()`, `.data` or `torch.no_grad()` between the input and the "
            "output",
            "a copy passed as the input (`x.to(device)` made after `requires_grad_()`), not the "
            "tensor the output was computed from",
        ),
        "grads = torch.autograd.grad(out, inputs, allow_unused=True)   # None for unused ones\n"
        "# or pass only the tensors the output was computed from",
        "03",
        "## 5. One training step, spelled out",
        (
            (
                r"differentiated Tensor at index (?P<i>\d+)",
                "The input at index {i} of `inputs` is the one not used.",
            ),
        ),
        wordings=(
            (
                "2026 releases (2.13 checked)",
                "RuntimeError: The differentiated Tensor at index 0 appears to not have been used "
                "in the graph. Set allow_unused=True if this is the desired behavior.",
            ),
            (
                "earlier releases",
                "RuntimeError: One of the differentiated Tensors appears to not have been used in "
                "the graph. Set allow_unused=True if this is the desired behavior.",
            ),
        ),
        closest=True,
    ),
    Entry(
        "backward_nan",
        "Anomaly detection: a backward function returned NaN",
        "Function 'SqrtBackward0' returned nan values in its 0th output.",
        (r"Function '?\w+Backward\d*'? returned nan values in its \d+\w* output",),
        (
            "With `torch.autograd.set_detect_anomaly(True)` autograd checks every backward step "
            "and stops at the first gradient that is NaN. The name is the forward operation whose "
            "derivative is undefined or overflowed at these values; the warning printed above it "
            "shows where that operation ran in the forward pass."
        ),
        (
            "`sqrt`, `log`, a fractional `pow` or a division at 0 (the gradient of `sqrt` at 0 is "
            "infinite, and infinity times 0 is NaN)",
            "the norm of a zero vector (`x / x.norm()`)",
            "float16 overflow under autocast without a GradScaler",
        ),
        "torch.sqrt(x.clamp_min(1e-12))   # keep away from where the gradient blows up\n"
        "torch.log(x + 1e-8)",
        "03",
        "## 5. One training step, spelled out",
        (
            (
                r"Function '?(?P<fn>\w+?)Backward\d*'? returned nan",
                "The operation: `{fn}` (its backward).",
            ),
        ),
        wordings=(
            (
                "torch 1.10 and later",
                "RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.",
            ),
            (
                "earlier releases",
                "RuntimeError: Function 'SqrtBackward' returned nan values in its 0th output.",
            ),
        ),
        closest=True,
    ),
    Entry(
        "unscale_twice",
        "GradScaler: `unscale_` called twice for one optimizer in one step",
        "unscale_() has already been called on this optimizer since the last update().",
        (r"unscale_\(\) has already been called on this optimizer since the last update",),
        (
            "`scaler.unscale_(optimizer)` divides the gradients by the scale once per step; a "
            "second call would divide them again. `scaler.step` unscales by itself when you have "
            "not, and `scaler.update()` ends the step."
        ),
        (
            "`unscale_` called for every micro-batch of gradient accumulation instead of once "
            "before `step`",
            "`scaler.update()` missing at the end of a step, so the next step's `unscale_` is the "
            "second one",
            "`unscale_` called by hand and again by a library's clipping helper",
        ),
        "scaler.scale(loss).backward()\n"
        "scaler.unscale_(opt)      # once, just before clipping\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "scaler.step(opt)\n"
        "scaler.update()           # every step",
        "05",
        "### The GradScaler",
    ),
    Entry(
        "scaler_no_inf_checks",
        "GradScaler: `step` found no gradient it had scaled",
        "AssertionError: No inf checks were recorded for this optimizer.",
        (r"No inf checks were recorded for this optimizer",),
        (
            "`scaler.step(optimizer)` checks the optimizer's gradients for inf and NaN before it "
            "steps. None of the optimizer's parameters got a gradient from the scaled loss, so "
            "there was nothing to check: the optimizer and the loss do not belong together."
        ),
        (
            "the optimizer was built over other parameters (a copy of the model, or the model "
            "before it was rebuilt or wrapped)",
            "every parameter is frozen (`requires_grad=False`), or the loss does not depend on "
            "them",
            "`backward()` called on the unscaled loss, or not at all",
        ),
        "opt = torch.optim.AdamW(model.parameters())   # the model that computes the loss\n"
        "scaler.scale(loss).backward()\n"
        "scaler.step(opt)\n"
        "scaler.update()",
        "05",
        "### The GradScaler",
    ),
    Entry(
        "scaler_not_scaled",
        "GradScaler: `step` before any `scale` in this run",
        "AssertionError: Attempted step but _scale is None. This may indicate your script did not "
        "use scaler.scale(loss or outputs) earlier in the iteration.",
        (r"Attempted \w+ but _scale is None",),
        (
            "The scaler creates its scale factor at its first `scaler.scale(loss)`. `step`, "
            "`unscale_` or `update` came before any `scale` call, so the scaler has nothing to "
            "undo."
        ),
        (
            "`loss.backward()` instead of `scaler.scale(loss).backward()`",
            "a new scaler made inside the loop, or another scaler used for `step`",
        ),
        "scaler = torch.amp.GradScaler(device)   # once, before the loop\n"
        "scaler.scale(loss).backward()\n"
        "scaler.step(opt)\n"
        "scaler.update()",
        "05",
        "### The GradScaler",
    ),
    Entry(
        "process_group_twice",
        "`init_process_group` called a second time",
        "ValueError: trying to initialize the default process group twice!",
        (r"trying to initialize the default process group twice",),
        (
            "A process has one default process group. It is already set up here, and a second "
            "`init_process_group` would replace the group the other ranks are talking to."
        ),
        (
            "a library (Lightning, accelerate, a Trainer) already initialised it and the script "
            "calls it again",
            "the setup code runs twice (a notebook cell run again, a retry loop)",
        ),
        "if not dist.is_initialized():\n"
        "    dist.init_process_group(backend)\n"
        "# and dist.destroy_process_group() when a run ends (before running the cell again)",
        "07",
        "### Launching with `torchrun`: `RANK`, `LOCAL_RANK`, `WORLD_SIZE`",
    ),
    Entry(
        "nccl_timeout_warning",
        "A warning: NCCL was asked for, and this build has none",
        "UserWarning: Attempted to get default timeout for nccl backend, but NCCL support is not "
        "compiled",
        (r"Attempted to get default timeout for nccl backend, but NCCL support is not compiled",),
        (
            "A warning, not an error yet: code asked for the NCCL backend's default timeout, and "
            "this PyTorch build has no NCCL (Windows, macOS and CPU-only builds never have it). "
            "Creating an NCCL process group fails next."
        ),
        (
            "a script or library that picks `backend='nccl'` whatever the machine, run on "
            "Windows, macOS or a CPU-only build",
        ),
        "ok = torch.distributed.is_nccl_available() and torch.cuda.is_available()\n"
        "dist.init_process_group('nccl' if ok else 'gloo')",
        "07",
        "## 2. DistributedDataParallel, for real",
    ),
    Entry(
        "recompile_limit",
        "`torch.compile` stopped recompiling a function (the recompile limit)",
        "torch._dynamo hit config.recompile_limit (8)",
        (
            r"torch\._dynamo hit config\.(?:recompile_limit|cache_size_limit)",
            r"\b(?:recompile_limit|cache_size_limit) reached\b",
            r"\bFailOnRecompileLimitHit\b",
        ),
        (
            "Dynamo compiles a function for what its guards assume (shapes, Python numbers, "
            "flags). Every call that breaks a guard compiles it again; after the limit (8 by "
            "default) it stops compiling that function and runs it eagerly, without the speedup. "
            "The 'last reason' line names the guard that kept failing."
        ),
        (
            "a Python number that changes at every call (a step counter, a layer index) passed "
            "into the compiled function",
            "input shapes that change every batch (sequence lengths) with `dynamic=False`",
            "a new module object at each call (one compile per layer)",
        ),
        "torch._dynamo.mark_dynamic(x, 1)               # a dimension that varies\n"
        "compiled = torch.compile(model, dynamic=True)\n"
        "# pass changing numbers as tensors; TORCH_LOGS=recompiles shows each reason",
        "05",
        "### What TorchDynamo does with your Python",
        (
            (
                r"last reason: [\d/]+: (?P<reason>[^\n#]*[^\s#])",
                "The guard that failed last: `{reason}`.",
            ),
        ),
        wordings=(
            ("torch 2.7 and later", "torch._dynamo hit config.recompile_limit (8)"),
            ("torch 2.0 to 2.6", "torch._dynamo hit config.cache_size_limit (8)"),
        ),
    ),
    Entry(
        "fsdp_uniform_dtype",
        "FSDP: one wrapped unit mixes parameter dtypes",
        "ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and "
        "torch.float32",
        (r"Must flatten tensors with uniform dtype", r"FlatParameter`? requires uniform dtype"),
        (
            "The original FSDP (`FullyShardedDataParallel`) flattens all parameters of one wrapped "
            "unit into one flat tensor, which has one dtype. This unit holds parameters of two "
            "dtypes, for example bfloat16 weights beside float32 adapter (LoRA) or norm weights."
        ),
        (
            "a model loaded in bfloat16 or float16 with some layers kept in float32 (LoRA "
            "adapters, layer norms, the extras of a quantised model)",
            "`.half()` or `.to(dtype)` applied to part of the model only",
        ),
        "model.to(torch.bfloat16)   # one dtype for every parameter before wrapping\n"
        "# or wrap the float32 layers as FSDP units of their own, so no unit mixes dtypes",
        "08",
        "## 2. FSDP2, for real: `fully_shard`",
        (
            (
                r"uniform dtype but got (?P<a>torch\.\w+) and (?P<b>torch\.\w+)",
                "The unit mixes {a} and {b}.",
            ),
        ),
        wordings=(
            (
                "torch 2.0 and earlier (`fsdp/flat_param.py`)",
                "ValueError: `FlatParameter` requires uniform dtype but got torch.float16 and "
                "torch.float32",
            ),
            (
                "later releases (`fsdp/_flat_param.py`, 2.13 checked)",
                "ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and "
                "torch.float32",
            ),
        ),
        closest=True,
    ),
    Entry(
        "worker_unpicklable",
        "DataLoader workers: the Dataset or a function it uses cannot be pickled",
        "AttributeError: Can't pickle local object 'main.<locals>.<lambda>' (DataLoader, "
        "num_workers > 0)",
        (
            r"Got pickle error when attempting to start a worker Process",
            r"Can't (?:pickle|get) local object",
            r"Can't pickle <function <lambda>",
        ),
        (
            "With `num_workers > 0` and the 'spawn' or 'forkserver' start method (Windows, macOS, "
            "Linux with Python 3.14), each worker is a new Python process that receives the "
            "Dataset, its transforms and the `collate_fn` by pickling. A lambda or a function "
            "defined inside another function cannot be pickled."
        ),
        (
            "a `lambda` or a local function as a transform, `collate_fn` or `worker_init_fn`",
            "a Dataset that holds an open file, a database connection or a generator",
        ),
        "def collate(batch):              # at the top level of a module, not inside main()\n"
        "    ...\n"
        "loader = DataLoader(data, num_workers=2, collate_fn=collate)",
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
        needs=(r"\bDataLoader\b|torch[/\\]utils[/\\]data[/\\]|\bworker Process\b",),
    ),
)

ENTRIES = (
    # ------------------------------------------------------------ checkpoints across machines
    Entry(
        "checkpoint_missing_gpu",
        "A checkpoint saved on a GPU this machine does not have",
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False",
        (r"Attempting to ?deserialize object on (?:a )?CUDA device",),
        (
            "`torch.save` wrote each tensor's device into the file; `torch.load` tries to put "
            "every tensor back on that GPU, and this machine has no such GPU."
        ),
        (
            (
                "the file was saved on a GPU machine and is loaded on a CPU-only one (a laptop, a "
                "CI runner)"
            ),
            "it was saved from `cuda:1` on a multi-GPU box and this machine has fewer GPUs",
        ),
        (
            "state = torch.load(path, map_location=device)   # device = "
            "pick_device()\nmodel.load_state_dict(state)"
        ),
        "04",
        "### 4a. Saved on a GPU, loaded on a laptop without one",
        (
            (
                (
                    r"on CUDA device (?P<index>\d+) but torch\.cuda\.device_count\(\) is "
                    r"(?P<count>\d+)"
                ),
                "The file asks for `cuda:{index}`; this machine has {count} GPU(s).",
            ),
        ),
    ),
    Entry(
        "checkpoint_corrupt",
        "The file is not a complete PyTorch checkpoint",
        "PytorchStreamReader failed reading zip archive / invalid load key / Unsupported operand",
        (
            r"PytorchStreamReader failed reading (?:zip archive|file)",
            r"WeightsUnpickler error: Unsupported operand \d+",
            (
                r"(?:_legacy_load|magic_number = "
                r"pickle_module\.load)[^\n]*(?:\n[^\n]*){0,3}?invalid load key"
            ),
            (
                r"torch[/\\]serialization\.py[^\n]*(?:\n[^\n]*){0,6}?(?:invalid load key|Ran out "
                r"of input)"
            ),
        ),
        (
            "`torch.load` opened the file and found something other than a checkpoint: the "
            "archive is cut short, or the bytes are not a PyTorch file at all. Nothing about the "
            "model is wrong yet."
        ),
        (
            "an interrupted or partial download (compare the file size with the original)",
            (
                "a Git LFS pointer file (a few hundred bytes starting with 'version "
                "https://git-lfs') instead of the weights"
            ),
            (
                "an HTML page saved under the checkpoint's name (a download link that needs a "
                "login or a confirmation)"
            ),
            "the file was still being written by `torch.save` (another process, a full disk)",
        ),
        (
            "import os; print(os.path.getsize(path))   # a checkpoint is rarely a few "
            "KB\nprint(open(path, 'rb').read(64))           # b'PK...' = a real zip checkpoint\n# "
            "download it again (git lfs pull for LFS files), then torch.load(path, "
            "map_location=device)"
        ),
        "04",
        "## 4. Checkpoints from other machines",
        (
            (
                r"invalid load key, '<'|Unsupported operand 60\b",
                "The file begins with '<': it is an HTML page, not a checkpoint.",
            ),
            (
                r"invalid load key, 'v'|Unsupported operand 118\b",
                (
                    "The file begins with 'v': most likely a Git LFS pointer ('version "
                    "https://git-lfs...'), not the weights."
                ),
            ),
        ),
        closest=True,
    ),
    Entry(
        "weights_only",
        "`torch.load` refused to unpickle an object (`weights_only=True`)",
        "Weights only load failed ... Unsupported global: GLOBAL ...",
        (r"Weights only load failed", r"Unsupported global: GLOBAL", r"WeightsUnpickler error"),
        (
            "Since PyTorch 2.6 `torch.load` only unpickles tensors and plain containers by "
            "default, because a pickle can run any code. The file holds an object of a class it "
            "does not allow."
        ),
        (
            "a whole model was saved with `torch.save(model, path)` instead of its `state_dict()`",
            (
                "the checkpoint stores your own class (a config dataclass, a NumPy array) next to "
                "the weights"
            ),
        ),
        (
            "torch.save(model.state_dict(), path)                 # save weights, rebuild the "
            "model from code\nwith torch.serialization.safe_globals([MyConfig]):   # a class you "
            "trust\n    checkpoint = torch.load(path)\n# weights_only=False only for a file you "
            "made yourself or fully trust"
        ),
        "04",
        "### 4b. `weights_only`: save the state_dict, not the model",
        (
            (
                r"GLOBAL (?P<name>[\w.]+) was not an allowed global",
                "The object it refused is of class `{name}`.",
            ),
        ),
    ),
    Entry(
        "torch_load_weights_only_warning",
        "`torch.load` warns that it will stop unpickling arbitrary objects",
        (
            "FutureWarning: You are using `torch.load` with `weights_only=False` (the current "
            "default value) ..."
        ),
        (r"using `?torch\.load`? with `?weights_only=False`?",),
        (
            "A warning, not an error (torch 2.4 and 2.5): `torch.load` still unpickles anything, "
            "but says that the default becomes `weights_only=True` (it did in 2.6), which loads "
            "only tensors and plain containers because a pickle can run any code."
        ),
        (
            "`torch.load(path)` without `weights_only=` on a file that holds only a state_dict",
            (
                "a library you use calls `torch.load` the old way (the warning names its file and "
                "line)"
            ),
        ),
        (
            "state = torch.load(path, map_location=device, weights_only=True)   # a state_dict "
            "loads as before\n# a file with your own classes: save model.state_dict() instead, or "
            "allow the class:\nwith torch.serialization.safe_globals([MyConfig]):\n    checkpoint "
            "= torch.load(path, weights_only=True)"
        ),
        "04",
        "### 4b. `weights_only`: save the state_dict, not the model",
    ),
    Entry(
        "compiled_prefix",
        "Keys start with `_orig_mod.`: a checkpoint from a `torch.compile`d model",
        'Missing key(s) ... Unexpected key(s) in state_dict: "_orig_mod. ..."',
        (r'key\(s\) in state_dict: [^\n]*"(?:module\.)?_orig_mod\.',),
        "`torch.compile(model)` returns a wrapper that keeps your model in `._orig_mod`, so its "
        "`state_dict()` puts `_orig_mod.` in front of every key; a plain model has no such keys "
        "(or the other way round).",
        ("the state_dict was saved from the compiled model instead of the original one",),
        (
            "torch.save(model.state_dict(), path)          # the original model, not "
            "torch.compile(model)\nstate = {k.removeprefix('_orig_mod.'): v for k, v in "
            "state.items()}"
        ),
        "04",
        "### 4c. Wrapper prefixes: `module.` and `_orig_mod.`",
    ),
    Entry(
        "module_prefix",
        "Keys start with `module.`: a checkpoint from a DataParallel/DDP model",
        'Missing key(s) ... Unexpected key(s) in state_dict: "module. ..."',
        (
            r'key\(s\) in state_dict: [^\n]*"module\.',
            r'(?:unexpected|missing) key "module\.[\w.]+" in state_dict',
        ),
        (
            "`nn.DataParallel` and `DistributedDataParallel` keep your model in `.module`, so the "
            "wrapped model's `state_dict()` puts `module.` in front of every key; "
            "`load_state_dict` is strict and finds none of the names it expects."
        ),
        (
            "the checkpoint was saved from the wrapped model (`wrapped.state_dict()`)",
            "a plain checkpoint is loaded into a wrapped model (the keys lack `module.`)",
        ),
        "torch.save(wrapped.module.state_dict(), path)   # save the model inside the wrapper\n"
        "state = {k.removeprefix('module.'): v for k, v in state.items()}",
        "04",
        "### 4c. Wrapper prefixes: `module.` and `_orig_mod.`",
        unless=(_WRAPPED_CHECKPOINT,),
    ),
    Entry(
        "state_dict_mismatch",
        "The checkpoint does not fit this model",
        "Error(s) in loading state_dict ... size mismatch / Missing key(s)",
        (
            r"size mismatch for [\w.]+: copying a param with shape",
            r"Missing key\(s\) in state_dict",
            r"Unexpected key\(s\) in state_dict",
        ),
        (
            "`load_state_dict` compares names and shapes one by one, and this checkpoint was made "
            "for a model with other layers or other sizes."
        ),
        (
            (
                "the model is built with other sizes (hidden width, number of classes) than the "
                "saved one"
            ),
            (
                "the checkpoint is a dict around the weights "
                "(`{'model': ..., 'optimizer': ...}`): load its `['model']`"
            ),
        ),
        "model = Net(**same_sizes_as_when_saved)\n"
        "model.load_state_dict(checkpoint['model'] if 'model' in checkpoint else checkpoint)",
        "04",
        "### 4c. Wrapper prefixes: `module.` and `_orig_mod.`",
        (
            (
                (
                    r"size mismatch for (?P<name>[\w.]+): copying a param with shape "
                    r"torch\.Size\((?P<saved>\[[\d, ]*\])\) from checkpoint, the shape in current "
                    r"model is torch\.Size\((?P<now>\[[\d, ]*\])\)"
                ),
                "`{name}` is {saved} in the file and {now} in your model.",
            ),
            (
                _WRAPPED_CHECKPOINT,
                "The file is a dict around the weights: load its `['{key}']` entry.",
            ),
        ),
    ),
    # ------------------------------------------------------------ devices
    Entry(
        "rnn_hidden_device",
        "A recurrent layer's hidden state is on another device",
        (
            "Input and hidden tensors are not at the same device, found input tensor at cuda:0 "
            "and hidden tensor at cpu"
        ),
        (r"Input and hidden tensors are not at the same device",),
        (
            "An RNN/LSTM/GRU got its input on one device and the initial hidden state `h0` (or "
            "`(h0, c0)`) on another. `model.to(device)` moves the layer's weights, not a hidden "
            "state you create yourself."
        ),
        (
            (
                "`h0 = torch.zeros(layers, batch, hidden)` in `forward` or `init_hidden` without "
                "`device=`: born on the CPU"
            ),
            "a hidden state kept from the previous batch or from before `model.to(device)`",
        ),
        (
            "h0 = torch.zeros(num_layers, x.size(0), hidden_size, device=x.device)   # where the "
            "input is\nout, h = self.rnn(x, h0)\nh = h.detach()                                # "
            "when you carry it to the next batch"
        ),
        "04",
        "## 3. Born on the CPU, even inside `forward`",
        (
            (
                (
                    r"found input tensor at (?P<a>\w+(?::\d+)?) and hidden tensor at "
                    r"(?P<b>\w+(?::\d+)?)"
                ),
                "The input is on {a}, the hidden state on {b}.",
            ),
        ),
    ),
    Entry(
        "data_parallel_device",
        "`nn.DataParallel` found the model on another device than its first GPU",
        (
            "module must have its parameters and buffers on device cuda:0 (device_ids[0]) but "
            "found one of them on device: cpu"
        ),
        (
            (
                r"module must have its parameters and buffers on "
                r"device\s*\S+?\s*\(device_ids\[0\]\)\s*but found"
            ),
        ),
        (
            "DataParallel scatters from its first GPU, `device_ids[0]`, and needs every parameter "
            "and buffer of the wrapped model there before the first forward pass."
        ),
        (
            "the model was wrapped in `nn.DataParallel` but never moved (`.to('cuda:0')`)",
            (
                "the model is on `cuda:1` (or `CUDA_VISIBLE_DEVICES` reorders the GPUs) while "
                "`device_ids` starts at 0"
            ),
            "the code runs on a CPU-only machine but still wraps the model (DP is then pointless)",
        ),
        "model = model.to('cuda:0')                       # the first of device_ids\n"
        "model = nn.DataParallel(model, device_ids=[0, 1])\n"
        "# better: DistributedDataParallel, one process per GPU (chapter 07)",
        "07",
        "## 1. DataParallel: one process, a main GPU",
        (
            (
                (
                    r"on device\s*(?P<want>[\w:]+?)\s*\(device_ids\[0\]\)\s*but found one of them "
                    r"on device\s*:\s*(?P<got>[\w:]+)"
                ),
                "DataParallel wants everything on {want}; one parameter or buffer is on {got}.",
            ),
        ),
    ),
    Entry(
        "device_mismatch",
        "Tensors on two devices in one operation",
        "Expected all tensors to be on the same device ... / "
        "Tensor on device cpu is not on the expected device ...",
        (
            r"Expected all tensors to be on the same device",
            r"Tensor on device \S+ is not on the expected device",
            r"Input type \(torch\.cuda\.\w+\) and (?:weight|bias) type \(torch\.(?!cuda\.)\w+\)",
            r"Input type \(torch\.(?!cuda\.)\w+\) and (?:weight|bias) type \(torch\.cuda\.\w+\)",
            r"Input and parameter tensors are not at the same device",
            r"All input tensors must be on the same device",
            r"Placeholder storage has not been allocated on MPS device",
            r"Input, output and indices must be on the current device",
            r"indices should be either on cpu or on the same device as the indexed tensor",
            r"Expected object of (?:device type|backend) \w+ but got (?:device type|backend) \w+",
            r"expected device \S+ but got device \S+",
        ),
        (
            "One operation got tensors that live on different devices. PyTorch does not move data "
            "for you: the model's parameters, the inputs and the labels must all be on one "
            "device. (Only 0-dim CPU tensors, read as plain numbers, and CPU indices or masks "
            "used to index are let through.)"
        ),
        (
            "the model was moved with `model.to(device)` but the batch was not "
            "(`x.to(device)` returns a NEW tensor: keep it)",
            "the evaluation loop forgot the two `.to(device)` lines the training loop has",
            "a tensor created inside `forward` or the loss without `device=` is born on the CPU",
            "a loss or module with its own parameters or buffers was not moved",
        ),
        "model = model.to(device)                     # once\n"
        "x, y = x.to(device), y.to(device)            # every batch, in training AND evaluation\n"
        "torch.arange(n, device=x.device)             # tensors made inside forward",
        "04",
        "## 1. Model on the device, data on the CPU",
        (
            (
                r"but got (?P<arg>\w+) is on (?P<a>"
                + _DEVICE
                + r"), different from other tensors on "
                r"(?P<b>" + _DEVICE + ")",
                (
                    "`{arg}` is on {a}; the other tensors are on {b}. (`mat1` is a linear layer's "
                    "input, `index` an embedding's token ids, `target` the labels.)"
                ),
            ),
            (
                r"found at least two devices, (?P<a>" + _DEVICE + r") and (?P<b>" + _DEVICE + ")",
                "The two devices involved: {a} and {b}.",
            ),
            (
                r"Tensor on device (?P<a>"
                + _DEVICE
                + r") is not on the expected device (?P<b>"
                + _DEVICE
                + ")",
                "The two devices involved: {a} and {b}.",
            ),
            (
                r"Input type \((?P<a>[\w.]+)\) and (?P<what>weight|bias) type \((?P<b>[\w.]+)\)",
                (
                    "The input is a `{a}`, the layer's {what} a `{b}`: `torch.cuda.*` tensors "
                    "live on the GPU, the others on the CPU."
                ),
            ),
        ),
        wordings=(
            (
                "a CPU-only machine, torch 2.13, `meta` as the second device",
                "Tensor on device cpu is not on the expected device meta!",
            ),
            (
                "a GPU with a recent release",
                (
                    "Expected all tensors to be on the same device, but got mat1 is on cpu, "
                    "different from other tensors on cuda:0 (...)"
                ),
            ),
            (
                "older releases (the one article A quotes)",
                (
                    "Expected all tensors to be on the same device, but found at least two "
                    "devices, cuda:0 and cpu!"
                ),
            ),
            (
                "a convolution on the GPU, input left on the CPU",
                (
                    "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) "
                    "should be the same"
                ),
            ),
        ),
    ),
    Entry(
        "generator_device",
        "A random generator on the wrong device",
        "Expected a 'cuda' device type for generator but found 'cpu'",
        (r"Expected a '\w+' device type for generator but found '\w+'",),
        (
            "A random-number generator made for one device was given to an operation on another. "
            "It usually comes from `torch.set_default_device('cuda')`, which makes `randperm` in "
            "a shuffling DataLoader run on the GPU while its generator is a CPU one."
        ),
        (
            (
                "`torch.set_default_device(...)` was called before building a "
                "`DataLoader(shuffle=True)`"
            ),
            "a `torch.Generator()` made on the CPU was passed to a function working on the GPU",
        ),
        "# keep the default device on the CPU; create tensors with device= where they are needed\n"
        "x = torch.randn(32, 10, device=device)",
        "01",
        "## 4. Create tensors where they will be used",
    ),
    Entry(
        "numpy_from_gpu",
        "NumPy cannot read a GPU tensor (or one that needs grad)",
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() ...",
        (
            r"can't convert \S+ device type tensor to numpy",
            r"can't convert CUDA tensor to numpy",
            r"Can't call numpy\(\) on Tensor that requires grad",
        ),
        "NumPy works on CPU memory only, and refuses a tensor that is still part of a graph.",
        (
            "`.numpy()` (or a NumPy/matplotlib call) on a tensor that lives on the GPU",
            "`.numpy()` on a model output that still requires grad",
        ),
        "y_np = y.detach().cpu().numpy()     # or loss.item() for one number",
        "02",
        "## 3. `Module.to` and `Tensor.to` are not the same operation",
    ),
    Entry(
        "invalid_device",
        "Not a device PyTorch knows",
        "Invalid device string: 'cuda:None' / Invalid device, must be cuda device",
        (
            r"Invalid device string",
            r"Invalid device, must be cuda device",
            r"Expected one of [\w, ]+ device type at start of device string",
        ),
        (
            "A device is written `'cpu'`, `'cuda'`, `'cuda:0'`, `'mps'` (or a `torch.device`, or "
            "a plain index for `.cuda(i)`); the string or object given here is none of those."
        ),
        (
            (
                "a device built from a variable that is `None` or already a device string "
                "(`f'cuda:{rank}'` with rank None, `'cuda:cuda:0'`)"
            ),
            "a list of GPUs (`'0,1'`, `'CUDA_VISIBLE_DEVICES=0,1'`) where one device is expected",
            "`.cuda(device)` given a CPU device",
        ),
        (
            "device = pick_device()                                    # one device, chosen once "
            "(chapter 01)\ndevice = torch.device(f'cuda:{local_rank}')               # local_rank "
            "an int, from torchrun\n# pick GPUs with CUDA_VISIBLE_DEVICES=0,1 before starting "
            "Python, not in the device string"
        ),
        "01",
        "## 2. Choose the device once",
        ((r"Invalid device string: '(?P<s>[^']*)'", "The string given was '{s}'."),),
    ),
    # ------------------------------------------------------------ is there a usable GPU?
    Entry(
        "torch_without_cuda",
        "This PyTorch was built without CUDA",
        "Torch not compiled with CUDA enabled",
        (r"Torch not compiled with CUDA enabled",),
        (
            "The code asked for a CUDA GPU, but the installed PyTorch is a CPU-only build (or "
            "this is a Mac, where the GPU is `mps`)."
        ),
        (
            "`'cuda'` or `.cuda()` is hard-coded instead of a device chosen once",
            "the CPU wheel of PyTorch is installed on a machine that has an NVIDIA GPU",
        ),
        "device = pick_device()        # cuda, else mps, else cpu (chapter 01)\n"
        "model = model.to(device)\n"
        "# on a GPU machine: install the CUDA build of torch (pytorch.org/get-started)",
        "01",
        "## 1. Ask the machine",
    ),
    Entry(
        "driver_too_old",
        "The NVIDIA driver is older than this PyTorch's CUDA",
        "The NVIDIA driver on your system is too old (found version 11040) / "
        "CUDA driver version is insufficient for CUDA runtime version",
        (
            r"NVIDIA driver on your system is too old",
            r"CUDA driver version is insufficient for CUDA runtime version",
            r"forward compatibility was attempted on non supported HW",
            r"system has unsupported display driver / cuda driver combination",
        ),
        (
            "Each PyTorch CUDA build ships its own CUDA runtime (cu118, cu121, cu126, cu130...), "
            "and the runtime needs an NVIDIA driver at least as new as it. This driver is older, "
            "so CUDA refuses to start: `torch.cuda.is_available()` is False, or the first CUDA "
            "call fails."
        ),
        (
            (
                "a recent torch wheel (the CUDA 13 builds of torch 2.11+ need a 580-series "
                "driver) on a machine with an old driver"
            ),
            (
                "a container whose CUDA is newer than the host's driver (forward compatibility "
                "works only on data-center GPUs)"
            ),
            "a driver update that was installed but the machine not rebooted",
        ),
        (
            "nvidia-smi                   # 'CUDA Version' = the newest CUDA this driver "
            'supports\npython -c "import torch; print(torch.__version__, '
            'torch.version.cuda)"\n# update the driver, or install the torch build for an older '
            "CUDA (pytorch.org/get-started)"
        ),
        "01",
        "### When the driver is older than this PyTorch",
        (
            (
                r"found version (?P<major>\d{1,2}?)0(?P<minor>\d)0\b",
                "This driver supports CUDA up to {major}.{minor}; this PyTorch needs a newer one.",
            ),
        ),
    ),
    Entry(
        "no_usable_gpu",
        "PyTorch has CUDA, but sees no usable GPU",
        "No CUDA GPUs are available / Found no NVIDIA driver on your system",
        (
            r"No CUDA GPUs are available",
            r"Found no NVIDIA driver on your system",
            r"CUDA driver initialization failed",
            r"no CUDA-capable device is detected",
            r"CUDA unknown error - this may be due to an incorrectly set up environment",
            r"Unexpected error from cudaGetDeviceCount\(\)",
            r"CUDA-capable device\(s\) is/are busy or unavailable",
        ),
        "This PyTorch is a CUDA build, but at run time it finds no GPU it can use.",
        (
            "`CUDA_VISIBLE_DEVICES` is empty or names GPUs that do not exist",
            (
                "no NVIDIA driver, or one too old for this build (the CUDA 13 wheels of torch "
                "2.11+ need the 580 series)"
            ),
            "a container started without GPU access (`--gpus all`)",
            (
                "'Error 802: system not yet initialized' on an NVSwitch server: the "
                "`nvidia-fabricmanager` service is not running"
            ),
        ),
        "print(torch.cuda.is_available(), torch.cuda.device_count())\n"
        "device = pick_device()        # falls back to the CPU instead of crashing",
        "01",
        "## 1. Ask the machine",
        (
            (
                r"cudaGetDeviceCount\(\)[\s\S]{0,200}?Error (?P<code>\d+): (?P<what>[^.(\n]+)",
                "CUDA's own error {code}: {what}.",
            ),
        ),
    ),
    Entry(
        "invalid_device_ordinal",
        "A GPU number that this machine does not have",
        "CUDA error: invalid device ordinal",
        (r"invalid device ordinal",),
        (
            "The code asked for GPU number N (`cuda:1`, `set_device(3)`), and this process sees "
            "fewer GPUs. GPUs are numbered from 0 among the ones visible to the process "
            "(`CUDA_VISIBLE_DEVICES`)."
        ),
        (
            (
                "a hard-coded `cuda:1` (or `.cuda(1)`, `--gpu 1`) written on a multi-GPU box, run "
                "on a one-GPU machine"
            ),
            "`CUDA_VISIBLE_DEVICES=1` leaves one visible GPU, which is then `cuda:0`, not `cuda:1`",
            (
                "more processes than GPUs (`torchrun --nproc-per-node` larger than the GPU "
                "count): rank N uses `cuda:N`"
            ),
        ),
        (
            "print(torch.cuda.device_count())          # valid numbers: 0 .. count-1\ndevice = "
            "pick_device()                    # never a hard-coded cuda:1 (chapter 01)\ntorchrun "
            "--nproc-per-node=$(nvidia-smi -L | wc -l) train.py   # one process per visible GPU"
        ),
        "01",
        "### Article B's production bug: a hard-coded `cuda:0`",
    ),
    Entry(
        "no_kernel_image",
        "This PyTorch build has no code for this GPU",
        "CUDA error: no kernel image is available for execution on the device",
        (
            r"no kernel image is available for execution on the device",
            r"with CUDA capability sm_\d+ is not compatible with the current PyTorch installation",
            r"PyTorch no longer supports this GPU because it is too old",
        ),
        (
            "PyTorch ships GPU code compiled for a list of GPU generations; this GPU (much newer "
            "or much older than the build) is not on it."
        ),
        (
            "a new GPU (for example sm_120) with a PyTorch built before it was supported",
            "an old GPU that recent builds dropped",
        ),
        "print(torch.cuda.get_device_capability(), torch.cuda.get_arch_list())\n"
        "# install a torch build whose arch list includes your GPU (pytorch.org/get-started)",
        "01",
        "## 1. Ask the machine",
        (
            (
                r"capability sm_(?P<sm>\d+) is not compatible",
                "Your GPU is sm_{sm}; compare with the capabilities listed in the message.",
            ),
        ),
    ),
    Entry(
        "mps_not_implemented",
        "An operation that Apple's MPS backend does not have",
        (
            "NotImplementedError: The operator 'aten::...' is not currently implemented for the "
            "MPS device"
        ),
        (r"is not current(?:ly)? implemented for the MPS device", r"PYTORCH_ENABLE_MPS_FALLBACK"),
        (
            "On a Mac the GPU is the `mps` device, and not every PyTorch operation has an MPS "
            "version yet. The course teaches choosing `mps` as one of three devices (chapter 01); "
            "this error means the model needs an operation MPS lacks. What to do: let that one "
            "operation run on the CPU."
        ),
        (
            (
                "a newer or rarer operation (bicubic upsampling, `torchvision.ops.nms`, some "
                "indexing) on `mps`"
            ),
            "an older torch release: MPS coverage grows with every release",
        ),
        (
            "PYTORCH_ENABLE_MPS_FALLBACK=1 python train.py   # set before Python starts: CPU for "
            "the missing op\n# or upgrade torch; or keep the model on the CPU: device = "
            "torch.device('cpu')"
        ),
        "01",
        "## 2. Choose the device once",
        ((r"The operator '(?P<op>[\w:.]+)' is not current", "The missing operator: `{op}`."),),
        closest=True,
    ),
    Entry(
        "mps_float64",
        "Apple's MPS device has no float64",
        (
            "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't "
            "support float64"
        ),
        (r"Cannot convert a MPS Tensor to float64 dtype", r"MPS framework doesn't support float64"),
        (
            "The Mac GPU (`mps`) computes in float32, float16 and bfloat16 only; a float64 tensor "
            "cannot live there. Data from NumPy is float64 by default. What to do: convert to "
            "float32 before moving it (the closest section: chapter 01, choosing the device)."
        ),
        (
            (
                "`torch.from_numpy(array)` (float64) or "
                "`torch.tensor(python_floats, dtype=torch.double)` moved to `mps`"
            ),
            "a model or buffer made with `.double()`",
        ),
        "x = torch.from_numpy(array).float().to(device)     # float32 first, then mps\n"
        "x = torch.as_tensor(array, dtype=torch.float32, device=device)",
        "01",
        "## 2. Choose the device once",
        closest=True,
    ),
    # ------------------------------------------------------------ memory
    Entry(
        "mps_oom",
        "Apple's MPS device ran out of memory",
        "MPS backend out of memory (MPS allocated: ..., other allocations: ..., max allowed: ...)",
        (r"MPS backend out of memory",),
        (
            "The same event as CUDA's out-of-memory, on a Mac: the GPU shares the machine's RAM, "
            "and PyTorch may use at most 'max allowed' of it. One more tensor would pass that "
            "limit."
        ),
        (
            "the batch (or the image/sequence size) is too large: activations grow with it",
            "other programs hold much of the shared memory ('other allocations')",
            "evaluation without `torch.no_grad()`, or losses kept as tensors across batches",
        ),
        (
            "loader = DataLoader(data, batch_size=smaller)     # activations shrink in "
            "proportion\nwith torch.no_grad(): ...                         # in "
            "evaluation\ntorch.mps.empty_cache()                           # returns cached "
            "blocks; not a fix by itself\n# PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts the limit, "
            "and can freeze the whole Mac"
        ),
        "06",
        "## 2. A real out-of-memory error",
        (
            (
                r"MPS allocated: (?P<alloc>"
                + _SIZE
                + r"), other allocations: (?P<other>"
                + _SIZE
                + r"), max allowed: (?P<max>"
                + _SIZE
                + r")\)",
                "PyTorch held {alloc}, other allocations {other}, of {max} allowed.",
            ),
            (r"Tried to allocate (?P<ask>" + _SIZE + r") on \w+ pool", "It asked for {ask} more."),
        ),
    ),
    Entry(
        "cuda_oom",
        "The GPU ran out of memory",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...",
        (
            r"CUDA out of memory",
            r"CUDA error: out of memory",
            TORCH_OOM_CLASS,
            r"cuda runtime error ?\(2\) ?: out of memory",
            r"Tried to allocate " + _SIZE + r" \(GPU \d+; " + _SIZE + " total capac",
            r"GPU \d+ has a total capac\w* of " + _SIZE,
        ),
        (
            "One more tensor did not fit in the GPU's memory. The message says how much was asked "
            "for and where the rest went."
        ),
        (
            "the batch is too large: activations grow with the batch size",
            (
                "evaluation without `torch.no_grad()`, or `total += loss` keeping every batch's "
                "graph alive"
            ),
            "another process uses the same GPU",
        ),
        "loader = DataLoader(data, batch_size=smaller)      # activations shrink in proportion\n"
        "with torch.no_grad(): ...                          # in evaluation\n"
        "total += loss.item()                               # not the loss tensor\n"
        "# large 'reserved but unallocated': PYTORCH_ALLOC_CONF=expandable_segments:True\n"
        "# (torch 2.10 and newer; PYTORCH_CUDA_ALLOC_CONF is still accepted, and it is the\n"
        "# only name torch 2.6 to 2.9 read for CUDA)",
        "06",
        "## 2. A real out-of-memory error",
        (
            (r"Tried to allocate (?P<ask>" + _SIZE + ")", "It asked for {ask} more."),
            (
                r"total capacity of (?P<total>"
                + _SIZE
                + r") of which (?P<free>"
                + _SIZE
                + ") is free",
                "The card holds {total}; {free} was free.",
            ),
            (
                r"(?P<total>"
                + _SIZE
                + r") total capacity; (?P<used>"
                + _SIZE
                + r") already allocated; "
                r"(?P<free>" + _SIZE + ") free",
                "The card holds {total}; PyTorch had {used} allocated and {free} was free.",
            ),
            (
                r"Process \d+ has (?P<other>" + _SIZE + ") memory in use",
                "Another process on this GPU holds {other}.",
            ),
            (
                r"(?P<alloc>"
                + _SIZE
                + r") is allocated by PyTorch, (?:.*?)and (?P<cached>"
                + _SIZE
                + r") is reserved by PyTorch but unallocated",
                (
                    "Your tensors take {alloc}; {cached} is cached by PyTorch but unused. If that "
                    "cached part is large compared with the request, the memory is fragmented: "
                    "expandable_segments helps."
                ),
            ),
        ),
    ),
    Entry(
        "memory_budget",
        "The course's memory budget was exceeded (a stand-in for a small GPU)",
        "MemoryBudgetExceeded: memory budget exceeded: ... > budget ...",
        (r"memory budget exceeded: .+ in use > budget",),
        (
            "Chapter 06 counts the bytes of weights, gradients, optimizer state and activations "
            "against a budget, to show on any machine what a small GPU does. It is not a CUDA "
            "error."
        ),
        ("the batch's activations plus the model's state are more than the budget",),
        "step with a smaller batch, or accumulate gradients over micro-batches "
        f"({section('06', 'Gradient accumulation', chapter_too=True)})",
        "06",
        "## 2. A real out-of-memory error",
    ),
    Entry(
        "cpu_oom",
        "The computer's RAM ran out (not the GPU's)",
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate ...",
        (r"DefaultCPUAllocator: can't allocate memory", r"DefaultCPUAllocator: not enough memory"),
        "A tensor on the CPU did not fit in the machine's RAM.",
        (
            "a huge tensor (check its shape: a wrong size multiplies quickly)",
            "the whole dataset loaded into memory at once",
        ),
        (
            "print(x.shape, x.numel() * x.element_size() / 2**30, 'GiB')   # is that the size you "
            "meant?"
        ),
        "06",
        "## 1. Where the memory goes",
        ((r"you tried to allocate (?P<n>\d+) bytes", "It asked for {n} bytes."),),
    ),
    # ------------------------------------------------------------ processes and data loading
    Entry(
        "cuda_in_forked_process",
        "CUDA used in a forked child process",
        "Cannot re-initialize CUDA in forked subprocess",
        (r"Cannot re-initialize CUDA in forked subprocess",),
        "This process touched CUDA, then forked a child (a DataLoader worker, a `multiprocessing` "
        "process) that tried to use CUDA too. CUDA cannot be carried across `fork`.",
        (
            "the Dataset moves samples to the GPU inside `__getitem__`, with `num_workers > 0`",
            (
                "the children start with `fork`: Python's default on Linux up to 3.13 (from "
                "Python 3.14 on, Linux defaults to `forkserver`; macOS and Windows to `spawn`: "
                "their children do not inherit this process's CUDA state), or a script asks for "
                "`fork` itself"
            ),
        ),
        "# keep Dataset and workers on the CPU; move whole batches in the training loop:\n"
        "x, y = x.to(device), y.to(device)\n"
        "# or start children with 'spawn' (or 'forkserver'):\n"
        "DataLoader(data, num_workers=2, multiprocessing_context='spawn')",
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
    ),
    Entry(
        "too_many_open_files",
        "DataLoader workers ran out of file descriptors for shared memory",
        "Too many open files. Communication with the workers is no longer possible / "
        "unable to open shared memory object </torch_...> in read-write mode",
        (
            r"Too many open files\. Communication with the workers is no longer possible",
            r"unable to open shared memory object </torch_\w+> in read-write mode",
        ),
        (
            "Workers send each batch to the main process through shared memory, one file "
            "descriptor per tensor, and the process hit its limit of open files (often 1024). "
            "What to do: raise the limit or share tensors another way; chapter 05's `num_workers` "
            "section is the closest."
        ),
        (
            "many workers, large `prefetch_factor`, or samples made of many small tensors",
            "batches kept in a list (each holds its shared-memory file open)",
        ),
        "ulimit -n 65536                                   # in the shell, before starting Python\n"
        "torch.multiprocessing.set_sharing_strategy('file_system')   # at the top of the script\n"
        "DataLoader(data, num_workers=2)                   # fewer workers",
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
        closest=True,
    ),
    Entry(
        "worker_main_guard",
        "Worker processes started by a script without `if __name__ == '__main__':`",
        (
            "An attempt has been made to start a new process before the current process has "
            "finished its bootstrapping phase"
        ),
        (
            (
                r"An attempt has been made to start a new process before the\s+current process "
                r"has finished its\s+bootstrapping phase"
            ),
        ),
        (
            "Where DataLoader workers (and `torch.multiprocessing`) start with 'spawn' or "
            "'forkserver' (Windows and macOS, and Linux from Python 3.14, whose default is "
            "forkserver), each child imports your script again. Without the main guard the child "
            "reaches the training code and tries to start workers of its own. What to do: put the "
            "top-level code under the guard."
        ),
        ("a training script with `num_workers > 0` and no `if __name__ == '__main__':`",),
        "def main():\n    loader = DataLoader(data, num_workers=2)\n    train(loader)\n\n"
        "if __name__ == '__main__':\n    main()\n"
        "# or num_workers=0 while you debug",
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
        closest=True,
    ),
    Entry(
        "dataloader_worker_died",
        "A DataLoader worker process died",
        "DataLoader worker (pid ...) is killed by signal / exited unexpectedly",
        (
            (
                r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\) (?:is killed by signal|exited "
                r"unexpectedly)"
            ),
            r"unable to write to file </torch_",
            r"Unexpected bus error encountered in worker",  # torch/csrc/DataLoader.cpp's handler
        ),
        "A worker process of the DataLoader stopped without raising a Python error: the operating "
        "system killed it.",
        (
            (
                "the machine ran out of RAM (signal: Killed): too many workers, or each holds a "
                "copy of big data"
            ),
            "shared memory is too small (signal: Bus error; in Docker, `--shm-size`)",
            "a crash in native code used by the Dataset (signal: Segmentation fault)",
        ),
        "DataLoader(data, num_workers=0)    # first make it work, then raise workers one by one\n"
        "# in Docker: docker run --shm-size=2g ...",
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
        ((r"killed by signal: (?P<signal>[\w ]+)", "The signal was: {signal}."),),
    ),
    Entry(
        "dataloader_worker_raised",
        "Your Dataset code raised inside a DataLoader worker",
        "Caught ... in DataLoader worker process 0. Original Traceback ...",
        (r"Caught \w+ in DataLoader worker process \d+",),
        (
            "The error happened in a worker process, in your Dataset's `__getitem__` or the "
            "`collate_fn`; the worker sent it back. The real error is the last line of the "
            "'Original Traceback'."
        ),
        ("a bug in `__getitem__` (a bad index, a missing file, a sample of the wrong shape)",),
        (
            "DataLoader(data, num_workers=0)    # the same error, with a plain traceback into "
            "your code"
        ),
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
        wrapper=True,
    ),
    Entry(
        "too_many_workers",
        "More DataLoader workers than this machine's CPUs",
        (
            "UserWarning: This DataLoader will create N worker processes in total. Our suggested "
            "max number of worker ..."
        ),
        (r"This DataLoader will create \d+ worker processes in total",),
        (
            "A warning, not an error: each worker is a process that needs a CPU core; with more "
            "workers than cores they take turns, the machine slows down, and the loader may even "
            "freeze."
        ),
        (
            (
                "`num_workers` copied from a machine with more cores (or set to `os.cpu_count()` "
                "in a container limited to fewer)"
            ),
            (
                "several DataLoaders (train and validation, or DDP's one per rank) each with many "
                "workers"
            ),
        ),
        (
            "n = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else "
            "os.cpu_count()\nDataLoader(data, num_workers=min(4, n))   # measure: chapter 05 "
            "times 0, 2 and more workers"
        ),
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
        (
            (
                (
                    r"create (?P<n>\d+) worker processes in total\.\s+Our suggested max number of "
                    r"worker in current system is (?P<m>\d+)"
                ),
                "You asked for {n} workers; this machine suggests at most {m}.",
            ),
        ),
    ),
    Entry(
        "pin_memory_without_accelerator",
        "`pin_memory=True` on a machine without a GPU",
        "'pin_memory' argument is set as true but no accelerator is found",
        (
            r"'pin_memory' argument is set as true but no accelerator is found",
            r"'pin_memory' argument is set as true but not supported on",
        ),
        (
            "Pinned memory only speeds up copies to a GPU; without one, PyTorch ignores the "
            "setting and warns."
        ),
        (
            (
                "`pin_memory=True` is written for the GPU machine and the same code runs on a "
                "CPU-only one"
            ),
        ),
        "DataLoader(data, pin_memory=(device.type == 'cuda'))",
        "05",
        "## 4. `pin_memory` and `non_blocking`",
    ),
    # ------------------------------------------------------------ mixed precision and dtypes
    Entry(
        "cuda_amp_deprecated",
        "`torch.cuda.amp` is deprecated",
        "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. "
        "Please use `torch.amp.autocast('cuda', args...)`",
        (
            r"torch\.(?:cuda|cpu)\.amp\.\w+\(args\.\.\.\)`* is deprecated",
            r"torch\.cuda\.amp\.\w+ is deprecated",
        ),
        "The old spelling still works, but PyTorch asks for the device-neutral API.",
        ("code copied from older tutorials (both articles use the old spelling)",),
        "with torch.autocast(device_type=device.type, dtype=torch.bfloat16):\n"
        "    loss = criterion(model(x), y)\n"
        "scaler = torch.amp.GradScaler(device.type)   # float16 only; bfloat16 needs no scaler",
        "05",
        "## 5. Mixed precision, today's API",
    ),
    Entry(
        "fp16_gradients_unscale",
        "GradScaler was given float16 gradients",
        "ValueError: Attempting to unscale FP16 gradients.",
        (r"Attempting to unscale FP16 gradients",),
        (
            "The GradScaler expects float32 weights (and gradients) with autocast doing the "
            "float16 math; here the model itself was converted to float16."
        ),
        ("`model.half()` together with `GradScaler`",),
        "model = Net().to(device)               # keep the weights float32\n"
        "with torch.autocast(device_type=device.type, dtype=torch.float16):\n"
        "    loss = criterion(model(x), y)\n"
        "scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()",
        "05",
        "### The GradScaler",
    ),
    Entry(
        "labels_dtype",
        "The labels have the wrong dtype for this loss",
        "expected scalar type Long but found Float / expected target dtype to be Long",
        (
            r"expected scalar type Long but found \w+",
            r"expected target dtype to be Long",
            (
                r"Expected object of scalar type Long but got scalar type \w+ for argument #\d+ "
                r"'\s*target'"
            ),
            r"\"nll_loss\w*\" not implemented for '\w+'",
        ),
        (
            "With one label per sample, `CrossEntropyLoss`/`NLLLoss` want class indices of type "
            '`int64` (`torch.long`) or `uint8` ("Long or Byte"). These labels have one value '
            "per sample but another dtype. (A float target of the logits' shape (N, C) is not "
            "this error: `CrossEntropyLoss` reads it as class probabilities, and it runs.)"
        ),
        (
            "float labels of shape (N,): read from a float array, or made with "
            "`torch.tensor([...], dtype=torch.float32)`",
            "integer labels of another width: `int32` (e.g. from a NumPy int32 array) or `int16`",
            "boolean labels (`y > 0.5`) for a two-class problem",
        ),
        "y = y.long()    # class indices 0..C-1",
        "03",
        "## 4. Loss and optimizer",
    ),
    Entry(
        "dtype_mismatch",
        "Two floating-point types meet in one operation",
        "mat1 and mat2 must have the same dtype / expected scalar type Half but found Float",
        (
            r"mat1 and mat2 must have the same dtype",
            r"expected m1 and m2 to have the same dtype",
            r"expected mat1 and mat2 to have the same dtype",
            (
                r"Expected object of scalar type \w+ but got scalar type \w+ for "
                r"(?:argument|sequence element)"
            ),
            r"self and mat2 must have the same dtype",
            r"expected scalar type \w+ but found \w+",
            r"Input type \([\w:.]+\) and (?:weight|bias) type \([\w:.]+\) should be the same",
            r"Found dtype \w+ but expected \w+",
        ),
        (
            "An operation got float tensors of different types (float32, float16, bfloat16, "
            "float64) and does not convert them for you."
        ),
        (
            "the model was converted with `.half()`/`.bfloat16()` but the inputs were not "
            "(use `torch.autocast` instead)",
            "data from NumPy is float64 (`torch.from_numpy`) and the model is float32",
            "your own matmul mixes an autocast output (low precision) with a float32 tensor",
        ),
        (
            "x = x.to(device, dtype=torch.float32)\nwith torch.autocast(device_type=device.type, "
            "dtype=torch.bfloat16):   # instead of model.half()\n    out = model(x)"
        ),
        "05",
        "### What autocast really runs in low precision",
        (
            (
                r"but got:? (?P<a>[\w:]+) (?:and|!=) (?P<b>[\w:]+)",
                "One side is {a}, the other {b}.",
            ),
            (
                r"expected scalar type (?P<a>\w+) but found (?P<b>\w+)",
                "It expected {a} and found {b}.",
            ),
            (
                r"Input type \((?P<a>[\w:.]+)\) and (?P<what>weight|bias) type \((?P<b>[\w:.]+)\)",
                "The input is {a}, the layer's {what} {b}.",
            ),
        ),
    ),
    # ------------------------------------------------------------ labels and indices
    Entry(
        "index_out_of_range",
        "A label or index is out of range",
        "IndexError: Target 3 is out of bounds. / index out of range in self",
        (r"Target -?\d+ is out of bounds", r"index out of range in self"),
        (
            "A class label is not in 0..C-1 for a loss with C classes, or an index is past the "
            "end of an embedding or a tensor. On a GPU the same bug stops with "
            "`device-side assert triggered`."
        ),
        (
            (
                "labels numbered 1..C instead of 0..C-1, or more classes in the data than the "
                "model's outputs"
            ),
            "token ids larger than the embedding's `num_embeddings`",
        ),
        "print(y.min().item(), y.max().item(), logits.shape[-1])   # labels must be in 0..C-1\n"
        "y = y - 1                                                 # if they were numbered from 1",
        "04",
        "## 6. Let the course read the error for you",
        ((r"Target (?P<t>-?\d+) is out of bounds", "The label {t} is not a valid class index."),),
    ),
    Entry(
        "device_side_assert",
        "A check inside a GPU kernel failed (device-side assert)",
        "CUDA error: device-side assert triggered",
        (
            r"device-side assert triggered",
            r"Assertion `t >= 0 && t < n_classes` failed",
            r"Assertion `srcIndex < srcSelectDimSize` failed",
        ),
        (
            "A GPU kernel checked its inputs and found a bad one, most often an index or label "
            "out of range. GPU errors are reported late, so the line in the traceback may not be "
            "the culprit, and the GPU stays unusable for this process."
        ),
        (
            "a label outside 0..C-1 for `CrossEntropyLoss` with C classes",
            "a token id >= the embedding's `num_embeddings`",
            "BCELoss given values outside [0, 1]",
        ),
        "# run the same step on the CPU: the error becomes readable ('Target 7 is out of bounds')\n"
        "# or rerun with CUDA_LAUNCH_BLOCKING=1 python train.py to stop at the real line\n"
        "print(y.min().item(), y.max().item(), logits.shape[-1])",
        "04",
        "## 6. Let the course read the error for you",
    ),
    Entry(
        "cuda_library_failure",
        "cuBLAS or cuDNN, CUDA's math libraries, failed",
        "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)` / "
        "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
        (r"CUBLAS_STATUS_[A-Z_]+", r"CUDNN_STATUS_[A-Z_]+"),
        "A matrix multiply (cuBLAS) or a convolution (cuDNN) failed inside NVIDIA's library. The "
        "status names the library, rarely the cause: most often the GPU had no memory left for the "
        "library's workspace, or an earlier kernel error surfaced here. What to do: the checks "
        "below, in order (the closest section: chapter 04, reading errors).",
        (
            (
                "the GPU is nearly full: `NOT_INITIALIZED` / `ALLOC_FAILED` are out-of-memory in "
                "disguise (chapter 06)"
            ),
            "an earlier bad index or label, reported late (`EXECUTION_FAILED`, `INTERNAL_ERROR`)",
            (
                "a `CUDA_VISIBLE_DEVICES` written wrong (`[1,2]` instead of `1,2`), or a "
                "torch/CUDA build mismatch"
            ),
        ),
        "CUDA_LAUNCH_BLOCKING=1 python train.py      # stop at the real line\n"
        "loader = DataLoader(data, batch_size=smaller)  # if it was memory\n"
        "# or run one step on the CPU: a readable error replaces the library status",
        "04",
        "## 6. Let the course read the error for you",
        (
            (
                r"(?P<status>CUBLAS_STATUS_[A-Z_]+|CUDNN_STATUS_[A-Z_]+)",
                "The library reported {status}.",
            ),
        ),
        closest=True,
    ),
    Entry(
        "async_cuda_error",
        "A CUDA kernel crashed",
        "CUDA error: an illegal memory access was encountered",
        (
            r"an illegal memory access was encountered",
            r"CUDA error: unspecified launch failure",
            r"CUDA error: misaligned address",
            r"an illegal instruction was encountered",
        ),
        "A GPU kernel failed. CUDA reports such errors late, at a later call, so the traceback may "
        "point at an innocent line.",
        (
            "an index out of range that no check caught",
            "a bug in a custom CUDA extension",
            "an out-of-memory condition reported in disguise",
        ),
        "# rerun with CUDA_LAUNCH_BLOCKING=1 to stop at the real line, or run the step on the CPU",
        "04",
        "## 6. Let the course read the error for you",
    ),
    # ------------------------------------------------------------ shapes
    Entry(
        "linear_shape",
        "The input's width does not match the linear layer",
        "mat1 and mat2 shapes cannot be multiplied (AxB and CxD)",
        (
            r"mat1 and mat2 shapes cannot be multiplied",
            r"size mismatch, m1: \[\d+ x \d+\], m2: \[\d+ x \d+\]",
        ),
        (
            "`nn.Linear(in_features, out_features)` multiplies the input by its weight: the "
            "input's last dimension must equal `in_features`."
        ),
        (
            "a layer's `in_features` does not match the previous layer's output",
            "images not flattened before the first linear layer (`x.flatten(1)`)",
        ),
        "print(x.shape, layer.in_features)   # the last dimension of x must equal in_features\n"
        "x = x.flatten(1)                    # (N, C, H, W) -> (N, C*H*W)",
        "03",
        "### Errata: article B's own `DynamicNet`",
        (
            (
                r"\((?P<n>\d+)x(?P<got>\d+) and (?P<want>\d+)x(?P<out>\d+)\)",
                (
                    "The input has {got} features per sample; the layer expects {want} (and gives "
                    "{out})."
                ),
            ),
        ),
    ),
    Entry(
        "conv_input_rank",
        "A convolution got an input with the wrong number of dimensions",
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [...]",
        (
            r"Expected \dD \(unbatched\) or \dD \(batched\) input to conv",
            r"Expected \d+-dimensional input for \d+-dimensional weight",
        ),
        "`Conv2d` wants `(N, C, H, W)` (or `(C, H, W)` for one image); `Conv1d` `(N, C, L)`.",
        ("a single image without its batch or channel dimension", "a batch flattened too early"),
        "x = x.unsqueeze(0)     # add the batch dimension: (C, H, W) -> (1, C, H, W)",
        "03",
        "### Errata: article B's own `DynamicNet`",
        (
            (r"but got input of size: (?P<size>\[[\d, ]*\])", "Your input's size: {size}."),
            (
                r"but got \d+-dimensional input of size (?P<size>\[[\d, ]*\])",
                "Your input's size: {size}.",
            ),
        ),
    ),
    Entry(
        "conv_channels",
        "A convolution got the wrong number of channels",
        (
            "Given groups=1, weight of size [...], expected input[...] to have 3 channels, but "
            "got 5 channels instead"
        ),
        (r"Given groups=\d+, (?:expected )?weight of size",),
        "The layer was built for one number of input channels and got another.",
        (
            "images stored channels-last `(N, H, W, C)` (from NumPy/PIL) instead of `(N, C, H, W)`",
            "grayscale images into a layer built for RGB, or the other way round",
        ),
        "x = x.permute(0, 3, 1, 2)   # (N, H, W, C) -> (N, C, H, W)",
        "03",
        "### Errata: article B's own `DynamicNet`",
        (
            (
                r"to have (?P<want>\d+) channels, but got (?P<got>\d+) channels",
                "The layer wants {want} channels; the input has {got}.",
            ),
        ),
    ),
    Entry(
        "loss_batch_mismatch",
        "Predictions and labels have different batch sizes",
        "Expected input batch_size (A) to match target batch_size (B)",
        (r"Expected input batch_size \(\d+\) to match target batch_size \(\d+\)",),
        "The loss got N predictions and a different number of labels.",
        (
            "a `view`/`reshape` in `forward` that mixes the batch dimension with features",
            "labels of another batch (or one-hot labels flattened)",
        ),
        "x = x.flatten(1)      # keep dimension 0 the batch\nprint(logits.shape, y.shape)",
        "03",
        "## 4. Loss and optimizer",
    ),
    Entry(
        "target_shape",
        "The labels have the wrong shape for this loss",
        "0D or 1D target tensor expected, multi-target not supported",
        (
            r"\b(?:0D or )?1D target tensor expected, multi-target not supported",
            r"multi-target not supported",
            r"only batches of spatial targets supported",
        ),
        (
            "`CrossEntropyLoss`/`NLLLoss` with class indices want one label per sample: a 1-D "
            "tensor of shape `(N,)` (or `(N, H, W)` for segmentation), not a 2-D `(N, 1)` column "
            "or one-hot rows."
        ),
        (
            "labels stored as a column `(N, 1)` (from a DataFrame or `y.view(-1, 1)`)",
            "one-hot labels `(N, C)` given as class indices",
            "segmentation masks with an extra channel dimension `(N, 1, H, W)`",
        ),
        "y = y.squeeze(1).long()      # (N, 1) -> (N,)\n"
        "y = y.argmax(dim=1)          # one-hot (N, C) -> class indices (N,)\n"
        "print(logits.shape, y.shape)",
        "03",
        "## 4. Loss and optimizer",
    ),
    Entry(
        "loss_target_broadcast",
        "Predictions and targets of different shapes in a regression loss",
        (
            "UserWarning: Using a target size (torch.Size([32, 1])) that is different to the "
            "input size (torch.Size([32]))"
        ),
        (
            r"Using a target size \([^)]*\)+ that is different to the input size",
            r"Target size \(torch\.Size\(\[[\d, ]*\]\)\) must be the same as input size",
        ),
        (
            "`MSELoss`, `L1Loss` and their kin compare prediction and target element by element. "
            "With different shapes PyTorch broadcasts them into a bigger grid, so the loss is "
            "computed on the wrong pairs: the warning does not stop training, the numbers are "
            "simply wrong. (The BCE losses refuse with an error instead.)"
        ),
        (
            (
                "a model output of shape `(N, 1)` against a target of shape `(N,)` (or the other "
                "way round)"
            ),
            "a last batch of another size, or targets of the wrong resolution",
        ),
        "loss = criterion(pred.squeeze(-1), y)     # (N, 1) -> (N,)\n"
        "assert pred.shape == y.shape, (pred.shape, y.shape)",
        "03",
        "## 4. Loss and optimizer",
        (
            (
                (
                    r"target size \((?P<t>torch\.Size\(\[[^\]]*\]\))\) that is different to the "
                    r"input size \((?P<i>torch\.Size\(\[[^\]]*\]\))\)"
                ),
                "The target is {t}; the prediction is {i}.",
            ),
        ),
    ),
    Entry(
        "broadcast_mismatch",
        "Two tensors whose shapes cannot be combined",
        (
            "The size of tensor a (128) must match the size of tensor b (1024) at non-singleton "
            "dimension 3"
        ),
        (
            (
                r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at "
                r"non-singleton dimension"
            ),
        ),
        (
            "An element-wise operation (`+`, `*`, a loss) met two tensors whose sizes differ in a "
            "dimension where neither is 1, so broadcasting cannot line them up. What to do: print "
            "both shapes at the failing line; the closest section is chapter 03's shape errata."
        ),
        (
            "a prediction and a target of different resolutions or batch sizes",
            "a tensor reshaped with the wrong dimension order (`(N, H, W, C)` vs `(N, C, H, W)`)",
        ),
        "print(a.shape, b.shape)                # the dimension the message names differs\n"
        "b = b.permute(0, 3, 1, 2)              # or resize/reshape one of them to match",
        "03",
        "### Errata: article B's own `DynamicNet`",
        (
            (
                (
                    r"size of tensor a \((?P<a>\d+)\) must match the size of tensor b "
                    r"\((?P<b>\d+)\) at non-singleton dimension (?P<d>\d+)"
                ),
                "Dimension {d} is {a} in one tensor and {b} in the other.",
            ),
        ),
        closest=True,
    ),
    Entry(
        "view_shape",
        "`view`/`reshape` to a shape with another number of elements",
        "shape '[-1, 115200]' is invalid for input of size 72000",
        (r"shape '\[[-\d, ]*\]' is invalid for input of size \d+",),
        (
            "`x.view(shape)` keeps every element: the new shape must hold exactly as many as the "
            "tensor has. A hard-coded size (`view(-1, 16*5*5)`) breaks as soon as the input image "
            "or a layer changes."
        ),
        (
            "a flatten size computed for another input resolution",
            "`view(batch_size, ...)` with a fixed batch size, and a smaller last batch",
        ),
        "x = x.flatten(1)                 # (N, ...) -> (N, rest), whatever the rest is\n"
        "x = x.view(x.size(0), -1)        # the same, explicitly",
        "03",
        "### Errata: article B's own `DynamicNet`",
        (
            (
                r"shape '(?P<shape>\[[-\d, ]*\])' is invalid for input of size (?P<n>\d+)",
                "The tensor has {n} elements; the shape {shape} cannot hold exactly that many.",
            ),
        ),
        closest=True,
    ),
    # ------------------------------------------------------------ autograd in the training loop
    Entry(
        "backward_twice",
        "Backward through the same graph a second time",
        "Trying to backward through the graph a second time",
        (r"Trying to backward through the graph a second time",),
        (
            "`backward()` frees the values the graph saved; a second backward through the same "
            "graph finds them gone."
        ),
        (
            (
                "a tensor from the previous batch (a running loss, an RNN hidden state) is part "
                "of this batch's graph"
            ),
            "two `backward()` calls on losses that share part of one forward pass",
        ),
        "running_loss += loss.item()      # a number, not the tensor\n"
        "hidden = hidden.detach()         # cut the graph between batches",
        "03",
        "## 5. One training step, spelled out",
    ),
    Entry(
        "backward_non_scalar",
        "`backward()` on a tensor with more than one value",
        "grad can be implicitly created only for scalar outputs",
        (r"grad can be implicitly created only for scalar outputs",),
        (
            "`loss.backward()` without an argument needs a single number. This tensor has several "
            "values, often one loss per sample or per GPU."
        ),
        (
            "a loss with `reduction='none'` (one value per sample) not averaged",
            "`nn.DataParallel` returns one loss per GPU: a vector",
            "the model output itself (not a loss) passed to `backward()`",
        ),
        "loss = criterion(out, y).mean()      # or reduction='mean' (the default)\nloss.backward()",
        "03",
        "## 5. One training step, spelled out",
    ),
    Entry(
        "inplace_modified",
        "A value needed for backward was changed in place",
        (
            "one of the variables needed for gradient computation has been modified by an inplace "
            "operation"
        ),
        (
            (
                r"one of the variables needed for gradient computation has been modified by an "
                r"in-?place operation"
            ),
        ),
        (
            "Autograd saved a tensor to compute gradients later, and an in-place operation (`+=`, "
            "`relu_`, `x[...] = ...`) changed it before backward."
        ),
        (
            "`x += ...` or `inplace=True` on an activation that autograd saved",
            "`optimizer.step()` between a forward pass and its backward",
        ),
        "x = x + bias            # instead of x += bias\n"
        "nn.ReLU()               # instead of nn.ReLU(inplace=True)",
        "03",
        "## 5. One training step, spelled out",
        # torch 2.6 names the backward node ("SigmoidBackward0"), later releases the op
        (
            (
                r"which is output \d+ of (?P<op>\w+?)(?:Backward\d+)?\b",
                "The changed tensor was made by `{op}`.",
            ),
        ),
    ),
    Entry(
        "leaf_inplace",
        "A parameter was updated in place while autograd records",
        "a leaf Variable that requires grad is being used in an in-place operation",
        (
            (
                r"a leaf Variable that requires grad (?:is being|has been) used in an in-place "
                r"operation"
            ),
        ),
        "Parameters require grad, so autograd refuses to record an in-place change to them.",
        ("a hand-written update `w -= lr * w.grad` outside `torch.no_grad()`",),
        (
            "with torch.no_grad():\n    w -= lr * w.grad\n# or let the optimizer do it: "
            "optimizer.step()"
        ),
        "03",
        "## 5. One training step, spelled out",
    ),
    Entry(
        "no_grad_fn",
        "`backward()` on a tensor that has no graph",
        "element 0 of tensors does not require grad and does not have a grad_fn",
        (r"element \d+ of tensors does not require grad and does not have a grad_fn",),
        "The loss was computed without recording a graph, so there is nothing to differentiate.",
        (
            (
                "the training step runs inside `torch.no_grad()` or `torch.inference_mode()` "
                "(copied from evaluation)"
            ),
            "the loss was rebuilt from numbers: `loss.item()`, `.detach()` or NumPy",
            "every parameter has `requires_grad=False` (a frozen model)",
        ),
        "model.train()                    # training: no torch.no_grad() around the forward pass\n"
        "loss = criterion(model(x), y)\nloss.backward()\n"
        "print([n for n, p in model.named_parameters() if p.requires_grad])",
        "03",
        "### Checking `requires_grad` by hand",
    ),
    Entry(
        "scheduler_order",
        "The learning-rate scheduler stepped before the optimizer",
        "UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`",
        (r"Detected call of `?lr_scheduler\.step\(\)`? before `?optimizer\.step\(\)`?",),
        (
            "A warning, not an error: since PyTorch 1.1 `optimizer.step()` comes first, then "
            "`scheduler.step()`; the other order skips the schedule's first value. The course's "
            "loop has no scheduler; the closest section is chapter 03's training step."
        ),
        (
            "`scheduler.step()` placed before `optimizer.step()` in the loop",
            (
                "with AMP, `scaler.step(optimizer)` skipped the first step (inf/NaN gradients): "
                "then the warning is harmless"
            ),
        ),
        (
            "optimizer.step()\nscheduler.step()     # after the optimizer: once per batch or once "
            "per epoch, as the scheduler expects"
        ),
        "03",
        "## 5. One training step, spelled out",
        closest=True,
    ),
    # ------------------------------------------------------------ distributed
    Entry(
        "no_process_group",
        "A distributed call before `init_process_group`",
        (
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        ),
        (r"Default process group has not been initialized",),
        "DDP and the collectives (`all_reduce`, `barrier`, `get_rank`) need the process group that "
        "`torch.distributed.init_process_group` creates in each process.",
        (
            (
                "the script was run with plain `python` instead of `torchrun`, so no process "
                "group was set up"
            ),
            "`DistributedDataParallel(model)` is created before `init_process_group`",
        ),
        "dist.init_process_group(backend='nccl' if device.type == 'cuda' else 'gloo')\n"
        "model = DDP(model.to(device), device_ids=[local_rank] if device.type == 'cuda' else None)",
        "07",
        "## 2. DistributedDataParallel, for real",
    ),
    Entry(
        "distributed_env_missing",
        "A rank's environment variables are missing",
        "environment variable RANK expected, but not set / KeyError: 'LOCAL_RANK'",
        (
            (
                r"environment variable (?:RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK) "
                r"expected, but not set"
            ),
            r"KeyError: '(?:LOCAL_RANK|RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT)'",
        ),
        (
            "With `init_method='env://'` each process reads its rank, the world size and the "
            "address of rank 0 from environment variables, which `torchrun` sets."
        ),
        ("the training script was started with `python train.py` instead of `torchrun`",),
        (
            "torchrun --nproc-per-node=2 train.py      # sets RANK, LOCAL_RANK, WORLD_SIZE, "
            "MASTER_ADDR, MASTER_PORT"
        ),
        "07",
        "### Launching with `torchrun`: `RANK`, `LOCAL_RANK`, `WORLD_SIZE`",
        (
            (
                (
                    r"(?:variable |KeyError: "
                    r"')(?P<var>RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK)"
                ),
                "Missing: `{var}`.",
            ),
        ),
    ),
    Entry(
        "nccl_not_built",
        "The NCCL backend is not available here",
        "Distributed package doesn't have NCCL built in",
        (r"Distributed package doesn't have NCCL built in",),
        (
            "NCCL is the GPU backend of `torch.distributed`; this PyTorch (a CPU build, or "
            "macOS/Windows) does not include it."
        ),
        ("`backend='nccl'` is hard-coded and the code runs on a machine without CUDA",),
        "dist.init_process_group(backend='nccl' if torch.cuda.is_available() else 'gloo')",
        "07",
        "## 2. DistributedDataParallel, for real",
    ),
    Entry(
        "ddp_duplicate_gpu",
        "Two ranks on the same GPU",
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
        (r"Duplicate GPU detected\s*: rank \d+ and rank \d+ both on CUDA device",),
        (
            "NCCL needs one GPU per process, and two processes of the group picked the same one. "
            "DDP's rule: rank `LOCAL_RANK` uses `cuda:LOCAL_RANK`, set before anything touches "
            "the GPU."
        ),
        (
            "every process uses `cuda` / `cuda:0` (no `torch.cuda.set_device(local_rank)`)",
            "more processes than visible GPUs (`--nproc-per-node` larger than the GPU count)",
            "`CUDA_VISIBLE_DEVICES` set inside the script after CUDA started",
        ),
        "local_rank = int(os.environ['LOCAL_RANK'])\n"
        "torch.cuda.set_device(local_rank)\n"
        "dist.init_process_group('nccl', device_id=torch.device('cuda', local_rank))\n"
        "model = DDP(model.to(local_rank), device_ids=[local_rank])",
        "07",
        "### Launching with `torchrun`: `RANK`, `LOCAL_RANK`, `WORLD_SIZE`",
        (
            (
                r"rank (?P<a>\d+) and rank (?P<b>\d+) both on CUDA device",
                "Ranks {a} and {b} share one GPU.",
            ),
        ),
    ),
    Entry(
        "nccl_failure",
        "NCCL, the GPU communication library, failed",
        "DistBackendError: NCCL error in: .../ProcessGroupNCCL.cpp, unhandled system error",
        (
            r"NCCL error in: ",
            r"Watchdog caught collective operation timeout",
            r"NCCL communicator was aborted",
            r"ProcessGroupNCCL's watchdog",
            r"NCCL Error \d+: ",
        ),
        "A collective (all-reduce, broadcast) between the GPUs failed or never finished.",
        (
            "another rank crashed or stopped early (look for the first error of any rank above)",
            "ranks disagree: one skipped a collective, or their tensors differ in shape",
            "network or driver setup (rerun with NCCL_DEBUG=INFO)",
        ),
        "NCCL_DEBUG=INFO torchrun --nproc-per-node=2 train.py   # says what failed, per rank",
        "07",
        "### When a rank fails",
    ),
    Entry(
        "gloo_failure",
        "Gloo, the CPU communication backend, lost a peer",
        "[.../gloo/transport/tcp/pair.cc:...] Connection closed by peer",
        (r"gloo/transport/tcp/\S+\]", r"Gloo connectFullMesh failed"),
        "A process of the group stopped answering; gloo noticed when it tried to talk to it.",
        (
            "another rank crashed or exited early (its own error is the real one)",
            "ranks use different MASTER_ADDR/MASTER_PORT or world sizes",
        ),
        (
            "# find the first rank that failed; make every rank run the same collectives in the "
            "same order"
        ),
        "07",
        "### When a rank fails",
    ),
    Entry(
        "rendezvous_timeout",
        "Not every rank joined the process group",
        "Timed out after N seconds waiting for clients. 1/2 clients joined.",
        (r"Timed out after \d+ seconds waiting for clients",),
        "Rank 0 waited for the other processes to connect, and some never came.",
        (
            "`world_size` is larger than the number of processes started",
            "another rank crashed before reaching `init_process_group`",
            "ranks point at different MASTER_ADDR/MASTER_PORT",
        ),
        "torchrun --nproc-per-node=N train.py    # world_size = N processes, started together",
        "07",
        "### When a rank fails",
        (
            (
                r"(?P<joined>\d+)/(?P<world>\d+) clients joined",
                "{joined} of {world} processes joined.",
            ),
        ),
    ),
    Entry(
        "port_in_use",
        "The rendezvous port is already taken",
        "The server socket has failed to listen ... EADDRINUSE",
        (r"EADDRINUSE", r"The server socket has failed to listen"),
        (
            "Rank 0 could not open its port: another program, often a previous run that did "
            "not exit, holds it. A single-node `torchrun` given no `--master-port` or "
            "`--rdzv-endpoint` already picks a free port; the collision comes from a port that is "
            "fixed: a script that sets MASTER_PORT, an `mp.spawn` launcher, a static setup."
        ),
        (
            "a previous training run still runs (or hangs) on the same port",
            "two jobs on one machine use the same fixed port (MASTER_PORT, or 29500 by default "
            "in `mp.spawn` scripts and static setups)",
        ),
        "torchrun --standalone --nproc-per-node=2 train.py      # a free port, chosen for you\n"
        "torchrun --rdzv-backend=c10d --rdzv-endpoint=localhost:0 ...  # the same, spelled out\n"
        "# a script that sets MASTER_PORT: pick another one, or stop the old run",
        "07",
        "### Launching with `torchrun`: `RANK`, `LOCAL_RANK`, `WORLD_SIZE`",
        ((r"port: (?P<port>\d+)", "The port: {port}."),),
    ),
    Entry(
        "ddp_unused_parameters",
        "DDP: some parameters took no part in the loss",
        "Expected to have finished reduction in the prior iteration before starting a new one ... "
        "find_unused_parameters=True",
        (
            r"Expected to have finished reduction in the prior iteration",
            r"Parameter indices which did not receive grad for rank \d+",
            r"Parameters which did not receive grad for rank \d+",
        ),
        (
            "DDP averages every parameter's gradient across ranks as backward produces them, and "
            "waits for all of them. A parameter that did not contribute to this step's loss never "
            "gets a gradient, so the last reduction never finished, and DDP stops at the next "
            "forward pass."
        ),
        (
            (
                "a layer built in `__init__` and not used in `forward` (or used only in some "
                "branches, or only at eval)"
            ),
            "`forward` returns several outputs and the loss uses only some of them",
            "frozen or conditional parts of the model (a head used every other step)",
        ),
        (
            "model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)  # costs a "
            "graph walk per step\n# better: delete the unused layer, or make every output part of "
            "the loss\nTORCH_DISTRIBUTED_DEBUG=DETAIL torchrun ...   # names the parameters that "
            "got no gradient"
        ),
        "07",
        "### When DDP complains about parameters: unused, or ready twice",
        (
            (
                r"Parameters which did not receive grad for rank (?P<rank>\d+): (?P<names>[\w.]+)",
                "On rank {rank}, `{names}` (and maybe more) got no gradient.",
            ),
            (
                (
                    r"Parameter indices which did not receive grad for rank (?P<rank>\d+): "
                    r"(?P<first>\d+)"
                ),
                (
                    "On rank {rank}, parameter number {first} of `model.parameters()` (and maybe "
                    "more) got no gradient."
                ),
            ),
        ),
    ),
    Entry(
        "ddp_find_unused_not_needed",
        "DDP searched for unused parameters and found none",
        (
            "UserWarning: find_unused_parameters=True was specified in DDP constructor, but did "
            "not find any unused parameters in the forward pass."
        ),
        (
            (
                r"find_unused_parameters=True was specified in DDP constructor, but did not find "
                r"any unused"
            ),
        ),
        (
            "A warning, not an error: with `find_unused_parameters=True` DDP walks the autograd "
            "graph after every forward pass to find parameters that will get no gradient. This "
            "model has none, so the walk only costs time."
        ),
        (
            (
                "`find_unused_parameters=True` added once to silence the unused-parameters error, "
                "and kept after the model was fixed"
            ),
            "a model whose `forward` uses every parameter at every step",
        ),
        (
            "model = DDP(model, device_ids=[local_rank])   # the default: "
            "find_unused_parameters=False\n# keep the flag only if some steps really skip "
            "parameters (branches in forward)"
        ),
        "07",
        "### When DDP complains about parameters: unused, or ready twice",
    ),
    Entry(
        "ddp_ready_twice",
        "DDP: a parameter's gradient arrived twice in one step",
        "Expected to mark a variable ready only once ... marked as ready twice",
        (r"Expected to mark a variable ready only once", r"has been marked as ready twice"),
        (
            "DDP counts one gradient per parameter per backward. Here a parameter got two: it was "
            "used by two backward passes inside one step, typically through activation "
            "checkpointing (reentrant `checkpoint`) or weights shared across calls."
        ),
        (
            (
                "`torch.utils.checkpoint` (reentrant) around layers of a DDP model, or gradient "
                "checkpointing enabled in a library model"
            ),
            "the same module called twice in `forward` together with `find_unused_parameters=True`",
            "two backward passes through one DDP forward",
        ),
        (
            "checkpoint(block, x, use_reentrant=False)           # the non-reentrant checkpoint "
            "works with DDP\nmodel = DDP(model, device_ids=[local_rank], static_graph=True)   # "
            "if the graph is the same every step"
        ),
        "07",
        "### When DDP complains about parameters: unused, or ready twice",
        (
            (
                (
                    r"Parameter at index (?P<i>\d+) with name (?P<name>[\w.]+) has been marked as "
                    r"ready twice"
                ),
                "The parameter: `{name}` (number {i}).",
            ),
        ),
    ),
    Entry(
        "data_parallel_gather_scalars",
        "`nn.DataParallel` gathered one scalar loss per GPU into a vector",
        "UserWarning: Was asked to gather along dimension 0, but all input tensors were scalars; "
        "will instead unsqueeze and return a vector.",
        (r"Was asked to gather along dimension 0, but all input tensors were scalars",),
        (
            "A warning, not an error: the model computes its loss inside `forward`, so each GPU's "
            "replica returns one number and DataParallel stacks them into a vector, one value per "
            "GPU."
        ),
        ("the loss is computed in `forward` of a model wrapped in `nn.DataParallel`",),
        "loss = model(x, y).mean()     # average the per-GPU losses before backward\n"
        "# or return the outputs and compute the loss outside the wrapped model",
        "07",
        "## 1. DataParallel: one process, a main GPU",
        closest=True,
    ),
    Entry(
        "torchrun_child_failed",
        "A worker process launched by torchrun failed",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
        (
            r"ChildFailedError",
            r"Root Cause \(first observed failure\)",
            r"failed \(exitcode: -?\d+\) local_rank: \d+",
        ),
        (
            "torchrun reports that one of its processes exited with an error and stopped the "
            "others. Its summary is not the error: the first rank's traceback above it is."
        ),
        (
            (
                "any error in one rank: read that rank's own traceback (the 'Root Cause' names "
                "the rank)"
            ),
        ),
        "# scroll up to the first traceback, or: torchrun ... 2>&1 | python -m course_lib explain",
        "07",
        "### When a rank fails",
        wrapper=True,
    ),
    *SPECIFIC_35,
)


def _family(id, title, patterns, frames, meaning, look, fix, chapter, section):
    """A family: the general case of one of the course's subjects (issue 35)."""
    return Entry(
        id, title, "", patterns, meaning, look, fix, chapter, section, frames=frames, tier="family"
    )


# The families, tried only when no entry above matches. Their patterns are PyTorch's own evidence
# (its exception classes, its TORCH_CHECK wordings, CUDA/NCCL error codes), never a common word;
# `frames` are the torch source folders whose traceback frames say which family it is (the last
# torch frame of the traceback decides). Order matters as above: sharding before distributed,
# checkpoints before shapes, device before dtype.


FAMILIES = (
    _family(
        "family_compile",
        "An error inside `torch.compile` (TorchDynamo, Inductor)",
        (
            r"\btorch\._(?:dynamo|inductor)\.exc\.\w+",
            r"\b(?:BackendCompilerFailed|InternalTorchDynamoError|TorchRuntimeError|"
            r"InductorError|TorchDynamoException)\b",
            r"(?:torch\._dynamo hit config\.|Dynamo failed to run FX node)",
            r"\bDynamo does not know how to trace\b",  # a graph break's explanation (2.7+)
            r"\[__graph_breaks\]|\bGraph break due to unsupported\b",  # TORCH_LOGS=graph_breaks
        ),
        (r"torch[/\\]_(?:dynamo|inductor|functorch|export)[/\\]",),
        (
            "`torch.compile` traces your Python into graphs (TorchDynamo) and compiles them "
            "(Inductor). The error came from that machinery: something it could not trace, a "
            "compiler that failed, or your own error seen while tracing."
        ),
        (
            "run the same code without `torch.compile`: an error that remains is your code's",
            "the last lines of the message: Dynamo names the operation or the line it stopped at",
            "TORCH_LOGS=graph_breaks (or recompiles) to see where and why it gave up",
        ),
        "model = torch.compile(model, backend='eager')  # traces only: is it Dynamo or Inductor?\n"
        "torch._dynamo.config.suppress_errors = False\n"
        "# TORCH_LOGS=graph_breaks,recompiles python train.py",
        "05",
        "## 6. `torch.compile`",
    ),
    _family(
        "family_sharding",
        "An error in sharded training (FSDP, DTensor)",
        (
            r"\b(?:FullyShardedDataParallel|FlatParameter|DTensor|fully_shard|FSDPModule|FSDP2?)\b",
            r"\btorch\.distributed\.(?:fsdp|tensor|_tensor|_composable)\b",
            r"sharded_state_dict`* can only be used when parameters are flatten",  # FSDP's check
        ),
        (r"torch[/\\]distributed[/\\](?:fsdp|tensor|_tensor|_composable|checkpoint)[/\\]",),
        (
            "Sharding splits each parameter (and its gradient and optimizer state) across the "
            "ranks; a rank holds only its piece, as a DTensor, and gathers the whole only when a "
            "layer runs. The error came from that bookkeeping."
        ),
        (
            "whether the optimizer was built after `fully_shard` (it must see the sharded "
            "parameters)",
            "a full tensor used where a sharded one (DTensor) is expected: `to_local()` / "
            "`full_tensor()`",
            "that every rank runs the same layers in the same order",
        ),
        "fully_shard(model)                      # first\n"
        "opt = torch.optim.AdamW(model.parameters())  # then the optimizer\n"
        "print(type(model.weight), model.weight.placements)",
        "08",
        "## 2. FSDP2, for real: `fully_shard`",
    ),
    _family(
        "family_distributed",
        "An error of distributed training (process groups, collectives, `torchrun`)",
        (
            r"\b(?:DistBackendError|DistNetworkError|DistStoreError|DistError|ChildFailedError|"
            r"RendezvousError|RendezvousTimeoutError|RendezvousClosedError)\b",
            r"\bProcessGroup(?:NCCL|Gloo|MPI|Wrapper)\b",
            r"\btorch\.distributed\.\w+",
            r"\[(?:c10d|Gloo|PG \d+[^\]]*)\]",
            r"\bc10d\b",
        ),
        (r"torch[/\\]distributed[/\\]", r"torch[/\\]nn[/\\]parallel[/\\]"),
        (
            "Several processes (ranks) train together and talk through a process group. One of "
            "them failed, or they could not reach each other, or they disagreed on what to send."
        ),
        (
            "the first error of the first rank that failed: the others often only report that "
            "a peer went away",
            "RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/MASTER_PORT as each rank saw them",
            "that every rank calls the same collectives in the same order (a rank that skips "
            "one leaves the others waiting)",
        ),
        "TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc-per-node=2 train.py\n"
        "# NCCL_DEBUG=INFO for NCCL; try backend='gloo' on the CPU to rule out the GPUs",
        "07",
        "### When a rank fails",
    ),
    _family(
        "family_dataloader",
        "An error in the DataLoader or its worker processes",
        (
            r"\bDataLoader worker\b",
            r"\b_MultiProcessingDataLoaderIter\b",
            r"\bdefault_collate\b",
            r"Caught \w+ in (?:DataLoader worker process|pin memory thread)",
        ),
        (r"torch[/\\]utils[/\\]data[/\\]",),
        (
            "The DataLoader builds batches from your Dataset, in worker processes when "
            "`num_workers > 0`, and stacks the samples with its collate function. The error came "
            "from your Dataset, from collating samples that do not fit together, or from a worker."
        ),
        (
            "the traceback inside the worker (after 'Original Traceback'): your `__getitem__`",
            "whether it also fails with `num_workers=0` (then the error is in the data, not the "
            "workers)",
            "samples of different shapes or types stacked by `default_collate`",
        ),
        "loader = DataLoader(data, num_workers=0)   # the same error, with a plain traceback\n"
        "print(data[0])                              # one sample, by hand",
        "05",
        "## 3. `num_workers`: preparing batches in parallel",
    ),
    _family(
        "family_oom",
        "An accelerator (or the CPU) ran out of memory",
        (
            r"(?-i:\b(?:CUDA|MPS|XPU|HIP|NPU)\b) (?:backend )?out of memory\b",
            TORCH_OOM_CLASS,
            r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory)",
            r"\bCUDNN_STATUS_(?:ALLOC_FAILED|NOT_ENOUGH_WORKSPACE)\b",
        ),
        (),
        (
            "A tensor did not fit: the device's memory was full of parameters, gradients, "
            "optimizer state, activations kept for backward, and the allocator's cache."
        ),
        (
            "the batch size and the sequence or image size: activations grow with both",
            "tensors kept across steps (a loss summed as a tensor, outputs kept in a list)",
            "other processes on the same device (`nvidia-smi`)",
        ),
        "print(torch.cuda.memory_summary())   # where the memory went\n"
        "loader = DataLoader(data, batch_size=smaller)",
        "06",
        "## 2. A real out-of-memory error",
    ),
    _family(
        "family_cuda_runtime",
        "An error of the CUDA runtime or one of its libraries (cuDNN, cuBLAS, NCCL)",
        (
            r"(?-i:\bCUDA error: )\w",
            r"\bCUBLAS_STATUS_\w+",  # cuBLAS, cuDNN and NCCL codes: shared text,
            r"\bCUDNN_STATUS_\w+",  # claimed only with PyTorch evidence
            r"\bcuDNN error\b",
            r"\bnccl(?:UnhandledCudaError|InternalError|SystemError|InvalidUsage)\b",
            r"CUDA kernel errors might be asynchronously reported",
            r"\bcuda runtime error \(\d+\)",
        ),
        (),
        (
            "A GPU library call failed. CUDA reports errors late: the call that raised is often "
            "not the one that went wrong, a kernel launched earlier may have failed."
        ),
        (
            "the error again with CUDA_LAUNCH_BLOCKING=1: the traceback then points at the real "
            "operation",
            "the same step on the CPU: an index or shape error shows there with a plain message",
            "the driver, CUDA and library versions (`python -m torch.utils.collect_env`)",
        ),
        "CUDA_LAUNCH_BLOCKING=1 python train.py\npython -m torch.utils.collect_env",
        "04",
        "## 6. Let the course read the error for you",
    ),
    _family(
        "family_availability",
        "PyTorch cannot use the GPU here (build, driver or device)",
        (
            r"\bnot compiled with (?:CUDA|MPS|XPU|NCCL|ROCm)\b",
            r"torch\.cuda\.is_available\(\) is False",
            r"\b(?:libtorch_cuda|libc10_cuda|libtorch_cpu)\w*\.so",
            r"\b(?:libcudart|libnvrtc|libcudnn)\w*\.so",
            r"\bsm_\d+ is not compatible with the current PyTorch installation",
            r"\bThe NVIDIA driver on your system is too old\b",
            r"\bCUDA initialization:",
            r"\bHIP error: invalid device function\b",  # ROCm: no kernel for this GPU's gfx arch
        ),
        (r"torch[/\\]cuda[/\\]__init__\.py",),
        (
            "This PyTorch build, the driver and the GPU must agree: a CPU-only build sees no GPU, "
            "a driver older than the build's CUDA cannot run it, and a GPU newer or older than "
            "the build's kernels has none to run."
        ),
        (
            "`torch.__version__` and `torch.version.cuda`: a '+cpu' build has no CUDA",
            "`nvidia-smi`: the driver's version and whether it sees the GPU",
            "`torch.cuda.get_arch_list()` against the GPU's compute capability",
        ),
        "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())\n"
        "print(torch.cuda.get_arch_list())",
        "01",
        "## 1. Ask the machine",
    ),
    _family(
        "family_checkpoint",
        "An error saving or loading a checkpoint",
        (
            r"\bError\(s\) in loading state_dict\b",
            r"\bPytorchStream(?:Reader|Writer)\b",
            r"\bWeights only load failed\b|`weights_only` argument|\bweights_only=(?:True|False)\b",
            r"\bWeightsUnpickler\b",
            r"copying a param with shape",
        ),
        (
            r"torch[/\\]serialization\.py",
            r"torch[/\\]nn[/\\]modules[/\\]module\.py\S* in load_state",
        ),
        (
            "`torch.save` writes tensors with their devices and names; `torch.load` and "
            "`load_state_dict` need the same names, shapes and a device that exists here."
        ),
        (
            "the keys in the file against `model.state_dict()`'s: prefixes such as `module.` or "
            "`_orig_mod.`",
            "the file itself: its size, and whether it is a complete PyTorch file",
            "`map_location=` when the file was saved on another device",
        ),
        "state = torch.load(path, map_location='cpu', weights_only=True)\n"
        "print(list(state)[:5], list(model.state_dict())[:5])",
        "04",
        "## 4. Checkpoints from other machines",
    ),
    _family(
        "family_device",
        "Tensors or modules on the wrong device (meta tensors included)",
        (
            r"\bmeta tensors?\b",
            r"\bon the meta device\b",
            r"\bregister_meta function for\b",  # an operation meta tensors cannot run
            r"\bto a storage on different device\b",
            r"\bExpected (?:all tensors to be on the same device|a '?\w+'? device type)",
            r"\bexpected device \w+(?::\d+)? but got device\b",
            r"\bis on (?:device )?\w+(?::\d+)?,? (?:but|while) (?:expected|the)\b[^\n]{0,40}device",
            r"\btorch\.(?:cuda\.)?\w+Tensor\) and weight type \(torch\.(?:cuda\.)?\w+Tensor\)",
        ),
        (),
        (
            "An operation got tensors that live in different places (CPU, a GPU, the 'meta' "
            "device, which holds shapes but no data). PyTorch never moves them for you."
        ),
        (
            "where the model's parameters are (`next(model.parameters()).device`) and where "
            "the batch is",
            "tensors made inside `forward` or a loss without `device=`",
            "a model built on the meta device (`device_map`, `init_empty_weights`) and used "
            "before its weights were loaded (`to_empty` / `load_state_dict(assign=True)`)",
        ),
        "device = next(model.parameters()).device\nx, y = x.to(device), y.to(device)",
        "04",
        "## 1. Model on the device, data on the CPU",
    ),
    _family(
        "family_dtype",
        "Tensors of different dtypes in one operation, or a dtype an operation lacks (AMP too)",
        (
            r"\bexpected (?:scalar type|m\d dtype|mat\d dtype) \w+ but (?:found|got) \w+",
            r"\bExpected object of scalar type \w+",
            r"\bmust have the same dtype\b",
            r"\bcould not infer output dtype\b",
            r"\bnot implemented for '(?:Half|BFloat16|Float|Double|Long|Int|Short|Bool|Byte|Char|"
            r"ComplexFloat|ComplexDouble|Float8\w*)'",
            r"\bresult type \w+ can't be cast to the desired output type\b",
            r"\b(?:input|Input) type \([\w:.]+\) and (?:weight|bias) type \([\w:.]+\) should be "
            r"the same",
        ),
        (r"torch[/\\](?:cuda[/\\])?amp[/\\]",),
        (
            "Each tensor has a dtype (float32, float16, bfloat16, int64...). Most operations want "
            "their inputs in one dtype, and some kernels exist only for some dtypes; autocast "
            "changes dtypes inside its region only."
        ),
        (
            "the dtypes of the operation's inputs (`print(x.dtype, w.dtype)`)",
            "a tensor made outside `autocast` meeting one made inside it",
            "labels as float where a loss wants int64 class indices, or the other way round",
        ),
        "print(x.dtype, next(model.parameters()).dtype)\nx = x.to(next(model.parameters()).dtype)",
        "05",
        "### What autocast really runs in low precision",
    ),
    _family(
        "family_autograd",
        "An error of autograd (backward, gradients, in-place changes)",
        (
            r"\bdoes not require grad and does not have a grad_fn\b",
            r"\bTrying to backward through the graph\b",
            r"\bneeded for gradient computation has been modified by an inplace operation\b",
            r"\bgrad can be implicitly created only for (?:real )?scalar outputs\b",
            r"\ba leaf Variable that requires grad\b",
            r"\barguments don't support automatic differentiation\b",
            r"\bFunction '?\w+Backward\d*'? returned (?:nan|an invalid gradient)",
            r"\b\w+Backward\d+\b",
        ),
        (r"torch[/\\]autograd[/\\]", r"torch[/\\]_tensor\.py\S* in backward"),
        (
            "Autograd records the operations of the forward pass and walks them back in "
            "`backward()`. The error says the record is missing, was already freed, or was "
            "changed in place after it was recorded."
        ),
        (
            "`requires_grad` and `grad_fn` of the tensors on the way to the loss",
            "in-place operations (`+=`, `relu_`, `inplace=True`) on tensors backward needs",
            "a second `backward()` on the same graph, or `torch.no_grad()` around the forward",
        ),
        "torch.autograd.set_detect_anomaly(True)   # names the forward operation that broke\n"
        "print(loss.requires_grad, loss.grad_fn)",
        "03",
        "## 5. One training step, spelled out",
    ),
    _family(
        "family_shapes",
        "Tensor shapes that do not fit together",
        (
            r"\bshapes cannot be multiplied\b",
            r"\bThe size of tensor a \(\d+\) must match the size of tensor b\b",
            r"\bshape '\[[-\d, ]*\]' is invalid for input of size\b",
            r"\bSizes of tensors must match except in dimension\b",
            r"\bDimension out of range \(expected to be in range\b",
            r"\bExpected \d+D \(unbatched\) or \d+D \(batched\) input\b",
            r"\bGiven groups=\d+, (?:weight|expected weight) of size\b",
            r"\bExpected input batch_size \(\d+\) to match target batch_size\b",
            r"\bsize mismatch, (?:m1|mat1):",
            r"\bnon-singleton dimension \d+\b",
            r"\bdoesn't match the broadcast shape\b",
            r"\bCalculated output size: \([^)]*\)\. Output size is too small\b",
            r"\bstack expects each tensor to be equal size\b",
            r"\ba Tensor with \d+ elements cannot be converted to Scalar\b",
        ),
        (),
        (
            "An operation got tensors whose shapes do not fit: a matrix product's inner sizes, "
            "broadcasting's trailing sizes, a layer's expected input size, a loss's batch size."
        ),
        (
            "`print(x.shape)` just before the line that failed, and the layer's sizes",
            "the batch dimension: a missing `unsqueeze(0)` or an extra one",
            "a `view`/`reshape`/`flatten` that assumed another input size",
        ),
        "print(x.shape, layer)\n# nn.LazyLinear(out) infers in_features from the first batch",
        "03",
        "### Errata: article B's own `DynamicNet`",
    ),
)
