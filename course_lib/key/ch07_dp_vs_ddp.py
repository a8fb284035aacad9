"""Answer key for chapter 07 (teacher's copy only)."""
import math

import torch

from course_lib.ch07_dp_vs_ddp import _check_average, _check_full_batch, _check_shards
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def shard_indices(n_samples, rank, world_size):
    import math
    total = math.ceil(n_samples / world_size) * world_size
    indices = list(range(n_samples))
    indices += (indices * world_size)[:total - n_samples]   # pad by repeating from the start
    return indices[rank:total:world_size]


def average_gradients(grads_per_rank):
    return [torch.stack(gs).mean(dim=0) for gs in zip(*grads_per_rank)]


def _contiguous_blocks(n_samples, rank, world_size):
    per = math.ceil(n_samples / world_size)
    padded = (list(range(n_samples)) * world_size)[:per * world_size]
    return padded[rank * per:(rank + 1) * per]


def _no_padding(n_samples, rank, world_size):
    return list(range(rank, n_samples, world_size))


def _floor_division(n_samples, rank, world_size):
    per = n_samples // world_size   # off by one whenever world_size does not divide n_samples
    return list(range(rank, per * world_size, world_size))


def _sum_not_average(grads_per_rank):
    return [sum(gs) for gs in zip(*grads_per_rank)]


def _average_over_parameters(grads_per_rank):
    return [sum(rank) / len(rank) for rank in grads_per_rank]


def _accumulate_into_rank0(grads_per_rank):
    out = grads_per_rank[0]
    for rank in grads_per_rank[1:]:
        for o, g in zip(out, rank):
            o += g
    for o in out:
        o /= len(grads_per_rank)
    return out


def _rank0_only(grads_per_rank):
    return [g.clone() for g in grads_per_rank[0]]


HIDDEN_SHARD_CASES = [(n, world) for n in range(1, 41) for world in range(1, 9)] + [(1438, 3), (1797, 8)]

KEY = {
    "shard_indices": AnswerKey(
        solution=shard_indices,
        hidden_tests=[Test("every n from 1 to 40 on 1 to 8 ranks, and real dataset sizes",
                           _check_shards(HIDDEN_SHARD_CASES)),
                      Test("fewer samples than ranks (padding repeats more than once)",
                           _check_shards([(2, 5), (1, 4), (3, 8)]))],
        wrong_answers=[WrongAnswer("contiguous blocks", _contiguous_blocks, "like cards"),
                       WrongAnswer("no padding", _no_padding, "too few"),
                       WrongAnswer("floor division: off by one sample per rank", _floor_division, "too few")],
    ),
    "average_gradients": AnswerKey(
        solution=average_gradients,
        hidden_tests=[Test("equals the gradient of the full batch (4 ranks)", _check_full_batch(4)),
                      Test("one rank: nothing to average", _check_full_batch(1)),
                      Test("three ranks, two parameters of different shapes", _check_average(
                          [[torch.full((2, 3), float(r)), torch.tensor([r, -r], dtype=torch.float32)]
                           for r in range(3)]))],
        wrong_answers=[WrongAnswer("sums instead of averaging", _sum_not_average, "SUM over ranks"),
                       WrongAnswer("averages over parameters, per rank", _average_over_parameters, "per PARAMETER"),
                       WrongAnswer("accumulates in place into rank 0's tensors", _accumulate_into_rank0,
                                   "changed the gradients"),
                       WrongAnswer("keeps rank 0's gradients (no communication)", _rank0_only, "not the average")],
    ),
    "dp_vs_ddp": AnswerKey(answer="b"),
    "faster_not_smarter": AnswerKey(answer="c"),
    "who_saves": AnswerKey(answer="b"),
    "effective_batch": AnswerKey(answer=64),
    "forgot_init": AnswerKey(answer="b"),
}
