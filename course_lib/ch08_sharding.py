"""Chapter 08, sharding: when the model's own state does not fit, FSDP2 splits it across the ranks.

The real run lives in `course_lib.sharding` (chapter 07's worker runs it under torchrun with
``--task shard``): DDP and `fully_shard` side by side in the same two processes, on the same
batches. This module reads what the ranks recorded (what each holds, the losses, the collectives
a step sends), lays out the ZeRO stages, and holds the chapter's exercise and quizzes. The
exercise is checked against FSDP itself: its judge measures real gloo processes.
"""

import math

import torch
from torch import nn

from . import chapters, ddp_worker, measure, sharding, training
from .checks.sharding import RankBytes
from .exercises import Declarations, Test
from .exercises.runner import warm_up
from .i18n import tr
from .i18n.catalogue import listing
from .i18n.layout import ljust, rjust
from .i18n.plots import plot_text
from .memory import format_bytes, state_bytes
from .sections import section

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "rank_bytes",
    "when_sharding_pays",
    "fsdp_gigabytes",
    "reshard_kept",
    # teaching helpers: the demos, tables and models the notebook uses
    "one_process",
    "show_one_process",
    "run_config",
    "describe_shards",
    "losses_report",
    "bytes_report",
    "plot_bytes",
    "collectives_report",
    "reshard_report",
    "ring_numbers",
    "zero_table",
    "CHAPTER_SHAPES",
]


def __dir__():
    return __all__


# ================================================================ teaching helpers
# chapter 08's run: the digits MLP 256 wide (19,210
# parameters), Adam, 3 steps of 32 samples per rank
RUN = dict(task="shard", hidden=256, lr=1e-3, steps=3, epochs=1, per_device_batch=32)
PART_NAMES = {
    "parameters": "parameters",
    "gradients": "gradients",
    "optimizer_state": "Adam's state",
}


