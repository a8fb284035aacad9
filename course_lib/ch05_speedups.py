"""Chapter 05, speedups: is the GPU starving, workers, pinned memory, mixed precision, torch.compile.

Every number in this chapter is measured on the learner's machine by the functions below; the
notebook prints and plots them and draws no conclusion that the numbers did not show. The
exercises are checked on the CPU: autocast and GradScaler work there for real, and a simulated
clock stands in for a GPU that runs asynchronously.
"""
import math
import os
import shutil
import statistics
import subprocess
import time
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

from . import data, measure, training
from .device import gpu_only, mps_available
from .exercises import Chapter, Fail, Test
from .probes import as_number, checker_threads, make_rig, tensor_fail

chapter = Chapter(__name__, title="Speedups, measured")


# ---------------------------------------------------------------- 1. a loader that does real CPU work
class AugmentedDigits(Dataset):
    """The digits with a fresh random rotation, zoom and shift each time an item is read (chapter 05).

    Each read upsamples the 8x8 digit to `size` x `size`, applies a random affine transform
    (``affine_grid`` + ``grid_sample``) and pools it back to 8x8: real per-item CPU work, as
    decoding and augmenting images is in a real pipeline. Defined here, not in the notebook, so
    worker processes started with "spawn" (macOS, Windows) can import it.
    """

    def __init__(self, base: Dataset, size: int = 32, degrees: float = 15.0, shift: float = 0.1,
                 zoom: float = 0.1):
        self.base, self.size = base, size
        self.degrees, self.shift, self.zoom = degrees, shift, zoom

    def __len__(self) -> int:
        return len(self.base)

    def _theta(self) -> torch.Tensor:
        angle = math.radians(self.degrees) * (2 * torch.rand(()).item() - 1)
        scale = 1 + self.zoom * (2 * torch.rand(()).item() - 1)
        dx, dy = (self.shift * (2 * torch.rand(2) - 1)).tolist()
        cos, sin = math.cos(angle) * scale, math.sin(angle) * scale
        return torch.tensor([[[cos, -sin, dx], [sin, cos, dy]]])

    def __getitem__(self, index):
        x, y = self.base[index]
        image = F.interpolate(x.reshape(1, 1, 8, 8), size=self.size, mode="bilinear", align_corners=False)
        grid = F.affine_grid(self._theta(), list(image.shape), align_corners=False)
        image = F.grid_sample(image, grid, align_corners=False)
        return F.avg_pool2d(image, self.size // 8).reshape(64), y


def train_step(model, optimizer, criterion, device):
    """The training template's loop body as a function ``step(x, y)`` (chapter 05 times it)."""
    def step(x, y):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        criterion(model(x), y).backward()
        optimizer.step()
    return step


def fresh_step(device, seed: int = 0):
    """A new digits MLP with Adam and cross-entropy on `device`, as a step function (chapter 05)."""
    torch.manual_seed(seed)
    model = training.digits_mlp().to(device)
    return train_step(model, torch.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss(), device)


def starving_experiment(train_set, device, batch_size: int = 64, **loader_options) -> list:
    """One epoch each on the plain and on the augmented digits: data-wait vs compute per step (chapter 05)."""
    results = []
    for label, dataset in (("digits in memory", train_set), ("augmented on the fly", AugmentedDigits(train_set))):
        loader = data.make_loader(dataset, device, batch_size, shuffle=True, **loader_options)
        results.append(measure.loop_breakdown(fresh_step(device), loader, device, label=label))
    return results


def nvidia_smi() -> None:
    """Print nvidia-smi's one-line-per-GPU view (utilization, memory), or say why not (chapter 05)."""
    if not gpu_only("nvidia-smi: the GPU's utilization and memory"):
        return
    exe = shutil.which("nvidia-smi")
    if exe is None:
        print("[GPU only] nvidia-smi is not on this machine's PATH (a container without the NVIDIA tools?)")
        return
    query = "index,name,utilization.gpu,memory.used,memory.total"
    out = subprocess.run([exe, f"--query-gpu={query}", "--format=csv"], capture_output=True, text=True,
                         timeout=30)
    print(out.stdout or out.stderr)


# ---------------------------------------------------------------- 2. num_workers
def time_epochs(dataset, device, num_workers: int, persistent: bool = False, epochs: int = 2,
                batch_size: int = 64) -> list:
    """Milliseconds per epoch (worker start-up included) for one loader setting (chapter 05)."""
    options = dict(persistent_workers=True) if persistent and num_workers else {}
    loader = data.make_loader(dataset, device, batch_size, shuffle=True, num_workers=num_workers, **options)
    step, times = fresh_step(device), []
    for _ in range(epochs):
        with measure.Timer(device) as t:
            for x, y in loader:
                step(x, y)
        times.append(t.ms)
    return times


def workers_experiment(dataset, device, settings=((0, False), (2, False), (2, True)), epochs: int = 2) -> dict:
    """Epoch times for each (num_workers, persistent_workers) setting: label -> [ms per epoch] (chapter 05)."""
    results = {}
    for workers, persistent in settings:
        label = f"num_workers={workers}" + (", persistent" if persistent else "")
        results[label] = time_epochs(dataset, device, workers, persistent, epochs)
    return results


def plot_epochs(results: dict):
    """Stacked bars: epoch 1 and epoch 2 of each loader setting (chapter 05)."""
    n = max(len(v) for v in results.values())
    return measure.plot_stacked(results, parts=tuple(f"epoch {i + 1}" for i in range(n)),
                                title="time for the same epochs, per loader setting", ylabel="ms")


def machine_cores() -> str:
    """How many CPU cores this process may use, and torch's compute threads (chapter 05)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"CPU cores usable here: {usable}; torch compute threads in this process: {torch.get_num_threads()}"


# ---------------------------------------------------------------- 3. pinned memory
def accelerator_present() -> bool:
    """True when PyTorch sees a GPU that pinned memory serves (chapter 05)."""
    return torch.cuda.is_available() or mps_available()


def pinned_batch(dataset, batch_size: int = 64) -> torch.Tensor:
    """The first batch of a DataLoader built with pin_memory=True, whatever the device (chapter 05)."""
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, pin_memory=True)
    return next(iter(loader))[0]


def copy_benchmark(device, megabytes: int = 64, repeats: int = 5) -> dict:
    """GPU only: host-to-GPU copy time from pageable vs pinned memory, and what non_blocking returns (chapter 05)."""
    n = megabytes * 2**20 // 4
    pageable = torch.randn(n)
    pinned = pageable.pin_memory()
    out = {}
    for label, source in (("pageable", pageable), ("pinned", pinned)):
        timing = measure.time_fn(lambda: source.to(device), device, repeats=repeats, label=f"copy from {label}")
        out[label] = timing
        print(f"{timing}  -> {megabytes / 1024 / (timing.median / 1000):.1f} GB/s")
    for label, source in (("pageable", pageable), ("pinned", pinned)):
        measure.synchronize(device)
        start = time.perf_counter()
        source.to(device, non_blocking=True)
        returned = (time.perf_counter() - start) * 1000
        measure.synchronize(device)
        done = (time.perf_counter() - start) * 1000
        out[f"non_blocking {label}"] = (returned, done)
        print(f".to(device, non_blocking=True) from {label}: back in Python after {returned:.2f} ms, "
              f"copy finished after {done:.2f} ms")
    return out


def async_demo(device, n: int = 4096) -> None:
    """GPU only: a big matrix product timed without and with synchronize (chapter 05)."""
    a = torch.randn(n, n, device=device)
    a @ a  # warm-up
    measure.synchronize(device)
    start = time.perf_counter()
    a @ a
    launched = (time.perf_counter() - start) * 1000
    measure.synchronize(device)
    finished = (time.perf_counter() - start) * 1000
    print(f"{n}x{n} matmul: the Python line returned after {launched:.3f} ms; "
          f"the GPU finished after {finished:.3f} ms")


# ---------------------------------------------------------------- 4. mixed precision
def float_formats() -> str:
    """float32, float16 and bfloat16 side by side: bits, largest value, smallest normal, precision (chapter 05)."""
    lines = [f"{'dtype':>15} {'bits':>4} {'largest':>11} {'smallest normal':>16} {'eps (precision)':>16}"]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        info = torch.finfo(dtype)
        lines.append(f"{str(dtype):>15} {info.bits:>4} {info.max:>11.3g} {info.tiny:>16.3g} {info.eps:>16.3g}")
    return "\n".join(lines)


def round_trip(values=(1e-8, 1e-3, 70000.0)) -> str:
    """Each value stored in float16 and in bfloat16, read back as float32 (chapter 05)."""
    lines = []
    for v in values:
        t = torch.tensor(v)
        half, brain = t.half().float().item(), t.bfloat16().float().item()
        lines.append(f"{v:>10g} -> float16: {half:<12.6g} bfloat16: {brain:.6g}")
    return "\n".join(lines)


def autocast_dtypes(model: nn.Module, x, y, criterion, device_type: str, dtype) -> list:
    """(what, dtype) rows: each layer's output inside autocast, the loss, the weights, the gradients (chapter 05)."""
    rows, handles = [], []
    for name, module in model.named_modules():
        if not list(module.children()):
            label = f"layer {name} ({type(module).__name__}) output"
            handles.append(module.register_forward_hook(lambda m, i, o, label=label: rows.append((label, o.dtype))))
    try:
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = criterion(model(x), y)
    finally:
        for h in handles:
            h.remove()
    rows.append(("loss (computed inside autocast)", loss.dtype))
    loss.backward()
    weight = next(model.parameters())
    rows += [("weights (parameters)", weight.dtype), ("gradients (.grad)", weight.grad.dtype)]
    return rows


def show_rows(rows) -> str:
    """Two aligned columns (chapter 05)."""
    width = max(len(str(a)) for a, _ in rows)
    return "\n".join(f"{str(a):<{width}}  {b}" for a, b in rows)


def amp_settings(device) -> list:
    """(label, autocast dtype or None, needs a GradScaler) for the precisions this device offers (chapter 05)."""
    device = torch.device(device)
    settings = [("float32 (no autocast)", None, False)]
    if device.type == "cpu" or (device.type == "cuda" and torch.cuda.is_bf16_supported()):
        settings.append(("autocast bfloat16", torch.bfloat16, False))
    if device.type == "cuda":
        settings.append(("autocast float16 + GradScaler", torch.float16, True))
    return settings


def amp_speed(device, batch: int = 256, width: int = 512, repeats: int = 5, seed: int = 0) -> list:
    """Median ms per training step of an MLP of `width`, in each precision of amp_settings (chapter 05)."""
    device = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, width, generator=g).to(device)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)
    timings = []
    for label, dtype, scaled in amp_settings(device):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                              nn.Linear(width, 10)).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler(device.type, enabled=scaled)

        def step():
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

        timings.append(measure.time_fn(step, device, repeats=repeats, warmup=2, label=label))
    return timings


