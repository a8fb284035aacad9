"""The one device helper of the course (chapter 01 introduces it; every chapter uses it).

`pick_device()` chooses cuda, then mps, then cpu. Set the environment variable
COURSE_DEVICE (e.g. ``COURSE_DEVICE=cpu``) to force a choice, for instance the CPU on a
GPU machine. A CUDA GPU this PyTorch has no kernels for (its compute capability is not in
``torch.cuda.get_arch_list()``, e.g. a P100 with a current PyTorch) is not chosen: every CUDA
operation would fail with "no kernel image is available"; `pick_device` says why, once, and
`doctor` reports it as the gpu problem (`cuda_problem`).
"""

import itertools
import json
import os
import re
import textwrap
from pathlib import Path

import torch

from . import torch_compat
from .i18n import tr
from .i18n.catalogue import CJK, Said, listing
from .i18n.layout import wrap

ENV_VAR = "COURSE_DEVICE"
FIGURES_ENV_VAR = "COURSE_GPU_FIGURES"  # another figures.json than docs/gpu/figures.json (tests)
FIGURES_FILE = Path(__file__).resolve().parent.parent / "docs" / "gpu" / "figures.json"
SKIP_WIDTH = 78  # skip lines are wrapped here, between words (JupyterLab would break inside them)

# The figures a real GPU run records (benchmarks/gpu_figures.py writes exactly these keys into
# figures.json); a GPU-only cell names one with gpu_only(..., figure=KEY). docs/gpu/README.md.
FIGURE_KEYS = {  # each names the workload it measures: the cell's own, or how it differs
    "ch01.device_memory": (
        "memory_allocated after a torch.device label and after a 1024 x 1024 float32 tensor"
    ),
    "ch01.create_on_device": (
        "a 4096 x 4096 tensor made on the CPU then copied vs made on the GPU (median of 10; the "
        "cell: mean of 50)"
    ),
    "ch05.sync_timing": (
        "a 4096 x 4096 matrix product timed without and with torch.cuda.synchronize() (median "
        "of 5; the cell: once)"
    ),
    "ch05.data_wait": (
        "one epoch of the first 384 digits, batch 64: data-wait vs compute, plain vs augmented"
    ),
    "ch05.pinned_copy": (
        "a 64 MiB host-to-GPU copy from pageable vs pinned memory, and non_blocking from pinned"
    ),
    "ch05.amp": (
        "a training step of an MLP 4096 wide, batch 1024, in float32 and each autocast precision "
        "(bfloat16, float16 + GradScaler)"
    ),
    "ch05.compile": (
        "a training step of an MLP 256 wide, batch 256, eager vs torch.compile, and the first "
        "(compiling) call"
    ),
    "ch05.nvidia_smi": (
        "nvidia-smi's utilization and memory columns during a training loop (MLP 4096 wide, batch "
        "1024; the cell: whenever it runs)"
    ),
    "ch05.benchmark": (
        "torch.utils.benchmark.Timer medians of a @ a, sizes 64 and 256, float32 and bfloat16"
    ),
    "ch05.profiler_cuda": (
        "torch.profiler, 4 augmented-digits steps of batch 16 with CUDA: the split and top kernels"
    ),
    "ch05.item_sync": (
        "30 training steps of a 64-128-10 MLP, batch 256: .item() every step vs summed on the "
        "device and read once"
    ),
    "ch05.nonblocking_d2h": (
        "5 rounds of a non_blocking copy of 4194304 floats to the host behind a 4096 x 4096 "
        "matrix product, read at once vs after event.synchronize()"
    ),
    "ch05.sync_debug": (
        "torch.cuda.set_sync_debug_mode('warn') over 3 steps of the digits MLP, batch 64"
    ),
    "ch06.estimate_vs_peak": (
        "the course's count vs torch.cuda.max_memory_allocated, wide_mlp (512 wide), Adam, "
        "batch 1024"
    ),
    "ch06.real_oom": (
        "how fast a real torch.OutOfMemoryError comes under a 1 GiB cap (wide_mlp 4096 wide, "
        "a batch of 131072)"
    ),
    "ch06.empty_cache": (
        "memory_allocated / memory_reserved around a 256 MiB tensor, del and empty_cache()"
    ),
    "ch06.amp_memory": (
        "peak memory of a training step in float32 vs under autocast, wide_mlp (512 wide), Adam, "
        "batch 1024"
    ),
    "ch06.memory_snapshot": (
        "a real OOM under a 1 GiB cap and _record_memory_history: the snapshot's segments and "
        "oom event"
    ),
    "ch06.fragmentation": (
        "memory_stats after a split pattern, without and with expandable_segments"
    ),
    "ch07.data_parallel": (
        "DataParallel's scatter / replicate / gather by hand over every GPU (needs 2+), a digits "
        "MLP, batch 64"
    ),
}


