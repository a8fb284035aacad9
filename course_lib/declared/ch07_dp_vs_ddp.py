"""Chapter 07's exercises and quizzes, declared apart from its demonstrations.

The judge and the grader import this module, not the chapter module (ch07_dp_vs_ddp.py, which
re-exports every name here for the notebook); the checks live in course_lib/checks/distributed.py.
"""

from .. import chapters
from ..checks import distributed
from ..exercises import Declarations, Test
from ..sections import section

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # the chapter module re-exports these (ch.<name>)
    "chapter",
    "shard_indices",
    "average_gradients",
    "local_rank_device",
    "effective_batch",
    "who_saves",
    "forgot_init",
    "dp_vs_ddp",
    "faster_not_smarter",
]


# ================================================================ exercises and quizzes
# ---------------------------------------------------------------- exercise 1: shard_indices
shard_indices = declare.function_exercise(
    "shard_indices",
    title="Which samples does each rank read?",
    prompt=(
        "Write shard_indices(n_samples, rank, world_size) -> list[int]: the dataset indices that "
        "DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False) gives "
        "that rank (drop_last=False: the list is padded by repeating indices from the start, so "
        "every rank gets the same number)."
    ),
    points=3,
    tests=[
        Test("10 samples on 2 ranks", distributed.Shards([(10, 2)])),
        Test("10 samples on 4 ranks (padding needed)", distributed.Shards([(10, 4)])),
        Test("7 samples on 3 ranks", distributed.Shards([(7, 3)])),
    ],
    hints=[
        "Every rank gets ceil(n_samples / world_size) indices.",
        "Pad 0..n-1 to total = ceil(n / world) * world by repeating indices from the start "
        "(more than once if n is tiny), then deal them out like cards.",
        (
            "Shape: a list of 0..n-1; extend it with indices from its start (the list repeated as "
            "often as needed, cut to the missing count); take a slice starting at `rank` with "
            "step `world_size`."
        ),
    ],
)


