"""Chapter 07, DataParallel vs DistributedDataParallel: the real DDP run, the comparisons, the stepper.

The DDP processes themselves live in `course_lib.ddp_worker` (an importable module, so that
`spawn` and `torchrun` can find the worker). This module compares what they did with one
process on the full batch, models the bytes each GPU moves per step under DP and DDP (the
widget), and holds the chapter's exercises.
"""
import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DistributedSampler

from . import ddp_worker
from .device import gpu_only
from .exercises import Chapter, Fail, Test
from .memory import format_bytes, weight_bytes

chapter = Chapter(__name__, title="DataParallel vs DistributedDataParallel")


# ---------------------------------------------------------------- DataParallel
def gpus_available() -> int:
    """How many CUDA GPUs this process sees (0 without CUDA) (chapter 07)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def multi_gpu_only(n: int, what: str) -> bool:
    """For a cell that needs `n` GPUs: True when there are enough, else print a visible SKIPPED line."""
    if not gpu_only(what):
        return False
    if gpus_available() < n:
        print(f"[GPU only] skipped on this machine ({gpus_available()} GPU, {n} needed): {what}")
        return False
    return True


def dataparallel_phases(model: nn.Module, x: torch.Tensor, n_gpus: int) -> list:
    """Run DataParallel's forward by hand with its own primitives; one line per phase (chapter 07).

    scatter -> replicate -> parallel_apply -> gather, exactly what nn.DataParallel.forward does.
    Needs CUDA GPUs 0..n_gpus-1.
    """
    from torch.nn.parallel import gather, parallel_apply, replicate, scatter
    devices = list(range(n_gpus))
    model, x = model.to("cuda:0"), x.to("cuda:0")
    chunks = scatter(x, devices)
    replicas = replicate(model, devices)
    outputs = parallel_apply(replicas, list(chunks))
    gathered = gather(outputs, 0)
    return [f"scatter:   batch {list(x.shape)} on cuda:0 -> " +
            ", ".join(f"{list(c.shape)} on {c.device}" for c in chunks),
            "replicate: " + ", ".join(str(next(r.parameters()).device) for r in replicas) +
            " each get a full copy of the weights (every step)",
            "forward:   " + ", ".join(f"{list(o.shape)} on {o.device}" for o in outputs),
            f"gather:    outputs concatenated on {gathered.device}: {list(gathered.shape)}"]


# ---------------------------------------------------------------- the real DDP run
def run_ddp(**options) -> ddp_worker.LaunchResult:
    """Launch the chapter's DDP run with torch.multiprocessing (2 processes by default)."""
    return ddp_worker.launch_spawn(ddp_worker.DDPConfig(**options))


def failure_demo(deadline_s: float = 60.0) -> str:
    """Launch once with rank 1 failing on purpose; say what the launcher raised and what is left running."""
    import multiprocessing
    import time
    from torch.multiprocessing import ProcessRaisedException
    start = time.perf_counter()
    try:
        ddp_worker.launch_spawn(ddp_worker.DDPConfig(fail_rank=1, timeout_s=20), deadline_s=deadline_s)
    except ProcessRaisedException as err:
        last = [line for line in str(err).strip().splitlines() if line.strip()][-1]
        return (f"the launch raised {type(err).__name__} after {time.perf_counter() - start:.1f} s\n"
                f"rank 1's error: {last}\n"
                f"worker processes still running: {len(multiprocessing.active_children())}")
    raise AssertionError("the launch with a failing rank did not raise")


def describe_ranks(result: ddp_worker.LaunchResult) -> str:
    """One line per process: pid, device, backend, the start of its shard, its losses (chapter 07)."""
    lines = [f"{result.how}: {len(result.ranks)} processes, backend {result.config.backend}, "
             f"{result.seconds:.1f} s including start-up"]
    for r in result.ranks:
        losses = ", ".join(f"{v:.3f}" for v in r["losses"])
        lines.append(f"  rank {r['rank']} (pid {r['pid']}, {r['device']}): shard of {len(r['shard'])} samples "
                     f"starting {r['shard'][:6]}..., losses per step [{losses}]")
    return "\n".join(lines)


