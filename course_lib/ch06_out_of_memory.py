"""Chapter 06, out of memory: where a training step's
memory goes, a real OOM, and what each fix buys.

Every number is measured on the learner's machine with course_lib.memory: tensors the model and
optimizer hold, activations counted by saved-tensor hooks (any device), the CUDA allocator's
counters on a GPU, and a memory budget that stands in for a small GPU on the CPU.
"""

import functools
import math
import os
import pickle
import statistics

import torch
from torch import nn

from . import memory, profiling, torch_compat, training
from .checks import memory as checks
from .data import N_CLASSES, N_FEATURES
from .declared.ch06_out_of_memory import (  # its exercises and quizzes, declared apart
    accumulation_conditions,
    adam_bytes,
    chapter,
    empty_cache,
    largest_batch,
    model_state_bytes,
    oom_message,
    seed_question,
    state_dominates,
    train_with_accumulation,
)
from .device import amp_dtype
from .i18n import tr
from .i18n.catalogue import join
from .i18n.layout import ljust
from .i18n.plots import plot_text
from .measure import Timer
from .memory import BUDGET, OUT_OF_MEMORY, format_bytes, step_in_budget
from .sections import section
from .seed import seed_everything
from .training import wide_mlp
from .widgets import print_wrapped, table

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "model_state_bytes",
    "train_with_accumulation",
    "largest_batch",
    "seed_question",
    "state_dominates",
    "empty_cache",
    "oom_message",
    "accumulation_conditions",
    "adam_bytes",
    # teaching helpers: the demos, tables and models the notebook uses
    "amp_dtype",
    "step_in_budget",
    "BUDGET",
    "print_wrapped",
    "digit_batch",
    "fresh_setup",
    "mid_training",
    "estimate",
    "measured_step_bytes",
    "compare",
    "activation_curve",
    "plot_curve",
    "crossover",
    "cuda_vs_accounting",
    "profiled_step",
    "timeline_vs_estimate",
    "gpu_oom_demo",
    "snapshot_oom",
    "load_snapshot",
    "read_snapshot",
    "snapshot_table",
    "snapshot_html",
    "fragmentation_demo",
    "fragmentation_table",
    "OOM_EXAMPLE",
    "oom_diagnosis",
    "read_oom_message",
    "accumulation_step",
    "amp_step",
    "try_fixes",
    "fixes_table",
    "eval_memory_over_batches",
    "leak_experiment",
    "usual_loop_peak",
    "leak_lines",
    "plot_leak",
    "empty_cache_demo",
    "amp_compare",
    "side_by_side",
    "amp_table",
    "amp_verdict",
    "amp_peak",
    "amp_peak_table",
    "freeze_compare",
    "deep_mlp",
    "checkpoint_compare",
    "checkpoint_table",
]


def __dir__():
    return __all__


# ================================================================ teaching helpers
# ---------------------------------------------------------------- models and batches
def digit_batch(dataset, n: int, device, seed: int = 0):
    """n digits drawn (with replacement) from `dataset`, as (x, y) on `device` (chapter 06)."""
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, len(dataset), (n,), generator=g)
    x, y = dataset[index]
    return x.to(device), y.to(device)


def fresh_setup(device, seed: int = 0, **model_args):
    """A new wide_mlp on `device`, Adam, cross-entropy (chapter 06)."""
    seed_everything(seed)
    model = wide_mlp(**model_args).to(device)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss()


def mid_training(device, x, y, **model_args):
    """A fresh setup after one small step on x[:8], y[:8]:
    Adam's state exists, as in the middle of training."""
    model, optimizer, criterion = fresh_setup(device, **model_args)
    training.train_step(model, optimizer, criterion, x[:8], y[:8])
    return model, optimizer, criterion


# ---------------------------------------------------------------- section 1: estimate vs measure
def estimate(model: nn.Sequential, batch_size: int, optimizer_copies: int = 2) -> dict:
    """Bytes from shapes alone, float32 (chapter 06).

    Weights: every parameter. Grads: one per weight. Adam: optimizer_copies (2) more.
    Activations: the batch of inputs (kept by the first Linear), each ReLU's output (kept by
    the ReLU and the next Linear), the logits' log-softmax (kept by the loss).
    """
    n_weights = sum(p.numel() for p in model.parameters())
    widths = (
        [N_FEATURES]
        + [
            m.out_features
            for m, nxt in zip(model, list(model)[1:])
            if isinstance(m, nn.Linear) and isinstance(nxt, nn.ReLU)
        ]
        + [N_CLASSES]
    )
    return {
        "weights": 4 * n_weights,
        "grads": 4 * n_weights,
        "optimizer_state": 4 * optimizer_copies * n_weights,
        "activations": 4 * batch_size * sum(widths),
    }


def measured_step_bytes(device, batch_size: int, dataset, **model_args) -> dict:
    """A second training step of a fresh model, bytes per component (chapter 06): the first, on 8
    of the samples, makes Adam's state (whose size does not depend on the batch)."""
    x, y = digit_batch(dataset, batch_size, device)
    model, optimizer, criterion = mid_training(device, x, y, **model_args)
    return memory.training_step_memory(model, optimizer, criterion, x, y)


def part_name(key: str) -> str:
    """A component's name in a table, translated: 'optimizer_state' -> 'optimizer state'."""
    return tr(ROW_NAMES.get(key, key.replace("_", " ")))


