"""The lent GPU machine (one NVIDIA H200, CUDA 13
torch) as far as torch's queries tell: dry runs only.

Active in every Python process started with this folder on PYTHONPATH and GPU_CHECK_SIMULATE
set (gpu_check.sh does both for ``GPU_CHECK_SIMULATE=1``; tests/test_gpu_check.py too). When
torch is imported, its availability queries answer as on that machine: one GPU
(GPU_CHECK_SIMULATE_GPUS=2: two, as on Kaggle), named "NVIDIA H200", compute capability 9.0,
bf16, nccl, torch.version.cuda "13.0". As real CUDA torch, the GPU count is read once,
honouring CUDA_VISIBLE_DEVICES as it was then ("" or "-1" hide it: the grader's processes see
no GPU). Nothing can really run on the GPU here: a tensor put on
"cuda" gets the CPU build's own error. The fake `nvidia-smi` beside this file answers its queries.
"""

import importlib.abc
import importlib.machinery
import os
import sys
import types

NAME = os.environ.get("GPU_CHECK_SIMULATE_NAME", "NVIDIA H200")
GPUS = int(os.environ.get("GPU_CHECK_SIMULATE_GPUS", "1"))  # 2: a machine like Kaggle's two T4s
PROPERTIES = types.SimpleNamespace(
    name=NAME, total_memory=143771 * 2**20, major=9, minor=0, multi_processor_count=132
)


def simulate(torch) -> None:
    """Patch torch's CUDA queries (see the module docstring)."""
    state = {"count": None}
    cuda, real_accelerator = torch.cuda, getattr(torch, "accelerator", None)

    def device_count() -> int:
        if (
            state["count"] is None
        ):  # read once, as CUDA reads CUDA_VISIBLE_DEVICES at initialisation
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            hidden = visible is not None and visible.strip() in ("", "-1")
            state["count"] = 0 if hidden else GPUS
        return state["count"]

    def properties(device=None):
        if not device_count():
            raise RuntimeError("No CUDA GPUs are available")
        return PROPERTIES

    cuda.device_count = device_count
    cuda.is_available = lambda: device_count() > 0
    cuda.get_device_properties = properties
    cuda.get_device_name = lambda device=None: properties(device).name
    cuda.get_device_capability = lambda device=None: (
        properties(device).major,
        properties(device).minor,
    )
    cuda.current_device = lambda: (properties(), 0)[1]
    cuda.is_bf16_supported = lambda *args, **kwargs: device_count() > 0
    torch.version.cuda = "13.0"
    if real_accelerator is not None:
        real_current = real_accelerator.current_accelerator
        real_accelerator.is_available = lambda: device_count() > 0
        real_accelerator.device_count = device_count
        real_accelerator.current_accelerator = lambda *a, **k: (
            torch.device("cuda") if device_count() else real_current(*a, **k)
        )
    distributed = getattr(torch, "distributed", None)
    if distributed is not None:
        distributed.is_nccl_available = lambda: True


class _SimulateOnImport(importlib.abc.MetaPathFinder):
    """Finds torch as usual and patches it right after it has been imported (no import here)."""

    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            simulate(module)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("GPU_CHECK_SIMULATE") and "torch" not in sys.modules:
    sys.meta_path.insert(0, _SimulateOnImport())
if os.environ.get("GPU_CHECK_SIMULATE"):
    # As on the lent machine, whose notebook tools come from the wheels (gpu_wheels.NEEDED and what
    # they need): no rfc3987-syntax, an optional format checker of jsonschema that JupyterLab's
    # jupyter-events pulls in here. Its grammar takes about a CPU-second to build in every process
    # that imports nbformat (each pytest of the check); jsonschema goes on without it.
    sys.modules.setdefault("rfc3987_syntax", None)
