"""The figures each chapter measures, measured once on a real CUDA GPU (run by gpu_check.sh).

    python benchmarks/gpu_figures.py OUT.json [--only KEY ...] [--skip KEY ...] [--dry-run]

Writes OUT.json in the format course_lib.device reads from docs/gpu/figures.json: ``{"run": {"gpu",
"driver", "torch", "cuda", "date", ...}, "figures": {KEY: {"lines": [...], "values": {...}}}}``, one
key of course_lib.device.FIGURE_KEYS per GPU-only cell. A figure that cannot be measured here gets
``{"missing": why}`` (what the machine lacks, asked before the figure runs: NEEDS) or ``{"error":
what was raised}``; the file is rewritten after each figure, so a run cut short keeps what it
measured. Exit 0, 1 when a figure raised, 77 (skipped) when every figure asked for is missing;
``--dry-run`` says what each key would do and measures nothing. An existing OUT.json from the same
GPU is extended (gpu_check.sh measures torch.compile in a second, timeboxed run). Each figure reuses
the course's own code: the public measurement helpers (measure, memory, training, data) and the
chapters' public experiments (ch05, ch06, ch07), called with the arguments of the cell that shows
the figure, so a figure measures what its cell shows (tests/test_gpu_figure_workloads.py); where it
cannot, course_lib.device.FIGURE_KEYS says how it differs.
"""

import argparse
import contextlib
import datetime
import functools
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from course_lib import ch05_speedups as ch05  # noqa: E402
from course_lib import ch06_out_of_memory as ch06  # noqa: E402
from course_lib import ch07_dp_vs_ddp as ch07  # noqa: E402
from course_lib import data, measure, memory, profiling, training  # noqa: E402
from course_lib.device import FIGURE_KEYS, amp_dtype, pick_device  # noqa: E402
from course_lib.doctor import nvidia_smi_gpus  # noqa: E402

fmt = memory.format_bytes
# Sizes of the measured workloads; --small shrinks them (the CPU smoke test of this script).
S = {
    "width": 4096,
    "batch": 1024,
    "big_batch": 8192,
    "copy_mib": 64,
    "matmul": 4096,
    "oom_limit": 2**30,
    "epoch_items": 384,  # chapter 05's c13: items=384
    "item_args": {},  # chapter 05's c52s2: item_loops' own sizes (batch 256 on CUDA, width 128)
    "ch06_batch": 1024,  # chapter 06's cells: batch_size=1024, wide_mlp's own width (512)
    "cache_mib": 256,  # chapter 06's c33: a 256 MiB tensor
}
SMALL = {
    "width": 32,
    "batch": 16,
    "big_batch": 32,
    "copy_mib": 1,
    "matmul": 64,
    "oom_limit": 2**20,
    "epoch_items": 128,
    "item_args": {"batch": 16, "width": 8},
    "ch06_batch": 16,
    "cache_mib": 1,
}


# ---------------------------------------------------------------- helpers
def mlp(width: int) -> nn.Sequential:
    """`width` features in, two hidden layers of `width`,
    10 scores out (the model of ch05.amp_speed)."""
    return nn.Sequential(
        nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
    )


def plain_step(model, optimizer, x, y):
    """training.train_step on one fixed batch as ``step()`` (cross-entropy)."""
    return functools.partial(training.train_step, model, optimizer, nn.CrossEntropyLoss(), x, y)


def batch_of(n: int, width: int, device, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, width, generator=g).to(device), torch.randint(
        0, 10, (n,), generator=g
    ).to(device)


# ---------------------------------------------------------------- one function per figure key
def device_memory(device):
    before = torch.cuda.memory_allocated(device)
    _label = torch.device("cuda")  # a device label: no memory
    after_label = torch.cuda.memory_allocated(device)
    t = torch.zeros(1024, 1024, device=device)
    after_tensor = torch.cuda.memory_allocated(device)
    del t
    values = {"label_bytes": after_label - before, "tensor_bytes": after_tensor - after_label}
    return [
        f"memory_allocated: +{values['label_bytes']} bytes after torch.device('cuda'), "
        f"+{fmt(values['tensor_bytes'])} after a 1024 x 1024 float32 tensor"
    ], values