def compare(timings: list) -> str:
    """Each timing against the first (the baseline), in words computed from the medians (chapters 05+)."""
    base = timings[0]
    lines = [str(base)]
    for t in timings[1:]:
        lines.append(f"{t}\n    -> {measure.speed_ratio(base, t)} than {base.label} on this machine")
    return "\n".join(lines)


def scaler_demo(device_type: str = "cpu", init_scale: float = 2.0**16) -> None:
    """A GradScaler at work on one weight: scale, unscale, a normal step, then a step with inf (chapter 05)."""
    w = nn.Parameter(torch.tensor([1.0, -2.0], device=device_type))
    optimizer = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler(device_type, init_scale=init_scale)
    for attempt in ("a normal step", "a step whose gradient overflowed to inf"):
        optimizer.zero_grad()
        loss = (w ** 2).sum() * 1e-3
        scaled = scaler.scale(loss)
        scaled.backward()
        if attempt != "a normal step":
            w.grad[0] = math.inf  # as if float16 had overflowed
        print(f"{attempt}: loss {loss.item():.4g}, scaled loss {scaled.item():.6g}, "
              f"gradient as stored {[round(g, 3) for g in w.grad.tolist()]}")
        before = w.detach().clone()
        scale = scaler.get_scale()
        scaler.step(optimizer)   # unscales first; skips the update if anything is inf/nan
        scaler.update()          # halves the scale after an overflow, grows it slowly otherwise
        moved = "updated" if not torch.equal(before, w.detach()) else "NOT updated (step skipped)"
        print(f"    weights {moved}: {[round(v, 5) for v in w.detach().tolist()]}; "
              f"scale {scale:g} -> {scaler.get_scale():g}")