# ---------------------------------------------------------------- 1. what one process holds
def one_process(hidden: int = RUN["hidden"], batch: int = 32, seed: int = 0) -> tuple:
    """The chapter's model after one Adam step in this process:
    (parameter count, memory.state_bytes) (chapter 08)."""
    warm_up()  # what Adam's constructor would import, with the collector paused
    torch.manual_seed(seed)
    model = training.digits_mlp(hidden=hidden, dropout=0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
    training.train_step(model, optimizer, nn.CrossEntropyLoss(), x, y)
    return sum(p.numel() for p in model.parameters()), state_bytes(model, optimizer)


def show_one_process(count: int, state: dict) -> str:
    """Each part in bytes and in bytes per parameter (chapter 08)."""
    lines = [tr(f"{count:,} parameters, float32, after one Adam step:")]
    rows = [(part.replace("_", " "), n) for part, n in state.items()]
    lines += [
        f"  {ljust(tr(part), 16)} {format_bytes(n):>10}  "
        + tr(f"= {n / count:5.2f} bytes per parameter")
        for part, n in [*rows, ("all three", sum(state.values()))]
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- 2. the real run
def run_config(**changes) -> ddp_worker.DDPConfig:
    """The chapter's run, with a free port and an output folder fixed (chapter 08)."""
    return ddp_worker.DDPConfig(**{**RUN, **changes}).resolved()


def describe_shards(result: ddp_worker.LaunchResult) -> str:
    """Per rank: how many of the model's parameters it holds
    under FSDP, and each parameter's rows (chapter 08)."""
    lines = [
        tr(
            f"{result.how}: {len(result.ranks)} processes, backend {result.config.backend}, "
            f"{result.seconds:.1f} s including start-up"
        )
    ]
    for r in result.ranks:
        count, total = r["holds"]["FSDP"]["parameter_count"], r["total_parameters"]
        shards = ", ".join(
            f"{name} {list(full)} -> {list(mine)}" for name, full, mine in r["shards"]
        )
        lines.append(
            "  "
            + tr(
                f"rank {r['rank']}: {count:,} of {total:,} parameters ({count / total:.1%}); "
                f"{shards}"
            )
        )
    return "\n".join(lines)


def losses_report(result: ddp_worker.LaunchResult) -> str:
    """The losses of DDP and FSDP per step on every rank,
    and how far the final weights are apart (chapter 08)."""
    lines = []
    for r in result.ranks:
        ddp, fsdp = r["losses"]["DDP"], r["losses"]["FSDP"]
        gap = max(abs(a - b) for a, b in zip(ddp, fsdp))
        lines.append(
            tr(
                f"rank {r['rank']}: DDP {', '.join(f'{v:.4f}' for v in ddp)} | FSDP "
                f"{', '.join(f'{v:.4f}' for v in fsdp)} | largest |difference| {gap:.2e}"
            )
        )
    lines.append(
        tr(
            f"final weights, DDP vs FSDP (gathered whole): largest |difference| "
            f"{max(r['weights_gap'] for r in result.ranks):.2e}"
        )
    )
    return "\n".join(lines)


def _bytes_row(rank: int, part: str, sizes: str) -> str:
    return f"rank {rank:<3}{ljust(tr(PART_NAMES[part]), 16)}{sizes}"


def _counts(sent) -> str:
    """'gloo:all_reduce (19,210 numbers), ...': each collective and how many numbers it carried."""
    return listing(tr(f"{collective} ({n:,} numbers)") for collective, n in sent)


def bytes_report(result: ddp_worker.LaunchResult) -> str:
    """Per rank and part: bytes under DDP, under FSDP, and their ratio (chapter 08)."""
    lines = [f"{'':8}{ljust(tr('part'), 16)}{'DDP':>12}{'FSDP':>12}{'FSDP / DDP':>12}"]
    for r in result.ranks:
        for part in sharding.PARTS:
            ddp, fsdp = r["holds"]["DDP"][part], r["holds"]["FSDP"][part]
            sizes = f"{format_bytes(ddp):>12}{format_bytes(fsdp):>12}{fsdp / ddp:>12.3f}"
            lines.append(_bytes_row(r["rank"], part, sizes))
    return "\n".join(lines)


def plot_bytes(result: ddp_worker.LaunchResult, rank: int = 0):
    """Bars: what one rank holds per part, DDP beside FSDP, in KiB (chapter 08)."""
    holds = result.ranks[rank]["holds"]
    rows = {
        plot_text(PART_NAMES[part]): (holds["DDP"][part] / 1024, holds["FSDP"][part] / 1024)
        for part in sharding.PARTS
    }
    return measure.plot_grouped(
        rows,
        parts=("DDP", "FSDP"),
        ylabel=plot_text("KiB on this rank"),
        title=plot_text(f"what rank {rank} of {len(result.ranks)} holds after its steps"),
    )


# ---------------------------------------------------------------- 3. what it costs
def collectives_report(result: ddp_worker.LaunchResult, rank: int = 0) -> str:
    """The collectives one profiled step sent on `rank`,
    per run, with the numbers in each (chapter 08)."""
    lines = []
    for run, sent in result.ranks[rank]["sent"].items():
        counts = _counts(sent) or tr("none")
        lines.append(tr(f"{run}: {len(sent)} collective(s): {counts}"))
    return "\n".join(lines)


def reshard_report(result: ddp_worker.LaunchResult, rank: int = 0) -> str:
    """Per FSDP run on `rank`: its all-gathers in one step, and the bytes of parameters it held
    right after forward and after the step (chapter 08)."""
    r, lines = result.ranks[rank], []
    for run, between in r["after_forward"].items():
        gathers = [n for name, n in r["sent"][run] if name.endswith("all_gather")]
        after_step = r["holds"][run]["parameters"]
        lines.append(
            tr(
                f"{run}: {len(gathers)} all-gather(s), {sum(gathers):,} numbers; parameters held "
                f"after forward {format_bytes(between)}, after the step {format_bytes(after_step)}"
            )
        )
    return "\n".join(lines)


def ring_numbers(parameters: int, world_size: int) -> dict:
    """Numbers each rank sends per step in a ring, for DDP
    and for FSDP (NCCL's reduce-scatter) (chapter 08).

    DDP: one all-reduce of the gradients, 2(N-1)/N x P. FSDP: an all-gather of the parameters in
    forward and again in backward, (N-1)/N x P each, and a reduce-scatter of the gradients, (N-1)/N
    x P.
    """
    share = (world_size - 1) / world_size * parameters
    return {"DDP": 2 * share, "FSDP": 3 * share}


# (stage, what is split across the ranks, which parts it
# shards); bytes per number: weights 4, grads 4, Adam 8
ZERO_STAGES = (
    ("DDP (no sharding)", "nothing", ()),
    ("ZeRO-1", "Adam's state", ("Adam",)),
    ("ZeRO-2", "+ gradients", ("grads", "Adam")),
    ("ZeRO-3 = FSDP", "+ parameters", ("weights", "grads", "Adam")),
)
PART_BYTES = (("weights", 4), ("grads", 4), ("Adam", 8))


def rank0_share(shapes, world_size: int) -> int:
    """Numbers rank 0 holds of parameters with these shapes, each cut along dimension 0 as
    torch.chunk cuts it: the largest share when the rows do not divide (chapter 08)."""
    return sum(
        torch.chunk(torch.empty(shape, device="meta"), world_size)[0].numel() for shape in shapes
    )


def zero_table(shapes, world_size: int) -> str:
    """Bytes rank 0 holds for each ZeRO stage, float32 with Adam (step counters left out), its
    shards as torch.chunk cuts them (chapter 08)."""
    parameters = sum(math.prod(shape) for shape in shapes)
    mine = rank0_share(shapes, world_size)
    head = [("weights", 11), ("grads", 11), ("Adam", 11), ("rank 0", 12)]
    lines = [
        tr(
            f"{parameters:,} parameters on {world_size} ranks, float32, Adam; rank 0's shards "
            f"(torch.chunk): {mine:,} numbers (an even split: {parameters / world_size:,.2f}):"
        ),
        f"  {ljust(tr('stage'), 20)}{ljust(tr('shards'), 15)}"
        + "".join(rjust(tr(name), n) for name, n in head),
    ]
    for stage, what, sharded in ZERO_STAGES:
        parts = [b * (mine if part in sharded else parameters) for part, b in PART_BYTES]
        lines.append(
            f"  {ljust(tr(stage), 20)}{ljust(tr(what), 15)}"
            + "".join(f"{format_bytes(b):>11}" for b in parts)
            + f"{format_bytes(sum(parts)):>12}"
        )
    return "\n".join(lines)


# ================================================================ exercises and quizzes
# ----------------------------------------------------------------------------- exercise: rank_bytes
# Its check (predictions here, a real gloo run of FSDP in
# the judge, the mistakes table) is checks/sharding.py's.
CHAPTER_SHAPES = (
    (256, 64),
    (256,),
    (10, 256),
    (10,),
)  # the chapter's model: Linear(64, 256), Linear(256, 10)

rank_bytes = declare.function_exercise(
    "rank_bytes",
    title="Predict what each rank holds",
    prompt=(
        "Write rank_bytes(shapes, world_size, rank, sharded) -> dict: for a float32 model with "
        "parameters of these shapes, trained with Adam on world_size ranks, the bytes rank `rank` "
        "holds after a step: {'parameters': ..., 'gradients': ..., 'optimizer_state': ...}. "
        "sharded=False is DDP (a whole copy on every rank); sharded=True is FSDP2's fully_shard: "
        "each parameter split along dimension 0 as torch.chunk(p, world_size) splits it, and its "
        "gradient and Adam state split the same way; Adam's step counter (4 bytes per parameter "
        "tensor) stays whole on every rank."
    ),
    points=4,
    tests=[
        Test(
            "the chapter's model on 2 ranks, DDP and FSDP, measured in a real run",
            RankBytes(CHAPTER_SHAPES, 2, " (the chapter's model, 2 ranks)"),
        ),
        Test(
            "3 ranks, rows that do not divide by 3, measured in a real run",
            RankBytes(((40, 64), (40,), (10, 40), (10,)), 3, " (3 ranks)"),
        ),
    ],
    hints=[
        (
            "Start with DDP: every rank holds everything. Parameters: 4 bytes per number; "
            "gradients the same; Adam: two more copies (exp_avg, exp_avg_sq) plus a 4-byte step "
            "counter per parameter tensor."
        ),
        (
            "For FSDP, take one parameter at a time: `torch.chunk` along dimension 0 gives each "
            "rank ceil(rows / world_size) rows until the rows run out; the rank's share is those "
            "rows times the size of the other dimensions."
        ),
        (
            "Shape of it: for each shape, rows = shape[0], chunk = ceil(rows / world_size), mine "
            "= the rows between rank * chunk and min(rows, (rank + 1) * chunk) (0 if none); "
            "numbers = mine * (numel / rows). Then the three parts from those numbers, with the "
            "step counters added whole."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
when_sharding_pays = declare.quiz(
    "when_sharding_pays",
    title="When does sharding pay?",
    kind="multiple",
    question=(
        "Sharding the model with FSDP costs communication: by default each step all-gathers each "
        "layer's parameters in forward and again in backward, and reduce-scatters the gradients, "
        "about 1.5 times what DDP's one all-reduce sends over NCCL. In which cases is it worth "
        "that? Choose all that apply."
    ),
    options={
        "a": (
            "The weights, gradients and Adam's state (16 bytes per parameter) do not fit on one GPU"
        ),
        "b": "The model fits with room to spare, and the GPUs talk over a slow network",
        "c": "The model's state fits, but leaves room only for a batch too small to train well",
        "d": "Training runs on a single GPU, with a model that fits on it",
        "e": "The run is already slowed down by its communication, and every GPU has free memory",
    },
    digest="f3bb45e9f77260fe",
    hints=[
        "Sharding buys memory and pays with communication: in which cases is memory the problem?",
        f"FSDP leaves each rank only its own share of the 16 bytes per parameter "
        f"({section('08', 'What every DDP rank holds')}); what it costs is measured in "
        f"{section('08', 'What sharding costs')}.",
    ],
    why={
        "b": (
            "With memory to spare nothing is gained, and a slow network makes the extra "
            "all-gathers cost the most."
        ),
        "d": "With one GPU there is no other rank to hold a share: world size 1 splits nothing.",
        "e": (
            "More communication on a run that waits for its network already makes it slower, and "
            "the memory it would free is not needed."
        ),
    },
    explanation=(
        "FSDP pays when memory is what stops you: a model whose state does not fit on one GPU, or "
        "one that fits only with a batch too small to train well (the memory FSDP frees goes to "
        "activations). With memory to spare, a slow network or a single GPU, its extra "
        "communication only costs time."
    ),
)

fsdp_gigabytes = declare.quiz(
    "fsdp_gigabytes",
    title="Gigabytes per GPU",
    kind="numeric",
    question=(
        "A model of 1 billion parameters trains in float32 with Adam on 8 GPUs with FSDP "
        "(ZeRO-3). Leaving activations and Adam's small step counters aside, how many GB (10**9 "
        "bytes) of parameters, gradients and optimizer state does each GPU hold?"
    ),
    digest="fc9c2e628c74b5b6",
    hints=[
        "Count the bytes per parameter first: weights, gradients, and Adam's two running averages.",
        (
            "Then ask which of those parts ZeRO-3 splits across the GPUs, and which (if any) it "
            "keeps whole: the chapter's ZeRO table lists them."
        ),
    ],
    why={
        16: (
            "16 GB is what every GPU holds under DDP: the whole model, its gradients and Adam's "
            "state."
        ),
        4: (
            "4 GB is the weights alone, unsharded: count the gradients and Adam's two copies, "
            "then split."
        ),
        0.5: (
            "0.5 GB is the weights' share alone: each GPU also holds its share of gradients and "
            "Adam's state."
        ),
    },
    decimals=1,
    explanation=(
        "4 bytes of weights + 4 of gradients + 8 of Adam's two averages = 16 bytes per parameter, "
        "16 GB for 1 billion; FSDP on 8 GPUs leaves each GPU 16 / 8 = 2 GB. DDP would hold 16 GB "
        "on every GPU."
    ),
)


reshard_kept = declare.quiz(
    "reshard_kept",
    title="Keep the layers gathered?",
    kind="single",
    question=(
        "In the chapter's 2-rank run, every fully_shard call is given reshard_after_forward=False "
        "(the third run above). Compared with the default, what changes in one training step?"
    ),
    options={
        "a": "Its peak memory is lower, since no layer is ever gathered twice in one training step",
        "b": "Between steps each rank holds the whole model again, as it would under DDP",
        "c": "Each layer is gathered once, not twice, and stays whole from forward to backward",
        "d": "The gradients are all-reduced whole instead of reduce-scattered, as in DDP",
    },
    digest="9ec4c89a4f0d7211",
    hints=[
        f"Compare the two FSDP lines of {section('08', 'What sharding costs')}: count the "
        f"all-gathers, and the parameters held after forward and after the step.",
        "What must backward have for each layer, and where does it come from when forward did "
        "not free it?",
    ],
    why={
        "a": (
            "The other way round: a layer it does not gather again in backward is one it kept "
            "whole since forward, so between forward and backward each rank holds every layer "
            "whole (75 KiB here instead of 37.5)."
        ),
        "b": (
            "After backward FSDP reshards every layer all the same: after the step both FSDP runs "
            "hold half of the parameters, as measured."
        ),
        "d": (
            "The gradients are still reduce-scattered (an all-reduce only under gloo, which FSDP "
            "keeps its rows of): each rank keeps the sum for its own rows."
        ),
    },
    explanation=(
        "Forward gathers each layer and keeps it, so backward needs no second all-gather: one "
        "all-gather and one reduce-scatter per layer, DDP's traffic (ZeRO-2's trade), for whole "
        "layers held between forward and backward. The default frees them after forward (ZeRO-3) "
        "except the root's, which backward needs first. An int N reshards to groups of N ranks."
    ),
)


# ---------------------------------------------------------------- written questions
# Answered in words in the notebook's answer cell, read and graded by the teacher (the review
# page shows each answer beside what it expects); nothing grades it automatically.
chapter.written(
    "sharding_trade",
    title="When sharding pays, and what it costs",
    question=(
        "When does sharding a model with FSDP pay, and what does it cost? Answer with the "
        "numbers of this chapter's run."
    ),
    expects=[
        "It pays when memory is what stops you: the weights, gradients and Adam's state (16 "
        "bytes per parameter) do not fit on one GPU, or leave room only for a batch too small; "
        "FSDP divides them by up to the number of ranks (the run measured each part halved)",
        "It costs communication: an all-gather of each layer in forward and again in backward, "
        "then a reduce-scatter of the gradients, about 1.5 times DDP's traffic with NCCL (2 "
        "times in the run, where gloo all-reduces the whole gradient)",
        "Prefetching hides much of that traffic behind the compute on GPUs; with memory to spare "
        "or a slow network, DDP (or ZeRO-1, or `reshard_after_forward=False`) is the better trade",
    ],
    section=section("08", "What sharding costs"),
    points=3,
)
