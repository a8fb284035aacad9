"""Answer key for chapter 07 (teacher's copy only)."""

import math

import torch.distributed as dist

from course_lib.checks.distributed import Average, Shards
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def shard_indices(n_samples, rank, world_size):
    import math

    total = math.ceil(n_samples / world_size) * world_size
    indices = list(range(n_samples))
    indices += (indices * world_size)[: total - n_samples]  # pad by repeating from the start
    return indices[rank:total:world_size]


def average_gradients(model):
    world_size = dist.get_world_size()
    for p in model.parameters():
        if p.grad is None:  # a frozen parameter: nothing to average
            continue
        p.grad /= world_size  # as DDP does: divide first ...
        dist.all_reduce(p.grad)  # ... then sum over the ranks, in place, on every rank


def _contiguous_blocks(n_samples, rank, world_size):
    per = math.ceil(n_samples / world_size)
    padded = (list(range(n_samples)) * world_size)[: per * world_size]
    return padded[rank * per : (rank + 1) * per]


def _no_padding(n_samples, rank, world_size):
    return list(range(rank, n_samples, world_size))


def _floor_division(n_samples, rank, world_size):
    per = n_samples // world_size  # off by one whenever world_size does not divide n_samples
    return list(range(rank, per * world_size, world_size))


def _sum_only(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)


def _reduces_a_copy(model):
    for p in model.parameters():
        if p.grad is not None:
            averaged = p.grad / dist.get_world_size()  # a NEW tensor: p.grad itself never changes
            dist.all_reduce(averaged)


def _returns_the_averages(model):
    averaged = []
    for p in model.parameters():
        g = p.grad.clone()
        dist.all_reduce(g)
        averaged.append(g / dist.get_world_size())
    return averaged


def _rank0_only(model):
    if dist.get_rank() == 0:  # "the main process does the reduction"
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()


def _hard_coded_two(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= 2  # right on 2 processes only


def _forgets_frozen(model):
    for p in model.parameters():  # p.grad is None for a frozen layer
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()


HIDDEN_SHARD_CASES = [(n, world) for n in range(1, 41) for world in range(1, 9)] + [
    (1438, 3),
    (1797, 8),
]

KEY = {
    "shard_indices": AnswerKey(
        solution=shard_indices,
        hidden_tests=[
            Test(
                "every n from 1 to 40 on 1 to 8 ranks, and real dataset sizes",
                Shards(HIDDEN_SHARD_CASES),
            ),
            Test(
                "fewer samples than ranks (padding repeats more than once)",
                Shards([(2, 5), (1, 4), (3, 8)]),
            ),
        ],
        wrong_answers=[
            WrongAnswer("floor division: off by one sample per rank", _floor_division, "too few"),
            WrongAnswer("contiguous blocks", _contiguous_blocks, "like cards"),
            WrongAnswer("no padding", _no_padding, "too few"),
        ],
    ),
    "average_gradients": AnswerKey(
        solution=average_gradients,
        hidden_tests=[
            Test("3 processes: the average, whatever the number of ranks", Average(3)),
            Test("a frozen layer: gradients that are None stay None", Average(2, frozen=True)),
            Test("4 processes: the average", Average(4)),
        ],
        wrong_answers=[
            WrongAnswer("sums without dividing", _sum_only, "SUM of the 2 ranks"),
            WrongAnswer(
                "all-reduces a new tensor, not p.grad", _reduces_a_copy, "its OWN gradient"
            ),
            WrongAnswer(
                "returns the averages instead of writing .grad",
                _returns_the_averages,
                "returned a list",
            ),
            WrongAnswer("only rank 0 calls all_reduce", _rank0_only, "the same number of times"),
            WrongAnswer(
                "divides by 2 whatever the world size",
                _hard_coded_two,
                "whatever the number of ranks",
            ),
            WrongAnswer(
                "forgets frozen parameters (.grad None)",
                _forgets_frozen,
                "gradients that are None stay None",
            ),
        ],
    ),
    "local_rank_device": AnswerKey(answer=1),
    "effective_batch": AnswerKey(answer=64),
    "who_saves": AnswerKey(answer="d"),
    "forgot_init": AnswerKey(answer="c"),
    "dp_vs_ddp": AnswerKey(answer="a"),
    "faster_not_smarter": AnswerKey(answer="b"),
}