# ---------------------------------------------------------------- 5. torch.compile
def cxx_compiler():
    """The C++ compiler torch.compile's CPU backend would find, or None (chapter 05)."""
    names = [os.environ.get("CXX", ""), "c++", "g++", "clang++", "cl"]
    return next((shutil.which(n) for n in names if n and shutil.which(n)), None)


def compile_experiment(device, run: bool, batch: int = 256, width: int = 256, repeats: int = 20) -> dict:
    """Eager vs torch.compile: first-call time and median step time; only when `run` is True (chapter 05)."""
    device = torch.device(device)
    if not run:
        print("[skipped] the torch.compile measurement is switched off. Set RUN_COMPILE = True in this cell "
              "and run it again: the first compile takes tens of seconds on a laptop CPU "
              "(a minute or more on a slow or busy one).")
        return {}
    if device.type == "cpu" and cxx_compiler() is None:
        print("[skipped] torch.compile's CPU backend needs a C++ compiler (g++ or clang++), "
              "and none was found on this machine.")
        return {}
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, width, generator=g).to(device)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)
    results = {}
    for label in ("eager", "torch.compile"):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width), nn.Linear(width, width),
                              nn.GELU(), nn.Linear(width, 10)).to(device)
        run_model = torch.compile(model) if label == "torch.compile" else model
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step():
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(run_model(x), y).backward()
            optimizer.step()

        results[label] = measure.time_fn(step, device, repeats=repeats, warmup=1, label=label)
    print(f"first call (compiling): {results['torch.compile'].warmup_ms[0] / 1000:.1f} s; "
          f"eager first call: {results['eager'].warmup_ms[0]:.1f} ms")
    print(compare([results["eager"], results["torch.compile"]]))
    return results


