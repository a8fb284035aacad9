"""The errors this course explains: one entry per error family, as data (the explainer, chapter 04).

Each entry says what the error means in plain words, its likely causes in the course's terms,
the fix as code, and the notebook section that teaches it. `patterns` are regular expressions
(matched case-insensitively) on fragments of the message that stay the same across torch 2.x
releases; several alternatives cover the wordings of different releases and devices. A pattern
is never a single common word: "cuda", "device" or "memory" alone explain nothing.

`readings` pick numbers and names out of the message (named groups) into a sentence.
Order matters: the first entry that matches wins, so specific entries come before general ones.
"""
from dataclasses import dataclass

from ..sections import section

NOTEBOOKS = {
    "01": "01_device_check", "02": "02_same_device_rule", "03": "03_training_template",
    "04": "04_common_errors", "05": "05_speedups", "06": "06_out_of_memory", "07": "07_dp_vs_ddp",
}


@dataclass(frozen=True)
class Entry:
    """One error family: how to recognise it and what to tell the learner (chapter 04)."""
    id: str
    title: str
    signature: str          # what PyTorch prints, shortened, for the cheat sheet
    patterns: tuple
    meaning: str
    causes: tuple
    fix: str
    chapter: str = None     # "04"
    section: str = None     # the heading in that notebook, as written there
    readings: tuple = ()    # (regex with named groups, sentence with {names})
    wrapper: bool = False   # says "a process failed"; the real error is earlier in the log
    wordings: tuple = ()    # (where it is printed, the text): the same error across releases/devices


_DEVICE = r"[a-z]+(?::\d+)?"
_SIZE = r"[\d.]+ ?(?:[KMGT]i?B|bytes)"