def create_on_device(device):
    n = S["matmul"]
    copy = measure.time_fn(
        lambda: torch.randn(n, n).to(device),
        device,
        repeats=10,
        warmup=2,
        label="made on the CPU, then copied",
    )
    direct = measure.time_fn(
        lambda: torch.randn(n, n, device=device),
        device,
        repeats=10,
        warmup=2,
        label="made on the GPU",
    )
    return (
        [
            (
                f"a {n} x {n} tensor: made on the CPU then copied {copy.median:.2f} ms; made "
                f"directly on the GPU {direct.median:.3f} ms ({measure.speed_ratio(copy, direct)})"
            )
        ],
        {"copy_ms": copy.median, "direct_ms": direct.median},
    )


def sync_timing(device):
    n = S["matmul"]
    a = torch.randn(n, n, device=device)
    launched, finished = [], []
    for _ in range(6):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        a @ a
        launched.append((time.perf_counter() - start) * 1000)
        torch.cuda.synchronize(device)
        finished.append((time.perf_counter() - start) * 1000)
    launch_ms, work_ms = (
        sorted(launched[1:])[2],
        sorted(finished[1:])[2],
    )  # medians, first call left out
    return [
        f"{n} x {n} matmul: the Python line returns after {launch_ms:.3f} ms (the launch); "
        f"the GPU finishes after {work_ms:.3f} ms (read only after torch.cuda.synchronize())"
    ], {"launch_ms": launch_ms, "finished_ms": work_ms}


def data_wait(device):
    train_set, _ = data.digits_split(test_fraction=0.2, seed=0)
    lines, values = [], {}
    for times in ch05.starving_experiment(train_set, device, batch_size=64, items=S["epoch_items"]):
        lines.append(
            f"{times.label} (first {S['epoch_items']} digits, batch 64, num_workers=0): waiting "
            "for data "
            f"{sum(times.wait_ms):.0f} ms ({times.wait_share:.0%}), computing "
            f"{sum(times.compute_ms):.0f} ms per epoch"
        )
        values[times.label] = {"wait_ms": sum(times.wait_ms), "compute_ms": sum(times.compute_ms)}
    return lines, values