def max_abs_diff(a, b) -> float:
    """Largest absolute difference between two lists (or dicts) of tensors (chapter 07)."""
    if isinstance(a, dict):
        a, b = list(a.values()), [b[k] for k in a]
    return max((x.float() - y.float()).abs().max().item() for x, y in zip(a, b))


def mean_of(tensor_lists: list) -> list:
    """Element-wise mean over ranks of per-parameter tensor lists (chapter 07)."""
    return [torch.stack(ts).mean(dim=0) for ts in zip(*tensor_lists)]


def gradient_sync_report(result: ddp_worker.LaunchResult, step: int = 0) -> str:
    """Before vs after the all-reduce at `step`: the ranks' own gradients, and what backward left."""
    local = [r["local_grads"][step] for r in result.ranks]
    synced = [r["synced_grads"][step] for r in result.ranks]
    return "\n".join([
        f"step {step}: each rank's OWN gradients (no_sync, no communication) differ by up to "
        f"{max_abs_diff(local[0], local[1]):.2e}",
        f"after backward, rank 0 and rank 1 hold gradients that differ by {max_abs_diff(synced[0], synced[1]):.2e}",
        f"and those equal the mean of the ranks' own gradients up to {max_abs_diff(synced[0], mean_of(local)):.2e}"])


def rank_batches(result: ddp_worker.LaunchResult, rank: int) -> list:
    """The index lists rank `rank` trained on, one per step (its shard cut into batches) (chapter 07)."""
    shard, b = result.ranks[rank]["shard"], result.config.per_device_batch
    return [shard[i * b:(i + 1) * b] for i in range(len(result.ranks[rank]["losses"]))]


def single_process_run(result: ddp_worker.LaunchResult, ranks=None) -> dict:
    """One process, no DDP: the same model, lr and steps, each step on the union of `ranks`' batches.

    ranks=None: all of them, i.e. one device on the full N x b batch (chapter 07).
    """
    config = result.config
    ranks = range(len(result.ranks)) if ranks is None else ranks
    dataset = ddp_worker.train_set()
    model = ddp_worker.make_model(config)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    grads = []
    for step_batches in zip(*(rank_batches(result, r) for r in ranks)):
        index = torch.tensor([i for batch in step_batches for i in batch])
        x, y = dataset[index]
        ddp_worker.sgd_step(model, optimizer, x, y)
        grads.append(ddp_worker.grads_of(model))
    return {"batch": len(index), "grads": grads, "weights": model.state_dict()}


def compare_with_single_process(result: ddp_worker.LaunchResult) -> dict:
    """Max abs differences between the DDP run and one process on the N x b batch (and on b alone)."""
    full = single_process_run(result)
    alone = single_process_run(result, ranks=[0])
    rank0 = result.ranks[0]
    return {"full_batch": full["batch"],
            "grads_vs_full_batch": max(max_abs_diff(g, h) for g, h in zip(rank0["synced_grads"], full["grads"])),
            "weights_vs_full_batch": max_abs_diff(rank0["weights"], full["weights"]),
            "weights_between_ranks": max_abs_diff(rank0["weights"], result.ranks[1]["weights"]),
            "per_device_batch": alone["batch"],
            "weights_vs_per_device_batch": max_abs_diff(rank0["weights"], alone["weights"])}


def effective_batch_size(per_device_batch: int, world_size: int, accumulation_steps: int = 1) -> int:
    """Samples behind one optimizer step: per-device batch x devices x accumulation steps (chapter 07)."""
    return per_device_batch * world_size * accumulation_steps