def compare(estimated: dict, measured: dict):
    """Estimate and measurement side by side, per component, with the share of the total."""
    total = sum(measured.values())
    rows = [
        (
            part_name(k),
            format_bytes(estimated[k]),
            format_bytes(measured[k]),
            f"{measured[k] / total:.0%}",
        )
        for k in memory.COMPONENTS
    ]
    rows.append((tr("total"), format_bytes(sum(estimated.values())), format_bytes(total), "100%"))
    return table([tr(h) for h in ("component", "estimated from shapes", "measured", "share")], rows)


def activation_curve(device, dataset, batch_sizes=(32, 128, 512, 1024, 2048)) -> dict:
    """Measured bytes per component of a mid-training step at each batch size (chapter 06): one
    model and optimizer for all (their bytes do not depend on the batch), each batch its own."""
    batches = {b: digit_batch(dataset, b, device) for b in batch_sizes}
    model, optimizer, criterion = mid_training(device, *batches[min(batch_sizes)])
    return {
        b: memory.training_step_memory(model, optimizer, criterion, x, y)
        for b, (x, y) in batches.items()
    }


def plot_curve(curve: dict):
    """Activations grow with the batch; weights, grads and Adam state do not."""
    import matplotlib.pyplot as plt

    sizes = list(curve)
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    fig.subplots_adjust(left=0.11, right=0.99, bottom=0.15, top=0.9)  # fixed: no layout engine
    for component in memory.COMPONENTS:
        ax.plot(
            sizes,
            [curve[b][component] / 2**20 for b in sizes],
            "o-",
            label=plot_text(component.replace("_", " ")),
        )
    ax.set(
        xscale="log",
        xlabel=plot_text("batch size"),
        ylabel="MiB",
        title=plot_text("measured memory of one training step"),
    )
    ax.set_xticks(sizes, [str(b) for b in sizes])
    ax.minorticks_off()  # the log axis's unlabelled minor ticks cost as much to draw as the rest
    ax.legend()
    ax.grid(alpha=0.3)
    plt.close(fig)
    return fig


def crossover(curve: dict) -> str:
    """Two sentences: from which measured batch on the activations are the largest part, and
    from which on they outweigh weights + grads + optimizer state together (chapter 06)."""
    state = lambda r: r["weights"] + r["grads"] + r["optimizer_state"]
    largest = [b for b, r in curve.items() if max(memory.COMPONENTS, key=r.get) == "activations"]
    bigger = [b for b, r in curve.items() if r["activations"] > state(r)]
    if not largest:
        return tr(
            "At every measured batch size some part of the model's state is larger than the "
            "activations."
        )
    first = tr(
        f"From batch {largest[0]} on, the activations are the largest of the four parts "
        f"({format_bytes(curve[largest[0]]['activations'])} at batch {largest[0]})."
    )
    if not bigger:
        return join(
            [
                first,
                tr(
                    "At no measured batch do they outweigh weights + grads + optimizer state "
                    "together."
                ),
            ]
        )
    return join(
        [
            first,
            tr(
                f"From batch {bigger[0]} on, they outweigh the other three together "
                f"({format_bytes(curve[bigger[0]]['activations'])} vs "
                f"{format_bytes(state(curve[bigger[0]]))})."
            ),
        ]
    )


def accounting_and_peak(device, dataset, batch_size: int = 1024, **model_args) -> dict:
    """On a CUDA GPU: a mid-training step counted per tensor and its allocator peak (chapter 06).

    Returns ``{"counted": {component: bytes, ..., "batch": bytes}, "measured":
    memory.cuda_peak(...)}``; `model_args` go to `wide_mlp` (the GPU check measures a wider model).
    """
    model, optimizer, criterion = fresh_setup(device, **model_args)
    x, y = digit_batch(dataset, batch_size, device)
    training.train_step(model, optimizer, criterion, x, y)
    counted = memory.training_step_memory(model, optimizer, criterion, x, y)
    counted["batch"] = memory.tensor_bytes(x) + memory.tensor_bytes(y)
    optimizer.zero_grad(set_to_none=True)
    measured = memory.cuda_peak(
        lambda: training.train_step(model, optimizer, criterion, x, y), device
    )
    return {"counted": counted, "measured": measured}


def cuda_vs_accounting(device, dataset, batch_size: int = 1024):
    """On a CUDA GPU: our per-tensor accounting of a step
    next to the allocator's measured peak (chapter 06)."""
    result = accounting_and_peak(device, dataset, batch_size)
    measured = result["measured"]
    rows = [
        (
            tr("in use before the step (weights, Adam state, the batch)"),
            format_bytes(measured["before"]),
        ),
        (
            tr("peak during the step, measured by the CUDA allocator"),
            format_bytes(measured["peak"]),
        ),
        (
            tr("weights + grads + Adam state + activations + batch, counted"),
            format_bytes(sum(result["counted"].values())),
        ),
    ]
    return table(["", tr("bytes")], rows)


# ------------------------------------------------------------ section 1: the profiler's memory view
def profiled_step(device, dataset, batch_size: int = 1024, steps: int = 2) -> tuple:
    """A mid-training Adam step of wide_mlp, `steps` times under the profiler with memory recording:
    (profiler, the course's estimate for that model and batch) (chapter 06)."""
    x, y = digit_batch(dataset, batch_size, device)
    model, optimizer, criterion = mid_training(device, x, y)
    prof = profiling.memory_profile(
        lambda: training.train_step(model, optimizer, criterion, x, y), steps=steps, device=device
    )
    # torch analyses the recording anew for each view of it (the timeline, the HTML page): once here
    prof._memory_profile = functools.cache(prof._memory_profile)
    return prof, estimate(model, batch_size)


