"""Chapter 08's check: rank_bytes, the bytes each
rank holds under DDP and under FSDP2's fully_shard.

The run half only calls the learner's function: its predictions for every rank, unsharded and
sharded, travel as plain data. The judge measures what the ranks really hold in a gloo run of its
own (`course_lib.sharding.measure_holdings`: the same parameters under DDP and fully_shard, one
Adam step, in `world_size` real processes) and compares; its table of known mistakes is computed
from the shapes alone. Nothing the child reports about itself is trusted: only the predictions.
"""

import math

from .. import sharding
from ..exercises.spec import Fail
from ..sections import section
from .base import Check, check, number, shown, type_name

PARTS = sharding.PARTS  # parameters, gradients, optimizer_state


def cases(world_size: int) -> list:
    """(rank, sharded) in the order the run half calls the function: DDP's ranks, then FSDP's."""
    return [(rank, sharded) for sharded in (False, True) for rank in range(world_size)]


# ---------------------------------------------------------------- the judge's table of mistakes
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


def _bytes(
    counts: list,
    tensors: int,
    *,
    unit: int = 4,
    adam_copies: int = 2,
    steps: bool = True,
    grads=None,
) -> dict:
    """The three parts from per-parameter counts (grads: other counts for the gradients)."""
    grads = counts if grads is None else grads
    return {
        "parameters": unit * sum(counts),
        "gradients": unit * sum(grads),
        "optimizer_state": unit * adam_copies * sum(counts) + (unit * tensors if steps else 0),
    }