# ---------------------------------------------------------------- bytes moved per step: DP vs DDP
@dataclass(frozen=True)
class Workload:
    """A model's size in bytes and one sample's input and output sizes (chapter 07 stepper)."""
    name: str
    param_bytes: int
    input_bytes: int   # per sample
    output_bytes: int  # per sample


def _digits_mlp(hidden):
    from .training import digits_mlp
    return lambda: digits_mlp(hidden=hidden)


def _encoder(width, layers):
    return lambda: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(width, width // 64, 4 * width, batch_first=True), layers,
        enable_nested_tensor=False)


# name -> (builder, one sample's input shape, one sample's output shape); float32 throughout
MODELS = {
    "digits MLP (this chapter's, hidden 64)": (_digits_mlp(64), (64,), (10,)),
    "wide digits MLP (hidden 4096)": (_digits_mlp(4096), (64,), (10,)),
    "Transformer encoder 12 x 768 (BERT-base-sized), 128 tokens": (_encoder(768, 12), (128, 768), (128, 768)),
    "Transformer encoder 24 x 1024 (BERT-large-sized), 128 tokens": (_encoder(1024, 24), (128, 1024), (128, 1024)),
}


def build_on_meta(name: str) -> nn.Module:
    """Build MODELS[name] on the meta device: real parameter shapes, no memory (chapter 07)."""
    with torch.device("meta"):
        return MODELS[name][0]()


def workload(name: str) -> Workload:
    """The real sizes of MODELS[name]: its parameters counted, float32 samples (chapter 07)."""
    _, sample_in, sample_out = MODELS[name]
    return Workload(name, weight_bytes(build_on_meta(name)), 4 * math.prod(sample_in), 4 * math.prod(sample_out))


def ring_allreduce_bytes(n_bytes: float, n_devices: int) -> float:
    """Bytes each device sends (and receives) in a ring all-reduce of `n_bytes`: 2(N-1)/N x n_bytes.

    N-1 reduce-scatter steps then N-1 all-gather steps, each moving one N-th of the data to the
    next device in the ring (chapter 07).
    """
    return 2 * (n_devices - 1) / n_devices * n_bytes


@dataclass(frozen=True)
class Transfer:
    src: int
    dst: int
    n_bytes: float
    what: str


@dataclass(frozen=True)
class Phase:
    """One phase of a training step: what happens, which devices compute, what is copied where."""
    name: str
    text: str
    busy: tuple
    transfers: tuple = ()


def dp_phases(work: Workload, n: int, per_device_batch: int) -> list:
    """One DataParallel step on n GPUs as the seed draws it: cuda:0 sends and collects everything."""
    others = range(1, n)
    chunk_in, chunk_out = per_device_batch * work.input_bytes, per_device_batch * work.output_bytes
    everyone = tuple(range(n))
    return [
        Phase("scatter", f"cuda:0 holds the whole batch of {n} x {per_device_batch} samples; it cuts it into "
                         f"{n} chunks and copies one chunk to each other GPU.", (0,),
              tuple(Transfer(0, i, chunk_in, "inputs") for i in others)),
        Phase("replicate", "The model lives on cuda:0. EVERY step, DP copies all of its weights to every other "
                           "GPU (last step's replicas were thrown away).", (0,),
              tuple(Transfer(0, i, work.param_bytes, "weights") for i in others)),
        Phase("forward", "Each GPU runs forward on its chunk: one Python process, one thread per GPU.", everyone),
        Phase("gather", "The outputs are copied back to cuda:0 and concatenated there.", (0,),
              tuple(Transfer(i, 0, chunk_out, "outputs") for i in others)),
        Phase("loss", "The loss is computed on cuda:0 alone; the other GPUs wait.", (0,)),
        Phase("backward", "The loss's gradient for each chunk of outputs goes back to its GPU; every replica "
                          "back-propagates.", everyone,
              tuple(Transfer(0, i, chunk_out, "output grads") for i in others)),
        Phase("reduce", "Every replica's gradients are summed onto cuda:0's model.", (0,),
              tuple(Transfer(i, 0, work.param_bytes, "gradients") for i in others)),
        Phase("step", "The optimizer updates the weights on cuda:0 only. Next step: scatter and replicate again.",
              (0,)),
    ]