# ---------------------------------------------------------------- exercise 2: average_gradients
average_gradients = declare.function_exercise(
    "average_gradients",
    title="Average the gradients yourself, in a real process group",
    prompt=(
        "Write average_gradients(model). Every process calls it right after loss.backward(); it "
        "must leave in each parameter's .grad the average of that gradient over all processes, as "
        "DDP does. Use dist.all_reduce (it sums a tensor over the processes, in place, on every "
        "one of them) and dist.get_world_size(). Parameters whose .grad is None (a frozen layer) "
        "stay None. The check starts real processes in a gloo group on this machine."
    ),
    points=4,
    time_limit=90.0,  # forked processes take a second; spawned ones (off Linux) import torch first
    tests=[
        Test(
            "2 processes: every rank ends with the average of their gradients",
            distributed.Average(2),
        )
    ],
    hints=[
        (
            "`dist.all_reduce(t)` replaces `t`, on every rank, by the sum of all ranks' `t` (op "
            "SUM, the default). It works in place and must be called by every rank."
        ),
        (
            "The average is the sum divided by `dist.get_world_size()`. Dividing each gradient "
            "first and then summing gives the same result: that is what DDP does."
        ),
        (
            "Shape: get the world size once; loop over `model.parameters()`; skip a parameter "
            "whose `.grad` is None; divide its `.grad` in place; all-reduce that same tensor."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
local_rank_device = declare.quiz(
    "local_rank_device",
    title="RANK or LOCAL_RANK?",
    kind="numeric",
    question=(
        "torchrun starts 8 processes on 2 machines with 4 GPUs each. On which GPU of its machine, "
        "cuda:N, must the process with RANK=5 run? Answer N."
    ),
    digest="717a4c1eb6eeae3c",
    hints=[
        "Ranks 0 to 3 run on the first machine, ranks 4 to 7 on the second.",
        "Each machine numbers its own processes from 0: that number is LOCAL_RANK.",
    ],
    why={
        5: (
            "5 is the RANK, numbered over both machines; a GPU is named by its number on its own "
            "machine."
        )
    },
    explanation=(
        "RANK 5 is the second process of the second machine: LOCAL_RANK 1, so cuda:1. cuda:5 does "
        "not exist on a 4-GPU machine."
    ),
)

effective_batch = declare.quiz(
    "effective_batch",
    title="Effective batch size",
    kind="numeric",
    question=(
        "DDP on 2 GPUs, DataLoader batch_size=32 in each process, no gradient accumulation. Over "
        "how many samples is the gradient of ONE optimizer step averaged?"
    ),
    digest="abab5d08f69221f5",
    hints=[
        "Each process averages the gradient over its own batch; the all-reduce then averages those "
        "averages over the processes."
    ],
    why={
        32: "That is one process's batch; the all-reduce then averages over both processes.",
        16: "batch_size=32 is per process: each of the two reads 32 samples per step.",
    },
    explanation="2 x 32 = 64: the all-reduce averages the two ranks' mean gradients.",
)

who_saves = declare.quiz(
    "who_saves",
    title="Which rank writes the checkpoint?",
    question="In a DDP run on 4 GPUs, which process should call `torch.save`, and why?",
    options={
        "a": (
            "Every rank, each to its own file `ckpt_rank{r}.pt`, so that no copy is lost if one "
            "process crashes before the end"
        ),
        "b": (
            "The rank with the lowest loss in the last step, because its replica learned the most "
            "from the samples it was given"
        ),
        "c": (
            "The last rank to finish the epoch, because its weights include the newest update "
            "while the others may lag behind"
        ),
        "d": (
            "Rank 0 alone, then a barrier: the averaged gradients keep all replicas equal, so "
            "one rank's weights are the model"
        ),
    },
    digest="36e19008ec6a0bf2",
    hints=[
        (
            "Compare the weights of rank 0 and rank 1 after the run in "
            f"{section('07', 'DistributedDataParallel, for real')} (or "
            f"{section('07', 'faster, not smarter')}'s numbers)."
        )
    ],
    why={
        "a": (
            "The 4 files would hold the same numbers 4 times: after every step all replicas are "
            "identical."
        ),
        "b": (
            "The ranks saw different samples, so their losses differ, but their weights do not: "
            "each step applied the same averaged gradient everywhere."
        ),
        "c": (
            "No rank is ahead: every rank applies the same update in the same step, and the "
            "all-reduce makes them wait for each other."
        ),
    },
    explanation=(
        "Save `model.module.state_dict()` (no `module.` prefix, chapter 04) from rank 0, then "
        "`dist.barrier()` before anyone reads it."
    ),
)

forgot_init = declare.quiz(
    "forgot_init",
    title="Which error will this raise?",
    kind="error",
    question=(
        "A training script builds its DistributedSampler before (or without) init_process_group, "
        "and without num_replicas/rank."
    ),
    code="from torch.utils.data import DistributedSampler\n"
    "sampler = DistributedSampler(range(100))",
    options={
        "a": "No error: with no process group it acts as rank 0 of a group of 1 and yields all 100 "
        "indices",
        "b": (
            "TypeError: a `range` is not a Dataset; the sampler needs an object with `__getitem__`"
        ),
        "c": (
            "ValueError: the sampler asks the default process group for world size and rank; "
            "none exists"
        ),
        "d": "KeyError: 'RANK' is not in the environment: the sampler reads torchrun's variables",
    },
    hints=[
        (
            "Where can the sampler learn how many ranks there are, and which one this is, when "
            "you do not pass `num_replicas` and `rank`?"
        )
    ],
    why={
        "a": (
            "DistributedSampler has no one-process fallback: without `num_replicas` and `rank` it "
            "must find both somewhere."
        ),
        "b": "The sampler only needs `len(dataset)`; a range has a length.",
        "d": "The sampler reads no environment variables; `init_process_group` does (with `env://`).",
    },
    explanation=(
        "`DistributedSampler` asks the default process group for the world size and this "
        "process's rank. Call `dist.init_process_group` first (torchrun's `env://` fills in "
        "`RANK`, `WORLD_SIZE`, ...)."
    ),
)

dp_vs_ddp = declare.quiz(
    "dp_vs_ddp",
    title="Article A's question, part 1: what is the essential difference?",
    question=(
        "What is the essential difference between DataParallel (DP) and DistributedDataParallel "
        "(DDP)?"
    ),
    options={
        "a": (
            "DP: one process drives all GPUs through `cuda:0` (scatter, copy the model, gather) "
            "every step. DDP: a process per GPU with its own replica; backward all-reduces the "
            "gradients"
        ),
        "b": (
            "DP: the model's layers are split across the GPUs (model parallelism). DDP: each "
            "batch is split across them, so of the two only DDP is data parallel"
        ),
        "c": (
            "DP: peer GPUs average the gradients with an all-reduce. DDP: every gradient goes to "
            "a parameter server on `cuda:0`, which is why it needs one Python process per GPU"
        ),
        "d": (
            "DP: inside one machine only. DDP: across machines only; on one machine with several "
            "GPUs both run as one single process, so there they train at the same speed"
        ),
    },
    digest="ccab4bd296e14534",
    hints=[
        "Count the Python processes in each: how many drive the GPUs?",
        "Which GPU do DP's scatter and gather go through, and what happens in DDP during backward?",
    ],
    why={
        "b": (
            "Both are data parallel: every GPU holds the WHOLE model and sees part of each batch. "
            "Splitting the layers is model (pipeline) parallelism, another technique."
        ),
        "c": (
            "Swapped: the parameter-server picture, everything through `cuda:0`, belongs to the "
            "other one."
        ),
        "d": (
            "DDP runs on one machine too (this chapter ran it on one), and PyTorch recommends it "
            "there."
        ),
    },
    explanation=(
        "Both are data parallel: every GPU holds the whole model and sees part of the batch. The "
        "difference is who coordinates (one process and a main GPU vs peers) and what moves each "
        "step."
    ),
)

faster_not_smarter = declare.quiz(
    "faster_not_smarter",
    title="Article A's question, part 2: why do more GPUs not make the model smarter?",
    question=(
        "Why do N GPUs (DP or DDP) not change what the model can learn, only how fast it iterates?"
    ),
    options={
        "a": (
            "The all-reduce rounds every gradient to half precision to save bandwidth, so N GPUs "
            "learn a little worse; the speed is what they buy in exchange"
        ),
        "b": (
            "Averaging N gradients, each the mean over b samples, gives the mean over all N x b: "
            "every step is the update one device would make on that batch, in less time"
        ),
        "c": (
            "Each replica trains on its own shard for the whole epoch, and averaging the N "
            "replicas' weights at its end cancels out what each one learned differently"
        ),
        "d": (
            "They do change it: each GPU adds its memory to the model, so N GPUs hold a model "
            "with N times the parameters and a higher ceiling"
        ),
    },
    digest="154aa99b2aa1e9a6",
    hints=[
        (
            f"{section('07', 'faster, not smarter', start=True)} compared the DDP run with one "
            "process: on which batch did the weights match?"
        )
    ],
    why={
        "a": (
            "The gradients are averaged at full precision: the DDP gradients matched one "
            "process's to rounding error."
        ),
        "c": (
            "DDP averages gradients in every backward, not weights once an epoch: the replicas "
            "never diverge (rank 0 and rank 1 ended with weights that differ by exactly 0)."
        ),
        "d": (
            "Data parallelism copies the WHOLE model to every GPU: the parameter count does not "
            "change."
        ),
    },
    explanation=(
        "You saw it for real: the DDP weights equal one process's weights on the full batch (this "
        "model has no BatchNorm; with BatchNorm, see "
    )
    + section("07", "faster, not smarter")
    + "). What changes is the batch size per "
    "step and the time per epoch.",
)