# ---------------------------------------------------------------- exercise: amp_train_step
@dataclass
class AmpTrace:
    """What the probes saw during one call of amp_train_step."""
    events: list = field(default_factory=list)      # scale, backward, backward(scaled), unscale_, step...
    layer_dtypes: list = field(default_factory=list)
    losses: list = field(default_factory=list)      # unscaled loss values
    stale_at_backward: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


class ScalerSpy:
    """A real torch.amp.GradScaler whose calls are logged; anything else passes through."""

    def __init__(self, real: torch.amp.GradScaler, trace: AmpTrace):
        self.real, self.trace, self.inside_step = real, trace, False

    def scale(self, outputs):
        self.trace.events.append("scale")
        scaled = self.real.scale(outputs)
        if isinstance(scaled, torch.Tensor) and scaled.requires_grad:
            scaled.register_hook(lambda g: self.trace.events.append("backward(scaled)"))
        return scaled

    def unscale_(self, optimizer):
        self.trace.events.append("unscale_")
        return self.real.unscale_(optimizer)

    def step(self, optimizer, *args, **kwargs):
        self.trace.events.append("scaler.step")
        self.inside_step = True
        try:
            return self.real.step(optimizer, *args, **kwargs)
        finally:
            self.inside_step = False

    def update(self, new_scale=None):
        self.trace.events.append("update")
        return self.real.update(new_scale)

    def __getattr__(self, name):
        return getattr(self.real, name)


