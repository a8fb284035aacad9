"""PyTorch's own profiler, read next to the course's hand-made measurements (chapters 05, 06).

Chapter 05 timed each step's wait for data and its compute with `measure.loop_breakdown`;
here `torch.profiler` records the same steps, with the four phases labelled by
`record_function` (data, forward, backward, step). Its trace file (Chrome's trace format, which
Perfetto and chrome://tracing open) is parsed once into a list of events, from which the
timeline is drawn and the phases are added up. Chapter 06 profiles one training step with
``profile_memory=True``: the memory timeline by category (parameters, gradients, optimizer
state, activations...) set beside the course's own estimate.
"""

import contextlib
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from . import measure
from .collector import collector_paused
from .i18n import tr
from .i18n.layout import Table
from .i18n.plots import plot_text

PHASES = ("data", "forward", "backward", "step")  # the record_function labels of one training step
PHASE_COLORS = {
    "data": "tab:orange",
    "forward": "tab:blue",
    "backward": "tab:purple",
    "step": "tab:green",
}
OUTPUT_FOLDER = "pytorch-gpu-course"  # under the temp folder: where traces and HTML files go


def output_path(name: str) -> Path:
    """A file in the course's output folder (the system's temp folder, read at each call: a
    graded process has its own), created if needed (chapters 05, 06)."""
    folder = Path(tempfile.gettempdir()) / OUTPUT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def activities(device) -> list:
    """What the profiler records on `device`: CPU activity
    always, CUDA kernels on a CUDA GPU (chapter 05)."""
    kinds = [ProfilerActivity.CPU]
    if torch.device(device).type == "cuda":
        kinds.append(ProfilerActivity.CUDA)
    return kinds


def labelled_batches(loader):
    """The loader's batches, each fetched inside ``record_function("data")`` (chapter 05)."""
    batches = iter(loader)
    while True:
        with record_function("data"):
            try:
                batch = next(batches)
            except StopIteration:
                return
        yield batch


@contextlib.contextmanager
def native_stderr_quiet():
    """Silence what C++ code writes to this process's stderr
    (file descriptor 2) for a moment (chapters 05, 06).

    torch 2.13's profiler (Kineto) logs a "USDT: ... profiler_start" line there when it starts and a
    "profiler_stop" line when it stops; Python's own warnings and errors do not go through it.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def profiled(device, **options):
    """``with profiled(device, ...) as prof:``: torch.profiler.profile
    over the block, without Kineto's log lines."""
    prof = profile(activities=activities(device), **options)
    with native_stderr_quiet():
        prof.start()
    try:
        yield prof
    finally:
        with native_stderr_quiet():
            prof.stop()


def profile_training(step, loader, device, steps: int = 4, label: str = "", **options):
    """Profile `steps` training steps: ``(profiler, LoopTimes)``,
    the hand-made timings of the same steps (chapter 05).

    `step(x, y)` should label its forward, backward and step with `record_function` (chapter
    05's ``train_step(..., phase=record_function)``); the batches are labelled "data" here.
    `options` go to `torch.profiler.profile` (e.g. ``profile_memory=True``).
    """
    with profiled(device, **options) as prof:
        times = measure.loop_breakdown(
            step, labelled_batches(loader), device, label=label, max_steps=steps
        )
    return prof, times


def export_trace(prof, name: str = "trace.json") -> Path:
    """Write the profile as a Chrome/Perfetto trace
    file in the output folder; its path (chapter 05)."""
    path = output_path(name)
    prof.export_chrome_trace(str(path))
    return path


def trace_events(path) -> list:
    """The events of a trace file (its "traceEvents" list), parsed once, with the collector
    paused (chapter 05)."""
    text = Path(path).read_text(encoding="utf-8")
    with collector_paused():
        return json.loads(text)["traceEvents"]


def events_of(prof) -> list:
    """A profile's trace events, through a trace file in a temporary folder (checks, tests)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        prof.export_chrome_trace(str(path))
        return trace_events(path)


def spans(events, category: str = "user_annotation", names=PHASES) -> list:
    """(name, start ms, duration ms) of the complete events of `category` named in `names`,
    in time order, the clock starting at the first of them (chapter 05)."""
    chosen = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") == category
        and (names is None or e.get("name") in names)
    ]
    if not chosen:
        return []
    t0 = min(e["ts"] for e in chosen)
    return sorted((e["name"], (e["ts"] - t0) / 1000, e["dur"] / 1000) for e in chosen)


def phase_totals(events, phases=PHASES) -> dict:
    """Milliseconds spent in each phase over all
    profiled steps, from the CPU's labels (chapter 05)."""
    totals = dict.fromkeys(phases, 0.0)
    for name, _, ms in spans(events, names=phases):
        totals[name] += ms
    return totals