def mps_available() -> bool:
    """True when Apple's Metal GPU backend can be used (chapter 01)."""
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _runs_on(arch: str, major: int, minor: int) -> bool:
    """Can code built for `arch` ('sm_80', 'sm_90a', 'compute_90') run on capability
    major.minor? A cubin runs on its major version at its minor or above (an 'a' one on its
    own capability only); PTX (compute_XY) is compiled for any capability at or above XY."""
    found = re.fullmatch(r"(sm|compute)_(\d+)(\d)([a-z]?)", arch)
    if not found:
        return False
    kind, arch_major, arch_minor, suffix = found.groups()
    arch_major, arch_minor = int(arch_major), int(arch_minor)
    if suffix:
        return (arch_major, arch_minor) == (major, minor)
    if kind == "compute":
        return (arch_major, arch_minor) <= (major, minor)
    return arch_major == major and arch_minor <= minor


def cuda_problem() -> str:
    """Why the CUDA GPU cannot run this PyTorch's kernels, or "" (no GPU, a build that does not
    list its architectures, or a GPU it has kernels for)."""
    try:
        arches = torch.cuda.get_arch_list() if torch.cuda.is_available() else []
        if not arches:
            return ""
        major, minor = torch.cuda.get_device_capability()
        name = torch.cuda.get_device_name()
    except (RuntimeError, AssertionError, AttributeError):
        return ""
    if any(_runs_on(arch, major, minor) for arch in arches):
        return ""
    return (
        f"this GPU ({name}, compute capability {major}.{minor}) has no kernels in this PyTorch "
        f"({torch.__version__}, built for {' '.join(arches)}): every CUDA operation would fail "
        'with "no kernel image is available", so the course runs on the CPU. Install a PyTorch '
        f"build that supports sm_{major}{minor} (pytorch.org, Get started; older releases keep "
        "older GPUs)"
    )


def cuda_usable() -> bool:
    """True when a CUDA GPU is there and this PyTorch has kernels for it."""
    return torch.cuda.is_available() and not cuda_problem()


def gpu_available() -> bool:
    """True when a CUDA or MPS GPU can be used (used by GPU-only cells in every chapter)."""
    return cuda_usable() or mps_available()


def forced_device():
    """The device named by COURSE_DEVICE, or None when it is unset or 'auto' (chapter 01)."""
    name = os.environ.get(ENV_VAR, "").strip().lower()
    if name in ("", "auto"):
        return None
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise ValueError(
            tr(f"{ENV_VAR}={name!r} is not a device name; use cpu, cuda, cuda:1, mps or auto")
        ) from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            tr(f"{ENV_VAR}={name!r} but this PyTorch sees no CUDA GPU; use cpu or auto")
        )
    if device.type == "mps" and not mps_available():
        raise ValueError(tr(f"{ENV_VAR}={name!r} but MPS is not available here; use cpu or auto"))
    if device.type == "cuda" and cuda_problem():
        raise ValueError(
            tr(f"{ENV_VAR}={name!r} but this PyTorch has no kernels for this GPU; use cpu or auto")
        )
    return device


_said = set()  # what pick_device has said in this process (once each)


def _say_once(text: str) -> None:
    if text not in _said:
        _said.add(text)
        print(_wrap(tr(text)))


def pick_device() -> torch.device:
    """The course's device: COURSE_DEVICE if set, else cuda, then mps, then cpu (chapter 01)."""
    forced = forced_device()
    if forced is not None:
        return forced
    if torch.cuda.is_available():
        problem = cuda_problem()
        if not problem:
            return torch.device("cuda")
        _say_once(problem)
    if mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def second_device() -> torch.device:
    """A device that is not the CPU, for same-device demos (chapters 02, 04).

    The GPU when there is one; otherwise ``meta``, which PyTorch treats as a genuine
    second device (it keeps shapes, not values), so device-mismatch errors are real.
    """
    if cuda_usable():
        return torch.device("cuda")
    if mps_available():
        return torch.device("mps")
    return torch.device("meta")


def amp_dtype(device) -> torch.dtype:
    """The 16-bit dtype for torch.autocast on `device`: bfloat16 (no GradScaler needed), or float16
    on a CUDA GPU without bfloat16 in hardware (chapters 05, 06)."""
    device = torch.device(device)
    if device.type == "cuda" and not torch_compat.bf16_in_hardware():
        return torch.float16
    return torch.bfloat16