def ddp_phases(work: Workload, n: int, per_device_batch: int) -> list:
    """One DDP step on n GPUs: one process each, gradients averaged by a ring all-reduce."""
    everyone = tuple(range(n))
    ring = ring_allreduce_bytes(work.param_bytes, n)
    return [
        Phase("load", f"Each process reads its own {per_device_batch} samples (DistributedSampler) and copies "
                      "them from host memory to its own GPU: nothing passes through a main GPU.", everyone),
        Phase("forward", "Each process runs forward on its own replica, in parallel, with no Python lock "
                         "shared between GPUs.", everyone),
        Phase("backward + all-reduce", "Gradients are averaged in buckets while backward is still running. Ring "
                                       f"all-reduce: {n - 1} reduce-scatter + {n - 1} all-gather steps, each "
                                       f"sending 1/{n} of the gradients to the next GPU.", everyone,
              tuple(Transfer(i, (i + 1) % n, ring, "gradient chunks") for i in everyone) if n > 1 else ()),
        Phase("step", "Every process applies the same averaged gradient to its own replica: the replicas stay "
                      "identical without ever copying weights.", everyone),
    ]


def traffic(phases: list, n: int) -> list:
    """Bytes (sent, received) per device, summed over `phases` (chapter 07)."""
    sent, received = [0.0] * n, [0.0] * n
    for phase in phases:
        for t in phase.transfers:
            sent[t.src] += t.n_bytes
            received[t.dst] += t.n_bytes
    return list(zip(sent, received))


def step_traffic(work: Workload, n: int, per_device_batch: int) -> dict:
    """{'DataParallel': [(sent, received) per GPU], 'DistributedDataParallel': [...]}: one whole step."""
    return {"DataParallel": traffic(dp_phases(work, n, per_device_batch), n),
            "DistributedDataParallel": traffic(ddp_phases(work, n, per_device_batch), n)}


STRATEGIES = {"DataParallel": dp_phases, "DistributedDataParallel": ddp_phases}


def _device_box(i: int, phase: Phase, strategy: str, moved: tuple) -> str:
    sent, received = moved
    name = f"cuda:{i}" + (" (main)" if strategy == "DataParallel" and i == 0 else "")
    color = "#ffd8a8" if i in phase.busy else "#eaeef2"
    moved = f"sends {format_bytes(sent)}<br>receives {format_bytes(received)}" if sent or received else "no copies"
    return (f"<div style='display:inline-block;min-width:120px;margin:3px;padding:6px;border:1px solid #8c959f;"
            f"background:{color};color:#1f2328;text-align:center'><b>{name}</b><br>"
            f"{'computing' if i in phase.busy else 'waiting'}<br><small>{moved}</small></div>")


def phase_html(strategy: str, index: int, work: Workload, n: int, per_device_batch: int) -> str:
    """The diagram of phase `index` (0-based) of one step: device boxes and the copies made (chapter 07)."""
    phases = STRATEGIES[strategy](work, n, per_device_batch)
    phase = phases[index]
    arrows = "".join(f"<li>cuda:{t.src} &rarr; cuda:{t.dst}: {format_bytes(t.n_bytes)} ({t.what})</li>"
                     for t in phase.transfers[:8])
    if len(phase.transfers) > 8:
        arrows += f"<li>... {len(phase.transfers) - 8} more</li>"
    return (f"<div><b>{strategy}, phase {index + 1} of {len(phases)}: {phase.name}</b><br>{phase.text}</div>"
            f"<div>{''.join(_device_box(i, phase, strategy, m) for i, m in enumerate(traffic([phase], n)))}</div>"
            f"<ul>{arrows or '<li>no copies between GPUs in this phase</li>'}</ul>")