@dataclass
class AmpRig:
    model: nn.Module
    x: torch.Tensor
    y: torch.Tensor
    optimizer: torch.optim.Optimizer
    criterion: nn.Module
    scaler: ScalerSpy
    trace: AmpTrace

    error: Exception = None

    def run(self, candidate, device_type="cpu", dtype=torch.bfloat16):
        """Call the learner's step; an exception is kept in `error` (the trace is judged first)."""
        result = None
        with torch.random.fork_rng(), checker_threads(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.manual_seed(1)
            try:
                result = candidate(self.model, self.x, self.y, self.optimizer, self.criterion, self.scaler,
                                   device_type, dtype)
            except Exception as err:  # e.g. GradScaler's own complaint about a missing scale(): judged below
                self.error = err
        self.trace.warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
        return result

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    def scaler_said(self) -> str:
        """GradScaler's own complaint, if it raised one, for the feedback."""
        if isinstance(self.error, AssertionError):
            return f" (PyTorch's GradScaler also raised: {str(self.error).splitlines()[0]})"
        return ""

    def parameters(self) -> list:
        return [p.detach().clone() for p in self.model.parameters()]


def make_amp_rig(init_scale: float = 2.0**16, enabled: bool = True, seed: int = 0) -> AmpRig:
    """Chapter 03's tiny probed model and loss, plus dtype probes, stale gradients and a spied scaler."""
    rig, trace = make_rig("cpu", seed=seed), AmpTrace()
    net = rig.model.inner
    for layer in (m for m in net.modules() if isinstance(m, nn.Linear)):
        layer.register_forward_hook(lambda m, i, o: trace.layer_dtypes.append(o.dtype))
    first = net[0].weight

    def at_backward(fresh):
        old = first.grad
        trace.events.append("backward")
        trace.stale_at_backward.append(old is not None and bool(old.any()))

    first.register_hook(at_backward)
    scaler = ScalerSpy(torch.amp.GradScaler("cpu", init_scale=init_scale, enabled=enabled), trace)
    rig.optimizer.register_step_pre_hook(
        lambda opt, a, k: trace.events.append("optimizer.step" + (" (by scaler)" if scaler.inside_step else "")))
    for p in rig.model.parameters():  # the previous batch's gradients, still there
        p.grad = torch.full_like(p, 0.01)
    x, y = next(iter(rig.loader))
    return AmpRig(rig.model, x, y, rig.optimizer, rig.criterion, scaler, trace)


def _no_autocast_fail(rig: AmpRig, dtype) -> Fail:
    said = " ".join(rig.trace.warnings)
    if "torch.cuda.amp" in said:
        return Fail("torch.cuda.amp.autocast() is the deprecated spelling, and it only ever switches on autocast "
                    "for CUDA: here (device_type 'cpu') the forward ran in float32.",
                    expected=f"layers computing in {dtype}", got="float32 (autocast was off)",
                    hint="torch.autocast(device_type=device_type, dtype=dtype) works on every device.")
    if "device_type of 'cuda'" in said or "CUDA is not available" in said:
        return Fail("Autocast was asked for CUDA, but the data is on the CPU here: the forward ran in float32.",
                    expected=f"layers computing in {dtype}", got="float32",
                    hint="Pass the function's device_type argument: torch.autocast(device_type=device_type, ...).")
    return Fail("The forward pass ran in float32: autocast was not on while the model ran.",
                expected=f"layers computing in {dtype}", got="float32",
                hint="Wrap the forward and the loss: with torch.autocast(device_type=device_type, dtype=dtype): ...")


def _check_autocast(candidate):
    rig = make_amp_rig()
    rig.run(candidate)
    seen = rig.trace.layer_dtypes
    if not seen:
        rig.raise_error()
        raise Fail("Your function never called the model.")
    if all(d == torch.float32 for d in seen):
        raise _no_autocast_fail(rig, torch.bfloat16)
    if any(d != torch.bfloat16 for d in seen):
        raise Fail("Autocast ran, but not with the dtype you were given.", expected="torch.bfloat16",
                   got=", ".join(sorted({str(d) for d in seen})),
                   hint="Pass dtype=dtype to torch.autocast; do not hard-code float16.")


def _check_scaled_backward(candidate):
    rig = make_amp_rig()
    rig.run(candidate)
    events = rig.trace.events
    if "backward" not in events:
        rig.raise_error()
        raise Fail("No backward pass reached the model's weights.", hint="scaler.scale(loss).backward()")
    if "backward(scaled)" not in events:
        raise Fail("backward() ran on the unscaled loss: with float16, small gradients underflow to 0 "
                   "before the scaler can help.", expected="scaler.scale(loss).backward()",
                   got=("loss.backward()" if "scale" not in events else "scaler.scale(loss) computed but not used")
                   + rig.scaler_said(),
                   hint="The scaler multiplies the loss (by 65536 here) BEFORE backward, so the gradients are "
                        "big enough for float16; scaler.step divides them back.")
    if any(rig.trace.stale_at_backward):
        raise Fail("Gradients accumulate: the previous batch's gradients were still there at backward().",
                   hint="optimizer.zero_grad() first, as in every training step (chapter 03).")


def _check_scaler_step(candidate):
    rig = make_amp_rig()
    rig.run(candidate)
    events = rig.trace.events
    direct = events.count("optimizer.step")
    if direct and "scaler.step" not in events:
        raise Fail("optimizer.step() used the gradients as they are: still multiplied by the scale (65536 "
                   "here), so the update was 65536 times too big.", expected="scaler.step(optimizer)",
                   got="optimizer.step()" + rig.scaler_said(),
                   hint="scaler.step(optimizer) unscales the gradients, skips the step if any is inf or nan, "
                        "and then calls optimizer.step() for you.")
    if direct:
        raise Fail("The optimizer stepped twice: once through scaler.step(optimizer) and once directly.",
                   expected="scaler.step(optimizer) only", got="scaler.step(optimizer) and optimizer.step()")
    if "scaler.step" not in events:
        rig.raise_error()
        raise Fail("The weights were never updated.", expected="scaler.step(optimizer)")
    if "update" not in events:
        rig.raise_error()  # the scaler itself may have refused to step
        raise Fail("scaler.update() was never called: the scale never adapts (after an overflow it would keep "
                   "skipping steps).", expected="scaler.update() after scaler.step(optimizer)",
                   hint="Every step ends with scaler.update().")
    order = [e for e in events if e in ("backward(scaled)", "scaler.step", "update")]
    if order[-3:] != ["backward(scaled)", "scaler.step", "update"]:
        raise Fail("The scaler's calls are out of order.", expected="scale(loss).backward(), step(optimizer), update()",
                   got=", ".join(order) + rig.scaler_said())
    rig.raise_error()


def _check_returns_loss(candidate):
    rig = make_amp_rig()
    result = rig.run(candidate)
    rig.raise_error()
    if isinstance(result, torch.Tensor):
        raise tensor_fail(result, "the loss")
    if not isinstance(result, float):
        raise Fail("Return the loss as a Python float.", expected="float", got=type(result).__name__)
    want = rig.criterion.trace.losses[-1].value if rig.criterion.trace.losses else None
    if want is None:
        raise Fail("Your function never called criterion(logits, y).")
    scale = 2.0**16
    if math.isclose(result, want * scale, rel_tol=1e-3):
        raise Fail("You returned the scaled loss (multiplied by the scaler's 65536).", expected=f"{want:.6f}",
                   got=f"{result:.6g}", hint="Return loss.item(), not scaler.scale(loss).item().")
    if not math.isclose(result, want, rel_tol=1e-3, abs_tol=1e-5):
        raise Fail("The value you returned is not this step's loss.", expected=f"{want:.6f}", got=f"{result:.6f}")


def _check_matches_reference(reference, dtype, init_scale, enabled, where):
    """Same start, same batch: the learner's step and `reference` (the key's) leave the same weights."""
    def run(candidate):
        ours, theirs = make_amp_rig(init_scale, enabled), make_amp_rig(init_scale, enabled)
        ours.run(reference, dtype=dtype)
        theirs.run(candidate, dtype=dtype)
        theirs.raise_error()
        if not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(ours.parameters(), theirs.parameters())):
            raise Fail(f"After one step from the same start, your weights differ from the reference step's{where}.")
    return run