def mistake(kind: str):
    """A prediction with one typical mistake (`kind`), for the judge's table (chapter 08)."""

    def predict(shapes, n, rank, sharded):
        full = _rows(shapes, 1, 0)
        options = {
            "no_steps": {"steps": False},
            "one_copy": {"adam_copies": 1},
            "elements": {"unit": 1},
        }.get(kind, {})
        if not sharded and kind != "ddp_divided":
            return _bytes(full, len(shapes), **options)
        mine = {
            "even": lambda: _rows(shapes, n, rank, divide=lambda k: k / n),
            "floor": lambda: _rows(shapes, n, rank, divide=lambda k: k // n),
            "last_dim": lambda: _rows(shapes, n, rank, dim=-1),
            "rank_0": lambda: _rows(shapes, n, 0),
        }.get(kind, lambda: _rows(shapes, n, rank))()
        return _bytes(
            mine, len(shapes), **options, **({"grads": full} if kind == "grads_whole" else {})
        )

    return predict


# (mistake, the problem, a hint): the first mistake that reproduces every answer names it
MISTAKES = (
    (
        mistake("even"),
        "an even split of every parameter, numel / N",
        (
            "FSDP does not cut a tensor anywhere: it splits each parameter along its FIRST "
            "dimension into N chunks as `torch.chunk` does, ceil(rows / N) rows per rank, and the "
            "last ranks get what is left (maybe nothing)."
        ),
    ),
    (
        mistake("floor"),
        "numel // N for every parameter",
        (
            "Rows are not elements: each rank gets ceil(rows / N) whole rows of a parameter (the "
            "last ranks fewer)."
        ),
    ),
    (mistake("last_dim"), "split along the last dimension", "FSDP shards dimension 0, the rows."),
    (
        mistake("rank_0"),
        "the same for every rank, rank 0's share",
        (
            "With rows that do not divide by N, the last ranks hold fewer rows: the answer "
            "depends on `rank`."
        ),
    ),
    (
        mistake("no_steps"),
        "short of Adam's step counters",
        (
            "Adam also keeps `step` per parameter tensor: a 0-dim float32 tensor, 4 bytes, whole "
            "on every rank."
        ),
    ),
    (
        mistake("one_copy"),
        "one copy of the weights for Adam's state",
        f"Adam keeps two running averages per parameter, exp_avg and exp_avg_sq "
        f"({section('06', 'Where the memory goes', chapter_too=True)}).",
    ),
    (
        mistake("grads_whole"),
        "whole gradients on every rank (ZeRO-1, not FSDP)",
        (
            "FSDP reduce-scatters the gradients after backward: each rank keeps the gradient of "
            "its own rows."
        ),
    ),
    (
        mistake("ddp_divided"),
        "DDP divided by N too",
        "DDP shards nothing: every rank holds the whole model, "
        "its gradients and Adam's state, whatever N is.",
    ),
    (mistake("elements"), "numbers of elements, not bytes", "float32 numbers take 4 bytes each."),
)


def _same(parts: dict, want: dict) -> bool:
    return all(parts.get(p) is not None and abs(parts[p] - want[p]) < 0.5 for p in PARTS)


def _label(rank: int, sharded: bool) -> str:
    return f"{'FSDP' if sharded else 'DDP'} rank {rank}"


def _shown(rank: int, sharded: bool, got: dict, want: dict) -> dict:
    """expected= and got= of one rank's row, as text."""
    what = f"{_label(rank, sharded)}: "
    return {
        "expected": what + ", ".join(f"{p} {want[p]}" for p in PARTS),
        "got": what + ", ".join(f"{p} {got[p]}" for p in PARTS),
    }


def _parts(value, where: str) -> dict:
    """A returned value as {part: number}, or the Fail that says what it was instead."""
    if not isinstance(value, dict):
        raise Fail(
            f"Return a dict with 'parameters', 'gradients' and 'optimizer_state'{where}.",
            expected="a dict of three byte counts",
            got=f"{type_name(value)}: {shown(value)}",
        )
    parts = {str(k): number(v) for k, v in value.items()}
    missing = [p for p in PARTS if parts.get(p) is None]
    if missing:
        raise Fail(
            f"Your dict has no number for {', '.join(missing)}{where}.",
            expected=f"keys {list(PARTS)}",
            got=f"keys {list(parts)}",
        )
    return parts


@check
class RankBytes(Check):
    """rank_bytes for every rank of `world_size`, DDP and FSDP: the learner's predictions (plain
    data) against what each rank really holds in a gloo run of `world_size` processes that the judge
    makes."""

    shapes: tuple
    world_size: int
    where: str = ""

    def run(self, candidate):
        shapes = [tuple(int(d) for d in s) for s in self.shapes]
        return [
            candidate(list(shapes), self.world_size, rank, sharded)
            for rank, sharded in cases(self.world_size)
        ]

    def reference(self, solution):
        """What each rank of `cases()` holds, {part:
        bytes}, measured (trusted code, real processes)."""
        runs = sharding.measure_holdings(self.shapes, self.world_size)
        return [
            runs[rank]["FSDP" if sharded else "DDP"] for rank, sharded in cases(self.world_size)
        ]

    def judge(self, seen, ref):
        where, n, shapes = self.where, self.world_size, [tuple(s) for s in self.shapes]
        rows = cases(n)
        if not isinstance(seen, list) or len(seen) != len(rows):
            raise Fail("The check's record of your answers is incomplete.")
        got = [_parts(value, where) for value in seen]
        wrong = [
            (rank, sharded, parts, want)
            for (rank, sharded), parts, want in zip(rows, got, ref)
            if not _same(parts, want)
        ]
        if not wrong:
            return
        for predict, problem, hint in MISTAKES:
            if all(
                _same(parts, predict(shapes, n, rank, sharded))
                for (rank, sharded), parts in zip(rows, got)
            ):
                raise Fail(f"Your bytes are {problem}{where}.", hint=hint, **_shown(*wrong[0]))
        rank, sharded, parts, want = wrong[0]
        raise Fail(
            f"{_label(rank, sharded)} of {n}: not what the rank really holds{where}.",
            hint=(
                "For each parameter: its rows on this rank (torch.chunk along dimension 0), times "
                "the other dimensions, times 4 bytes."
            ),
            **_shown(rank, sharded, parts, want),
        )
