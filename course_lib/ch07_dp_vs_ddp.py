"""Chapter 07, DataParallel vs DistributedDataParallel:
the real DDP run, the comparisons, the stepper.

The DDP processes themselves live in `course_lib.ddp_worker` (an importable module, so that
`spawn` and `torchrun` can find the worker). This module compares what they did with one
process on the full batch, models the bytes each GPU moves per step under DP and DDP (the
widget); its exercises and quizzes are declared in `course_lib.declared.ch07_dp_vs_ddp`.
"""

import functools
import math
import re
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DistributedSampler

from . import ddp_worker, training
from .checks import distributed
from .declared.ch07_dp_vs_ddp import (  # its exercises and quizzes, declared apart
    average_gradients,
    chapter,
    dp_vs_ddp,
    effective_batch,
    faster_not_smarter,
    forgot_init,
    local_rank_device,
    shard_indices,
    who_saves,
)
from .device import gpu_only, say_skipped
from .i18n import tr
from .i18n.layout import rjust
from .i18n.plots import plot_text
from .memory import format_bytes, weight_bytes

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "shard_indices",
    "average_gradients",
    "local_rank_device",
    "effective_batch",
    "who_saves",
    "forgot_init",
    "dp_vs_ddp",
    "faster_not_smarter",
    # teaching helpers: the demos, tables and models the notebook uses
    "gpus_available",
    "multi_gpu_only",
    "dataparallel_phases",
    "failure_demo",
    "sync_batchnorm_on_cpu",
    "describe_ranks",
    "show_sampler_orders",
    "show_torchrun_ranks",
    "gradient_sync_report",
    "compare_with_single_process",
    "effective_batch_size",
    "step_through",
]


def __dir__():
    return __all__


# ================================================================ teaching helpers
# ---------------------------------------------------------------- DataParallel
def gpus_available() -> int:
    """How many CUDA GPUs this process sees (0 without CUDA) (chapter 07)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def multi_gpu_only(n: int, what: str, figure: str = None) -> bool:
    """For a cell that needs `n` GPUs: True when there are enough, else print a visible SKIPPED
    line, with what `figure`'s GPUs showed (chapter 07)."""
    if not gpu_only(what, figure=figure):
        return False
    if gpus_available() < n:
        say_skipped(
            f"[GPU only] skipped on this machine ({gpus_available()} GPU, {n} needed): {what}",
            figure,
        )
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
    return phase_lines(x, chunks, replicas, outputs, gathered)


def phase_lines(x, chunks, replicas, outputs, gathered) -> list:
    """What each of DataParallel's phases made, one line each (chapter 07)."""
    on = lambda t: tr(f"{list(t.shape)} on cuda:{t.device.index}")
    return [
        f"scatter:   {tr(f'batch {list(x.shape)} on cuda:0')} -> "
        + ", ".join(on(c) for c in chunks),
        "replicate: "
        + tr(
            ", ".join(str(next(r.parameters()).device) for r in replicas)
            + " each get a full copy of the weights (every step)"
        ),
        "forward:   " + ", ".join(on(o) for o in outputs),
        "gather:    " + tr(f"outputs concatenated on {gathered.device}: {list(gathered.shape)}"),
    ]


# ---------------------------------------------------------------- the real DDP run
def run_ddp(**options) -> ddp_worker.LaunchResult:
    """Launch the chapter's DDP run with torchrun, as the notebook does (2 processes by default)."""
    return ddp_worker.launch_torchrun(ddp_worker.DDPConfig(**options))


def failure_demo(deadline_s: float = 60.0) -> str:
    """Launch once with torchrun, rank 1 failing on purpose;
    say what torchrun reported and what is left running."""
    return failure_report(*failing_launch(deadline_s))


def failing_launch(deadline_s: float = 60.0) -> tuple:
    """The failure demo's launch, rank 1 raising on purpose: (TorchrunFailed, seconds it took)."""
    import time

    start = time.perf_counter()
    try:
        ddp_worker.launch_torchrun(
            ddp_worker.DDPConfig(fail_rank=1, timeout_s=20), deadline_s=deadline_s
        )
    except ddp_worker.TorchrunFailed as err:
        return err, time.perf_counter() - start
    raise AssertionError("the launch with a failing rank did not raise")