def timeline_vs_estimate(timeline: dict, estimated: dict):
    """The course's estimate, the profiler's parts at its
    peak and after the last step, side by side (chapter 06)."""
    peak = profiling.at_peak(timeline)
    end = profiling.at_end(timeline)
    rows = [
        (
            part_name(k),
            format_bytes(estimated[k]),
            format_bytes(peak.get(k, 0)),
            format_bytes(end.get(k, 0)),
        )
        for k in memory.COMPONENTS
    ]
    rows += [
        (tr(name), tr("(not estimated)"), format_bytes(peak[name]), format_bytes(end[name]))
        for name in peak
        if name not in memory.COMPONENTS and (peak[name] or end[name])
    ]
    rows.append(
        (
            tr("total"),
            format_bytes(sum(estimated.values())),
            format_bytes(sum(peak.values())),
            format_bytes(sum(end.values())),
        )
    )
    header = (
        "part",
        "the course's estimate",
        "profiler, at its peak",
        "profiler, after the last step",
    )
    return table([tr(h) for h in header], rows)


# ---------------------------------------------------------- section 2: a real OOM, and the stand-in
def gpu_oom_demo(device, limit_bytes: int = 2**30):
    """On a CUDA GPU: cap this process at `limit_bytes`,
    then ask for a batch that needs more (chapter 06)."""
    model = wide_mlp(hidden=4096).to(device)
    x = torch.randn(2**17, N_FEATURES, device=device)  # 2**17 x 4096 floats per hidden layer: 2 GiB
    with memory.small_gpu(limit_bytes, device):
        print(tr(f"this process may now use {format_bytes(limit_bytes)} of the GPU"))
        try:
            model(x).sum().backward()
        finally:
            del model, x


def snapshot_oom(device, limit_bytes: int = 2**30, name: str = "ch06_oom_snapshot.pickle") -> tuple:
    """On a CUDA GPU: gpu_oom_demo again while the allocator
    records its history; (snapshot path, message).

    `_record_memory_history` keeps every allocation and free with its stack; `_dump_snapshot`
    pickles that history and the state of every segment; recording is switched off afterwards
    (chapter 06).
    """
    torch.cuda.memory._record_memory_history(max_entries=100_000)
    message = ""
    try:
        try:
            gpu_oom_demo(device, limit_bytes)
        except memory.OutOfMemoryError as err:
            message = " ".join(
                str(err).split()
            )  # the text only: the error's frames would keep tensors alive
        path = profiling.output_path(name)
        torch.cuda.memory._dump_snapshot(str(path))
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    return path, message


def load_snapshot(path) -> dict:
    """A snapshot pickled by torch.cuda.memory._dump_snapshot (chapter 06)."""
    with open(path, "rb") as f:
        return pickle.load(f)


def read_snapshot(snapshot: dict) -> dict:
    """What a memory snapshot says about its last OOM and its segments, in bytes (chapter 06)."""
    trace = [entry for device in snapshot.get("device_traces", []) for entry in device]
    oom = next((e for e in reversed(trace) if e.get("action") == "oom"), {})
    blocks = [b for seg in snapshot.get("segments", []) for b in seg.get("blocks", [])]
    return {
        "events recorded": len(trace),
        "asked for at the OOM": oom.get("size"),
        "free on the GPU at the OOM (CUDA's count)": oom.get("device_free"),
        "segments held": len(snapshot.get("segments", [])),
        "reserved (all segments)": sum(
            seg.get("total_size", 0) for seg in snapshot.get("segments", [])
        ),
        "in tensors (active blocks)": sum(
            b["size"] for b in blocks if b.get("state", "").startswith("active")
        ),
        "largest free block": max(
            (b["size"] for b in blocks if b.get("state") == "inactive"), default=0
        ),
    }


def snapshot_table(facts: dict, path=None):
    """The snapshot's facts as a table, sizes as bytes (chapter 06)."""
    shown = [
        (tr(k), v if v is None or k in ("events recorded", "segments held") else format_bytes(v))
        for k, v in facts.items()
    ]
    above = tr(f"snapshot file: {path}") if path else ""
    return table([tr("the snapshot"), tr("value")], shown, above=above)


def snapshot_html(path, name: str = "ch06_oom_snapshot.html"):
    """The snapshot as the memory viewer's HTML page
    (torch.cuda._memory_viz.trace_plot); its path (chapter 06)."""
    from torch.cuda import _memory_viz

    out = profiling.output_path(name)
    out.write_text(_memory_viz.trace_plot(load_snapshot(path)), encoding="utf-8")
    return out


# (memory_stats key, what it counts): the allocator's own counters for fragmentation
ALLOCATOR_COUNTERS = (
    ("reserved_bytes.all.current", "reserved: held from the driver (what nvidia-smi shows)"),
    ("allocated_bytes.all.current", "allocated: in tensors"),
    ("inactive_split_bytes.all.current", "inactive split: free pieces of blocks partly in use"),
    ("segment.all.current", "segments: cudaMalloc'd (or expandable) ranges held"),
)
SPLIT_PATTERN_MIB = (512, 300, 300)  # allocate the first and free it; then keep the other two


