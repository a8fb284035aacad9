"""Chapter 08, sharding: when the model's own state does not fit, FSDP2 splits it across the ranks.

The real run lives in `course_lib.sharding` (chapter 07's worker runs it under torchrun with
``--task shard``): DDP and `fully_shard` side by side in the same two processes, on the same
batches. This module reads what the ranks recorded (what each holds, the losses, the collectives
a step sends), lays out the ZeRO stages, and holds the chapter's exercise and quizzes. The
exercise is checked against FSDP itself: the check runs it in real gloo processes.
"""
import math

import torch
from torch import nn

from . import ddp_worker, measure, sharding, training
from .exercises import Chapter, Fail, Test
from .memory import format_bytes, state_bytes
from .checks.base import number as as_number
from .sections import section

chapter = Chapter(__name__, title="Sharding with FSDP")

# chapter 08's run: the digits MLP 256 wide (19,210 parameters), Adam, 3 steps of 32 samples per rank
RUN = dict(task="shard", hidden=256, lr=1e-3, steps=3, epochs=1, per_device_batch=32)
PART_NAMES = {"parameters": "parameters", "gradients": "gradients", "optimizer_state": "Adam's state"}


# ---------------------------------------------------------------- 1. what one process holds
def one_process(hidden: int = RUN["hidden"], batch: int = 32, seed: int = 0) -> tuple:
    """The chapter's model after one Adam step in this process: (parameter count, memory.state_bytes) (chapter 08)."""
    torch.manual_seed(seed)
    model = training.digits_mlp(hidden=hidden, dropout=0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
    training.train_step(model, optimizer, nn.CrossEntropyLoss(), x, y)
    return sum(p.numel() for p in model.parameters()), state_bytes(model, optimizer)


def show_one_process(count: int, state: dict) -> str:
    """Each part in bytes and in bytes per parameter (chapter 08)."""
    lines = [f"{count:,} parameters, float32, after one Adam step:"]
    lines += [f"  {part.replace('_', ' '):<16} {format_bytes(n):>10}  = {n / count:5.2f} bytes per parameter"
              for part, n in state.items()]
    total = sum(state.values())
    lines.append(f"  {'all three':<16} {format_bytes(total):>10}  = {total / count:5.2f} bytes per parameter")
    return "\n".join(lines)


# ---------------------------------------------------------------- 2. the real run
def run_config(**changes) -> ddp_worker.DDPConfig:
    """The chapter's run, with a free port and an output folder fixed (chapter 08)."""
    return ddp_worker.DDPConfig(**{**RUN, **changes}).resolved()


def describe_shards(result: ddp_worker.LaunchResult) -> str:
    """Per rank: how many of the model's parameters it holds under FSDP, and each parameter's rows (chapter 08)."""
    lines = [f"{result.how}: {len(result.ranks)} processes, backend {result.config.backend}, "
             f"{result.seconds:.1f} s including start-up"]
    for r in result.ranks:
        count, total = r["holds"]["FSDP"]["parameter_count"], r["total_parameters"]
        shards = ", ".join(f"{name} {list(full)} -> {list(mine)}" for name, full, mine in r["shards"])
        lines.append(f"  rank {r['rank']}: {count:,} of {total:,} parameters ({count / total:.1%}); {shards}")
    return "\n".join(lines)


def losses_report(result: ddp_worker.LaunchResult) -> str:
    """The losses of DDP and FSDP per step on every rank, and how far the final weights are apart (chapter 08)."""
    lines = []
    for r in result.ranks:
        ddp, fsdp = r["losses"]["DDP"], r["losses"]["FSDP"]
        gap = max(abs(a - b) for a, b in zip(ddp, fsdp))
        lines.append(f"rank {r['rank']}: DDP {', '.join(f'{v:.4f}' for v in ddp)} | FSDP "
                     f"{', '.join(f'{v:.4f}' for v in fsdp)} | largest |difference| {gap:.2e}")
    lines.append(f"final weights, DDP vs FSDP (gathered whole): largest |difference| "
                 f"{max(r['weights_gap'] for r in result.ranks):.2e}")
    return "\n".join(lines)


def bytes_report(result: ddp_worker.LaunchResult) -> str:
    """Per rank and part: bytes under DDP, under FSDP, and their ratio (chapter 08)."""
    lines = [f"{'':8}{'part':<16}{'DDP':>12}{'FSDP':>12}{'FSDP / DDP':>12}"]
    for r in result.ranks:
        for part in sharding.PARTS:
            ddp, fsdp = r["holds"]["DDP"][part], r["holds"]["FSDP"][part]
            lines.append(f"rank {r['rank']:<3}{PART_NAMES[part]:<16}{format_bytes(ddp):>12}{format_bytes(fsdp):>12}"
                         f"{fsdp / ddp:>12.3f}")
    return "\n".join(lines)


def plot_bytes(result: ddp_worker.LaunchResult, rank: int = 0):
    """Bars: what one rank holds per part, DDP beside FSDP, in KiB (chapter 08)."""
    holds = result.ranks[rank]["holds"]
    rows = {PART_NAMES[part]: (holds["DDP"][part] / 1024, holds["FSDP"][part] / 1024) for part in sharding.PARTS}
    return measure.plot_grouped(rows, parts=("DDP", "FSDP"), ylabel="KiB on this rank",
                                title=f"what rank {rank} of {len(result.ranks)} holds after its steps")


# ---------------------------------------------------------------- 3. what it costs
def collectives_report(result: ddp_worker.LaunchResult, rank: int = 0) -> str:
    """The collectives one profiled step sent on `rank`, per run, with the numbers in each (chapter 08)."""
    lines = []
    for run, sent in result.ranks[rank]["sent"].items():
        counts = ", ".join(f"{name} of {n:,}" for name, n in sent) or "none"
        lines.append(f"{run}: {len(sent)} collective(s): {counts}")
    return "\n".join(lines)


def ring_numbers(parameters: int, world_size: int) -> dict:
    """Numbers each rank sends per step in a ring, for DDP and for FSDP (NCCL's reduce-scatter) (chapter 08).

    DDP: one all-reduce of the gradients, 2(N-1)/N x P. FSDP: an all-gather of the parameters in
    forward and again in backward, (N-1)/N x P each, and a reduce-scatter of the gradients, (N-1)/N x P.
    """
    share = (world_size - 1) / world_size * parameters
    return {"DDP": 2 * share, "FSDP": 3 * share}


# (stage, what is split across the ranks, bytes per parameter per rank: weights, grads, Adam) with N ranks
ZERO_STAGES = (
    ("DDP (no sharding)", "nothing", lambda n: (4, 4, 8)),
    ("ZeRO-1", "Adam's state", lambda n: (4, 4, 8 / n)),
    ("ZeRO-2", "+ gradients", lambda n: (4, 4 / n, 8 / n)),
    ("ZeRO-3 = FSDP", "+ parameters", lambda n: (4 / n, 4 / n, 8 / n)),
)


def zero_table(parameters: int, world_size: int) -> str:
    """Bytes per rank for each ZeRO stage, float32 with Adam (step counters left out) (chapter 08)."""
    lines = [f"{parameters:,} parameters on {world_size} ranks, float32, Adam:",
             f"  {'stage':<20}{'shards':<15}{'weights':>11}{'grads':>11}{'Adam':>11}{'per rank':>12}"]
    for stage, what, per_parameter in ZERO_STAGES:
        parts = [b * parameters for b in per_parameter(world_size)]
        lines.append(f"  {stage:<20}{what:<15}" + "".join(f"{format_bytes(b):>11}" for b in parts)
                     + f"{format_bytes(sum(parts)):>12}")
    return "\n".join(lines)


# ---------------------------------------------------------------- exercise: rank_bytes
PARTS = sharding.PARTS
CHAPTER_SHAPES = ((256, 64), (256,), (10, 256), (10,))  # the chapter's model: Linear(64, 256), Linear(256, 10)


def plain_parts(value) -> dict:
    """Run-half helper: a returned dict of the three parts as plain numbers, or what it was instead."""
    if not isinstance(value, dict):
        return {"type": type(value).__name__, "repr": repr(value)[:80]}
    return {"parts": {str(k): as_number(v) for k, v in value.items()}}


def predictions(candidate, shapes, world_size: int) -> list:
    """Run half: the learner's rank_bytes for every rank, unsharded and sharded, as plain data (chapter 08)."""
    return [{"rank": rank, "sharded": sharded,
             **plain_parts(candidate([tuple(s) for s in shapes], world_size, rank, sharded))}
            for sharded in (False, True) for rank in range(world_size)]


def measured(shapes, world_size: int) -> list:
    """Reference: what DDP and FSDP really hold on each rank, from a real gloo run (chapter 08)."""
    runs = sharding.measure_holdings(shapes, world_size)
    return [{"rank": rank, "sharded": sharded, "parts": runs[rank]["FSDP" if sharded else "DDP"]}
            for sharded in (False, True) for rank in range(world_size)]


def _rows(shapes, world_size: int, rank: int, dim: int = 0, divide=None) -> list:
    """Numbers of each parameter on `rank`: torch.chunk's rows along `dim`, or `divide(numel)`."""
    counts = []
    for shape in shapes:
        numel = math.prod(shape)
        if divide is not None:
            counts.append(divide(numel))
            continue
        size = shape[dim]
        chunk = -(-size // world_size)
        mine = max(0, min(size, (rank + 1) * chunk) - rank * chunk)
        counts.append(numel // size * mine if size else 0)
    return counts


def _bytes(counts: list, tensors: int, *, unit: int = 4, adam_copies: int = 2, steps: bool = True,
           grads=None) -> dict:
    """The three parts from per-parameter counts (grads: other counts for the gradients)."""
    grads = counts if grads is None else grads
    return {"parameters": unit * sum(counts), "gradients": unit * sum(grads),
            "optimizer_state": unit * adam_copies * sum(counts) + (unit * tensors if steps else 0)}


def mistake(kind: str):
    """A prediction with one typical mistake (`kind`), for the judge's table (chapter 08)."""
    def predict(shapes, n, rank, sharded):
        full = _rows(shapes, 1, 0)
        options = {"no_steps": {"steps": False}, "one_copy": {"adam_copies": 1}, "elements": {"unit": 1}}.get(kind, {})
        if not sharded and kind != "ddp_divided":
            return _bytes(full, len(shapes), **options)
        mine = {"even": lambda: _rows(shapes, n, rank, divide=lambda k: k / n),
                "floor": lambda: _rows(shapes, n, rank, divide=lambda k: k // n),
                "last_dim": lambda: _rows(shapes, n, rank, dim=-1),
                "rank_0": lambda: _rows(shapes, n, 0)}.get(kind, lambda: _rows(shapes, n, rank))()
        return _bytes(mine, len(shapes), **options, **({"grads": full} if kind == "grads_whole" else {}))
    return predict


# (mistake, the problem, a hint): the first mistake that reproduces every answer names it
MISTAKES = (
    (mistake("even"), "an even split of every parameter, numel / N",
     "FSDP does not cut a tensor anywhere: it splits each parameter along its FIRST dimension into N chunks as "
     "`torch.chunk` does, ceil(rows / N) rows per rank, and the last ranks get what is left (maybe nothing)."),
    (mistake("floor"), "numel // N for every parameter",
     "Rows are not elements: each rank gets ceil(rows / N) whole rows of a parameter (the last ranks fewer)."),
    (mistake("last_dim"), "split along the last dimension", "FSDP shards dimension 0, the rows."),
    (mistake("rank_0"), "the same for every rank, rank 0's share",
     "With rows that do not divide by N, the last ranks hold fewer rows: the answer depends on `rank`."),
    (mistake("no_steps"), "short of Adam's step counters",
     "Adam also keeps `step` per parameter tensor: a 0-dim float32 tensor, 4 bytes, whole on every rank."),
    (mistake("one_copy"), "one copy of the weights for Adam's state",
     f"Adam keeps two running averages per parameter, exp_avg and exp_avg_sq "
     f"({section('06', 'Where the memory goes', chapter_too=True)})."),
    (mistake("grads_whole"), "whole gradients on every rank (ZeRO-1, not FSDP)",
     "FSDP reduce-scatters the gradients after backward: each rank keeps the gradient of its own rows."),
    (mistake("ddp_divided"), "DDP divided by N too", "DDP shards nothing: every rank holds the whole model, "
                                                      "its gradients and Adam's state, whatever N is."),
    (mistake("elements"), "numbers of elements, not bytes", "float32 numbers take 4 bytes each."),
)


def _same(row: dict, want: dict) -> bool:
    return all(row.get(part) is not None and abs(row[part] - want[part]) < 0.5 for part in PARTS)


def judge_rank_bytes(seen: list, want: list, shapes, world_size: int, where: str = "") -> None:
    """Judge half: the learner's bytes against the measured ones; a known mistake is named (chapter 08)."""
    for row in seen:
        if "parts" not in row:
            raise Fail(f"Return a dict with 'parameters', 'gradients' and 'optimizer_state'{where}.",
                       expected="a dict of three byte counts", got=f"{row.get('type')}: {row.get('repr')}")
        missing = [p for p in PARTS if row["parts"].get(p) is None]
        if missing:
            raise Fail(f"Your dict has no number for {', '.join(missing)}{where}.", expected=f"keys {list(PARTS)}",
                       got=f"keys {list(row['parts'])}")
    wrong = [(row, good) for row, good in zip(seen, want) if not _same(row["parts"], good["parts"])]
    if not wrong:
        return
    for predict, problem, hint in MISTAKES:
        if all(_same(row["parts"], predict(shapes, world_size, row["rank"], row["sharded"])) for row in seen):
            raise Fail(f"Your bytes are {problem}{where}.", hint=hint, **_shown(*wrong[0]))
    row, good = wrong[0]
    raise Fail(f"{'FSDP' if row['sharded'] else 'DDP'} rank {row['rank']} of {world_size}: not what the rank "
               f"really holds{where}.", hint="For each parameter: its rows on this rank (torch.chunk along "
                                             "dimension 0), times the other dimensions, times 4 bytes.",
               **_shown(row, good))


def _shown(row: dict, good: dict) -> dict:
    """expected= and got= of one rank's row, as text."""
    what = f"{'FSDP' if row['sharded'] else 'DDP'} rank {row['rank']}: "
    return {"expected": what + ", ".join(f"{p} {good['parts'][p]}" for p in PARTS),
            "got": what + ", ".join(f"{p} {row['parts'][p]}" for p in PARTS)}


def check_rank_bytes(shapes, world_size: int, where: str = ""):
    """A test: the learner's predictions for every rank against a real run of `world_size` processes (chapter 08)."""
    def run(candidate):
        seen = predictions(candidate, shapes, world_size)  # the learner's function first: a stub stops here
        try:
            want = measured(shapes, world_size)
        except TimeoutError:
            raise Fail(f"The measuring run of {world_size} processes did not finish in time{where}; run the check "
                       "again (a busy machine?).")
        judge_rank_bytes(seen, want, shapes, world_size, where)
    return run


rank_bytes = chapter.function_exercise(
    "rank_bytes",
    title="Predict what each rank holds",
    prompt="Write rank_bytes(shapes, world_size, rank, sharded) -> dict: for a float32 model with parameters of "
           "these shapes, trained with Adam on world_size ranks, the bytes rank `rank` holds after a step: "
           "{'parameters': ..., 'gradients': ..., 'optimizer_state': ...}. sharded=False is DDP (a whole copy on "
           "every rank); sharded=True is FSDP2's fully_shard: each parameter split along dimension 0 as "
           "torch.chunk(p, world_size) splits it, and its gradient and Adam state split the same way; Adam's step "
           "counter (4 bytes per parameter tensor) stays whole on every rank.",
    points=4,
    time_limit=90.0,  # the check starts real processes (forked: a second or two; spawned: they import torch)
    tests=[
        Test("the chapter's model on 2 ranks, DDP and FSDP, measured in a real run",
             check_rank_bytes(CHAPTER_SHAPES, 2, " (the chapter's model, 2 ranks)")),
        Test("3 ranks, rows that do not divide by 3, measured in a real run",
             check_rank_bytes(((40, 64), (40,), (10, 40), (10,)), 3, " (3 ranks)")),
    ],
    hints=["Start with DDP: every rank holds everything. Parameters: 4 bytes per number; gradients the same; "
           "Adam: two more copies (exp_avg, exp_avg_sq) plus a 4-byte step counter per parameter tensor.",
           "For FSDP, take one parameter at a time: `torch.chunk` along dimension 0 gives each rank "
           "ceil(rows / world_size) rows until the rows run out; the rank's share is those rows times the size of "
           "the other dimensions.",
           "Shape of it: for each shape, rows = shape[0], chunk = ceil(rows / world_size), mine = the rows between "
           "rank * chunk and min(rows, (rank + 1) * chunk) (0 if none); numbers = mine * (numel / rows). Then the "
           "three parts from those numbers, with the step counters added whole."],
)


# ---------------------------------------------------------------- quizzes
when_sharding_pays = chapter.quiz(
    "when_sharding_pays",
    title="When does sharding pay?",
    kind="multiple",
    question="Sharding the model with FSDP costs communication: each step all-gathers the parameters in forward and "
             "again in backward, and reduce-scatters the gradients, about 1.5 times what DDP's one all-reduce sends. "
             "In which cases is it worth that? Choose all that apply.",
    options={"a": "The weights, gradients and Adam's state (16 bytes per parameter) do not fit on one GPU",
             "b": "The model fits with room to spare, and the GPUs talk over a slow network",
             "c": "The model's state fits, but leaves room only for a batch too small to train well",
             "d": "Training runs on a single GPU, with a model that fits on it",
             "e": "The run is already slowed down by its communication, and every GPU has free memory"},
    digest="f3bb45e9f77260fe",
    hints=["Sharding buys memory and pays with communication: in which cases is memory the problem?",
           f"What FSDP frees is each rank's share of the 16 bytes per parameter "
           f"({section('08', 'What every DDP rank holds')}); what it costs is measured in "
           f"{section('08', 'What sharding costs')}."],
    why={"b": "With memory to spare nothing is gained, and a slow network makes the extra all-gathers cost the most.",
         "d": "With one GPU there is no other rank to hold a share: world size 1 splits nothing.",
         "e": "More communication on a run that waits for its network already makes it slower, and the memory it "
              "would free is not needed."},
    explanation="FSDP pays when memory is what stops you: a model whose state does not fit on one GPU, or one that "
                "fits only with a batch too small to train well (the memory FSDP frees goes to activations). With "
                "memory to spare, a slow network or a single GPU, its extra communication only costs time.",
)

fsdp_gigabytes = chapter.quiz(
    "fsdp_gigabytes",
    title="Gigabytes per GPU",
    kind="numeric",
    question="A model of 1 billion parameters trains in float32 with Adam on 8 GPUs with FSDP (ZeRO-3). Leaving "
             "activations and Adam's small step counters aside, how many GB (10**9 bytes) of parameters, gradients "
             "and optimizer state does each GPU hold?",
    digest="fc9c2e628c74b5b6",
    hints=["Count the bytes per parameter first: weights, gradients, and Adam's two running averages.",
           "16 bytes per parameter in all; FSDP splits all of it across the 8 GPUs."],
    why={16: "16 GB is what every GPU holds under DDP: the whole model, its gradients and Adam's state.",
         4: "4 GB is the weights alone, unsharded: count the gradients and Adam's two copies, then split.",
         0.5: "0.5 GB is the weights' share alone: each GPU also holds its share of gradients and Adam's state."},
    decimals=1,
    explanation="4 bytes of weights + 4 of gradients + 8 of Adam's two averages = 16 bytes per parameter, 16 GB for "
                "1 billion; FSDP on 8 GPUs leaves each GPU 16 / 8 = 2 GB. DDP would hold 16 GB on every GPU.",
)