def failure_report(err: "ddp_worker.TorchrunFailed", seconds: float) -> str:
    """What torchrun reported about the failing launch, and what is left running (chapter 07)."""
    said = re.search(r"\[rank1\]: (\w+(?:Error|Exception): .*)", err.output)
    lines = [
        tr(f"torchrun exited with {err.returncode} after {seconds:.1f} s"),
        tr(f"rank 1's error: {said.group(1) if said else tr('(not in the output)')}"),
    ]
    if "SIGTERM" in err.output:
        lines.append(
            tr(
                "rank 0: stopped by torchrun with SIGTERM while still in DDP's constructor, "
                "whose first collective waits for every rank; torchrun's report calls rank 1 "
                "the root cause (ChildFailedError)"
            )
        )
    alive = int(ddp_worker.group_alive(err.pgid))
    lines.append(tr(f"processes of that launch still running: {alive}"))
    return "\n".join(lines)


def sync_batchnorm_on_cpu(world_size: int = 2) -> list:
    """SyncBatchNorm's forward on CPU tensors in a real gloo group: each rank's error (chapter 07).

    SyncBatchNorm all-gathers each rank's batch statistics in forward (all-reduces their gradients
    in backward), and refuses input that is not on a GPU (or XPU, HPU): with CPU tensors it raises
    ValueError before any communication. Outside a process group it acts as plain BatchNorm.
    """
    results = ddp_worker.run_in_group(_sync_batchnorm_task, world_size)
    if any(status == "ok" for status, _ in results):
        raise AssertionError(
            "SyncBatchNorm ran on CPU tensors in a gloo group: the text above is out of date"
        )
    return [f"rank {rank}: {value}" for rank, (_, value) in enumerate(results)]


def _sync_batchnorm_task(rank: int, world_size: int):
    """One rank: a SyncBatchNorm layer in training mode, fed 4 CPU samples."""
    return nn.SyncBatchNorm(4)(torch.randn(4, 4)).shape


def describe_ranks(result: ddp_worker.LaunchResult) -> str:
    """One line per process: pid, device, backend,
    the start of its shard, its losses (chapter 07)."""
    config = result.config
    lines = [
        tr(
            f"{result.how}: {len(result.ranks)} processes, backend {config.backend}, "
            f"{config.epochs} epochs x {config.steps} steps, {result.seconds:.1f} s including "
            "start-up"
        )
    ]
    for r in result.ranks:
        losses = ", ".join(f"{v:.3f}" for v in r["losses"])
        lines.append(
            "  "
            + tr(
                f"rank {r['rank']} (pid {r['pid']}, {r['device']}): shard of "
                f"{len(r['orders'][0])} samples starting {r['orders'][0][:6]}...\n      losses "
                f"per step [{losses}]"
            )
        )
    return "\n".join(lines)


def sampler_orders(
    n_samples: int,
    world_size: int,
    epochs: int = 2,
    shuffle: bool = True,
    set_epoch: bool = True,
    seed: int = 0,
) -> list:
    """orders[epoch][rank]: what real DistributedSamplers
    give each rank, epoch by epoch (chapter 07)."""
    samplers = [
        DistributedSampler(
            range(n_samples), num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed
        )
        for rank in range(world_size)
    ]
    orders = []
    for epoch in range(epochs):
        if set_epoch:
            for sampler in samplers:
                sampler.set_epoch(epoch)
        orders.append([list(sampler) for sampler in samplers])
    return orders


SAMPLER_SETTINGS = {
    "shuffle=False": {"shuffle": False},
    "shuffle=True (the default), no set_epoch": {"set_epoch": False},
    "shuffle=True, sampler.set_epoch(epoch) each epoch": {},
}


def show_sampler_orders(n_samples: int = 12, world_size: int = 2, epochs: int = 2) -> None:
    """Print each rank's indices for a few epochs, for
    the three ways of using the sampler (chapter 07)."""
    for label, options in SAMPLER_SETTINGS.items():
        print(tr(label))
        for epoch, ranks in enumerate(sampler_orders(n_samples, world_size, epochs, **options)):
            print(
                f"  epoch {epoch}: "
                + " | ".join(f"rank {r}: {order}" for r, order in enumerate(ranks))
            )


def torchrun_ranks(nodes: int, gpus_per_node: int) -> list:
    """What torchrun gives each process on `nodes` machines of `gpus_per_node` GPUs (chapter 07)."""
    return [
        {
            "machine": node,
            "RANK": node * gpus_per_node + local,
            "LOCAL_RANK": local,
            "WORLD_SIZE": nodes * gpus_per_node,
            "device": f"cuda:{local}",
        }
        for node in range(nodes)
        for local in range(gpus_per_node)
    ]