amp_train_step = chapter.function_exercise(
    "amp_train_step",
    title="One mixed-precision training step, today's API",
    prompt="Write amp_train_step(model, x, y, optimizer, criterion, scaler, device_type, dtype) -> float: one "
           "training step with automatic mixed precision. Clear the old gradients; run the forward pass and the "
           "loss inside torch.autocast for `device_type` with `dtype`; backward on the loss scaled by the "
           "GradScaler `scaler`; let the scaler step the optimizer and then update its scale. Return this step's "
           "(unscaled) loss as a Python float. x and y are already on the model's device.",
    points=5,
    tests=[
        Test("runs the forward pass under autocast with the given dtype", _check_autocast),
        Test("clears the gradients and calls backward on the scaled loss", _check_scaled_backward),
        Test("steps through the scaler, then updates the scale", _check_scaler_step),
        Test("returns this step's loss as a Python float", _check_returns_loss),
    ],
    hints=["Four lines, in this order: optimizer.zero_grad(); a `with torch.autocast(device_type=device_type, "
           "dtype=dtype):` block holding the forward and the loss; then the three scaler calls.",
           "scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()",
           "Return loss.item() (the loss you computed, not the scaled one)."],
)


# ---------------------------------------------------------------- exercise: time_it
class SimulatedGPU:
    """A clock and a GPU queue, simulated: the learner's timer reads this clock, not the real one.

    Calling the timed function costs `host_ms` of Python time and queues `gpu_ms` of device work
    that runs on after the call returns; only a synchronize() waits for it. Call 0 is a slow
    first call (its GPU work `first_ms`), as real first calls are.
    """

    def __init__(self, gpu_ms, host_ms: float = 0.2, first_ms: float = 400.0, cuda: bool = True):
        self.gpu_ms, self.host_ms, self.first_ms, self.cuda = list(gpu_ms), host_ms, first_ms, cuda
        self.now, self.gpu_free_at = 1000.0, 1000.0      # seconds
        self.calls, self.syncs, self.events = 0, 0, []

    def work(self) -> None:
        """The function being timed."""
        i = self.calls
        self.calls += 1
        self.events.append(("call", i))
        self.now += self.host_ms / 1000
        gpu = self.first_ms if i == 0 else self.gpu_ms[(i - 1) % len(self.gpu_ms)]
        if self.cuda:
            self.gpu_free_at = max(self.now, self.gpu_free_at) + gpu / 1000
        else:
            self.now += gpu / 1000       # on the CPU the work happens during the call

    def synchronize(self, *args, **kwargs) -> None:
        if not self.cuda:
            raise AssertionError("Torch not compiled with CUDA enabled")  # what a CPU-only machine says
        self.syncs += 1
        self.events.append(("sync",))
        self.now = max(self.now, self.gpu_free_at)

    def seconds(self) -> float:
        return self.now

    def ns(self) -> int:
        return int(self.now * 1e9)

    def call_ms(self, i: int) -> float:
        """What call i really costs, device work included."""
        return self.host_ms + (self.first_ms if i == 0 else self.gpu_ms[(i - 1) % len(self.gpu_ms)])