def busiest(per_device: list) -> float:
    """Bytes moved (sent + received) by the busiest device: what the slowest link must carry (chapter 07)."""
    return max(s + r for s, r in per_device)


def totals_html(work: Workload, n: int, per_device_batch: int) -> str:
    """The per-step totals in words: DP's main GPU vs the others vs every DDP GPU (chapter 07)."""
    both = step_traffic(work, n, per_device_batch)
    dp, ddp = both["DataParallel"], both["DistributedDataParallel"]
    return (f"<div>Model: {work.param_bytes / 4:,.0f} float32 parameters = {format_bytes(work.param_bytes)}. "
            f"One step on {n} GPUs, {per_device_batch} samples each (bytes sent + received):<ul>"
            f"<li>DataParallel: cuda:0 (main) moves {format_bytes(sum(dp[0]))}; every other GPU "
            f"{format_bytes(sum(dp[-1]))}</li>"
            f"<li>DDP: every GPU moves {format_bytes(sum(ddp[0]))} (ring all-reduce: each device sends "
            f"2(N-1)/N x model = {format_bytes(ring_allreduce_bytes(work.param_bytes, n))} and receives as much)"
            f"</li><li>busiest GPU: DP / DDP = {busiest(dp) / busiest(ddp):.2f}</li></ul></div>")


def plot_traffic(work: Workload, n: int, per_device_batch: int):
    """Bar chart: bytes moved (sent + received) per GPU in one step, DP vs DDP (chapter 07)."""
    import matplotlib.pyplot as plt
    both = step_traffic(work, n, per_device_batch)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.4
    for k, (strategy, color) in enumerate((("DataParallel", "tab:orange"), ("DistributedDataParallel", "tab:blue"))):
        totals = [(s + r) / 2 ** 20 for s, r in both[strategy]]
        ax.bar([i + (k - 0.5) * width for i in range(n)], totals, width, label=strategy, color=color)
    ax.set_xticks(range(n), [f"cuda:{i}" for i in range(n)])
    ax.set(ylabel="MiB moved per step")
    ax.set_title(f"{work.name}\nbytes each GPU sends + receives in one training step", fontsize=10)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    plt.close(fig)  # returned, so it is shown once
    return fig


class StepThrough:
    """The seed's third interactive component: step through one training step of DP or DDP."""

    def __init__(self, n: int = 4, per_device_batch: int = 32):
        import ipywidgets as W
        self.model = W.Dropdown(options=list(MODELS), value=list(MODELS)[2], description="model:",
                                layout=W.Layout(width="560px"), style={"description_width": "90px"})
        self.n = W.IntSlider(value=n, min=2, max=8, description="GPUs:", style={"description_width": "90px"})
        self.batch = W.Dropdown(options=[8, 32, 128], value=per_device_batch, description="batch per GPU:",
                                style={"description_width": "90px"})
        self.strategy = W.ToggleButtons(options=list(STRATEGIES), value="DataParallel", description="strategy:",
                                        style={"description_width": "90px", "button_width": "190px"})
        self.phase = W.IntSlider(value=1, min=1, max=len(dp_phases(workload(self.model.value), 2, 1)),
                                 description="phase:", style={"description_width": "90px"})
        self.back, self.next = W.Button(description="◀ back"), W.Button(description="next ▶")
        self.diagram, self.totals, self.chart = W.HTML(), W.HTML(), W.Output()
        self.back.on_click(lambda _: self._move(-1))
        self.next.on_click(lambda _: self._move(+1))
        for control in (self.model, self.n, self.batch):
            control.observe(self._redraw_all, names="value")
        self.strategy.observe(self._new_strategy, names="value")
        self.phase.observe(self._redraw_phase, names="value")
        self.box = W.VBox([self.model, W.HBox([self.n, self.batch]), self.strategy,
                           W.HBox([self.back, self.phase, self.next]), self.diagram, self.totals, self.chart],
                          layout=W.Layout(border="1px solid #d0d7de", padding="6px"))
        self._redraw_all()

    def work(self) -> Workload:
        return workload(self.model.value)

    def _move(self, delta: int):
        self.phase.value = min(max(self.phase.value + delta, self.phase.min), self.phase.max)

    def _new_strategy(self, _=None):
        self.phase.max = len(STRATEGIES[self.strategy.value](self.work(), self.n.value, self.batch.value))
        self.phase.value = 1
        self._redraw_phase()

    def _redraw_phase(self, _=None):
        self.diagram.value = phase_html(self.strategy.value, self.phase.value - 1, self.work(), self.n.value,
                                        self.batch.value)

    def _redraw_all(self, _=None):
        work = self.work()
        self._redraw_phase()
        self.totals.value = totals_html(work, self.n.value, self.batch.value)
        from IPython.display import display
        self.chart.clear_output(wait=True)
        with self.chart:
            display(plot_traffic(work, self.n.value, self.batch.value))

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def step_through(n: int = 4, per_device_batch: int = 32) -> StepThrough:
    """Show the chapter 07 widget: one training step of DP vs DDP, phase by phase, with traffic per GPU."""
    return StepThrough(n, per_device_batch)


