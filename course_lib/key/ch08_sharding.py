"""Answer key for chapter 08 (teacher's copy only).

Each known-wrong answer is built by one builder with one flag switched on, so it differs from the
reference in exactly one place; the hidden tests measure FSDP in real processes too.
"""

import math

from course_lib.checks.sharding import RankBytes
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def rank_bytes(shapes, world_size, rank, sharded):
    import math

    numbers = 0
    for shape in shapes:
        numel = math.prod(shape)
        if not sharded:
            numbers += numel
            continue
        rows = shape[0]
        chunk = math.ceil(rows / world_size)
        mine = max(0, min(rows, (rank + 1) * chunk) - rank * chunk)
        numbers += mine * (numel // rows)
    steps = 4 * len(
        shapes
    )  # Adam's step counter: a 0-dim float32 tensor per parameter, whole on every rank
    return {
        "parameters": 4 * numbers,
        "gradients": 4 * numbers,
        "optimizer_state": 8 * numbers + steps,
    }


def buggy_rank_bytes(
    *, split="chunk", steps=True, adam_copies=2, grads="sharded", ddp="whole", unit=4, use_rank=True
):
    """rank_bytes with one mistake switched on (defaults are right)."""

    def candidate(shapes, world_size, rank, sharded):
        numbers, whole = 0, 0
        for shape in shapes:
            numel = math.prod(shape)
            whole += numel
            divide = sharded or ddp == "divided"
            if not divide:
                numbers += numel
            elif split == "even":
                numbers += numel / world_size
            elif split == "floor":
                numbers += numel // world_size
            else:
                dim = -1 if split == "last_dim" else 0
                r = rank if use_rank else 0
                size = shape[dim]
                chunk = math.ceil(size / world_size)
                numbers += max(0, min(size, (r + 1) * chunk) - r * chunk) * (numel // size)
        grad_numbers = whole if (sharded and grads == "whole") else numbers
        return {
            "parameters": unit * numbers,
            "gradients": unit * grad_numbers,
            "optimizer_state": unit * adam_copies * numbers + (unit * len(shapes) if steps else 0),
        }

    return candidate


def wrong(label, feedback, **flags):
    return WrongAnswer(label, buggy_rank_bytes(**flags), feedback)


KEY = {
    "rank_bytes": AnswerKey(
        solution=rank_bytes,
        hidden_tests=[
            Test(
                "4 ranks: some ranks hold no row of a parameter",
                RankBytes(((2, 3), (10,), (5, 7, 2)), 4, " (4 ranks)"),
                hidden=True,
            ),
            Test(
                "2 ranks, odd numbers of rows",
                RankBytes(((7, 5), (7,), (3, 7), (3,)), 2, " (odd rows)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            wrong("an even split of every tensor (numel / N)", "an even split", split="even"),
            wrong("numel // N", "numel // N", split="floor"),
            wrong("shards the last dimension", "last dimension", split="last_dim"),
            wrong("the same for every rank (rank 0's share)", "rank 0's share", use_rank=False),
            wrong("forgets Adam's step counters", "step counters", steps=False),
            wrong("one copy for Adam's state", "one copy", adam_copies=1),
            wrong("whole gradients under FSDP (ZeRO-1 thinking)", "whole gradients", grads="whole"),
            wrong("divides DDP by N too", "DDP divided by N", ddp="divided"),
            wrong("counts elements, not bytes", "not bytes", unit=1),
        ],
    ),
    "when_sharding_pays": AnswerKey(answer=["a", "c"]),
    "fsdp_gigabytes": AnswerKey(answer=2.0),
    "reshard_kept": AnswerKey(answer="c"),
}