CLOCKS = {"perf_counter": "seconds", "monotonic": "seconds", "time": "seconds", "perf_counter_ns": "ns",
          "monotonic_ns": "ns", "time_ns": "ns"}


@contextmanager
def simulated(gpu: SimulatedGPU, namespace: dict):
    """Swap the clocks, torch.cuda.synchronize and is_available for the simulation's, then restore."""
    real = {getattr(time, name): getattr(gpu, kind) for name, kind in CLOCKS.items()}
    with ExitStack() as stack:
        for name, kind in CLOCKS.items():
            stack.enter_context(mock.patch.object(time, name, getattr(gpu, kind)))
        import timeit
        stack.enter_context(mock.patch.object(timeit, "default_timer", gpu.seconds))
        stack.enter_context(mock.patch.object(torch.cuda, "synchronize", gpu.synchronize))
        stack.enter_context(mock.patch.object(torch.cuda, "is_available", lambda: gpu.cuda))
        if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "synchronize"):
            stack.enter_context(mock.patch.object(torch.accelerator, "synchronize", gpu.synchronize))
        for name, value in list(namespace.items()):  # `from time import perf_counter` in the notebook
            fake = next((f for clock, f in real.items() if value is clock), None)
            if fake is not None:
                stack.enter_context(mock.patch.dict(namespace, {name: fake}))
        yield gpu


def _timed_calls(gpu: SimulatedGPU, repeats: int) -> list:
    """What a correct timer reports per timed call: the last `repeats` calls, device work included."""
    return [gpu.call_ms(i) for i in range(gpu.calls - repeats, gpu.calls)]


def _diagnose_time(got: float, gpu: SimulatedGPU, repeats: int, where: str):
    per_call = _timed_calls(gpu, repeats)
    want = statistics.median(per_call)
    if math.isclose(got, want, rel_tol=1e-6):
        return
    # without a synchronize after the warm-up, the first timed call also waits for the warm-up's GPU work
    first_spill = [gpu.first_ms + per_call[0] - gpu.host_ms] + per_call[1:]
    known = [
        (want / 1000, "in seconds, not milliseconds", "Multiply by 1000."),
        (statistics.mean(per_call), "the mean, which one slow run pulls up", "Return statistics.median(times)."),
        (min(per_call), "the fastest run, not the median", "Return statistics.median(times)."),
        (statistics.median(first_spill), "too high: the first timed run still waited for the warm-up's GPU work",
         "Synchronize after the warm-up call, before starting the clock."),
        (statistics.mean(first_spill), "too high: the first timed run still waited for the warm-up's GPU work",
         "Synchronize after the warm-up call, before starting the clock."),
    ]
    for value, problem, hint in known:
        if math.isclose(got, value, rel_tol=1e-6):
            raise Fail(f"The time you returned is {problem}{where}.", expected=f"{want:.4f} ms",
                       got=f"{got:.4f}", hint=hint)
    raise Fail(f"The time you returned is not the median of the timed runs{where}.", expected=f"{want:.4f} ms",
               got=f"{got:.4f}", hint="Read the clock with time.perf_counter() right before and right after each "
                                      "call (synchronizing first), and return the median in milliseconds.")


def _check_time_it(gpu_ms, repeats: int, device, where: str = ""):
    def run(candidate):
        gpu = SimulatedGPU(gpu_ms, cuda=torch.device(device).type == "cuda")
        with simulated(gpu, getattr(candidate, "__globals__", {})), checker_threads():
            result = candidate(gpu.work, device, repeats)
        if isinstance(result, torch.Tensor):
            raise tensor_fail(result, "the time")
        got = as_number(result)
        if got is None:
            raise Fail(f"Return one number, the median in milliseconds{where}.", expected="a float",
                       got=repr(result)[:80])
        if gpu.calls < repeats:
            raise Fail(f"fn was called {gpu.calls} times for repeats={repeats}{where}.",
                       expected=f"1 warm-up call + {repeats} timed calls", got=f"{gpu.calls} calls")
        if gpu.calls == repeats:
            raise Fail(f"No warm-up: the slow first call (here {gpu.call_ms(0):.0f} ms) was among the timed "
                       f"runs{where}.", expected=f"{repeats + 1} calls (1 untimed warm-up)", got=f"{gpu.calls} calls",
                       hint="Call fn() once before timing: the first call pays one-off costs (CUDA start-up, "
                            "kernel selection, compilation).")
        if gpu.cuda and not gpu.syncs:
            raise Fail(f"You never synchronized: the clock measured how long it took to LAUNCH the GPU work, "
                       f"not to do it{where}.", expected="torch.cuda.synchronize(device) before reading the clock",
                       got=f"a median of {got:.3f} ms, only the launch time",
                       hint="CUDA runs asynchronously. if device.type == 'cuda': torch.cuda.synchronize(device) "
                            "before starting and before stopping the clock.")
        _diagnose_time(got, gpu, repeats, where)
    return run