def split_pattern(device, mib=SPLIT_PATTERN_MIB) -> dict:
    """On a CUDA GPU: 512 MiB allocated and freed, then two
    of 300 MiB kept; the counters' change (chapter 06)."""
    torch.cuda.empty_cache()
    before = torch.cuda.memory_stats(device)
    first = torch.empty(mib[0] * 2**20, dtype=torch.uint8, device=device)
    del first  # its block stays cached, free
    kept = [torch.empty(m * 2**20, dtype=torch.uint8, device=device) for m in mib[1:]]
    after = torch.cuda.memory_stats(device)
    del kept
    torch.cuda.empty_cache()
    return {key: after.get(key, 0) - before.get(key, 0) for key, _ in ALLOCATOR_COUNTERS}


def alloc_conf() -> str:
    """The allocator settings this process started with, from the first of the variables this
    torch reads that is set: PYTORCH_ALLOC_CONF, then PYTORCH_CUDA_ALLOC_CONF; before torch
    2.10 only the old name (torch_compat.alloc_conf_names, chapter 06)."""
    names = torch_compat.alloc_conf_names()
    return next((os.environ[n] for n in names if n in os.environ), "")


def expandable_setting() -> bool:
    """Whether the allocator's variable switched
    expandable_segments on for this process (chapter 06)."""
    pairs = (item.split(":", 1) for item in alloc_conf().replace(" ", "").split(",") if item)
    settings = {key.lower(): value.lower() for key, value in (p for p in pairs if len(p) == 2)}
    return settings.get("expandable_segments") == "true"


def fragmentation_demo(device) -> dict:
    """On a CUDA GPU: split_pattern without and with
    expandable segments; the setting is put back (chapter 06)."""
    results = {}
    try:
        for on in (False, True):
            torch_compat.set_allocator_settings(f"expandable_segments:{on}")
            results[f"expandable_segments:{on}"] = split_pattern(device)
    finally:
        torch_compat.set_allocator_settings(f"expandable_segments:{expandable_setting()}")
    return results


def fragmentation_table(results: dict):
    """The counters' change per setting, one row per counter (chapter 06)."""

    def shown(key, value):
        return str(value) if key.startswith("segment.") else format_bytes(value)

    rows = [
        (tr(meaning), *(shown(key, r[key]) for r in results.values()))
        for key, meaning in ALLOCATOR_COUNTERS
    ]
    return table([tr("counter (change over the pattern)"), *results], rows)


# A CUDA out-of-memory message, in the exact format of PyTorch's caching allocator
# (c10/cuda/CUDACachingAllocator.cpp, torch 2.13; older releases name PYTORCH_CUDA_ALLOC_CONF
# in the hint). An EXAMPLE of what a 24 GB card (article B's RTX 3090 class) prints: the
# numbers are illustrative, not measured on this machine.
OOM_EXAMPLE = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.57 GiB "
    "of which 1.31 GiB is free. Including non-PyTorch memory, this process has 22.25 GiB "
    "memory in use. Of the allocated memory 15.91 GiB is allocated by PyTorch, and 5.87 GiB "
    "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
    "setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
    "documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)

_SIZE = r"([\d.]+ (?:bytes|KiB|MiB|GiB|TiB))"
OOM_PARTS = (  # (what the message says, its pattern, what it tells you)
    (
        "Tried to allocate",
        rf"Tried to allocate {_SIZE}",
        "the one request that failed: the last straw, often small, not the whole problem",
    ),
    ("total capacity", rf"total capacity of {_SIZE}", "the whole card"),
    (
        "is free",
        rf"of which {_SIZE} is free",
        "what the driver had left (other processes use memory too)",
    ),
    (
        "allowed",
        rf"{_SIZE} allowed;",
        "a cap set by set_per_process_memory_fraction (printed only when set)",
    ),
    (
        "is allocated by PyTorch",
        rf"{_SIZE} is allocated by PyTorch",
        "your live tensors: weights, gradients, optimizer state, activations",
    ),
    (
        "reserved by PyTorch but unallocated",
        rf"{_SIZE} is reserved by PyTorch but unallocated",
        (
            "cached blocks no tensor uses: when it is large, the free memory is in pieces "
            "(fragmentation)"
        ),
    ),
)


def size_in_bytes(text: str) -> float:
    """'2.00 GiB' -> 2147483648.0, as PyTorch's allocator prints sizes (chapter 06)."""
    number, unit = text.split()
    return float(number) * 1024 ** ("bytes", "KiB", "MiB", "GiB", "TiB").index(unit)


def oom_parts(message: str) -> dict:
    """The sizes an out-of-memory message reports, by
    OOM_PARTS name; None when absent (chapter 06)."""
    import re

    found = {name: re.search(pattern, message) for name, pattern, _ in OOM_PARTS}
    return {name: m.group(1) if m else None for name, m in found.items()}


# the variable to set, and what to say of the other name, by whether this torch has the
# accelerator-wide allocator settings (2.10 and newer; torch_compat)
ALLOC_ADVICE = {
    True: ("PYTORCH_ALLOC_CONF", "the old name PYTORCH_CUDA_ALLOC_CONF is still read"),
    False: (
        "PYTORCH_CUDA_ALLOC_CONF",
        "this torch is older than 2.10 and reads only that name; 2.10 and newer read "
        "PYTORCH_ALLOC_CONF first",
    ),
}