ENTRIES = (
    # ------------------------------------------------------------ checkpoints across machines
    Entry(
        "checkpoint_missing_gpu", "A checkpoint saved on a GPU this machine does not have",
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False",
        (r"Attempting to deserialize object on (?:a )?CUDA device",),
        "`torch.save` wrote each tensor's device into the file; `torch.load` tries to put every tensor "
        "back on that GPU, and this machine has no such GPU.",
        ("the file was saved on a GPU machine and is loaded on a CPU-only one (a laptop, a CI runner)",
         "it was saved from `cuda:1` on a multi-GPU box and this machine has fewer GPUs"),
        "state = torch.load(path, map_location=device)   # device = pick_device()\nmodel.load_state_dict(state)",
        "04", "### 4a. Saved on a GPU, loaded on a laptop without one",
        ((r"on CUDA device (?P<index>\d+) but torch\.cuda\.device_count\(\) is (?P<count>\d+)",
          "The file asks for `cuda:{index}`; this machine has {count} GPU(s)."),),
    ),
    Entry(
        "weights_only", "`torch.load` refused to unpickle an object (`weights_only=True`)",
        "Weights only load failed ... Unsupported global: GLOBAL ...",
        (r"Weights only load failed", r"Unsupported global: GLOBAL", r"WeightsUnpickler error"),
        "Since PyTorch 2.6 `torch.load` only unpickles tensors and plain containers by default, because "
        "a pickle can run any code. The file holds an object of a class it does not allow.",
        ("a whole model was saved with `torch.save(model, path)` instead of its `state_dict()`",
         "the checkpoint stores your own class (a config dataclass, a NumPy array) next to the weights"),
        "torch.save(model.state_dict(), path)                 # save weights, rebuild the model from code\n"
        "with torch.serialization.safe_globals([MyConfig]):   # a class you trust\n"
        "    checkpoint = torch.load(path)\n"
        "# weights_only=False only for a file you made yourself or fully trust",
        "04", "### 4b. `weights_only`: save the state_dict, not the model",
        ((r"GLOBAL (?P<name>[\w.]+) was not an allowed global",
          "The object it refused is of class `{name}`."),),
    ),
    Entry(
        "compiled_prefix", "Keys start with `_orig_mod.`: a checkpoint from a `torch.compile`d model",
        'Missing key(s) ... Unexpected key(s) in state_dict: "_orig_mod. ..."',
        (r'key\(s\) in state_dict: [^\n]*"(?:module\.)?_orig_mod\.',),
        "`torch.compile(model)` returns a wrapper that keeps your model in `._orig_mod`, so its "
        "`state_dict()` puts `_orig_mod.` in front of every key; a plain model has no such keys "
        "(or the other way round).",
        ("the state_dict was saved from the compiled model instead of the original one",),
        "torch.save(model.state_dict(), path)          # the original model, not torch.compile(model)\n"
        "state = {k.removeprefix('_orig_mod.'): v for k, v in state.items()}",
        "04", "### 4c. Wrapper prefixes: `module.` and `_orig_mod.`",
    ),
    Entry(
        "module_prefix", "Keys start with `module.`: a checkpoint from a DataParallel/DDP model",
        'Missing key(s) ... Unexpected key(s) in state_dict: "module. ..."',
        (r'key\(s\) in state_dict: [^\n]*"module\.',),
        "`nn.DataParallel` and `DistributedDataParallel` keep your model in `.module`, so the wrapped "
        "model's `state_dict()` puts `module.` in front of every key; `load_state_dict` is strict and "
        "finds none of the names it expects.",
        ("the checkpoint was saved from the wrapped model (`wrapped.state_dict()`)",
         "a plain checkpoint is loaded into a wrapped model (the keys lack `module.`)"),
        "torch.save(wrapped.module.state_dict(), path)   # save the model inside the wrapper\n"
        "state = {k.removeprefix('module.'): v for k, v in state.items()}",
        "04", "### 4c. Wrapper prefixes: `module.` and `_orig_mod.`",
    ),
    Entry(
        "state_dict_mismatch", "The checkpoint does not fit this model",
        "Error(s) in loading state_dict ... size mismatch / Missing key(s)",
        (r"size mismatch for [\w.]+: copying a param with shape",
         r"Missing key\(s\) in state_dict", r"Unexpected key\(s\) in state_dict"),
        "`load_state_dict` compares names and shapes one by one, and this checkpoint was made for a "
        "model with other layers or other sizes.",
        ("the model is built with other sizes (hidden width, number of classes) than the saved one",
         "the checkpoint is a dict around the weights (`{'model': ..., 'optimizer': ...}`): load its `['model']`"),
        "model = Net(**same_sizes_as_when_saved)\n"
        "model.load_state_dict(checkpoint['model'] if 'model' in checkpoint else checkpoint)",
        "04", "### 4c. Wrapper prefixes: `module.` and `_orig_mod.`",
        ((r"size mismatch for (?P<name>[\w.]+): copying a param with shape torch\.Size\((?P<saved>\[[\d, ]*\])\) "
          r"from checkpoint, the shape in current model is torch\.Size\((?P<now>\[[\d, ]*\])\)",
          "`{name}` is {saved} in the file and {now} in your model."),),
    ),
    # ------------------------------------------------------------ devices
    Entry(
        "device_mismatch", "Tensors on two devices in one operation",
        "Expected all tensors to be on the same device ... / "
        "Tensor on device cpu is not on the expected device ...",
        (r"Expected all tensors to be on the same device",
         r"Tensor on device \S+ is not on the expected device",
         r"Input type \(torch\.cuda\.\w+\) and (?:weight|bias) type \(torch\.(?!cuda\.)\w+\)",
         r"Input type \(torch\.(?!cuda\.)\w+\) and (?:weight|bias) type \(torch\.cuda\.\w+\)",
         r"Input and parameter tensors are not at the same device",
         r"indices should be either on cpu or on the same device as the indexed tensor",
         r"Expected object of (?:device type|backend) \w+ but got (?:device type|backend) \w+",
         r"expected device \S+ but got device \S+"),
        "One operation got tensors that live on different devices. PyTorch does not move data for you: "
        "the model's parameters, the inputs and the labels must all be on one device. (Only 0-dim CPU "
        "tensors, read as plain numbers, and CPU indices or masks used to index are let through.)",
        ("the model was moved with `model.to(device)` but the batch was not "
         "(`x.to(device)` returns a NEW tensor: keep it)",
         "the evaluation loop forgot the two `.to(device)` lines the training loop has",
         "a tensor created inside `forward` or the loss without `device=` is born on the CPU",
         "a loss or module with its own parameters or buffers was not moved"),
        "model = model.to(device)                     # once\n"
        "x, y = x.to(device), y.to(device)            # every batch, in training AND evaluation\n"
        "torch.arange(n, device=x.device)             # tensors made inside forward",
        "04", "## 1. Model on the device, data on the CPU",
        ((r"but got (?P<arg>\w+) is on (?P<a>" + _DEVICE + r"), different from other tensors on "
          r"(?P<b>" + _DEVICE + ")",
          "`{arg}` is on {a}; the other tensors are on {b}. (`mat1` is a linear layer's input, `index` "
          "an embedding's token ids, `target` the labels.)"),
         (r"found at least two devices, (?P<a>" + _DEVICE + r") and (?P<b>" + _DEVICE + ")",
          "The two devices involved: {a} and {b}."),
         (r"Tensor on device (?P<a>" + _DEVICE + r") is not on the expected device (?P<b>" + _DEVICE + ")",
          "The two devices involved: {a} and {b}."),
         (r"Input type \((?P<a>[\w.]+)\) and (?P<what>weight|bias) type \((?P<b>[\w.]+)\)",
          "The input is a `{a}`, the layer's {what} a `{b}`: `torch.cuda.*` tensors live on the GPU, "
          "the others on the CPU.")),
        wordings=(
            ("a CPU-only machine, torch 2.13, `meta` as the second device",
             "Tensor on device cpu is not on the expected device meta!"),
            ("a GPU with a recent release",
             "Expected all tensors to be on the same device, but got mat1 is on cpu, different from "
             "other tensors on cuda:0 (...)"),
            ("older releases (the one article A quotes)",
             "Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
             "and cpu!"),
            ("a convolution on the GPU, input left on the CPU",
             "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same"),
        ),
    ),
    Entry(
        "generator_device", "A random generator on the wrong device",
        "Expected a 'cuda' device type for generator but found 'cpu'",
        (r"Expected a '\w+' device type for generator but found '\w+'",),
        "A random-number generator made for one device was given to an operation on another. It "
        "usually comes from `torch.set_default_device('cuda')`, which makes `randperm` in a shuffling "
        "DataLoader run on the GPU while its generator is a CPU one.",
        ("`torch.set_default_device(...)` was called before building a `DataLoader(shuffle=True)`",
         "a `torch.Generator()` made on the CPU was passed to a function working on the GPU"),
        "# keep the default device on the CPU; create tensors with device= where they are needed\n"
        "x = torch.randn(32, 10, device=device)",
        "01", "## 4. Create tensors where they will be used",
    ),
    Entry(
        "numpy_from_gpu", "NumPy cannot read a GPU tensor (or one that needs grad)",
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() ...",
        (r"can't convert \S+ device type tensor to numpy",
         r"Can't call numpy\(\) on Tensor that requires grad"),
        "NumPy works on CPU memory only, and refuses a tensor that is still part of a graph.",
        ("`.numpy()` (or a NumPy/matplotlib call) on a tensor that lives on the GPU",
         "`.numpy()` on a model output that still requires grad"),
        "y_np = y.detach().cpu().numpy()     # or loss.item() for one number",
        "02", "## 3. `Module.to` and `Tensor.to` are not the same operation",
    ),
    # ------------------------------------------------------------ is there a usable GPU?
    Entry(
        "torch_without_cuda", "This PyTorch was built without CUDA",
        "Torch not compiled with CUDA enabled",
        (r"Torch not compiled with CUDA enabled",),
        "The code asked for a CUDA GPU, but the installed PyTorch is a CPU-only build (or this is a "
        "Mac, where the GPU is `mps`).",
        ("`'cuda'` or `.cuda()` is hard-coded instead of a device chosen once",
         "the CPU wheel of PyTorch is installed on a machine that has an NVIDIA GPU"),
        "device = pick_device()        # cuda, else mps, else cpu (chapter 01)\n"
        "model = model.to(device)\n"
        "# on a GPU machine: install the CUDA build of torch (pytorch.org/get-started)",
        "01", "## 1. Ask the machine",
    ),
    Entry(
        "no_usable_gpu", "PyTorch has CUDA, but sees no usable GPU",
        "No CUDA GPUs are available / Found no NVIDIA driver on your system",
        (r"No CUDA GPUs are available", r"Found no NVIDIA driver on your system",
         r"NVIDIA driver on your system is too old", r"CUDA driver initialization failed",
         r"CUDA unknown error - this may be due to an incorrectly set up environment"),
        "This PyTorch is a CUDA build, but at run time it finds no GPU it can use.",
        ("`CUDA_VISIBLE_DEVICES` is empty or names GPUs that do not exist",
         "no NVIDIA driver, or one too old for this build (the CUDA 13 wheels of torch 2.11+ need the 580 series)",
         "a container started without GPU access (`--gpus all`)"),
        "print(torch.cuda.is_available(), torch.cuda.device_count())\n"
        "device = pick_device()        # falls back to the CPU instead of crashing",
        "01", "## 1. Ask the machine",
    ),
    Entry(
        "no_kernel_image", "This PyTorch build has no code for this GPU",
        "CUDA error: no kernel image is available for execution on the device",
        (r"no kernel image is available for execution on the device",
         r"with CUDA capability sm_\d+ is not compatible with the current PyTorch installation"),
        "PyTorch ships GPU code compiled for a list of GPU generations; this GPU (much newer or much "
        "older than the build) is not on it.",
        ("a new GPU (for example sm_120) with a PyTorch built before it was supported",
         "an old GPU that recent builds dropped"),
        "print(torch.cuda.get_device_capability(), torch.cuda.get_arch_list())\n"
        "# install a torch build whose arch list includes your GPU (pytorch.org/get-started)",
        "01", "## 1. Ask the machine",
        ((r"capability sm_(?P<sm>\d+) is not compatible",
          "Your GPU is sm_{sm}; compare with the capabilities listed in the message."),),
    ),
    # ------------------------------------------------------------ memory
    Entry(
        "cuda_oom", "The GPU ran out of memory",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...",
        (r"CUDA out of memory", r"CUDA error: out of memory", r"\bOutOfMemoryError\b"),
        "One more tensor did not fit in the GPU's memory. The message says how much was asked for and "
        "where the rest went.",
        ("the batch is too large: activations grow with the batch size",
         "evaluation without `torch.no_grad()`, or `total += loss` keeping every batch's graph alive",
         "another process uses the same GPU"),
        "loader = DataLoader(data, batch_size=smaller)      # activations shrink in proportion\n"
        "with torch.no_grad(): ...                          # in evaluation\n"
        "total += loss.item()                               # not the loss tensor\n"
        "# large 'reserved but unallocated': PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "06", "## 2. A real out-of-memory error",
        ((r"Tried to allocate (?P<ask>" + _SIZE + ")", "It asked for {ask} more."),
         (r"total capacity of (?P<total>" + _SIZE + r") of which (?P<free>" + _SIZE + ") is free",
          "The card holds {total}; {free} was free."),
         (r"(?P<total>" + _SIZE + r") total capacity; (?P<used>" + _SIZE + r") already allocated; "
          r"(?P<free>" + _SIZE + ") free",
          "The card holds {total}; PyTorch had {used} allocated and {free} was free."),
         (r"Process \d+ has (?P<other>" + _SIZE + ") memory in use",
          "Another process on this GPU holds {other}."),
         (r"(?P<alloc>" + _SIZE + r") is allocated by PyTorch, (?:.*?)and (?P<cached>" + _SIZE
          + r") is reserved by PyTorch but unallocated",
          "Your tensors take {alloc}; {cached} is cached by PyTorch but unused. If that cached part is "
          "large compared with the request, the memory is fragmented: expandable_segments helps.")),
    ),
    Entry(
        "memory_budget", "The course's memory budget was exceeded (a stand-in for a small GPU)",
        "MemoryBudgetExceeded: memory budget exceeded: ... > budget ...",
        (r"memory budget exceeded: .+ in use > budget",),
        "Chapter 06 counts the bytes of weights, gradients, optimizer state and activations against a "
        "budget, to show on any machine what a small GPU does. It is not a CUDA error.",
        ("the batch's activations plus the model's state are more than the budget",),
        "step with a smaller batch, or accumulate gradients over micro-batches "
        f"({section('06', 'Gradient accumulation', chapter_too=True)})",
        "06", "## 2. A real out-of-memory error",
    ),
    Entry(
        "cpu_oom", "The computer's RAM ran out (not the GPU's)",
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate ...",
        (r"DefaultCPUAllocator: can't allocate memory", r"DefaultCPUAllocator: not enough memory"),
        "A tensor on the CPU did not fit in the machine's RAM.",
        ("a huge tensor (check its shape: a wrong size multiplies quickly)",
         "the whole dataset loaded into memory at once"),
        "print(x.shape, x.numel() * x.element_size() / 2**30, 'GiB')   # is that the size you meant?",
        "06", "## 1. Where the memory goes",
        ((r"you tried to allocate (?P<n>\d+) bytes", "It asked for {n} bytes."),),
    ),
    # ------------------------------------------------------------ processes and data loading
    Entry(
        "cuda_in_forked_process", "CUDA used in a forked child process",
        "Cannot re-initialize CUDA in forked subprocess",
        (r"Cannot re-initialize CUDA in forked subprocess",),
        "This process touched CUDA, then forked a child (a DataLoader worker, a `multiprocessing` "
        "process) that tried to use CUDA too. CUDA cannot be carried across `fork`.",
        ("the Dataset moves samples to the GPU inside `__getitem__`, with `num_workers > 0`",
         "the children start with `fork`: Python's default on Linux up to 3.13 (from Python 3.14 on, Linux "
         "defaults to `forkserver`; macOS and Windows to `spawn`: their children do not inherit this "
         "process's CUDA state), or a script asks for `fork` itself"),
        "# keep Dataset and workers on the CPU; move whole batches in the training loop:\n"
        "x, y = x.to(device), y.to(device)\n"
        "# or start children with 'spawn' (or 'forkserver'):\n"
        "DataLoader(data, num_workers=2, multiprocessing_context='spawn')",
        "05", "## 3. `num_workers`: preparing batches in parallel",
    ),
    Entry(
        "dataloader_worker_died", "A DataLoader worker process died",
        "DataLoader worker (pid ...) is killed by signal / exited unexpectedly",
        (r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\) (?:is killed by signal|exited unexpectedly)",
         r"unable to (?:open shared memory object|write to file </torch_)"),
        "A worker process of the DataLoader stopped without raising a Python error: the operating "
        "system killed it.",
        ("the machine ran out of RAM (signal: Killed): too many workers, or each holds a copy of big data",
         "shared memory is too small (signal: Bus error; in Docker, `--shm-size`)",
         "a crash in native code used by the Dataset (signal: Segmentation fault)"),
        "DataLoader(data, num_workers=0)    # first make it work, then raise workers one by one\n"
        "# in Docker: docker run --shm-size=2g ...",
        "05", "## 3. `num_workers`: preparing batches in parallel",
        ((r"killed by signal: (?P<signal>[\w ]+)", "The signal was: {signal}."),),
    ),
    Entry(
        "dataloader_worker_raised", "Your Dataset code raised inside a DataLoader worker",
        "Caught ... in DataLoader worker process 0. Original Traceback ...",
        (r"Caught \w+ in DataLoader worker process \d+",),
        "The error happened in a worker process, in your Dataset's `__getitem__` or the `collate_fn`; "
        "the worker sent it back. The real error is the last line of the 'Original Traceback'.",
        ("a bug in `__getitem__` (a bad index, a missing file, a sample of the wrong shape)",),
        "DataLoader(data, num_workers=0)    # the same error, with a plain traceback into your code",
        "05", "## 3. `num_workers`: preparing batches in parallel", wrapper=True,
    ),
    Entry(
        "pin_memory_without_accelerator", "`pin_memory=True` on a machine without a GPU",
        "'pin_memory' argument is set as true but no accelerator is found",
        (r"'pin_memory' argument is set as true but no accelerator is found",
         r"'pin_memory' argument is set as true but not supported on"),
        "Pinned memory only speeds up copies to a GPU; without one, PyTorch ignores the setting and warns.",
        ("`pin_memory=True` is written for the GPU machine and the same code runs on a CPU-only one",),
        "DataLoader(data, pin_memory=(device.type == 'cuda'))",
        "05", "## 4. `pin_memory` and `non_blocking`",
    ),
    # ------------------------------------------------------------ mixed precision and dtypes
    Entry(
        "cuda_amp_deprecated", "`torch.cuda.amp` is deprecated",
        "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. "
        "Please use `torch.amp.autocast('cuda', args...)`",
        (r"torch\.cuda\.amp\.\w+\(args\.\.\.\)` is deprecated",
         r"torch\.cuda\.amp\.\w+ is deprecated"),
        "The old spelling still works, but PyTorch asks for the device-neutral API.",
        ("code copied from older tutorials (both articles use the old spelling)",),
        "with torch.autocast(device_type=device.type, dtype=torch.bfloat16):\n"
        "    loss = criterion(model(x), y)\n"
        "scaler = torch.amp.GradScaler(device.type)   # float16 only; bfloat16 needs no scaler",
        "05", "## 5. Mixed precision, today's API",
    ),
    Entry(
        "fp16_gradients_unscale", "GradScaler was given float16 gradients",
        "ValueError: Attempting to unscale FP16 gradients.",
        (r"Attempting to unscale FP16 gradients",),
        "The GradScaler expects float32 weights (and gradients) with autocast doing the float16 math; "
        "here the model itself was converted to float16.",
        ("`model.half()` together with `GradScaler`",),
        "model = Net().to(device)               # keep the weights float32\n"
        "with torch.autocast(device_type=device.type, dtype=torch.float16):\n"
        "    loss = criterion(model(x), y)\n"
        "scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()",
        "05", "### The GradScaler",
    ),
    Entry(
        "labels_dtype", "The labels have the wrong dtype for this loss",
        "expected scalar type Long but found Float / expected target dtype to be Long",
        (r"expected scalar type Long but found \w+", r"expected target dtype to be Long",
         r"Expected object of scalar type Long but got scalar type \w+ for argument #2 'target'",
         r"\"nll_loss\w*\" not implemented for '\w+'"),
        "With one label per sample, `CrossEntropyLoss`/`NLLLoss` want class indices of type `int64` "
        "(`torch.long`) or `uint8` (\"Long or Byte\"). These labels have one value per sample but another "
        "dtype. (A float target of the logits' shape (N, C) is not this error: `CrossEntropyLoss` reads it "
        "as class probabilities, and it runs.)",
        ("float labels of shape (N,): read from a float array, or made with "
         "`torch.tensor([...], dtype=torch.float32)`",
         "integer labels of another width: `int32` (e.g. from a NumPy int32 array) or `int16`",
         "boolean labels (`y > 0.5`) for a two-class problem"),
        "y = y.long()    # class indices 0..C-1",
        "03", "## 4. Loss and optimizer",
    ),
    Entry(
        "dtype_mismatch", "Two floating-point types meet in one operation",
        "mat1 and mat2 must have the same dtype / expected scalar type Half but found Float",
        (r"mat1 and mat2 must have the same dtype", r"expected m1 and m2 to have the same dtype",
         r"self and mat2 must have the same dtype", r"expected scalar type \w+ but found \w+",
         r"Input type \([\w:.]+\) and (?:weight|bias) type \([\w:.]+\) should be the same",
         r"Found dtype \w+ but expected \w+"),
        "An operation got float tensors of different types (float32, float16, bfloat16, float64) and "
        "does not convert them for you.",
        ("the model was converted with `.half()`/`.bfloat16()` but the inputs were not "
         "(use `torch.autocast` instead)",
         "data from NumPy is float64 (`torch.from_numpy`) and the model is float32",
         "your own matmul mixes an autocast output (low precision) with a float32 tensor"),
        "x = x.to(device, dtype=torch.float32)\n"
        "with torch.autocast(device_type=device.type, dtype=torch.bfloat16):   # instead of model.half()\n"
        "    out = model(x)",
        "05", "### What autocast really runs in low precision",
        ((r"but got:? (?P<a>[\w:]+) (?:and|!=) (?P<b>[\w:]+)", "One side is {a}, the other {b}."),
         (r"expected scalar type (?P<a>\w+) but found (?P<b>\w+)", "It expected {a} and found {b}."),
         (r"Input type \((?P<a>[\w:.]+)\) and (?P<what>weight|bias) type \((?P<b>[\w:.]+)\)",
          "The input is {a}, the layer's {what} {b}.")),
    ),
    # ------------------------------------------------------------ labels and indices
    Entry(
        "index_out_of_range", "A label or index is out of range",
        "IndexError: Target 3 is out of bounds. / index out of range in self",
        (r"Target -?\d+ is out of bounds", r"index out of range in self"),
        "A class label is not in 0..C-1 for a loss with C classes, or an index is past the end of an "
        "embedding or a tensor. On a GPU the same bug stops with `device-side assert triggered`.",
        ("labels numbered 1..C instead of 0..C-1, or more classes in the data than the model's outputs",
         "token ids larger than the embedding's `num_embeddings`"),
        "print(y.min().item(), y.max().item(), logits.shape[-1])   # labels must be in 0..C-1\n"
        "y = y - 1                                                 # if they were numbered from 1",
        "04", "## 6. Let the course read the error for you",
        ((r"Target (?P<t>-?\d+) is out of bounds", "The label {t} is not a valid class index."),),
    ),
    Entry(
        "device_side_assert", "A check inside a GPU kernel failed (device-side assert)",
        "CUDA error: device-side assert triggered",
        (r"device-side assert triggered", r"Assertion `t >= 0 && t < n_classes` failed",
         r"Assertion `srcIndex < srcSelectDimSize` failed"),
        "A GPU kernel checked its inputs and found a bad one, most often an index or label out of "
        "range. GPU errors are reported late, so the line in the traceback may not be the culprit, and "
        "the GPU stays unusable for this process.",
        ("a label outside 0..C-1 for `CrossEntropyLoss` with C classes",
         "a token id >= the embedding's `num_embeddings`",
         "BCELoss given values outside [0, 1]"),
        "# run the same step on the CPU: the error becomes readable ('Target 7 is out of bounds')\n"
        "# or rerun with CUDA_LAUNCH_BLOCKING=1 python train.py to stop at the real line\n"
        "print(y.min().item(), y.max().item(), logits.shape[-1])",
        "04", "## 6. Let the course read the error for you",
    ),
    Entry(
        "async_cuda_error", "A CUDA kernel crashed",
        "CUDA error: an illegal memory access was encountered",
        (r"an illegal memory access was encountered", r"CUBLAS_STATUS_EXECUTION_FAILED",
         r"CUDA error: unspecified launch failure"),
        "A GPU kernel failed. CUDA reports such errors late, at a later call, so the traceback may "
        "point at an innocent line.",
        ("an index out of range that no check caught", "a bug in a custom CUDA extension",
         "an out-of-memory condition reported in disguise"),
        "# rerun with CUDA_LAUNCH_BLOCKING=1 to stop at the real line, or run the step on the CPU",
        "04", "## 6. Let the course read the error for you",
    ),
    # ------------------------------------------------------------ shapes
    Entry(
        "linear_shape", "The input's width does not match the linear layer",
        "mat1 and mat2 shapes cannot be multiplied (AxB and CxD)",
        (r"mat1 and mat2 shapes cannot be multiplied", r"size mismatch, m1: \[\d+ x \d+\], m2: \[\d+ x \d+\]"),
        "`nn.Linear(in_features, out_features)` multiplies the input by its weight: the input's last "
        "dimension must equal `in_features`.",
        ("a layer's `in_features` does not match the previous layer's output",
         "images not flattened before the first linear layer (`x.flatten(1)`)"),
        "print(x.shape, layer.in_features)   # the last dimension of x must equal in_features\n"
        "x = x.flatten(1)                    # (N, C, H, W) -> (N, C*H*W)",
        "03", "### Errata: article B's own `DynamicNet`",
        ((r"\((?P<n>\d+)x(?P<got>\d+) and (?P<want>\d+)x(?P<out>\d+)\)",
          "The input has {got} features per sample; the layer expects {want} (and gives {out})."),),
    ),
    Entry(
        "conv_input_rank", "A convolution got an input with the wrong number of dimensions",
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [...]",
        (r"Expected \dD \(unbatched\) or \dD \(batched\) input to conv",),
        "`Conv2d` wants `(N, C, H, W)` (or `(C, H, W)` for one image); `Conv1d` `(N, C, L)`.",
        ("a single image without its batch or channel dimension",
         "a batch flattened too early"),
        "x = x.unsqueeze(0)     # add the batch dimension: (C, H, W) -> (1, C, H, W)",
        "03", "### Errata: article B's own `DynamicNet`",
        ((r"but got input of size: (?P<size>\[[\d, ]*\])", "Your input's size: {size}."),),
    ),
    Entry(
        "conv_channels", "A convolution got the wrong number of channels",
        "Given groups=1, weight of size [...], expected input[...] to have 3 channels, but got 5 channels instead",
        (r"Given groups=\d+, (?:expected )?weight of size",),
        "The layer was built for one number of input channels and got another.",
        ("images stored channels-last `(N, H, W, C)` (from NumPy/PIL) instead of `(N, C, H, W)`",
         "grayscale images into a layer built for RGB, or the other way round"),
        "x = x.permute(0, 3, 1, 2)   # (N, H, W, C) -> (N, C, H, W)",
        "03", "### Errata: article B's own `DynamicNet`",
        ((r"to have (?P<want>\d+) channels, but got (?P<got>\d+) channels",
          "The layer wants {want} channels; the input has {got}."),),
    ),
    Entry(
        "loss_batch_mismatch", "Predictions and labels have different batch sizes",
        "Expected input batch_size (A) to match target batch_size (B)",
        (r"Expected input batch_size \(\d+\) to match target batch_size \(\d+\)",),
        "The loss got N predictions and a different number of labels.",
        ("a `view`/`reshape` in `forward` that mixes the batch dimension with features",
         "labels of another batch (or one-hot labels flattened)"),
        "x = x.flatten(1)      # keep dimension 0 the batch\nprint(logits.shape, y.shape)",
        "03", "## 4. Loss and optimizer",
    ),
    # ------------------------------------------------------------ autograd in the training loop
    Entry(
        "backward_twice", "Backward through the same graph a second time",
        "Trying to backward through the graph a second time",
        (r"Trying to backward through the graph a second time",),
        "`backward()` frees the values the graph saved; a second backward through the same graph finds "
        "them gone.",
        ("a tensor from the previous batch (a running loss, an RNN hidden state) is part of this batch's graph",
         "two `backward()` calls on losses that share part of one forward pass"),
        "running_loss += loss.item()      # a number, not the tensor\n"
        "hidden = hidden.detach()         # cut the graph between batches",
        "03", "## 5. One training step, spelled out",
    ),
    Entry(
        "inplace_modified", "A value needed for backward was changed in place",
        "one of the variables needed for gradient computation has been modified by an inplace operation",
        (r"one of the variables needed for gradient computation has been modified by an inplace operation",),
        "Autograd saved a tensor to compute gradients later, and an in-place operation (`+=`, `relu_`, "
        "`x[...] = ...`) changed it before backward.",
        ("`x += ...` or `inplace=True` on an activation that autograd saved",
         "`optimizer.step()` between a forward pass and its backward"),
        "x = x + bias            # instead of x += bias\n"
        "nn.ReLU()               # instead of nn.ReLU(inplace=True)",
        "03", "## 5. One training step, spelled out",
        ((r"which is output \d+ of (?P<op>\w+)", "The changed tensor was made by `{op}`."),),
    ),
    Entry(
        "leaf_inplace", "A parameter was updated in place while autograd records",
        "a leaf Variable that requires grad is being used in an in-place operation",
        (r"a leaf Variable that requires grad (?:is being|has been) used in an in-place operation",),
        "Parameters require grad, so autograd refuses to record an in-place change to them.",
        ("a hand-written update `w -= lr * w.grad` outside `torch.no_grad()`",),
        "with torch.no_grad():\n    w -= lr * w.grad\n# or let the optimizer do it: optimizer.step()",
        "03", "## 5. One training step, spelled out",
    ),
    Entry(
        "no_grad_fn", "`backward()` on a tensor that has no graph",
        "element 0 of tensors does not require grad and does not have a grad_fn",
        (r"element \d+ of tensors does not require grad and does not have a grad_fn",),
        "The loss was computed without recording a graph, so there is nothing to differentiate.",
        ("the training step runs inside `torch.no_grad()` or `torch.inference_mode()` (copied from evaluation)",
         "the loss was rebuilt from numbers: `loss.item()`, `.detach()` or NumPy",
         "every parameter has `requires_grad=False` (a frozen model)"),
        "model.train()                    # training: no torch.no_grad() around the forward pass\n"
        "loss = criterion(model(x), y)\nloss.backward()\n"
        "print([n for n, p in model.named_parameters() if p.requires_grad])",
        "03", "### Checking `requires_grad` by hand",
    ),
    # ------------------------------------------------------------ distributed
    Entry(
        "no_process_group", "A distributed call before `init_process_group`",
        "Default process group has not been initialized, please make sure to call init_process_group.",
        (r"Default process group has not been initialized",),
        "DDP and the collectives (`all_reduce`, `barrier`, `get_rank`) need the process group that "
        "`torch.distributed.init_process_group` creates in each process.",
        ("the script was run with plain `python` instead of `torchrun`, so no process group was set up",
         "`DistributedDataParallel(model)` is created before `init_process_group`"),
        "dist.init_process_group(backend='nccl' if device.type == 'cuda' else 'gloo')\n"
        "model = DDP(model.to(device), device_ids=[local_rank] if device.type == 'cuda' else None)",
        "07", "## 2. DistributedDataParallel, for real",
    ),
    Entry(
        "distributed_env_missing", "A rank's environment variables are missing",
        "environment variable RANK expected, but not set / KeyError: 'LOCAL_RANK'",
        (r"environment variable (?:RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK) expected, but not set",
         r"KeyError: '(?:LOCAL_RANK|RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT)'"),
        "With `init_method='env://'` each process reads its rank, the world size and the address of "
        "rank 0 from environment variables, which `torchrun` sets.",
        ("the training script was started with `python train.py` instead of `torchrun`",),
        "torchrun --nproc_per_node=2 train.py      # sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT",
        "07", "### Launching with `torchrun`: `RANK`, `LOCAL_RANK`, `WORLD_SIZE`",
        ((r"(?:variable |KeyError: ')(?P<var>RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK)",
          "Missing: `{var}`."),),
    ),
    Entry(
        "nccl_not_built", "The NCCL backend is not available here",
        "Distributed package doesn't have NCCL built in",
        (r"Distributed package doesn't have NCCL built in",),
        "NCCL is the GPU backend of `torch.distributed`; this PyTorch (a CPU build, or macOS/Windows) "
        "does not include it.",
        ("`backend='nccl'` is hard-coded and the code runs on a machine without CUDA",),
        "dist.init_process_group(backend='nccl' if torch.cuda.is_available() else 'gloo')",
        "07", "## 2. DistributedDataParallel, for real",
    ),
    Entry(
        "nccl_failure", "NCCL, the GPU communication library, failed",
        "DistBackendError: NCCL error in: .../ProcessGroupNCCL.cpp, unhandled system error",
        (r"NCCL error in: ", r"Watchdog caught collective operation timeout", r"NCCL communicator was aborted",
         r"ProcessGroupNCCL's watchdog"),
        "A collective (all-reduce, broadcast) between the GPUs failed or never finished.",
        ("another rank crashed or stopped early (look for the first error of any rank above)",
         "ranks disagree: one skipped a collective, or their tensors differ in shape",
         "network or driver setup (rerun with NCCL_DEBUG=INFO)"),
        "NCCL_DEBUG=INFO torchrun --nproc_per_node=2 train.py   # says what failed, per rank",
        "07", "### When a rank fails",
    ),
    Entry(
        "gloo_failure", "Gloo, the CPU communication backend, lost a peer",
        "[.../gloo/transport/tcp/pair.cc:...] Connection closed by peer",
        (r"gloo/transport/tcp/\S+\]", r"Gloo connectFullMesh failed"),
        "A process of the group stopped answering; gloo noticed when it tried to talk to it.",
        ("another rank crashed or exited early (its own error is the real one)",
         "ranks use different MASTER_ADDR/MASTER_PORT or world sizes"),
        "# find the first rank that failed; make every rank run the same collectives in the same order",
        "07", "### When a rank fails",
    ),
    Entry(
        "rendezvous_timeout", "Not every rank joined the process group",
        "Timed out after N seconds waiting for clients. 1/2 clients joined.",
        (r"Timed out after \d+ seconds waiting for clients",),
        "Rank 0 waited for the other processes to connect, and some never came.",
        ("`world_size` is larger than the number of processes started",
         "another rank crashed before reaching `init_process_group`",
         "ranks point at different MASTER_ADDR/MASTER_PORT"),
        "torchrun --nproc_per_node=N train.py    # world_size = N processes, started together",
        "07", "### When a rank fails",
        ((r"(?P<joined>\d+)/(?P<world>\d+) clients joined", "{joined} of {world} processes joined."),),
    ),
    Entry(
        "port_in_use", "The rendezvous port is already taken",
        "The server socket has failed to listen ... EADDRINUSE",
        (r"EADDRINUSE", r"The server socket has failed to listen"),
        "Rank 0 could not open MASTER_PORT: another program, often a previous run that did not exit, "
        "holds it.",
        ("a previous training run still runs (or hangs) on the same port",
         "two jobs on one machine use the default port 29500"),
        "torchrun --master_port=29501 ...      # or stop the old run\n"
        "torchrun --rdzv-endpoint=localhost:0 ... # let the system pick a free port",
        "07", "### Launching with `torchrun`: `RANK`, `LOCAL_RANK`, `WORLD_SIZE`",
        ((r"port: (?P<port>\d+)", "The port: {port}."),),
    ),
    Entry(
        "torchrun_child_failed", "A worker process launched by torchrun failed",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
        (r"ChildFailedError", r"Root Cause \(first observed failure\)"),
        "torchrun reports that one of its processes exited with an error and stopped the others. Its "
        "summary is not the error: the first rank's traceback above it is.",
        ("any error in one rank: read that rank's own traceback (the 'Root Cause' names the rank)",),
        "# scroll up to the first traceback, or: torchrun ... 2>&1 | python -m course_lib explain",
        "07", "### When a rank fails", wrapper=True,
    ),
)