def show_torchrun_ranks(nodes: int = 2, gpus_per_node: int = 4) -> None:
    """Print torchrun_ranks as a table: one row per process (chapter 07)."""
    rows = torchrun_ranks(nodes, gpus_per_node)
    print(" | ".join(rjust(tr(k), 10) for k in rows[0]))  # display columns
    for row in rows:
        print(" | ".join(f"{v:>10}" for v in row.values()))


def max_abs_diff(a, b) -> float:
    """Largest absolute difference between two lists (or dicts) of tensors (chapter 07)."""
    if isinstance(a, dict):
        a, b = list(a.values()), [b[k] for k in a]
    return max((x.float() - y.float()).abs().max().item() for x, y in zip(a, b))


def mean_of(tensor_lists: list) -> list:
    """Element-wise mean over ranks of per-parameter tensor lists (chapter 07)."""
    return [torch.stack(ts).mean(dim=0) for ts in zip(*tensor_lists)]


def gradient_sync_report(result: ddp_worker.LaunchResult, step: int = 0) -> str:
    """Before vs after the all-reduce at `step`: the
    ranks' own gradients, and what backward left."""
    local = [r["local_grads"][step] for r in result.ranks]
    synced = [r["synced_grads"][step] for r in result.ranks]
    return "\n".join(
        [
            tr(
                f"step {step}: each rank's OWN gradients (no_sync, no communication) differ by "
                f"up to {max_abs_diff(local[0], local[1]):.2e}"
            ),
            tr(
                "after backward, rank 0 and rank 1 hold gradients that differ by "
                f"{max_abs_diff(synced[0], synced[1]):.2e}"
            ),
            tr(
                "and those equal the mean of the ranks' own gradients up to "
                f"{max_abs_diff(synced[0], mean_of(local)):.2e}"
            ),
        ]
    )


def single_process_run(result: ddp_worker.LaunchResult, ranks=None) -> dict:
    """One process, no DDP: the same model, lr and
    steps, each step on the union of `ranks`' batches.

    ranks=None: all of them, i.e. one device on the full N x b batch (chapter 07).
    """
    config = result.config
    ranks = range(len(result.ranks)) if ranks is None else ranks
    dataset = ddp_worker.train_set()
    model = ddp_worker.make_model(config)
    step = training.stepper(model, torch.optim.SGD(model.parameters(), lr=config.lr))
    grads = []
    for step_batches in zip(*(result.ranks[r]["batches"] for r in ranks)):
        index = torch.tensor([i for batch in step_batches for i in batch])
        x, y = dataset[index]
        step(x, y)
        grads.append(ddp_worker.grads_of(model))
    return {"batch": len(index), "grads": grads, "weights": model.state_dict()}


def compare_with_single_process(result: ddp_worker.LaunchResult) -> dict:
    """Max abs differences between the DDP run and
    one process on the N x b batch (and on b alone)."""
    full = single_process_run(result)
    alone = single_process_run(result, ranks=[0])
    rank0 = result.ranks[0]
    return {
        "full_batch": full["batch"],
        "grads_vs_full_batch": max(
            max_abs_diff(g, h) for g, h in zip(rank0["synced_grads"], full["grads"])
        ),
        "weights_vs_full_batch": max_abs_diff(rank0["weights"], full["weights"]),
        "weights_between_ranks": max_abs_diff(rank0["weights"], result.ranks[1]["weights"]),
        "per_device_batch": alone["batch"],
        "weights_vs_per_device_batch": max_abs_diff(rank0["weights"], alone["weights"]),
    }


def effective_batch_size(
    per_device_batch: int, world_size: int, accumulation_steps: int = 1
) -> int:
    """Samples behind one optimizer step: per-device
    batch x devices x accumulation steps (chapter 07)."""
    return per_device_batch * world_size * accumulation_steps


# ---------------------------------------------------------------- bytes moved per step: DP vs DDP
@dataclass(frozen=True)
class Workload:
    """A model's size in bytes and one sample's input and output sizes (chapter 07 stepper)."""

    name: str
    param_bytes: int
    input_bytes: int  # per sample
    output_bytes: int  # per sample


def _digits_mlp(hidden):
    from .training import digits_mlp

    return lambda: digits_mlp(hidden=hidden)


def _encoder(width, layers):
    return lambda: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(width, width // 64, 4 * width, batch_first=True),
        layers,
        enable_nested_tensor=False,
    )