def oom_diagnosis(message: str) -> str:
    """What the message says to do: fragmentation or
    really full, from its own numbers (chapter 06)."""
    parts = oom_parts(message)
    tried, spare = parts["Tried to allocate"], parts["reserved by PyTorch but unallocated"]
    if tried is None or spare is None:
        return tr("This is not the CUDA allocator's out-of-memory message: nothing to read here.")
    used = parts["is allocated by PyTorch"]
    if size_in_bytes(spare) >= size_in_bytes(tried):
        name, said = ALLOC_ADVICE[torch_compat.unified_allocator_config()]
        return tr(
            f"Fragmentation: {spare} sat reserved but unused, more than the {tried} asked "
            "for, yet in pieces none of which fits. torch.cuda.empty_cache() cannot help: "
            "before raising, the allocator already gave back every cached block it could and "
            f"tried again. What helps is {name}=expandable_segments:True ({said}), set before "
            "the program's first CUDA allocation (in the shell, or in os.environ before "
            "importing torch)."
        )
    cap = f" of the {parts['allowed']} allowed" if parts["allowed"] else ""
    return tr(
        f"Not fragmentation: only {spare} is reserved but unused, less than the {tried} asked "
        f"for. Your tensors hold {used}{cap}: the memory is really taken, or the request "
        "alone is too big. No allocator setting helps: shrink what is big "
        f"({section('06', 'Where the memory goes')} says what)."
    )


def read_oom_message(message: str, source: str = ""):
    """The message (and where it comes from), then each
    of its numbers and what it means (chapter 06)."""
    parts = oom_parts(message)
    return table(
        tr("the message says | here | what it tells you").split(" | "),  # "here" alone is vague
        [
            (tr(name), parts[name] or tr("(not in this message)"), tr(meaning))
            for name, _, meaning in OOM_PARTS  # the message's own words, quoted in Chinese
        ],
        above=f"{tr(f'({source})')}\n{message}" if source else message,
    )


def accumulation_step(model, optimizer, criterion, x, y, micro: int):
    """One optimizer step on (x, y) split in micro-batches of `micro` samples (chapter 06 demo)."""
    optimizer.zero_grad(set_to_none=True)
    for xs, ys in zip(x.split(micro), y.split(micro)):
        loss = criterion(model(xs), ys)  # the mean over this micro-batch
        (loss * len(xs) / len(x)).backward()  # weighted by its share of the batch; .grad adds up
    optimizer.step()  # one step: the big batch's step


def amp_step(model, optimizer, criterion, x, y):
    """A training step with the forward under autocast (bf16 needs no GradScaler) (chapter 06)."""
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=amp_dtype(x.device)):  # matmuls in 16 bits
        loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()


@torch.no_grad()
def eval_step(model, optimizer, criterion, x, y):
    """An evaluation step: forward only, no graph (chapter 06)."""
    model.eval()
    criterion(model(x), y).item()


FIXES = {
    "batch 1024 (too big)": lambda m, o, c, x, y: training.train_step(m, o, c, x, y),
    "smaller batch: 512": lambda m, o, c, x, y: training.train_step(m, o, c, x[:512], y[:512]),
    "accumulation: 2 x 512": lambda m, o, c, x, y: accumulation_step(m, o, c, x, y, micro=512),
    "AMP (autocast), batch 1024": amp_step,
    "evaluation under no_grad, batch 1024": eval_step,
}


def try_fixes(device, dataset, batch_size: int = 1024, budget: int = BUDGET) -> list:
    """Each fix on the same batch inside the budget:
    (fix, peak bytes or the error, fits?) (chapter 06)."""
    x, y = digit_batch(dataset, batch_size, device)
    rows = []
    for name, step in FIXES.items():
        model, optimizer, criterion = mid_training(device, x, y)
        b = memory.MemoryBudget(budget, model, optimizer)
        try:
            with b:
                step(model, optimizer, criterion, x, y)
            rows.append((name, format_bytes(b.peak), "fits"))
        except OUT_OF_MEMORY:
            rows.append((name, f"> {format_bytes(b.peak)}", "OUT OF MEMORY"))
    return rows


def fixes_table(rows):
    """The fixes and their peaks as a table (chapter 06)."""
    header = [tr("what we run"), tr(f"peak (budget {format_bytes(BUDGET)})"), tr("verdict")]
    return table(header, [(tr(name), peak, tr(verdict)) for name, peak, verdict in rows])


# ---------------------------------------------------------------- section 3: graphs kept alive
def eval_memory_over_batches(model, batches, criterion, keep: str, no_grad: bool) -> list:
    """Live saved-activation bytes after each batch of an evaluation loop (chapter 06).

    keep="tensor": total += loss (the tensor); keep="float": total += loss.item().
    """
    live, total = [], 0.0
    with memory.ActivationMeter(model) as meter, torch.set_grad_enabled(not no_grad):
        for x, y in batches:
            loss = criterion(model(x), y)
            total = total + (loss if keep == "tensor" else loss.item())
            del loss
            live.append(meter.live)
    return live


LEAK_RUNS = {
    "total += loss (tensor), grad on": ("tensor", False),
    "total += loss.item(), grad on": ("float", False),
    "total += loss (tensor), under no_grad": ("tensor", True),
}


