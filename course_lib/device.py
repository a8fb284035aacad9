"""The one device helper of the course (chapter 01 introduces it; every chapter uses it).

`pick_device()` chooses cuda, then mps, then cpu. Set the environment variable
COURSE_DEVICE (e.g. ``COURSE_DEVICE=cpu``) to force a choice, for instance the CPU on a
GPU machine.
"""
import itertools
import os

import torch

ENV_VAR = "COURSE_DEVICE"


def mps_available() -> bool:
    """True when Apple's Metal GPU backend can be used (chapter 01)."""
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def gpu_available() -> bool:
    """True when a CUDA or MPS GPU can be used (used by GPU-only cells in every chapter)."""
    return torch.cuda.is_available() or mps_available()


def forced_device():
    """The device named by COURSE_DEVICE, or None when it is unset or 'auto' (chapter 01)."""
    name = os.environ.get(ENV_VAR, "").strip().lower()
    if name in ("", "auto"):
        return None
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise ValueError(f"{ENV_VAR}={name!r} is not a device name; use cpu, cuda, cuda:1, mps or auto") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{ENV_VAR}={name!r} but this PyTorch sees no CUDA GPU; use cpu or auto")
    if device.type == "mps" and not mps_available():
        raise ValueError(f"{ENV_VAR}={name!r} but MPS is not available here; use cpu or auto")
    return device


def pick_device() -> torch.device:
    """The course's device: COURSE_DEVICE if set, else cuda, then mps, then cpu (chapter 01)."""
    forced = forced_device()
    if forced is not None:
        return forced
    if torch.cuda.is_available():
        return torch.device("cuda")
    if mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def second_device() -> torch.device:
    """A device that is not the CPU, for same-device demos (chapters 02, 04).

    The GPU when there is one; otherwise ``meta``, which PyTorch treats as a genuine
    second device (it keeps shapes, not values), so device-mismatch errors are real.
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    if mps_available():
        return torch.device("mps")
    return torch.device("meta")


def gpu_only(what: str, figure: str = None) -> bool:
    """For a GPU-only cell: True when the course device is a CUDA GPU, else a visible
    SKIPPED line (all chapters). `figure` names the reference figures recorded on a real
    GPU for this cell (see `benchmarks/gpu_check.sh`), shown beside the skip line."""
    if pick_device().type == "cuda":
        return True
    print(f"[GPU only] skipped on this machine (no CUDA GPU): {what}")
    return False


def devices_of(thing) -> list:
    """Distinct devices (strings) of a module's parameters and buffers, or of one tensor (chapters 02, 04)."""
    if isinstance(thing, torch.Tensor):
        return [str(thing.device)]
    tensors = itertools.chain(thing.parameters(), thing.buffers())
    return sorted({str(t.device) for t in tensors})


def device_report(**things) -> str:
    """One line per named model/loss/tensor with its device(s), then a verdict (chapters 02, 04)."""
    width = max(map(len, things), default=0)
    lines = [f"{name:<{width}} : {', '.join(devices_of(thing)) or '(no tensors)'}" for name, thing in things.items()]
    found = sorted({d for thing in things.values() for d in devices_of(thing)})
    if len(found) <= 1:
        lines.append(f"OK: everything is on {found[0] if found else 'no device'}")
    else:
        lines.append(f"MISMATCH: {' and '.join(found)} are both in use; move everything to one device")
    return "\n".join(lines)
