"""Where a training step's memory goes, measured for real (chapter 06 introduces it; 07 reuses it).

Weights, gradients and optimizer state are tensors the model and optimizer hold: we add up
their bytes. The activations autograd keeps for backward are counted as they are saved, with
``torch.autograd.graph.saved_tensors_hooks``, which works on every device (CPU included). On a
CUDA GPU the caching allocator's own counters (``memory_allocated``, ``max_memory_allocated``,
``memory_reserved``) measure the whole step. ``MemoryBudget`` is a clearly labelled CPU
stand-in for a small GPU: it raises ``MemoryBudgetExceeded`` (never a CUDA error).
"""

import gc
from contextlib import contextmanager

import torch

from .training import train_step

OutOfMemoryError = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
COMPONENTS = ("weights", "grads", "optimizer_state", "activations")


class MemoryBudgetExceeded(RuntimeError):
    """Raised by the course's memory budget (a stand-in
    for a small GPU, chapter 06); not a CUDA error."""


# Out-of-memory errors a batch-size search may catch: the real CUDA one and the course's stand-in.
OUT_OF_MEMORY = (OutOfMemoryError, MemoryBudgetExceeded)


# ------------------------------------------------------------- tensors the model and optimizer hold
def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes of a tensor's elements: numel x element size (chapters 01, 06)."""
    return t.numel() * t.element_size()


def weight_bytes(model) -> int:
    """Bytes of the model's parameters, each counted once (chapter 06)."""
    return sum(tensor_bytes(p) for p in model.parameters())


def grad_bytes(model) -> int:
    """Bytes of the gradients that exist now (None
    after zero_grad(set_to_none=True)) (chapter 06)."""
    return sum(tensor_bytes(p.grad) for p in model.parameters() if p.grad is not None)


def optimizer_state_bytes(optimizer) -> int:
    """Bytes of every tensor in optimizer.state (Adam: exp_avg, exp_avg_sq, step) (chapter 06)."""
    if optimizer is None:
        return 0
    return sum(
        tensor_bytes(v)
        for state in optimizer.state.values()
        for v in state.values()
        if isinstance(v, torch.Tensor)
    )


def state_bytes(model, optimizer=None) -> dict:
    """{'weights', 'grads', 'optimizer_state'}: bytes
    the model and optimizer hold now (chapter 06)."""
    return {
        "weights": weight_bytes(model),
        "grads": grad_bytes(model),
        "optimizer_state": optimizer_state_bytes(optimizer),
    }