def leak_experiment(device, dataset, n_batches: int = 8, batch_size: int = 256) -> dict:
    """The three evaluation loops of LEAK_RUNS on the same batches, by label in the course's
    language (the notebook prints them) (chapter 06)."""
    model, _, criterion = fresh_setup(device)
    model.eval()
    batches = [digit_batch(dataset, batch_size, device, seed=i) for i in range(n_batches)]
    return {
        tr(label): eval_memory_over_batches(model, batches, criterion, keep, no_grad)
        for label, (keep, no_grad) in LEAK_RUNS.items()
    }


def leak_lines(runs: dict) -> str:
    """Each evaluation loop's live saved activations after its first and its last batch, a line
    per loop (chapter 06)."""
    return "\n".join(
        ljust(label, 40)
        + " "
        + tr(
            f"after batch 1: {format_bytes(live[0]):>11}   "
            f"after batch {len(live)}: {format_bytes(live[-1]):>11}"
        )
        for label, live in runs.items()
    )


def usual_loop_peak(device, dataset, n_batches: int = 4, batch_size: int = 256) -> str:
    """The peak of saved activations in the usual evaluation loop without no_grad (no `del loss`),
    in graphs of one batch (chapter 06)."""
    model, _, criterion = fresh_setup(device)
    model.eval()
    batches = [digit_batch(dataset, batch_size, device, seed=i) for i in range(n_batches)]
    _, one_graph = memory.saved_bytes(lambda: criterion(model(batches[0][0]), batches[0][1]), model)
    total = 0.0
    with memory.ActivationMeter(model) as meter:
        for x, y in batches:
            loss = criterion(model(x), y)  # the previous loss keeps its graph until this assignment
            total += loss.item()
    return tr(
        "the usual loop (grad on, `total += loss.item()`, no `del`): peak "
        f"{format_bytes(meter.peak)} saved = {meter.peak / one_graph:.1f} x one batch's graph "
        f"({format_bytes(one_graph)})"
    )