def _diagnose_cpu_sync(candidate):
    try:
        _check_time_it([3.0, 5.0, 4.0, 9.0, 2.0], 5, torch.device("cpu"), " (device cpu)")(candidate)
    except AssertionError as err:
        raise Fail("On a CPU device your function called torch.cuda.synchronize(), which raises on a machine "
                   "without CUDA.", hint="Synchronize only when device.type == 'cuda'.") from err


time_it = chapter.function_exercise(
    "time_it",
    title="Timing a GPU correctly",
    prompt="Write time_it(fn, device, repeats=5) -> float: how long one call of fn() takes, in milliseconds. "
           "Call fn() once untimed (warm-up), then time `repeats` calls with time.perf_counter(). When device is "
           "a CUDA device, call torch.cuda.synchronize(device) before starting and before stopping the clock "
           "(never on other devices). Return the median of the timed calls, in milliseconds, as a float.",
    points=4,
    tests=[
        Test("warms up, synchronizes, returns the median in ms (simulated GPU)",
             _check_time_it([10.0, 14.0, 11.0, 50.0, 12.0], 5, torch.device("cuda"))),
        Test("the same with repeats=3", _check_time_it([8.0, 30.0, 9.0], 3, torch.device("cuda"), " (repeats=3)")),
    ],
    hints=["Structure: fn() once; then a loop of `repeats` rounds: synchronize, start = time.perf_counter(), fn(), "
           "synchronize, append (time.perf_counter() - start) * 1000.",
           "Synchronize only on CUDA: `if torch.device(device).type == 'cuda': torch.cuda.synchronize(device)`.",
           "statistics.median(times) (import statistics) is the middle value; one slow run cannot move it."],
)


# ---------------------------------------------------------------- quizzes
bf16_scaler = chapter.quiz(
    "bf16_scaler",
    title="Does bfloat16 need a GradScaler?",
    question="You train with torch.autocast(device_type, dtype=torch.bfloat16). Do you need a GradScaler?",
    options={"a": "Yes: without it, small gradients underflow to zero, as with float16",
             "b": "No: bfloat16 has float32's exponent range, so small gradients do not underflow; it gives up "
                  "precision (mantissa bits) instead",
             "c": "Yes: torch.autocast raises an error for bfloat16 without a scaler",
             "d": "No: under autocast all gradients are computed in float64"},
    digest="ab86df020aaa4502",
    explanation="bfloat16 keeps float32's 8 exponent bits (smallest normal about 1e-38); float16 has 5 (about "
                "6e-5), which is why float16 needs the loss scaled up before backward.",
)

low_utilization = chapter.quiz(
    "low_utilization",
    title="The GPU sits at 30% utilization",
    kind="multiple",
    question="nvidia-smi shows your GPU at about 30% utilization during training, and the step timer says most "
             "of each step is spent waiting for the next batch. Which changes can help? Choose all that apply.",
    options={"a": "More DataLoader workers (num_workers), so batches are prepared in parallel",
             "b": "pin_memory=True in the DataLoader with .to(device, non_blocking=True)",
             "c": "Make the per-item preprocessing cheaper (or do it once, ahead of training)",
             "d": "Call torch.cuda.empty_cache() after every step",
             "e": "Wrap the model in nn.DataParallel on the same single GPU"},
    digest="827c701c0108911d",
    explanation="The GPU waits for data: prepare batches faster (workers, cheaper preprocessing) and copy them "
                "faster and asynchronously (pinned memory + non_blocking). empty_cache only returns cached memory "
                "to the driver, and DataParallel on one GPU adds work.",
)

scale_after_overflow = chapter.quiz(
    "scale_after_overflow",
    title="The scale after an overflow",
    kind="numeric",
    question="A torch.amp.GradScaler starts with its default scale 65536. In the first step a gradient overflows "
             "to inf. scaler.step(optimizer) skips that update; then scaler.update() runs with the default "
             "backoff_factor 0.5. What is scaler.get_scale() now?",
    digest="dc3fd0bbd381aee6",
    explanation="The scale is multiplied by backoff_factor (0.5) after a step with inf or nan gradients, and grows "
                "by growth_factor (2) only after growth_interval (2000) clean steps in a row.",
)