def format_bytes(n: float) -> str:
    """1536 -> '1.50 KiB' (chapters 06+)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


# ---------------------------------------------------------------- activations saved for backward
class _Saved:
    """What autograd stores for one saved tensor while an
    ActivationMeter watches; tells the meter when freed."""

    __slots__ = ("tensor", "meter", "key")

    def __init__(self, tensor, meter, key):
        self.tensor, self.meter, self.key = tensor, meter, key

    def __del__(self):
        self.meter._release(self.key)


class ActivationMeter:
    """Counts the bytes autograd keeps for backward, now (`live`) and at most (`peak`) (chapter 06).

    Use as ``with ActivationMeter(model) as meter: loss = criterion(model(x), y)``. Each storage
    is counted once however many operations save it; the model's own parameters are not
    activations and are left out. A tensor stops counting when autograd frees it (after
    backward, or when the last reference to its graph goes), even after the block ends.
    `on_save(meter)` is called after each new storage is counted.
    """

    def __init__(self, model=None, on_save=None):
        params = model.parameters() if model is not None else ()
        self._skip = {p.untyped_storage().data_ptr() for p in params}
        self._refs = {}  # storage address -> [references, bytes]
        self.live = self.peak = 0
        self.on_save = on_save

    def _pack(self, t):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if t.device.type == "meta" or key in self._skip or storage.nbytes() == 0:
            return t
        entry = self._refs.setdefault(key, [0, storage.nbytes()])
        entry[0] += 1
        if entry[0] == 1:
            self.live += entry[1]
            self.peak = max(self.peak, self.live)
            if self.on_save is not None:
                self.on_save(self)
        return _Saved(
            t.detach(), self, key
        )  # detached: an output would hold its own grad_fn (a cycle)

    @staticmethod
    def _unpack(saved):
        return saved.tensor if isinstance(saved, _Saved) else saved

    def _release(self, key):
        entry = self._refs.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            self.live -= entry[1]
            del self._refs[key]

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)
        return False


def saved_bytes(fn, model=None):
    """Run fn(); return (its result, peak bytes autograd
    saved for backward meanwhile) (chapter 06)."""
    with ActivationMeter(model) as meter:
        result = fn()
    return result, meter.peak


def training_step_memory(model, optimizer, criterion, x, y) -> dict:
    """One real training step; bytes of weights, grads,
    optimizer state and activations (chapter 06).

    Activations: the peak kept between forward and backward, measured with saved-tensor hooks.
    """
    optimizer.zero_grad(set_to_none=True)
    with ActivationMeter(model) as meter:
        loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    return {**state_bytes(model, optimizer), "activations": meter.peak}


# ---------------------------------------------------------------- the CUDA allocator's counters
def cuda_memory(device=None) -> dict:
    """The caching allocator now: allocated (tensors),
    reserved (cached blocks), peak (chapter 06)."""
    return {
        "allocated": torch.cuda.memory_allocated(device),
        "reserved": torch.cuda.memory_reserved(device),
        "peak": torch.cuda.max_memory_allocated(device),
    }


def cuda_peak(fn, device=None) -> dict:
    """Run fn() on a CUDA device; bytes allocated before, at peak and after (chapter 06)."""
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    torch.cuda.synchronize(device)
    return {
        "before": before,
        "peak": torch.cuda.max_memory_allocated(device),
        "after": torch.cuda.memory_allocated(device),
    }


def cuda_index(device=None) -> int:
    """The index of a CUDA device: 'cuda' and
    torch.device('cuda') mean the current one (chapter 06).

    Some CUDA calls, torch.cuda.set_per_process_memory_fraction among them, refuse a device
    without an index (ValueError: Expected a torch.device with a specified index...).
    """
    if isinstance(device, int):
        return device
    device = torch.device("cuda" if device is None else device)
    if device.type != "cuda":
        raise ValueError(f"expected a CUDA device, got {device}")
    return torch.cuda.current_device() if device.index is None else device.index


def memory_fraction(index: int) -> float:
    """The per-process memory fraction set now on CUDA device `index` (chapter 06).

    torch.cuda.get_per_process_memory_fraction reads it (torch 2.9 and later, at least);
    an older torch has no getter, and we assume the default, 1.0 (no cap).
    """
    getter = getattr(torch.cuda, "get_per_process_memory_fraction", None)
    return 1.0 if getter is None else float(getter(index))


@contextmanager
def small_gpu(limit_bytes: int, device=None):
    """Make this process's CUDA GPU behave like one with `limit_bytes` (chapter 06), then undo it.

    torch.cuda.set_per_process_memory_fraction caps what the caching allocator may use; a
    bigger request raises the genuine torch.OutOfMemoryError. On exit the fraction that was
    set before (the learner's own, or 1.0) is put back and the cached blocks are returned,
    so the notebook goes on.
    """
    index = cuda_index(device)
    total = torch.cuda.get_device_properties(index).total_memory
    before = memory_fraction(index)
    torch.cuda.set_per_process_memory_fraction(min(1.0, limit_bytes / total), index)
    try:
        yield
    finally:
        torch.cuda.set_per_process_memory_fraction(before, index)
        gc.collect()
        torch.cuda.empty_cache()


# ---------------------------------------------------------------- the CPU stand-in for a small GPU
class MemoryBudget:
    """A memory budget standing in for a small GPU, on any device (chapter 06).

    Inside ``with MemoryBudget(budget_bytes, model, optimizer):`` the bytes of weights, gradients,
    optimizer state and live saved activations are added up whenever autograd saves a tensor,
    whenever backward adds a gradient and after every optimizer step; above the budget it raises
    MemoryBudgetExceeded, naming each part. It measures; it does not limit what the operating system
    gives (and it is not CUDA: the real GPU error is torch.OutOfMemoryError).
    """

    def __init__(self, budget_bytes: int, model, optimizer=None):
        self.budget, self.model, self.optimizer = int(budget_bytes), model, optimizer
        self.meter = None
        self.peak = 0

    def used(self) -> dict:
        """Bytes in use now, per component."""
        live = self.meter.live if self.meter is not None else 0
        return {**state_bytes(self.model, self.optimizer), "activations": live}

    def check(self, *_):
        used = self.used()
        total = sum(used.values())
        self.peak = max(self.peak, total)
        if total > self.budget:
            parts = ", ".join(f"{k.replace('_', ' ')} {format_bytes(v)}" for k, v in used.items())
            raise MemoryBudgetExceeded(
                f"memory budget exceeded: {format_bytes(total)} in use > budget "
                f"{format_bytes(self.budget)}\n({parts}).\nThis is the course's stand-in for "
                "a small GPU, not a CUDA error."
            )

    def __enter__(self):
        self.meter = ActivationMeter(self.model, on_save=self.check).__enter__()
        self._hooks = [
            p.register_post_accumulate_grad_hook(self.check)
            for p in self.model.parameters()
            if p.requires_grad
        ]
        if self.optimizer is not None:
            self._hooks.append(self.optimizer.register_step_post_hook(self.check))
        try:
            self.check()
        except MemoryBudgetExceeded as err:
            self.__exit__(type(err), err, err.__traceback__)  # leave no hooks behind
            raise
        return self

    def __exit__(self, *exc):
        for hook in self._hooks:
            hook.remove()
        self.meter.__exit__(*exc)
        return False


BUDGET = 7 * 2**20  # the stand-in's "small card": 7 MiB, sized for training.wide_mlp()


def step_in_budget(model, optimizer, criterion, x, y, budget: int = BUDGET) -> dict:
    """One training step inside the memory budget; its peak, per component; raises if over
    (chapter 06 and its largest_batch check)."""
    with MemoryBudget(budget, model, optimizer) as b:
        train_step(model, optimizer, criterion, x, y)
    return b.peak


def fits_call(try_batch, n: int) -> bool:
    """Does try_batch(n) run? Out-of-memory errors mean no; other errors propagate (chapter 06)."""
    try:
        try_batch(n)
        return True
    except OUT_OF_MEMORY:
        return False


# ---------------------------------------------------------------- a picture
def plot_stacked(rows: dict, title: str = ""):
    """Stacked bars in MiB, one per row label, one colour per
    component (chapter 06). rows: label -> {component: bytes}."""
    from .i18n.plots import plot_text
    from .measure import plot_stacked as stacked_bars

    components = [c for c in COMPONENTS if any(c in r for r in rows.values())]
    mib = {plot_text(label): [r.get(c, 0) / 2**20 for c in components] for label, r in rows.items()}
    parts = [plot_text(c.replace("_", " ")) for c in components]
    return stacked_bars(mib, parts=parts, title=plot_text(title) if title else "", ylabel="MiB")
