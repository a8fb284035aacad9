"""The environment report: `python -m course_lib doctor`, and a widget in chapter 01."""
import importlib.metadata as metadata
import platform

import torch

from .device import ENV_VAR, forced_device, mps_available, pick_device


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
        devices.append({"index": i, "name": props.name, "memory_gib": round(props.total_memory / 2**30, 1),
                        "capability": f"{props.major}.{props.minor}"})
    return devices


def widgets_status() -> str:
    """Whether ipywidgets can render in JupyterLab: kernel and front-end packages present and matching."""
    kernel_side, lab_side = _version("ipywidgets"), _version("jupyterlab_widgets")
    if "not installed" in (kernel_side, lab_side):
        return f"will NOT render (ipywidgets {kernel_side}, jupyterlab_widgets {lab_side})"
    if kernel_side.split(".")[0] != "8" or lab_side.split(".")[0] != "3":
        return f"may not render: ipywidgets {kernel_side} needs jupyterlab_widgets 3.x, found {lab_side}"
    return f"ok (ipywidgets {kernel_side}, jupyterlab_widgets {lab_side})"


def environment_report() -> dict:
    """Everything a learner or a helper needs to know about this machine's PyTorch setup."""
    try:
        chosen, forced = str(pick_device()), forced_device()
    except ValueError as err:
        chosen, forced = f"error: {err}", None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "torch": torch.__version__,
        "torch build": "CUDA " + torch.version.cuda if torch.version.cuda else "CPU only" if not mps_available() else "MPS",
        "cuda available": torch.cuda.is_available(),
        "cuda devices": cuda_devices(),
        "cudnn": str(torch.backends.cudnn.version()) if torch.cuda.is_available() else "n/a",
        "mps available": mps_available(),
        "course device": chosen + (f" (forced by {ENV_VAR})" if forced is not None else ""),
        "cpu threads": torch.get_num_threads(),
        "jupyterlab": _version("jupyterlab"),
        "widgets": widgets_status(),
    }


def format_report(report: dict) -> str:
    lines = []
    for key, value in report.items():
        if key == "cuda devices":
            value = "none" if not value else "; ".join(
                f"[{d['index']}] {d['name']}, {d['memory_gib']} GiB, capability {d['capability']}" for d in value)
        lines.append(f"{key:>15}: {value}")
    return "\n".join(lines)


def _cell(key, value) -> str:
    return format_report({key: value}).split(": ", 1)[1]


def doctor_widget():
    """The report as a notebook panel with a Re-check button (chapter 01)."""
    import ipywidgets as W
    from .widgets import report_table

    table = W.HTML(report_table(environment_report(), _cell))
    button = W.Button(description="Re-check", icon="refresh")
    button.on_click(lambda _: setattr(table, "value", report_table(environment_report(), _cell)))
    return W.VBox([W.HTML("<b>Your PyTorch environment</b>"), table, button])