def first_time(events) -> float:
    """The earliest timestamp (µs) among the complete
    events, the zero of the timeline (chapter 05)."""
    return min(e["ts"] for e in events if e.get("ph") == "X")


def lanes(events) -> dict:
    """Lane name -> [(start ms, duration ms)]: one lane
    per phase, and the GPU's kernels if any (chapter 05)."""
    t0 = first_time(events)
    rows = {phase: [] for phase in PHASES}
    for e in events:
        if e.get("ph") != "X":
            continue
        lane = (
            e["name"]
            if e.get("cat") == "user_annotation" and e.get("name") in rows
            else "GPU kernels"
            if e.get("cat") == "kernel"
            else None
        )
        if lane is not None:
            rows.setdefault(lane, []).append(((e["ts"] - t0) / 1000, e["dur"] / 1000))
    return {lane: bars for lane, bars in rows.items() if bars}


def plot_timeline(events, title: str = "the profiled steps, from the trace file"):
    """The trace's phases (and GPU kernels) as bars over time, one lane each (chapter 05)."""
    import matplotlib.pyplot as plt

    rows = lanes(events)
    fig, ax = plt.subplots(figsize=(9.5, 0.6 + 0.55 * len(rows)))
    # fixed margins (in inches), not layout="constrained": it measures every label again, about
    # half of the drawing; the notebook's display crops the figure to what it draws
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.11, right=0.99, bottom=0.5 / height, top=1 - 0.3 / height)
    for i, (lane, bars) in enumerate(reversed(list(rows.items()))):
        ax.broken_barh(bars, (i - 0.4, 0.8), color=PHASE_COLORS.get(lane, "tab:gray"))
    names = [lane if lane in PHASES else plot_text(lane) for lane in reversed(list(rows))]
    ax.set_yticks(range(len(rows)), names)  # the phases keep their record_function names
    ax.set(xlabel=plot_text("ms since the first event"), title=plot_text(title))
    ax.grid(axis="x", alpha=0.3)
    plt.close(fig)  # returned, so it is shown once (as the cell's value), not twice
    return fig


def sort_key(device) -> str:
    """key_averages' most useful order: time spent in each
    operator itself, on the device that computes (chapter 05)."""
    return (
        "self_device_time_total" if torch.device(device).type == "cuda" else "self_cpu_time_total"
    )


def averages(prof):
    """``prof.key_averages()``, read with the collector paused (chapters 05, 06)."""
    with collector_paused():
        return prof.key_averages()


# (header, what a FunctionEventAvg gives, in microseconds or a count, device columns only):
# key_averages().table() prints 7 columns on a CPU and 11 with CUDA, 132 to 190 characters wide,
# which wraps in a notebook; these are the ones the chapter reads
OPERATOR_COLUMNS = (
    ("Self CPU", lambda e: e.self_cpu_time_total, False),
    ("CPU total", lambda e: e.cpu_time_total, False),
    ("Self CUDA", lambda e: e.self_device_time_total, True),
    ("CUDA total", lambda e: e.device_time_total, True),
)
TABLE_WIDTH = 100  # characters: a notebook's output at 1280 px shows about 110


def _cut(name: str, columns: int) -> str:
    return name if len(name) <= columns else name[: columns - 3] + "..."


def operator_rows(prof, device, rows: int = 8) -> tuple:
    """(header, rows, self time total in ms) of the operators that spent the most time in
    themselves, on the device that computes (chapter 05)."""
    cuda = torch.device(device).type == "cuda"
    columns = [(h, get) for h, get, on_device in OPERATOR_COLUMNS if cuda or not on_device]
    events = list(averages(prof))
    own = (lambda e: e.self_device_time_total) if cuda else (lambda e: e.self_cpu_time_total)
    total = sum(own(e) for e in events) or 1.0
    top = sorted(events, key=own, reverse=True)[:rows]
    header = ["Name", *(h for h, _ in columns), "Self %", "Calls"]
    name_width = min(46, TABLE_WIDTH - sum(len(h) + 2 for h in header[1:]))
    body = [
        [_cut(e.key, name_width)]
        + [f"{get(e) / 1000:.2f}" for _, get in columns]
        + [f"{own(e) / total:.1%}", str(e.count)]
        for e in top
    ]
    header = [tr(h) for h in header]
    return header, body, total / 1000