# name -> (builder, one sample's input shape, one sample's output shape); float32 throughout
MODELS = {
    "digits MLP (this chapter's, hidden 64)": (_digits_mlp(64), (64,), (10,)),
    "wide digits MLP (hidden 4096)": (_digits_mlp(4096), (64,), (10,)),
    "Transformer encoder 12 x 768 (BERT-base-sized), 128 tokens": (
        _encoder(768, 12),
        (128, 768),
        (128, 768),
    ),
    "Transformer encoder 24 x 1024 (BERT-large-sized), 128 tokens": (
        _encoder(1024, 24),
        (128, 1024),
        (128, 1024),
    ),
}


def build_on_meta(name: str) -> nn.Module:
    """Build MODELS[name] on the meta device: real parameter shapes, no memory (chapter 07)."""
    with torch.device("meta"):
        return MODELS[name][0]()


@functools.cache
def workload(name: str) -> Workload:
    """The real sizes of MODELS[name]: its parameters counted, float32 samples (built once per
    name: the widget asks on every redraw) (chapter 07)."""
    _, sample_in, sample_out = MODELS[name]
    return Workload(
        name, weight_bytes(build_on_meta(name)), 4 * math.prod(sample_in), 4 * math.prod(sample_out)
    )


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
    """One DataParallel step on n GPUs as article A
    draws it: cuda:0 sends and collects everything."""
    others = range(1, n)
    chunk_in, chunk_out = per_device_batch * work.input_bytes, per_device_batch * work.output_bytes
    everyone = tuple(range(n))
    return [
        Phase(
            "scatter",
            f"cuda:0 holds the whole batch of {n} x {per_device_batch} samples; it cuts it into "
            f"{n} chunks and copies one chunk to each other GPU.",
            (0,),
            tuple(Transfer(0, i, chunk_in, "inputs") for i in others),
        ),
        Phase(
            "replicate",
            "The model lives on cuda:0. EVERY step, DP copies all of its weights to every other "
            "GPU (last step's replicas were thrown away).",
            (0,),
            tuple(Transfer(0, i, work.param_bytes, "weights") for i in others),
        ),
        Phase(
            "forward",
            "Each GPU runs forward on its chunk: one Python process, one thread per GPU.",
            everyone,
        ),
        Phase(
            "gather",
            "The outputs are copied back to cuda:0 and concatenated there.",
            (0,),
            tuple(Transfer(i, 0, chunk_out, "outputs") for i in others),
        ),
        Phase("loss", "The loss is computed on cuda:0 alone; the other GPUs wait.", (0,)),
        Phase(
            "backward",
            "The loss's gradient for each chunk of outputs goes back to its GPU; every replica "
            "back-propagates.",
            everyone,
            tuple(Transfer(0, i, chunk_out, "output grads") for i in others),
        ),
        Phase(
            "reduce",
            "Every replica's gradients are summed onto cuda:0's model.",
            (0,),
            tuple(Transfer(i, 0, work.param_bytes, "gradients") for i in others),
        ),
        Phase(
            "step",
            (
                "The optimizer updates the weights on cuda:0 only. Next step: scatter and "
                "replicate again."
            ),
            (0,),
        ),
    ]


