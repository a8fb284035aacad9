"""What differs between the PyTorch releases the course runs on (2.6 to 2.15), in one place.

Each difference is asked of the installed torch itself (an attribute, an argument), never of its
version string, so a release in between is judged by what it has. docs/torch-range.md lists them.
"""

import torch

# the accelerator-wide allocator configuration (c10's AcceleratorAllocatorConfig, torch 2.10 and
# newer): it reads PYTORCH_ALLOC_CONF first and is set with this function; older releases read
# only PYTORCH_CUDA_ALLOC_CONF for CUDA (2.6's c10 has no other name; 2.9 already read the new
# name in general but not for CUDA's expandable segments, pytorch#183387)
UNIFIED_SETTER = "_accelerator_setAllocatorSettings"
NEW_NAME, OLD_NAME = "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"


def unified_allocator_config() -> bool:
    """Whether this torch has the accelerator-wide allocator settings (2.10 and newer)."""
    return hasattr(torch._C, UNIFIED_SETTER)


def alloc_conf_names() -> tuple:
    """The allocator variables this torch reads for CUDA, the one that wins first."""
    return (NEW_NAME, OLD_NAME) if unified_allocator_config() else (OLD_NAME,)


def set_allocator_settings(settings: str) -> None:
    """Change the CUDA allocator's settings while the process runs: the accelerator-wide setter
    where there is one, else torch.cuda.memory._set_allocator_settings (which 2.13 deprecates,
    with a FutureWarning)."""
    setter = getattr(torch._C, UNIFIED_SETTER, None)
    (setter or torch.cuda.memory._set_allocator_settings)(settings)


def bf16_in_hardware() -> bool:
    """True when the CUDA GPU computes bfloat16 itself: emulated bfloat16 (a T4, a P100) is
    slower than float32, so it does not count (`including_emulation=False`, torch 2.6 and newer;
    a build without the argument: capability 8.0 or above, where bfloat16 arrived)."""
    try:
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    except TypeError:  # no such argument
        return torch.cuda.get_device_capability()[0] >= 8


def cpu_streams_for_fsdp() -> None:
    """FSDP2 records and waits on events of the device's streams at every all-gather; torch 2.6's
    torch.cpu.Stream has neither method ("'Stream' object has no attribute 'record_event'" in a
    gloo run on the CPU). Newer releases define both as no-ops (a CPU op has finished when it
    returns): give 2.6 the same two."""
    stream = torch.cpu.Stream
    for name, noop in (("record_event", lambda self: None), ("wait_event", lambda self, e: None)):
        if not hasattr(stream, name):
            setattr(stream, name, noop)