def top_operators(prof, device, rows: int = 8) -> Table:
    """The profiler's operators, sorted by their own (self) time: the columns of
    key_averages().table() that matter, at most TABLE_WIDTH characters wide (chapter 05)."""
    header, body, total = operator_rows(prof, device, rows)
    where = "CUDA" if torch.device(device).type == "cuda" else "CPU"
    return Table(
        body, header, notes=[tr(f"times in ms; self {where} time of all operators: {total:.2f} ms")]
    )


def label_totals(prof, phases=PHASES) -> dict:
    """Milliseconds per phase as key_averages() adds them
    up (CPU time of each label) (chapters 05, tests)."""
    found = {e.key: e.cpu_time_total / 1000 for e in averages(prof)}
    return {phase: found.get(phase, 0.0) for phase in phases}


def data_share(totals: dict) -> float:
    """The share of the labelled time spent in "data" (chapter 05)."""
    total = sum(totals.values())
    return totals.get("data", 0.0) / total if total else float("nan")


def compare_splits(totals: dict, times: measure.LoopTimes) -> str:
    """The profiler's data-wait vs compute split beside
    the hand-made one of the same steps (chapter 05)."""
    compute = sum(v for k, v in totals.items() if k != "data")
    wait, work = sum(times.wait_ms), sum(times.compute_ms)
    return "\n".join(
        tr(line)
        for line in [
            (
                f"torch.profiler (labels): data {totals['data']:.1f} ms "
                f"({data_share(totals):.0%}), forward + backward + step {compute:.1f} ms"
            ),
            (
                f"course timer (perf_counter): wait {wait:.1f} ms ({times.wait_share:.0%}), "
                f"compute {work:.1f} ms (which also holds the copy to the device and the "
                "synchronize)"
            ),
            (
                "difference in the data share: "
                f"{abs(data_share(totals) - times.wait_share) * 100:.1f} percentage points"
            ),
        ]
    )


# ---------------------------------------------------------------- memory (chapter 06)
# torch's memory timeline columns, in its own order (the
# legend of its HTML plot), named as chapter 06 does
TIMELINE_PARTS = {
    "PARAMETER": "weights",
    "OPTIMIZER_STATE": "optimizer_state",
    "INPUT": "inputs (the batch)",
    "TEMPORARY": "temporaries",
    "ACTIVATION": "activations",
    "GRADIENT": "grads",
    "AUTOGRAD_DETAIL": "autograd detail",
    None: "unknown",
}


def memory_profile(step, steps: int = 2, device="cpu"):
    """Profile `steps` calls of ``step()`` with memory
    recording on: what the memory timeline needs (chapter 06).

    The timeline needs ``profile_memory=True`` (allocations), ``record_shapes=True`` and
    ``with_stack=True`` (to tell parameters, gradients and activations apart).
    """
    with profiled(device, profile_memory=True, record_shapes=True, with_stack=True) as prof:
        for _ in range(steps):
            step()
    return prof


def timeline_columns() -> list:
    """The category of each column of torch's memory
    timeline, in its order (torch's own plot legend)."""
    from torch.profiler._memory_profiler import _CATEGORY_TO_INDEX

    return [
        None if c is None else c.name
        for c in sorted(_CATEGORY_TO_INDEX, key=_CATEGORY_TO_INDEX.get)
    ]