def plot_leak(runs: dict):
    """Live saved activations after each batch, one line per evaluation loop (chapter 06)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    fig.subplots_adjust(left=0.11, right=0.99, bottom=0.15, top=0.9)  # fixed: no layout engine
    # lines that lie on top of each other stay visible: a big hollow marker under a small filled one
    styles = (
        {"marker": "o", "ms": 6, "ls": "-"},
        {"marker": "s", "ms": 11, "ls": "-", "mfc": "none", "lw": 3},
        {"marker": "x", "ms": 7, "ls": "--"},
    )
    drawn, english = {}, {tr(label): label for label in LEAK_RUNS}  # plot_text wants the English
    for (label, live), style in zip(runs.items(), styles * len(runs)):
        label = english.get(label, label)
        same = [plot_text(other) for other, values in drawn.items() if values == live]
        shown = plot_text(label) + (
            "\n    " + plot_text(f"(the same values as: {'; '.join(same)})") if same else ""
        )
        ax.plot(
            range(1, len(live) + 1),
            [v / 2**20 for v in live],
            label=shown,
            zorder=3 - len(drawn),
            **style,
        )
        drawn[label] = live
    ax.set(
        xlabel=plot_text("batches evaluated"),
        ylabel=plot_text("MiB kept for a backward that never comes"),
        title=plot_text("activations still alive after each batch"),
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    plt.close(fig)
    return fig


# ---------------------------------------------------------------- empty_cache (GPU only)
def empty_cache_rows(device, mib: int = 256) -> list:
    """(moment, memory.cuda_memory) around a `mib` MiB tensor, its del and empty_cache (chapter 06;
    the GPU check records the same rows)."""
    rows = [("start", memory.cuda_memory(device))]
    big = torch.empty(mib * 2**20, dtype=torch.uint8, device=device)
    rows.append((f"after a {mib} MiB tensor", memory.cuda_memory(device)))
    del big
    rows.append(("after del", memory.cuda_memory(device)))
    torch.cuda.empty_cache()
    rows.append(("after empty_cache()", memory.cuda_memory(device)))
    return rows


def empty_cache_demo(device):
    """allocated vs reserved around del and empty_cache, on a CUDA GPU (chapter 06)."""
    rows = empty_cache_rows(device)
    return table(
        [tr(h) for h in ("moment", "allocated (tensors)", "reserved (cached by PyTorch)")],
        [(tr(m), format_bytes(r["allocated"]), format_bytes(r["reserved"])) for m, r in rows],
    )


# ---------------------------------------------------------------- AMP
_VIEWS = (
    "TBackward0",
    "TransposeBackward0",
    "ViewBackward0",
    "PermuteBackward0",
    "ExpandBackward0",
    "AliasBackward0",
    "UnsqueezeBackward0",
)


def weight_copy_of(t: torch.Tensor, params: dict):
    """The parameter `t` is a low-precision copy of
    (autocast casts weights for its matmuls), or None."""
    fn = t.grad_fn
    while (
        fn is not None and type(fn).__name__ in _VIEWS
    ):  # a transposed or reshaped view of the copy
        fn = fn.next_functions[0][0]
    if fn is None or type(fn).__name__ != "ToCopyBackward0":
        return None
    source = fn.next_functions[0][0]
    return params.get(id(getattr(source, "variable", None)))


class AutocastMeter(memory.ActivationMeter):
    """An ActivationMeter that counts autocast's 16-bit copies of the weights apart (chapter 06).

    Under autocast a Linear layer saves for backward a bfloat16/float16 COPY of its weight: bytes
    that depend on the model, not on the batch. `weight_copies` holds them; `peak` and `live`
    count only the real activations.
    """

    def __init__(self, model):
        super().__init__(model)
        self._params = {id(p): p for p in model.parameters()}
        self._copies = {}  # storage address -> bytes

    @property
    def weight_copies(self) -> int:
        return sum(self._copies.values())

    def _pack(self, t):
        if weight_copy_of(t, self._params) is not None:
            storage = t.untyped_storage()
            self._copies[storage.data_ptr()] = storage.nbytes()
            return t
        return super()._pack(t)


AMP_ROWS = memory.COMPONENTS + (
    "weight_copies",
)  # weight_copies: autocast's 16-bit copies, saved for backward


def amp_compare(device, dataset, batch_size: int = 1024) -> dict:
    """Bytes per component of a float32 step and an
    autocast step, same model and batch (chapter 06).

    Autocast's 16-bit copies of the weights, which it saves for backward too, are reported apart
    (`weight_copies`) from the activations.
    """
    x, y = digit_batch(dataset, batch_size, device)
    result = {}
    for label, autocast in (("float32", False), ("autocast", True)):
        model, optimizer, criterion = mid_training(device, x, y)  # Adam's state and the grads exist
        with (
            AutocastMeter(model) as meter,
            torch.autocast(
                device_type=torch.device(device).type, dtype=amp_dtype(device), enabled=autocast
            ),
        ):
            loss = criterion(model(x), y)
        loss.backward()
        result[label] = {
            **memory.state_bytes(model, optimizer),
            "activations": meter.peak,
            "weight_copies": meter.weight_copies,
        }
    return result


ROW_NAMES = {"weight_copies": "16-bit weight copies (autocast)"}


def side_by_side(result: dict):
    """Two measured steps {label: {component: bytes}} side
    by side, with the ratio second/first (chapter 06)."""
    (a, first), (b, second) = result.items()
    ratio = lambda x, y: f"{y / x:.2f}" if x else "-"
    rows = [
        (
            part_name(k),
            format_bytes(first[k]),
            format_bytes(second[k]),
            ratio(first[k], second[k]),
        )
        for k in first
    ]
    rows.append(
        (
            tr("total"),
            format_bytes(sum(first.values())),
            format_bytes(sum(second.values())),
            ratio(sum(first.values()), sum(second.values())),
        )
    )
    return table([tr("component"), tr(a), tr(b), tr("ratio")], rows)


def amp_table(result: dict):
    """float32 vs autocast, per component (chapter 06)."""
    return side_by_side(result)


def _change(ratio: float) -> str:
    """0.62 -> 'saved 38%', 1.45 -> 'COST 45% more' (chapter 06)."""
    return f"saved {1 - ratio:.0%}" if ratio <= 1 else f"COST {ratio - 1:.0%} more"


def amp_verdict(result: dict, batch_size: int) -> str:
    """What autocast did to memory in this measurement, from its own numbers (chapter 06)."""
    fp32, amp = result["float32"], result["autocast"]
    acts = amp["activations"] / fp32["activations"]
    total = sum(amp.values()) / sum(fp32.values())
    return tr(
        f"batch {batch_size}: autocast {_change(acts)} on the activations "
        f"({format_bytes(fp32['activations'])} -> {format_bytes(amp['activations'])}), added "
        f"{format_bytes(amp['weight_copies'])} of 16-bit weight copies saved for backward, and "
        f"{_change(total)} on the whole step; weights, gradients and Adam's state did not change."
    )


def amp_peak(device, dataset, batch_size: int = 1024) -> dict:
    """On a CUDA GPU: the allocator's peak during a
    float32 step and an autocast step (chapter 06)."""
    x, y = digit_batch(dataset, batch_size, device)
    peaks = {}
    for label, step in (("float32", training.train_step), ("autocast", amp_step)):
        model, optimizer, criterion = mid_training(device, x, y)
        run = lambda step=step, m=model, o=optimizer, c=criterion: step(m, o, c, x, y)
        peaks[label] = memory.cuda_peak(run, device)["peak"]
        del model, optimizer
    return peaks


def amp_peak_table(peaks: dict):
    """float32 vs autocast peak, and their ratio (chapter 06)."""
    ratio = peaks["autocast"] / peaks["float32"]
    return table(
        [tr("training step"), tr("peak memory_allocated")],
        [(k, format_bytes(v)) for k, v in peaks.items()] + [("autocast / float32", f"{ratio:.2f}")],
    )


# ---------------------------------------------------------------- frozen layers
def freeze_compare(device, dataset, batch_size: int = 256) -> dict:
    """Bytes per component of a step training every layer vs only the last one (chapter 06)."""
    x, y = digit_batch(dataset, batch_size, device)
    result = {}
    for label, frozen in (("train every layer", 0), ("first two Linear layers frozen", 4)):
        seed_everything(0)
        model = wide_mlp().to(device)
        for p in model[:frozen].parameters():
            p.requires_grad_(False)
        optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        training.train_step(model, optimizer, nn.CrossEntropyLoss(), x[:8], y[:8])  # Adam's state
        result[label] = memory.training_step_memory(model, optimizer, nn.CrossEntropyLoss(), x, y)
    return result


# ---------------------------------------------------------------- activation checkpointing
def deep_mlp(depth: int = 8, width: int = 256) -> nn.Sequential:
    """A deeper stack of Linear+ReLU blocks, where
    checkpointing has something to save (chapter 06)."""
    blocks = [
        nn.Sequential(nn.Linear(N_FEATURES if i == 0 else width, width), nn.ReLU())
        for i in range(depth)
    ]
    return nn.Sequential(*blocks, nn.Linear(width, N_CLASSES))


def checkpoint_compare(
    device, dataset, batch_size: int = 512, segments: int = 3, repeats: int = 7
) -> dict:
    """Saved bytes, module forward calls and time of a
    step, plain vs checkpoint_sequential (chapter 06).

    The forward calls are counted by hooks (exact); the time is the median of `repeats` steps after
    one warm-up step, the two variants taking turns so that a busy machine slows both alike.
    """
    from torch.utils.checkpoint import checkpoint_sequential

    x, y = digit_batch(dataset, batch_size, device)
    criterion, result, steps = nn.CrossEntropyLoss(), {}, {}
    for label, segs in (("plain", 0), (f"checkpointed, {segments} segments", segments)):
        seed_everything(0)
        model = deep_mlp().to(device)
        calls = []
        for block in model:
            block.register_forward_pre_hook(lambda *_, calls=calls: calls.append(1))
        forward = (
            (lambda m=model, s=segs: checkpoint_sequential(m, s, x, use_reentrant=False))
            if segs
            else (lambda m=model: m(x))
        )
        with memory.ActivationMeter(model) as meter:
            loss = criterion(forward(), y)
        loss.backward()
        result[label] = dict(
            saved=meter.peak,
            calls=len(calls),
            grads=[p.grad.clone() for p in model.parameters()],
            modules=len(model),
            times_ms=[],
        )
        steps[label] = lambda model=model, forward=forward: (
            model.zero_grad(),
            criterion(forward(), y).backward(),
        )
    for _ in range(repeats):  # taking turns: plain, checkpointed, plain, ...
        for label, step in steps.items():
            with Timer(device) as t:
                step()
            result[label]["times_ms"].append(t.ms)
    for r in result.values():
        r["seconds"] = statistics.median(r["times_ms"]) / 1000
    return result


def checkpoint_notes(result: dict) -> str:
    """What the checkpointing table's columns show, from its own numbers (chapter 06)."""
    (_, plain), (label, ckpt) = result.items()
    segments = int(label.split(", ")[1].split()[0])
    per_segment = math.ceil(plain["modules"] / segments)
    recomputed = ckpt["calls"] - plain["calls"]
    lines = [
        tr(
            f"{plain['modules']} modules in the Sequential (8 Linear+ReLU blocks and the output "
            f"layer): {plain['calls']} forward calls per plain step. checkpoint_sequential cut "
            f"them into {segments} segments of up to {per_segment} and ran the last one without "
            f"checkpointing, so backward recomputed the other {segments - 1}: {recomputed} more "
            f"calls, {ckpt['calls']} in all. That count is exact: it is the extra compute "
            "checkpointing costs."
        )
    ]
    spread = lambda r: f"{min(r['times_ms']):.1f} to {max(r['times_ms']):.1f} ms"
    lines.append(
        tr(
            f"Time per step, median of {len(plain['times_ms'])} steps each, taking turns: plain "
            f"{1000 * plain['seconds']:.1f} ms ({spread(plain)}), checkpointed "
            f"{1000 * ckpt['seconds']:.1f} ms ({spread(ckpt)})."
        )
    )
    if ckpt["seconds"] <= plain["seconds"]:
        lines.append(
            tr(
                "Here the checkpointed step did not come out slower: the timing noise of this "
                "machine (other programs on the same cores) is larger than the recomputation. "
                "Trust the forward calls; run the cell again on a quiet machine to see the time "
                "follow them."
            )
        )
    return "\n".join(lines)