# ---------------------------------------------------------------- exercise 1: shard_indices
def sampler_indices(n_samples: int, rank: int, world_size: int) -> list:
    """What the real DistributedSampler(shuffle=False, drop_last=False) gives rank `rank` (chapter 07)."""
    return list(DistributedSampler(range(n_samples), num_replicas=world_size, rank=rank, shuffle=False))


def _shard_fail(n, rank, world, got, want) -> Fail:
    where = f"n_samples={n}, world_size={world}, rank {rank}"
    per = math.ceil(n / world)
    padded = (list(range(n)) * world)[:per * world]  # 0..n-1, then repeated from the start
    if len(got) < len(want):
        return Fail(f"Rank {rank} got too few indices ({where}).", expected=want, got=got,
                    hint="Every rank must get the same number of samples, ceil(n / world_size), or the ranks fall "
                         "out of step (one waits forever in an all-reduce). Pad by repeating indices from the start.")
    if got == padded[rank * per:(rank + 1) * per]:
        return Fail(f"Those are contiguous blocks ({where}).", expected=want, got=got,
                    hint="DistributedSampler deals the indices like cards: rank r gets r, r + world_size, "
                         "r + 2 * world_size, ...")
    return Fail(f"Wrong indices for {where}.", expected=want, got=got,
                hint="Pad the list 0..n-1 to ceil(n / world_size) * world_size by repeating from the start, "
                     "then take every world_size-th index starting at rank.")


def _check_shards(cases):
    def run(candidate):
        for n, world in cases:
            for rank in range(world):
                got = candidate(n, rank, world)
                try:
                    got = [int(i) for i in got]
                except TypeError:
                    raise Fail("Return a list of ints.", expected="list[int]", got=type(got).__name__)
                want = sampler_indices(n, rank, world)
                if got != want:
                    raise _shard_fail(n, rank, world, got, want)
    return run


shard_indices = chapter.function_exercise(
    "shard_indices",
    title="Which samples does each rank read?",
    prompt="Write shard_indices(n_samples, rank, world_size) -> list[int]: the dataset indices that "
           "DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False) gives that rank "
           "(drop_last=False: the list is padded by repeating indices from the start, so every rank gets "
           "the same number).",
    points=3,
    tests=[Test("10 samples on 2 ranks", _check_shards([(10, 2)])),
           Test("10 samples on 4 ranks (padding needed)", _check_shards([(10, 4)])),
           Test("7 samples on 3 ranks", _check_shards([(7, 3)]))],
    hints=["Every rank gets ceil(n_samples / world_size) indices.",
           "Pad 0..n-1 to total = ceil(n / world) * world by repeating indices from the start "
           "(more than once if n is tiny), then deal them out like cards.",
           "indices = list(range(n)); indices += (indices * world_size)[:total - n]; return indices[rank:total:world_size]"],
)