def memory_timeline(prof, device="cpu") -> dict:
    """torch's memory timeline of a profile: ``{"ms": [...],
    "parts": {name: [bytes...]}, "said": warning}`` (chapter 06).

    Written by ``prof.export_memory_timeline(path.json, device)``, read back; torch 2.13 says the
    call is deprecated (in favour of CUDA's memory snapshots): its words are kept in "said".
    """
    device = torch.device(device)
    if (
        device.type == "cuda" and device.index is None
    ):  # the timeline matches tensors by device index
        device = torch.device("cuda", torch.cuda.current_device())
    path = output_path("memory_timeline.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof.export_memory_timeline(str(path), device=str(device))
    times, sizes = json.loads(path.read_text(encoding="utf-8"))
    start = times[0] if times else 0
    names = [TIMELINE_PARTS.get(c, str(c)) for c in timeline_columns()]
    parts = {name: [row[i + 1] for row in sizes] for i, name in enumerate(names)}
    said = next(
        (
            f"{w.category.__name__}: {w.message}"
            for w in caught
            if issubclass(w.category, FutureWarning)
        ),
        "",
    )
    return {"ms": [(t - start) / 1000 for t in times], "parts": parts, "said": said}


def at_peak(timeline: dict) -> dict:
    """Bytes per part at the moment the timeline's total peaks (chapter 06)."""
    parts = timeline["parts"]
    totals = [sum(column) for column in zip(*parts.values())]
    i = max(range(len(totals)), key=totals.__getitem__)
    return {name: values[i] for name, values in parts.items()}


def at_end(timeline: dict) -> dict:
    """Bytes per part after the last recorded event: what stays between steps (chapter 06)."""
    return {name: values[-1] if values else 0 for name, values in timeline["parts"].items()}


def plot_memory_timeline(
    timeline: dict, estimate: dict = None, title: str = "memory over the profiled steps"
):
    """A stacked area per part of torch's memory timeline;
    the course's estimate as a dashed line (chapter 06)."""
    import matplotlib.pyplot as plt

    shown = {name: values for name, values in timeline["parts"].items() if any(values)}
    fig, ax = plt.subplots(figsize=(10, 3.8))
    # fixed margins, not layout="constrained" (it measures every label again: about half of the
    # drawing); the legend hangs right of the axes and the notebook's display crops to it
    fig.subplots_adjust(left=0.07, right=0.8, bottom=0.13, top=0.92)
    mib = [[v / 2**20 for v in values] for values in shown.values()]
    ax.stackplot(
        timeline["ms"],
        *mib,
        labels=[plot_text(name.replace("_", " ")) for name in shown],
        step="post",
        alpha=0.8,
    )
    if estimate:
        ax.axhline(
            sum(estimate.values()) / 2**20,
            color="black",
            linestyle="--",
            label=plot_text("the course's estimate"),
        )
    ax.set(xlabel=plot_text("ms since the first allocation"), ylabel="MiB", title=plot_text(title))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.grid(alpha=0.3)
    plt.close(fig)  # returned, so it is shown once (as the cell's value), not twice
    return fig


def memory_table(prof, device="cpu", rows: int = 6) -> str:
    """key_averages sorted by the memory each operator allocated itself (chapter 06)."""
    key = (
        "self_device_memory_usage"
        if torch.device(device).type == "cuda"
        else "self_cpu_memory_usage"
    )
    return averages(prof).table(sort_by=key, row_limit=rows, max_name_column_width=40)


@contextlib.contextmanager
def _python_frames_ignored():
    """For a moment, torch's memory viewer sees no Python frames in a profile (nor their names)."""
    from torch._C._profiler import _EventType

    saved = _EventType.PyCall, _EventType.PyCCall
    _EventType.PyCall = _EventType.PyCCall = object()
    try:
        yield
    finally:
        _EventType.PyCall, _EventType.PyCCall = saved


def memory_html(prof, name: str = "memory_profile.html") -> Path:
    """The memory viewer's HTML page of a CPU or GPU profile (chapter 06).

    The page is torch.cuda._memory_viz.profile_plot's. With ``with_stack=True`` torch's profiler
    now and then keeps a Python frame's name as broken bytes, and reading it raises
    UnicodeDecodeError (pytorch/pytorch#136040): the page is then drawn without the Python call
    stacks of the allocations.
    """
    from torch.cuda import _memory_viz

    try:
        page = _memory_viz.profile_plot(prof)
    except UnicodeDecodeError:
        with _python_frames_ignored():
            page = _memory_viz.profile_plot(prof)
    path = output_path(name)
    path.write_text(page, encoding="utf-8")
    return path


__all__ = [
    "PHASES",
    "at_peak",
    "compare_splits",
    "export_trace",
    "label_totals",
    "labelled_batches",
    "lanes",
    "memory_html",
    "memory_profile",
    "memory_table",
    "memory_timeline",
    "phase_totals",
    "plot_memory_timeline",
    "plot_timeline",
    "profile_training",
    "spans",
    "top_operators",
    "trace_events",
]