def checkpoint_table(result: dict):
    (a, plain), (b, ckpt) = result.items()
    same = all(torch.allclose(g, h, atol=1e-6) for g, h in zip(plain["grads"], ckpt["grads"]))
    rows = [
        (tr(label), format_bytes(r["saved"]), r["calls"], f"{1000 * r['seconds']:.1f} ms")
        for label, r in result.items()
    ]
    rows.append(
        (
            tr("checkpointed / plain"),
            f"{ckpt['saved'] / plain['saved']:.2f}",
            f"{ckpt['calls'] / plain['calls']:.2f}",
            f"{ckpt['seconds'] / plain['seconds']:.2f}",
        )
    )
    print(tr("same gradients with and without checkpointing:"), same)
    header = (
        "training step",
        "saved for backward",
        "module forward calls (counted)",
        "time per step (median, measured)",
    )
    return table(
        [tr(h) for h in header],
        rows,
        above=checkpoint_notes(result),
    )


# ================================================================ the checks' helpers the tests use
# The exercises and quizzes are declared in course_lib/declared/ch06_out_of_memory.py, their checks
# live in course_lib/checks/memory.py; these names stay here for the tests (ch.<name>).
_state_case = checks.state_case

ACC_IN, ACC_OUT = checks.ACC_IN, checks.ACC_OUT
_acc_model, _acc_loader, _run_acc, _weights_equal = (
    checks.acc_model,
    checks.acc_loader,
    checks.run_acc,
    checks.weights_equal,
)
reference_big_batch = checks.reference_big_batch

budget_card = checks.budget_card