# ---------------------------------------------------------------- exercise 2: average_gradients
def _as_list(got, n_params):
    if not isinstance(got, (list, tuple)) or not all(isinstance(g, torch.Tensor) for g in got):
        raise Fail("Return a list of tensors, one per parameter.", expected=f"list of {n_params} tensors",
                   got=type(got).__name__)
    if len(got) != n_params:
        raise Fail("Return one averaged tensor per PARAMETER, not per rank.", expected=f"{n_params} tensors",
                   got=f"{len(got)} tensors",
                   hint="grads_per_rank[r][p] is rank r's gradient of parameter p: average over r, keep p.")
    return list(got)


def _check_average(grads_per_rank, hint=""):
    def run(candidate):
        world, copies = len(grads_per_rank), [[g.clone() for g in rank] for rank in grads_per_rank]
        got = _as_list(candidate(copies), len(grads_per_rank[0]))
        if any(not torch.equal(c, g) for rc, rg in zip(copies, grads_per_rank) for c, g in zip(rc, rg)):
            raise Fail("Your function changed the gradients it was given.",
                       hint="Build new tensors (torch.stack(...).mean(0), or sum(...) / n): in-place += on "
                            "rank 0's tensors changes that rank's gradients.")
        for p, g in enumerate(got):
            want = torch.stack([rank[p] for rank in grads_per_rank]).mean(dim=0)
            if g.shape != want.shape or not torch.allclose(g, want, atol=1e-6):
                summed = want * world
                extra = ("That is the SUM over ranks: all_reduce adds, and DDP then divides by the world size."
                         if g.shape == want.shape and torch.allclose(g, summed, atol=1e-5) else hint)
                raise Fail(f"Parameter {p}: not the average over the {world} ranks.", expected=want.tolist(),
                           got=g.tolist(), hint=extra)
    return run


def shard_gradients(world_size: int, per_rank: int = 4, seed: int = 0):
    """Per-rank gradients of a tiny model on equal shards of one batch, and the full-batch gradients."""
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, y = torch.randn(world_size * per_rank, 3, generator=gen), torch.randint(0, 2, (world_size * per_rank,),
                                                                                  generator=gen)

    def grads(xs, ys):
        model.zero_grad()
        nn.functional.cross_entropy(model(xs), ys).backward()
        return [p.grad.clone() for p in model.parameters()]

    shards = [grads(x[r::world_size], y[r::world_size]) for r in range(world_size)]
    return shards, grads(x, y)


def _check_full_batch(world_size):
    def run(candidate):
        shards, full = shard_gradients(world_size)
        got = _as_list(candidate(shards), len(full))
        diff = max((g - f).abs().max().item() for g, f in zip(got, full))
        if diff > 1e-5:
            raise Fail(f"With {world_size} ranks, your result is not the full-batch gradient "
                       f"(max difference {diff:.2e}).",
                       hint="Equal shards + a mean loss: the average of the shard gradients IS the gradient of "
                            "the whole batch. Divide the sum by the number of ranks.")
    return run


average_gradients = chapter.function_exercise(
    "average_gradients",
    title="What the all-reduce leaves on every rank",
    prompt="Write average_gradients(grads_per_rank) -> list of tensors. grads_per_rank[r][p] is rank r's "
           "gradient of parameter p; return, for each parameter p, the average over the ranks: what every "
           "rank holds after DDP's all-reduce. Do not change the tensors you are given.",
    points=3,
    tests=[Test("two ranks, one parameter", _check_average([[torch.tensor([1.0, 2.0])], [torch.tensor([3.0, 6.0])]])),
           Test("equals the gradient of the full batch (2 ranks)", _check_full_batch(2))],
    hints=["Parameter p's gradients on all ranks: [rank[p] for rank in grads_per_rank].",
           "torch.stack(those).mean(dim=0) averages them; zip(*grads_per_rank) groups them by parameter.",
           "return [torch.stack(gs).mean(dim=0) for gs in zip(*grads_per_rank)]"],
)