def ddp_phases(work: Workload, n: int, per_device_batch: int) -> list:
    """One DDP step on n GPUs: one process each, gradients
    averaged by an all-reduce (drawn as a ring)."""
    everyone = tuple(range(n))
    ring = ring_allreduce_bytes(work.param_bytes, n)
    return [
        Phase(
            "load",
            (
                f"Each process reads its own {per_device_batch} samples (DistributedSampler) and "
                "copies them from host memory to its own GPU: nothing passes through a main GPU."
            ),
            everyone,
        ),
        Phase(
            "forward",
            "Each process runs forward on its own replica, in parallel, with no Python lock "
            "shared between GPUs.",
            everyone,
        ),
        Phase(
            "backward + all-reduce",
            "Gradients are averaged in buckets while backward is still running. Drawn "
            f"as a ring all-reduce: {n - 1} reduce-scatter + {n - 1} all-gather steps, "
            f"each sending 1/{n} of the gradients to the next GPU. (NCCL picks ring, "
            "tree, NVLS or another algorithm by size and topology; the ring's count "
            "is its bandwidth bound.)",
            everyone,
            tuple(Transfer(i, (i + 1) % n, ring, "gradient chunks") for i in everyone)
            if n > 1
            else (),
        ),
        Phase(
            "step",
            (
                "Every process applies the same averaged gradient to its own replica: the "
                "replicas stay identical without ever copying weights."
            ),
            everyone,
        ),
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
    """{'DataParallel': [(sent, received) per GPU],
    'DistributedDataParallel': [...]}: one whole step."""
    return {
        "DataParallel": traffic(dp_phases(work, n, per_device_batch), n),
        "DistributedDataParallel": traffic(ddp_phases(work, n, per_device_batch), n),
    }


STRATEGIES = {"DataParallel": dp_phases, "DistributedDataParallel": ddp_phases}


def _device_box(i: int, phase: Phase, strategy: str, moved: tuple) -> str:
    sent, received = moved
    name = tr(f"cuda:{i} (main)") if strategy == "DataParallel" and i == 0 else f"cuda:{i}"
    color = "#ffd8a8" if i in phase.busy else "#eaeef2"
    moved = (
        tr(f"sends {format_bytes(sent)}") + "<br>" + tr(f"receives {format_bytes(received)}")
        if sent or received
        else tr("no copies")
    )
    state = tr("computing" if i in phase.busy else "waiting")
    style = (
        "display:inline-block;min-width:120px;margin:3px;padding:6px;border:1px solid #8c959f;"
        f"background:{color};color:#1f2328;text-align:center"
    )
    return f"<div style='{style}'><b>{name}</b><br>{state}<br><small>{moved}</small></div>"


def phase_html(strategy: str, index: int, work: Workload, n: int, per_device_batch: int) -> str:
    """The diagram of phase `index` (0-based) of one
    step: device boxes and the copies made (chapter 07)."""
    phases = STRATEGIES[strategy](work, n, per_device_batch)
    phase = phases[index]
    arrows = "".join(
        f"<li>cuda:{t.src} &rarr; cuda:{t.dst}: {format_bytes(t.n_bytes)} {tr(f'({t.what})')}</li>"
        for t in phase.transfers[:8]
    )
    if len(phase.transfers) > 8:
        arrows += f"<li>{tr(f'... {len(phase.transfers) - 8} more')}</li>"
    boxes = "".join(_device_box(i, phase, strategy, m) for i, m in enumerate(traffic([phase], n)))
    copies = arrows or f"<li>{tr('no copies between GPUs in this phase')}</li>"
    title = tr(f"{strategy}, phase {index + 1} of {len(phases)}: {phase.name}")
    return f"<div><b>{title}</b><br>{tr(phase.text)}</div><div>{boxes}</div><ul>{copies}</ul>"


def busiest(per_device: list) -> float:
    """Bytes moved (sent + received) by the busiest
    device: what the slowest link must carry (chapter 07)."""
    return max(s + r for s, r in per_device)


def totals_html(work: Workload, n: int, per_device_batch: int) -> str:
    """The per-step totals in words: DP's main GPU vs the others vs every DDP GPU (chapter 07)."""
    both = step_traffic(work, n, per_device_batch)
    dp, ddp = both["DataParallel"], both["DistributedDataParallel"]
    model = tr(
        f"Model: {work.param_bytes / 4:,.0f} float32 parameters = "
        f"{format_bytes(work.param_bytes)}. One step on {n} GPUs, {per_device_batch} samples "
        "each (bytes sent + received):"
    )
    items = (
        f"DataParallel: cuda:0 (main) moves {format_bytes(sum(dp[0]))}; every other GPU "
        f"{format_bytes(sum(dp[-1]))}",
        f"DDP: every GPU moves {format_bytes(sum(ddp[0]))} (counted as a ring all-reduce: each "
        f"device sends 2(N-1)/N x model = "
        f"{format_bytes(ring_allreduce_bytes(work.param_bytes, n))} and receives as much)",
        f"busiest GPU: DP / DDP = {busiest(dp) / busiest(ddp):.2f}",
    )
    return f"<div>{model}<ul>" + "".join(f"<li>{tr(i)}</li>" for i in items) + "</ul></div>"


def plot_traffic(work: Workload, n: int, per_device_batch: int):
    """Bar chart: bytes moved (sent + received) per GPU in one step, DP vs DDP (chapter 07)."""
    import matplotlib.pyplot as plt

    both = step_traffic(work, n, per_device_batch)
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    width = 0.4
    for k, (strategy, color) in enumerate(
        (("DataParallel", "tab:orange"), ("DistributedDataParallel", "tab:blue"))
    ):
        totals = [(s + r) / 2**20 for s, r in both[strategy]]
        ax.bar(
            [i + (k - 0.5) * width for i in range(n)], totals, width, label=strategy, color=color
        )
    ax.set_xticks(range(n), [f"cuda:{i}" for i in range(n)])
    ax.set(ylabel=plot_text("MiB moved per step"))
    title = plot_text("bytes each GPU sends + receives in one training step")
    ax.set_title(f"{plot_text(work.name)}\n{title}", fontsize=10)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    plt.close(fig)  # returned, so it is shown once
    return fig


LABEL_WIDTH = "110px"  # wide enough for "batch per GPU:"
MAX_WIDTH_PX = 960  # the widget fits a 1000 px notebook window


class StepThrough:
    """Article A's third interactive component: step through one training step of DP or DDP."""

    def __init__(self, n: int = 4, per_device_batch: int = 32):
        import ipywidgets as W

        label = {"description_width": LABEL_WIDTH}
        self.model = W.Dropdown(
            options=[(tr(name), name) for name in MODELS],
            value=list(MODELS)[2],
            description=tr("model:"),
            layout=W.Layout(width="100%", max_width="600px"),
            style=label,
        )
        self.n = W.IntSlider(
            value=n,
            min=2,
            max=8,
            description=tr("GPUs:"),
            style=label,
            layout=W.Layout(width="340px"),
        )
        self.batch = W.Dropdown(
            options=[8, 32, 128],
            value=per_device_batch,
            description=tr("batch per GPU:"),
            style=label,
            layout=W.Layout(width="230px"),
        )
        self.strategy = W.ToggleButtons(
            options=list(STRATEGIES),
            value="DataParallel",
            description=tr("strategy:"),
            style={**label, "button_width": "190px"},
        )
        self.phase = W.IntSlider(
            value=1,
            min=1,
            max=len(dp_phases(workload(self.model.value), 2, 1)),
            description=tr("phase:"),
            style=label,
            layout=W.Layout(width="340px"),
        )
        self.back = W.Button(description=tr("◀ back"))
        self.next = W.Button(description=tr("next ▶"))
        self.diagram, self.totals, self.chart = W.HTML(), W.HTML(), W.Output()
        self.back.on_click(lambda _: self._move(-1))
        self.next.on_click(lambda _: self._move(+1))
        for control in (self.model, self.n, self.batch):
            control.observe(self._redraw_all, names="value")
        self.strategy.observe(self._new_strategy, names="value")
        self.phase.observe(self._redraw_phase, names="value")
        wrap = W.Layout(flex_flow="row wrap", width="100%")
        self.box = W.VBox(
            [
                self.model,
                W.HBox([self.n, self.batch], layout=wrap),
                self.strategy,
                W.HBox([self.back, self.phase, self.next], layout=wrap),
                self.diagram,
                self.totals,
                self.chart,
            ],
            layout=W.Layout(
                border="1px solid #d0d7de",
                padding="6px",
                width="100%",
                max_width=f"{MAX_WIDTH_PX}px",
                overflow="hidden",
            ),
        )
        self._redraw_all()

    def work(self) -> Workload:
        return workload(self.model.value)

    def _move(self, delta: int):
        self.phase.value = min(max(self.phase.value + delta, self.phase.min), self.phase.max)

    def _new_strategy(self, _=None):
        self.phase.max = len(
            STRATEGIES[self.strategy.value](self.work(), self.n.value, self.batch.value)
        )
        self.phase.value = 1
        self._redraw_phase()

    def _redraw_phase(self, _=None):
        self.diagram.value = phase_html(
            self.strategy.value, self.phase.value - 1, self.work(), self.n.value, self.batch.value
        )

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
    """Show the chapter 07 widget: one training step of
    DP vs DDP, phase by phase, with traffic per GPU."""
    return StepThrough(n, per_device_batch)


# ================================================================ the checks' helpers the tests use
# The exercises and quizzes are declared in course_lib/declared/ch07_dp_vs_ddp.py, their checks
# live in course_lib/checks/distributed.py; these names stay here for the tests (ch.<name>).
sampler_indices, check_shards = distributed.sampler_indices, distributed.Shards

tiny_problem, gradients, AverageTask = (
    distributed.tiny_problem,
    distributed.gradients,
    distributed.AverageTask,
)
check_average = distributed.Average
