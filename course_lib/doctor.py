"""The environment report: `python -m course_lib doctor`, and a widget in chapter 01.

It also notices an NVIDIA GPU that PyTorch cannot use (including one it sees but was not built
for: `device.cuda_problem`). On Linux the PyPI wheel of torch 2.13
is itself a CUDA 13 build: it needs an NVIDIA driver of the 580 series or newer, and with an
older driver ``torch.cuda.is_available()`` is simply False and the course runs on the CPU.
"""

import importlib.metadata as metadata
import os
import platform
import shutil
import subprocess

import torch

from .device import ENV_VAR, cuda_problem, forced_device, mps_available, pick_device
from .i18n import tr
from .i18n.layout import rjust


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def cuda_devices() -> list:
    """Name, memory and compute capability of every visible CUDA GPU (chapter 01)."""
    devices = []
    for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
        props = torch.cuda.get_device_properties(i)
        devices.append(
            {
                "index": i,
                "name": props.name,
                "memory_gib": round(props.total_memory / 2**30, 1),
                "capability": f"{props.major}.{props.minor}",
            }
        )
    return devices


# Oldest NVIDIA driver (major version, Linux) that runs a torch built for each CUDA major version.
MIN_DRIVER = {13: 580, 12: 525, 11: 450}
SEE_WHY = 'python -c "import torch; torch.cuda.init()"'