def gpu_only(what: str, figure: str = None) -> bool:
    """For a GPU-only cell: True when the course device is a CUDA GPU, else a visible
    SKIPPED line (all chapters). `figure` names the reference figures recorded on a real
    GPU for this cell (a key of FIGURE_KEYS, see docs/gpu/README.md), shown beside the skip line."""
    if figure is not None and figure not in FIGURE_KEYS:
        raise ValueError(
            f"gpu_only: unknown figure key {figure!r}; the keys are in "
            "course_lib.device.FIGURE_KEYS"
        )
    device = pick_device()
    if device.type == "cuda":
        return True
    say_skipped(f"[GPU only] skipped ({why_not_cuda(device)}): {what}", figure)
    return False


def say_skipped(line: str, figure: str = None) -> None:
    """Print a skip line, then what a GPU shows for `figure` and the figures it recorded."""
    lines = [line]
    if figure is not None:
        from .gpu_notes import note_lines  # what a GPU shows here and why (learner-facing text)

        lines += note_lines(figure) + reference_figures(figure)
    print("\n".join(_wrap(line if isinstance(line, Said) else tr(line)) for line in lines))


def why_not_cuda(device: torch.device) -> str:
    """Why the course device is not a CUDA GPU, in a few words, for skip lines (all chapters)."""
    if device.type == "cuda":
        return "the course device is a CUDA GPU"
    if forced_device() is not None:
        return f"{ENV_VAR}={os.environ[ENV_VAR].strip()} chose " + (
            "the CPU" if device.type == "cpu" else str(device)
        )
    if device.type == "mps":
        return "this needs a CUDA GPU; the GPU here is Apple's MPS"
    if torch.cuda.is_available() and cuda_problem():
        return "this PyTorch has no kernels for the CUDA GPU here"
    return "no CUDA GPU here"


def _wrap(line: str) -> str:
    """One output line wrapped between words, continuation lines indented (skip lines)."""
    indent = " " * (len(line) - len(line.lstrip()))
    if CJK.search(
        line
    ):  # Chinese has no spaces to break at, and its characters are two columns wide
        return wrap(line, SKIP_WIDTH)
    return textwrap.fill(
        line,
        SKIP_WIDTH,
        initial_indent="",
        subsequent_indent=indent + "    ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def recorded_run(path=None):
    """The reference GPU run recorded in docs/gpu/figures.json (or COURSE_GPU_FIGURES), or None."""
    path = Path(path or os.environ.get(FIGURES_ENV_VAR) or FIGURES_FILE)
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(run, dict) or not run.get("run", {}).get("gpu"):
        return None  # a report from a machine without a GPU records no figures
    return run


def reference_figures(key: str, path=None) -> list:
    """Lines that show what a real GPU measured for `key`,
    or say that nothing is recorded (all chapters)."""
    run = recorded_run(path)
    if run is None:
        return ["  No reference GPU run is recorded yet, so there is no GPU figure to show here."]
    info = run["run"]
    where = f"{info['gpu']}, torch {info.get('torch', '?')}, {info.get('date', '?')}"
    entry = run.get("figures", {}).get(key) or {}
    if entry.get("lines"):
        return [f"  On a real GPU (measured on {where}):"] + [
            f"    {line}" for line in entry["lines"]
        ]
    reason = entry.get("missing") or entry.get("error") or "this figure was not measured"
    return [f"  The reference GPU run ({where}) has no figure for this cell: {reason}."]


def devices_of(thing) -> list:
    """Distinct devices (strings) of a module's parameters
    and buffers, or of one tensor (chapters 02, 04)."""
    if isinstance(thing, torch.Tensor):
        return [str(thing.device)]
    tensors = itertools.chain(thing.parameters(), thing.buffers())
    return sorted({str(t.device) for t in tensors})


def device_report(**things) -> str:
    """One line per named model/loss/tensor with its device(s), then a verdict (chapters 02, 04)."""
    width = max(map(len, things), default=0)
    lines = [
        f"{name:<{width}} : {', '.join(devices_of(thing)) or tr('(no tensors)')}"
        for name, thing in things.items()
    ]
    found = sorted({d for thing in things.values() for d in devices_of(thing)})
    if len(found) <= 1:
        lines.append(tr(f"OK: everything is on {found[0] if found else 'no device'}"))
    elif len(found) == 2:
        first, second = found
        lines.append(
            tr(f"MISMATCH: {first} and {second} are both in use; move everything to one device")
        )
    else:  # three or more: "cpu, cuda:0, meta" (in Chinese with the enumeration comma)
        devices = listing(found)
        lines.append(tr(f"MISMATCH: {devices} are all in use; move everything to one device"))
    return "\n".join(lines)