# ---------------------------------------------------------------- quizzes
dp_vs_ddp = chapter.quiz(
    "dp_vs_ddp",
    title="The seed's question, part 1: what is the essential difference?",
    question="What is the essential difference between DataParallel (DP) and DistributedDataParallel (DDP)?",
    options={"a": "DP splits the model's layers across the GPUs; DDP splits the data",
             "b": "DP: ONE process drives all GPUs, scatters each batch from cuda:0, copies the model to every GPU "
                  "every step and collects outputs and gradients on cuda:0. DDP: one process per GPU, each with "
                  "its own replica, gradients averaged by an all-reduce during backward",
             "c": "DDP trains a better model: each GPU learns something different and the best replica wins",
             "d": "DP only works on one GPU; DDP is needed as soon as there are two"},
    digest="9e046bee900ce911",
    explanation="Both are data parallel: every GPU holds the whole model and sees part of the batch. The "
                "difference is who coordinates (one process and a main GPU vs peers) and what moves each step.",
)

faster_not_smarter = chapter.quiz(
    "faster_not_smarter",
    title="The seed's question, part 2: why do more GPUs not make the model smarter?",
    question="Why do N GPUs (DP or DDP) not change what the model can learn, only how fast it iterates?",
    options={"a": "Because the averaged gradient loses information compared with one GPU",
             "b": "Because the N replicas are an ensemble, and ensembles do not generalise",
             "c": "Each step computes the same gradient one device would compute on the N x b batch (the mean "
                  "of the shard gradients); same model, same math, more samples per second",
             "d": "They do make it smarter: every GPU adds capacity to the model"},
    digest="8b41a7146509519f",
    explanation="You saw it for real: the DDP weights equal one process's weights on the full batch. What "
                "changes is the batch size per step and the time per epoch.",
)

who_saves = chapter.quiz(
    "who_saves",
    title="Which rank writes the checkpoint?",
    question="In a DDP run on 4 GPUs, which process should call torch.save, and why?",
    options={"a": "Every rank, so that no copy is lost if one crashes",
             "b": "Rank 0 only: after every step all replicas hold identical weights, so one copy is complete, "
                  "and 4 processes writing one file would clash",
             "c": "The rank with the lowest loss, because its replica learned the most",
             "d": "The last rank to finish the epoch, because its weights are the newest"},
    digest="54142775e0de2685",
    explanation="Save model.module.state_dict() (no 'module.' prefix, chapter 04) from rank 0, then "
                "dist.barrier() before anyone reads it.",
)

effective_batch = chapter.quiz(
    "effective_batch",
    title="Effective batch size",
    kind="numeric",
    question="DDP on 2 GPUs, DataLoader batch_size=32 in each process, no gradient accumulation. Over how many "
             "samples is the gradient of ONE optimizer step averaged?",
    digest="abab5d08f69221f5",
    explanation="2 x 32 = 64: the all-reduce averages the two ranks' mean gradients.",
)

forgot_init = chapter.quiz(
    "forgot_init",
    title="Which error will this raise?",
    kind="error",
    question="A training script builds its DistributedSampler before (or without) init_process_group, and "
             "without num_replicas/rank.",
    code="from torch.utils.data import DistributedSampler\n"
         "sampler = DistributedSampler(range(100))",
    options={"a": "No error: with no process group it acts as one process and yields all 100 indices",
             "b": "ValueError: the default process group has not been initialized",
             "c": "TypeError: a range is not a Dataset",
             "d": "KeyError: 'RANK' is not set in the environment"},
    explanation="DistributedSampler asks the default process group for the world size and this process's "
                "rank. Call dist.init_process_group first (torchrun's env:// fills in RANK, WORLD_SIZE, ...).",
)