def nvidia_smi_gpus() -> list:
    """(name, driver version) of each GPU nvidia-smi
    lists; [] when it is absent or fails (doctor)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [line.rsplit(",", 1) for line in out.stdout.splitlines() if "," in line]
    return [(name.strip(), driver.strip()) for name, driver in rows] if out.returncode == 0 else []


def _major(version: str) -> int:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return 0


def _cpu_only_build(gpus, driver):
    if torch.version.cuda is None:
        return (
            f"this PyTorch ({torch.__version__}) is a CPU-only build: it cannot use the "
            f"{gpus} that nvidia-smi shows, and the course runs on the CPU. On Linux, PyPI's "
            f"torch is the CUDA build (CUDA 13, for driver 580 or newer; yours is {driver}): "
            "in the course's .venv run "
            "`python -m pip install --force-reinstall torch==2.13.0`. Elsewhere, or for an "
            "older driver, pick a CUDA build on pytorch.org (Get started)."
        )


def _driver_too_old(gpus, driver):
    cuda_major = _major(torch.version.cuda or 0)
    need = MIN_DRIVER.get(cuda_major)
    if need and _major(driver) < need:
        return (
            f"NVIDIA driver {driver} is too old for this PyTorch, a CUDA {torch.version.cuda} "
            f"build that needs driver {need} or newer: torch.cuda.is_available() is False and "
            f"the course runs on the CPU. Update the NVIDIA driver (to the {need} series or "
            "newer), or install a PyTorch built for an older CUDA that your driver supports "
            "(pytorch.org, Get started)."
        )


def _gpus_hidden(gpus, driver):
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1", "none", "NoDevFiles"):
        return (
            f"CUDA_VISIBLE_DEVICES={hidden!r} hides the {gpus} from PyTorch; unset it to use the "
            "GPU."
        )


def _cuda_unavailable(gpus, driver):
    return (
        f"nvidia-smi shows {gpus} (driver {driver}) but torch.cuda.is_available() is False, so the "
        f"course runs on the CPU. `{SEE_WHY}` prints PyTorch's reason (often: a container started "
        "without GPU access, or a driver updated without a reboot)."
    )


# The first row whose check says something explains why torch cannot use the GPU (doctor).
GPU_PROBLEMS = (_cpu_only_build, _gpus_hidden, _driver_too_old, _cuda_unavailable)


def gpu_problem(gpus=None) -> str:
    """Why PyTorch cannot use an NVIDIA GPU that nvidia-smi sees (or one it sees but has no
    kernels for), and what to do; "" when none (doctor)."""
    if torch.cuda.is_available():
        return cuda_problem()
    gpus = nvidia_smi_gpus() if gpus is None else gpus
    if not gpus:
        return ""
    names = ", ".join(sorted({name for name, _ in gpus}))
    driver = gpus[0][1]
    for check in GPU_PROBLEMS:
        said = check(names, driver)
        if said:
            return said
    return ""


def widgets_status() -> str:
    """Whether ipywidgets can render in JupyterLab:
    kernel and front-end packages present and matching."""
    kernel_side, lab_side = _version("ipywidgets"), _version("jupyterlab_widgets")
    if "not installed" in (kernel_side, lab_side):
        return f"will NOT render (ipywidgets {kernel_side}, jupyterlab_widgets {lab_side})"
    if kernel_side.split(".")[0] != "8" or lab_side.split(".")[0] != "3":
        return (
            f"may not render: ipywidgets {kernel_side} needs jupyterlab_widgets 3.x, found "
            f"{lab_side}"
        )
    return f"ok (ipywidgets {kernel_side}, jupyterlab_widgets {lab_side})"


def cudnn_version() -> str:
    """cuDNN's version, or why it cannot be had: torch 2.15's cuDNN (9.11 and newer) refuses a GPU
    below capability 7.5 (Kaggle's P100) with a RuntimeError, which the report must not die of."""
    if not torch.cuda.is_available():
        return "n/a"
    try:
        return str(torch.backends.cudnn.version())
    except (RuntimeError, ValueError) as err:
        said = str(err).splitlines()[0]
        return tr(f"unusable: {said}")


def environment_report() -> dict:
    """Everything a learner or a helper needs to know about this machine's PyTorch setup."""
    try:
        chosen, forced = str(pick_device()), forced_device()
    except ValueError as err:
        chosen, forced = f"error: {err}", None
    gpus = nvidia_smi_gpus()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "torch": torch.__version__,
        "torch build": "CUDA " + torch.version.cuda
        if torch.version.cuda
        else "CPU only"
        if not mps_available()
        else "MPS",
        "cuda available": torch.cuda.is_available(),
        "cuda devices": cuda_devices(),
        "cudnn": cudnn_version(),
        "mps available": mps_available(),
        "nvidia-smi": "; ".join(f"{name}, driver {driver}" for name, driver in gpus) or "not found",
        "gpu problem": gpu_problem(gpus) or "none",
        "course device": chosen + (f" (forced by {ENV_VAR})" if forced is not None else ""),
        "cpu threads": torch.get_num_threads(),
        "jupyterlab": _version("jupyterlab"),
        "widgets": widgets_status(),
    }


def format_value(key: str, value) -> str:
    """One value of the report as a person reads it, in the course's language."""
    if key == "cuda devices":
        return (
            tr("none")
            if not value
            else "; ".join(
                tr(
                    f"[{d['index']}] {d['name']}, {d['memory_gib']} GiB, "
                    f"capability {d['capability']}"
                )
                for d in value
            )
        )
    return tr(str(value))


def format_report(report: dict) -> str:
    """The report as aligned lines `key: value` (keys and values in the course's language)."""
    return "\n".join(
        f"{rjust(tr(key), 15)}: {format_value(key, value)}" for key, value in report.items()
    )


def _cell(key, value) -> str:
    return format_value(key, value)


def doctor_widget():
    """The report as a notebook panel with a Re-check button (chapter 01)."""
    import ipywidgets as W

    from .widgets import report_table, widget

    table = widget(W.HTML, report_table(environment_report(), _cell))
    button = widget(W.Button, description=tr("Re-check"), icon="refresh")
    button.on_click(lambda _: setattr(table, "value", report_table(environment_report(), _cell)))
    title = widget(W.HTML, f"<b>{tr('Your PyTorch environment')}</b>")
    return widget(W.VBox, [title, table, button])