def pinned_copy(device):
    megabytes = S["copy_mib"]
    pageable = torch.randn(megabytes * 2**20 // 4)
    pinned = pageable.pin_memory()
    n_bytes = pageable.numel() * pageable.element_size()
    lines, values = [], {}
    for label, source in (("pageable", pageable), ("pinned", pinned)):
        timing = measure.time_fn(lambda s=source: s.to(device), device, repeats=10, warmup=2)
        lines.append(
            f"{megabytes} MiB host-to-GPU from {label} memory: {timing.median:.2f} ms, "
            f"{ch05.gb_per_s(n_bytes, timing.median):.1f} GB/s"
        )  # chapter 05's unit
        values[label] = {"ms": timing.median, "gb_per_s": ch05.gb_per_s(n_bytes, timing.median)}
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    pinned.to(device, non_blocking=True)
    returned = (time.perf_counter() - start) * 1000
    torch.cuda.synchronize(device)
    lines.append(
        f"from pinned memory with non_blocking=True, Python goes on after {returned:.3f} ms; "
        f"the copy ends after {(time.perf_counter() - start) * 1000:.2f} ms"
    )
    values["non_blocking_return_ms"] = returned
    return lines, values


def amp(device):
    """Chapter 05's c47: ch05.amp_speed, MLP 4096 wide, batch 1024, every precision it offers."""
    width, batch = S["width"], S["batch"]
    timings = ch05.amp_speed(device, batch=batch, width=width)
    base = timings[0]
    return (
        [f"training step of an MLP {width} wide, batch {batch} (ch05.amp_speed, median of 5):"]
        + [
            f"{t.label} {t.median:.2f} ms"
            + (f" ({measure.speed_ratio(base, t)} than {base.label})" if t is not base else "")
            for t in timings
        ],
        {t.label: t.median for t in timings},
    )


def compile_(device, width: int = 256, batch: int = 256):
    results = ch05.compile_timings(device, batch=batch, width=width, repeats=20)
    eager, compiled = results["eager"], results["torch.compile"]
    return (
        [
            f"first call with torch.compile (compiling): {compiled.warmup_ms[0] / 1000:.1f} s",
            (
                f"training step of a small MLP ({width} wide, batch {batch}): eager "
                f"{eager.median:.3f} ms, compiled {compiled.median:.3f} ms "
                f"({measure.speed_ratio(eager, compiled)})"
            ),
        ],
        {
            "first_call_s": compiled.warmup_ms[0] / 1000,
            "eager_ms": eager.median,
            "compiled_ms": compiled.median,
        },
    )


def nvidia_smi_during_training(device, seconds: float = 3.0):
    x, y = batch_of(S["batch"], S["width"], device)
    model = mlp(S["width"]).to(device)
    step = plain_step(model, torch.optim.SGD(model.parameters(), lr=1e-3), x, y)
    stop = threading.Event()

    def train():
        while not stop.is_set():
            step()
        torch.cuda.synchronize(device)

    worker = threading.Thread(target=train)
    worker.start()
    time.sleep(seconds / 2)
    query = "name,utilization.gpu,memory.used,memory.total"
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    time.sleep(seconds / 2)
    stop.set()
    worker.join()
    row = out.stdout.strip().splitlines()[torch.cuda.current_device()] if out.stdout.strip() else ""
    return (
        [
            f"nvidia-smi during a training loop (MLP {S['width']} wide, batch {S['batch']}; the "
            f"cell asks whenever you run it, often while the GPU is idle): {row}  ({query})"
        ],
        {"row": row},
    )


def benchmark_table(device):
    """Chapter 05's c09e: the same sizes and dtypes, 0.1 s of blocks each (the cell: 0.02 s)."""
    results = ch05.benchmark_measurements(
        device, sizes=(64, 256), dtypes=(torch.float32, torch.bfloat16), min_run_time=0.1
    )
    values = {f"{m.task_spec.sub_label} {m.task_spec.description}": m.median * 1e6 for m in results}
    return [
        f"Timer.blocked_autorange median of a @ a, {label}: {us:.2f} us"
        for label, us in values.items()
    ], values


def profiler_cuda(device):
    train_set, _ = data.digits_split(test_fraction=0.2, seed=0)
    prof, times = ch05.profile_steps(ch05.AugmentedDigits(train_set), device, steps=4)
    events = profiling.events_of(prof)
    totals = profiling.phase_totals(events)
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    top = sorted(prof.key_averages(), key=lambda e: e.self_device_time_total, reverse=True)[:3]
    lines = profiling.compare_splits(totals, times).splitlines()
    lines.append(
        (
            f"{len(kernels)} GPU kernels in the trace, "
            f"{sum(e['dur'] for e in kernels) / 1000:.2f} ms of GPU time; top by self CUDA time: "
        )
        + ", ".join(f"{e.key} {e.self_device_time_total / 1000:.2f} ms" for e in top)
    )
    return lines, {"phases_ms": totals, "wait_share": times.wait_share, "kernels": len(kernels)}


def item_sync(device):
    """Chapter 05's c52s2: ch05.item_loops(device, steps=30) with its own sizes."""
    timings = ch05.item_loops(device, steps=30, **S["item_args"])
    (a, every), (b, once) = timings.items()
    width = S["item_args"].get("width", 128)
    batch = S["item_args"].get("batch", 256 if torch.device(device).type == "cuda" else 64)
    return (
        [
            (
                f"30 training steps, MLP 64-{width}-10, batch {batch}: {a} "
                f"{every.median:.2f} ms, {b} {once.median:.2f} ms "
                f"({measure.speed_ratio(every, once)})"
            )
        ],
        {a: every.median, b: once.median},
    )


def nonblocking_d2h(device):
    n = 2**22 if S["matmul"] > 256 else 2**10
    counts = ch05.readback_race(device, n=n, rounds=5, work=S["matmul"])
    return ch05.show_readback_race(counts, n).splitlines(), {
        "wrong_at_once": [c[0] for c in counts],
        "wrong_after_event": [c[1] for c in counts],
    }


def sync_debug(device):
    found = ch05.hidden_syncs(device, steps=3)
    return (
        [f"{count} x  {line}" for line, count in found.items()]
        or ["no synchronizing call was reported"],
        {"lines": found},
    )


def ch06_train_set():
    """Chapter 06's training digits (its first cell's split)."""
    return data.digits_split(test_fraction=0.2, seed=0)[0]


def estimate_vs_peak(device):
    """Chapter 06's c10: accounting_and_peak of wide_mlp (512 wide), Adam, batch 1024."""
    batch = S["ch06_batch"]
    result = ch06.accounting_and_peak(device, ch06_train_set(), batch_size=batch)
    counted, measured = result["counted"], result["measured"]
    parts = ", ".join(f"{k.replace('_', ' ')} {fmt(v)}" for k, v in counted.items())
    total = sum(counted.values())
    return (
        [
            f"digits wide_mlp (2 hidden layers of 512), Adam, batch {batch}: counted {fmt(total)} "
            f"({parts})",
            (
                f"peak measured by torch.cuda.max_memory_allocated: {fmt(measured['peak'])} "
                f"({measured['peak'] / total:.2f}x the count; before the step "
                f"{fmt(measured['before'])})"
            ),
        ],
        result,
    )


def real_oom(device):
    """Chapter 06's c19: ch06.gpu_oom_demo under a 1 GiB cap, timed until it raises."""
    limit, index = S["oom_limit"], torch.device("cuda", memory.cuda_index(device))
    fraction = getattr(torch.cuda, "get_per_process_memory_fraction", None)  # small_gpu restores it
    before = fraction(index) if fraction else None
    start, error = time.perf_counter(), None
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            ch06.gpu_oom_demo(device, limit_bytes=limit)
    except memory.OutOfMemoryError as err:
        error = err
    seconds = time.perf_counter() - start
    if error is None:
        return [f"no out-of-memory error under a {fmt(limit)} cap"], {"seconds": seconds}
    message = " ".join(str(error).split())[:160]
    lines = [
        (
            f"under a {fmt(limit)} cap, ch06.gpu_oom_demo (wide_mlp 4096 wide, a batch of 2**17 "
            f'digits) raised torch.OutOfMemoryError after {seconds:.2f} s: "{message}..."'
        )
    ]
    values = {"seconds": seconds, "message": message, "fraction_before": before}
    if fraction:
        values["fraction_after"] = fraction(index)
    return lines, values


def empty_cache(device):
    """Chapter 06's c33: ch06.empty_cache_rows, a 256 MiB tensor."""
    rows = ch06.empty_cache_rows(device, mib=S["cache_mib"])
    return (
        [
            f"{when}: allocated {fmt(m['allocated'])}, reserved {fmt(m['reserved'])}"
            for when, m in rows
        ],
        dict(rows),
    )


def amp_memory(device):
    """Chapter 06's c42b: ch06.amp_peak, wide_mlp (512 wide), Adam, batch 1024, no GradScaler."""
    batch = S["ch06_batch"]
    peaks = ch06.amp_peak(device, ch06_train_set(), batch_size=batch)
    dtype = str(amp_dtype(device)).replace("torch.", "")
    return (
        [
            (
                f"training step, digits wide_mlp (512 wide), Adam, batch {batch}: peak "
                f"{fmt(peaks['float32'])} in float32, {fmt(peaks['autocast'])} under autocast "
                f"{dtype}"
                + (f" ({peaks['autocast'] / peaks['float32']:.2f}x)" if peaks["float32"] else "")
            )
        ],
        peaks,
    )


def memory_snapshot(device):
    path, message = ch06.snapshot_oom(device, limit_bytes=S["oom_limit"])
    facts = ch06.read_snapshot(ch06.load_snapshot(path))
    html = ch06.snapshot_html(path)
    shown = {
        k: (v if v is None or k in ("events recorded", "segments held") else fmt(v))
        for k, v in facts.items()
    }
    return (
        [
            f"OOM under a {fmt(S['oom_limit'])} cap, recorded by _record_memory_history: "
            + ", ".join(f"{k} {v}" for k, v in shown.items()),
            (
                f"trace_plot page: {html.stat().st_size / 2**20:.1f} MiB; the message began: "
                f'"{message[:120]}"'
            ),
        ],
        {**facts, "message": message[:300]},
    )


def fragmentation(device):
    results = ch06.fragmentation_demo(device)
    lines = [
        f"{setting}: "
        + ", ".join(
            f"{key.split('.')[0]} {value if key.startswith('segment') else fmt(value)}"
            for key, value in counters.items()
        )
        for setting, counters in results.items()
    ]
    return lines, results


def dp_workload():
    """Chapter 07's c05: a digits MLP and a batch of 64 digits' worth of features."""
    torch.manual_seed(0)
    return training.digits_mlp(), torch.randn(64, data.N_FEATURES)


def data_parallel_on_one_gpu(device):
    """With one GPU, nn.DataParallel is a plain call of its module: no replicas, no gather."""
    model, x = dp_workload()
    model, x = model.to(device).eval(), x.to(device)  # eval: no dropout, so outputs can match
    dp = nn.DataParallel(model)
    calls = {"replicate": 0, "gather": 0}
    for name in calls:
        real = getattr(dp, name)
        setattr(
            dp,
            name,
            lambda *a, _real=real, _name=name, **k: (
                calls.__setitem__(_name, calls[_name] + 1) or _real(*a, **k)
            ),
        )
    with torch.no_grad():
        same = torch.equal(dp(x), model(x))
    return (
        [
            (
                "with 1 GPU, nn.DataParallel(model)(x) is a plain call of model(x) (digits MLP, "
                f"batch 64): device_ids {dp.device_ids}, {calls['replicate']} replicas made, "
                f"{calls['gather']} gathers, the same output: {same}; scatter and gather need 2 "
                "or more GPUs"
            )
        ],
        {"gpus": 1, "same_output": same, **calls},
    )


def data_parallel(device):
    """Chapter 07's c05: DataParallel's phases by hand over every GPU (a digits MLP, batch 64)."""
    n = torch.cuda.device_count()
    if n < 2:
        return data_parallel_on_one_gpu(device)
    model, x = dp_workload()
    lines = ch07.dataparallel_phases(model, x, n)
    return [f"digits MLP, batch 64, {n} GPUs:"] + lines, {"gpus": n, "lines": lines}


FIGURES = {
    "ch01.device_memory": device_memory,
    "ch01.create_on_device": create_on_device,
    "ch05.sync_timing": sync_timing,
    "ch05.data_wait": data_wait,
    "ch05.pinned_copy": pinned_copy,
    "ch05.amp": amp,
    "ch05.nvidia_smi": nvidia_smi_during_training,
    "ch05.benchmark": benchmark_table,
    "ch05.profiler_cuda": profiler_cuda,
    "ch05.item_sync": item_sync,
    "ch05.nonblocking_d2h": nonblocking_d2h,
    "ch05.sync_debug": sync_debug,
    "ch06.estimate_vs_peak": estimate_vs_peak,
    "ch06.real_oom": real_oom,
    "ch06.empty_cache": empty_cache,
    "ch06.amp_memory": amp_memory,
    "ch06.memory_snapshot": memory_snapshot,
    "ch06.fragmentation": fragmentation,
    "ch07.data_parallel": data_parallel,
    "ch05.compile": compile_,  # last: the slowest, and gpu_check.sh runs it on its own
}


def triton_build_tools_missing(device) -> str:
    """What Triton lacks to build its CUDA driver
    module here (torch.compile on CUDA): "" if nothing.

    Triton compiles a small C module at its first use with the compiler named by CC, else gcc,
    else clang, against Python.h of this Python; without them torch.compile fails on CUDA."""
    if torch.device(device).type != "cuda":
        return ""
    lacking = []
    if not any(shutil.which(cc) for cc in (os.environ.get("CC", ""), "gcc", "clang") if cc):
        lacking.append("no C compiler (CC, gcc or clang)")
    include = sysconfig.get_paths().get("include", "")
    if not (Path(include) / "Python.h").exists():
        lacking.append(f"no Python headers (no Python.h in {include})")
    return (
        (
            "missing: " + " / ".join(lacking) + ": Triton builds its driver module with them, so "
            "torch.compile cannot run on CUDA here"
        )
        if lacking
        else ""
    )


# What each figure needs from the machine, asked before
# it runs: (device) -> why it is missing, or "".
NEEDS = {
    "ch05.nvidia_smi": lambda device: (
        ""
        if shutil.which("nvidia-smi")
        else "missing: nvidia-smi is not on the check machine's PATH"
    ),
    "ch05.compile": triton_build_tools_missing,
}


# ---------------------------------------------------------------- the run
def run_info() -> dict:
    gpus = nvidia_smi_gpus()
    cuda = torch.cuda.is_available()
    props = torch.cuda.get_device_properties(0) if cuda else None
    return {
        "gpu": props.name if cuda else None,
        "gpu_memory": fmt(props.total_memory) if cuda else None,
        "gpus": torch.cuda.device_count() if cuda else 0,
        "driver": gpus[0][1] if gpus else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
    }


def write(path: Path, result: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def measure_all(path: Path, keys: list) -> dict:
    info = run_info()
    result = {"run": info, "figures": {}}
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = {}
    if old.get("run", {}).get("gpu") == info["gpu"]:
        result["figures"] = old.get("figures", {})
    if not info["gpu"]:
        result["run"]["reason"] = "no CUDA GPU: torch.cuda.is_available() is False"
        write(path, result)
        print(result["run"]["reason"])
        return result
    device = pick_device()
    for key in keys:
        start = time.perf_counter()
        try:
            why = NEEDS.get(key, lambda d: "")(device)
            out = None if why else FIGURES[key](device)
            entry = {"missing": why} if why else {"lines": out[0], "values": out[1]}
        except Exception as err:  # noqa: BLE001 - one figure's failure is recorded, the others go on
            entry = {"error": f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"}
            traceback.print_exc()
        try:
            torch.cuda.empty_cache()  # the next figure starts from a clean cache
        except Exception:  # noqa: BLE001 - a broken CUDA context is already recorded above
            pass
        entry["seconds"] = round(time.perf_counter() - start, 2)
        result["figures"][key] = entry
        write(path, result)
        print(
            f"{key}: "
            + " | ".join(entry.get("lines") or [entry.get("missing") or entry.get("error")]),
            flush=True,
        )
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", default=None, help="measure these keys only")
    parser.add_argument("--skip", nargs="*", default=[], help="leave these keys out")
    parser.add_argument("--small", action="store_true", help="tiny workloads (the CPU smoke test)")
    parser.add_argument(
        "--dry-run", action="store_true", help="say what each key would do; measure nothing"
    )
    args = parser.parse_args(argv)
    if args.small:
        S.update(SMALL)
    wanted = [k for k in (args.only or FIGURES) if k not in args.skip]
    unknown = [k for k in wanted + args.skip if k not in FIGURE_KEYS]
    if unknown:
        parser.error(f"unknown figure keys {unknown}; see course_lib.device.FIGURE_KEYS")
    os.environ.setdefault("COURSE_DEVICE", "cuda" if torch.cuda.is_available() else "cpu")
    if args.dry_run:
        return dry_run(wanted)
    result = measure_all(args.out, wanted)
    entries = [result["figures"].get(k, {}) for k in wanted]
    if any("error" in e for e in entries):
        return 1
    if wanted and all("missing" in e for e in entries):
        print("; ".join(sorted({e["missing"] for e in entries})))  # the step's summary line
        return SKIPPED
    return 0


SKIPPED = (
    77  # exit code: nothing could be measured here, and why was said (gpu_check.sh: "skipped")
)


def dry_run(keys: list) -> int:
    """What measure_all would do for each key on this machine, measuring nothing."""
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    for key in keys:
        print(
            f"{key}: "
            + (NEEDS.get(key, lambda d: "")(device) or f"would measure ({FIGURE_KEYS[key]})")
        )
    print(f"dry run: {len(keys)} figure(s) planned on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
