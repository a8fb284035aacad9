"""Chapter 06's exercises and quizzes, declared apart from its demonstrations.

The judge and the grader import this module, not the chapter module (ch06_out_of_memory.py, which
re-exports every name here for the notebook); the checks live in course_lib/checks/memory.py.
"""

from .. import chapters
from ..checks import memory as checks
from ..checks.rig import MovesData
from ..exercises import Declarations, Test
from ..sections import section

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # the chapter module re-exports these (ch.<name>)
    "chapter",
    "model_state_bytes",
    "train_with_accumulation",
    "largest_batch",
    "seed_question",
    "state_dominates",
    "empty_cache",
    "oom_message",
    "accumulation_conditions",
    "adam_bytes",
]


# ================================================================ exercises and quizzes
# ---------------------------------------------------------------- exercise 1: model_state_bytes
model_state_bytes = declare.function_exercise(
    "model_state_bytes",
    title="Count the bytes a model and its optimizer hold",
    prompt=(
        "Write model_state_bytes(model, optimizer) -> {'weights': int, 'grads': int, "
        "'optimizer_state': int}: the bytes of the model's parameters, of the gradients that "
        "exist right now, and of every tensor the optimizer keeps in optimizer.state. Bytes of a "
        "tensor: t.numel() * t.element_size()."
    ),
    points=4,
    tests=[
        Test("after two Adam steps", checks.State("adam")),
        Test("before the first backward and step", checks.State("fresh")),
        Test("a model with a bfloat16 layer", checks.State("bf16")),
    ],
    hints=[
        (
            "Weights: `model.parameters()`. Grads: `p.grad` of each parameter, when it is not "
            "None. Optimizer state: `optimizer.state` is a dict {parameter: {name: value}}."
        ),
        (
            "Bytes, not elements: `t.numel() * t.element_size()` respects the dtype (2 for "
            "bfloat16, 4 for float32)."
        ),
        (
            "Adam makes its state lazily at the first `step()`; before that `optimizer.state` is "
            "empty. Some values in a state may not be tensors: check "
            "`isinstance(v, torch.Tensor)`."
        ),
    ],
)


# -------------------------------------------------------------- exercise 2: train_with_accumulation
train_with_accumulation = declare.function_exercise(
    "train_with_accumulation",
    title="Gradient accumulation: a big batch in small pieces",
    prompt=(
        "Write train_with_accumulation(model, loader, optimizer, criterion, device, accum_steps): "
        "one epoch where every batch from `loader` is a micro-batch (all of the same size), and "
        "every accum_steps micro-batches form a group that takes one optimizer step, exactly the "
        "step of one big batch. For each micro-batch: move x and y to `device`, forward, divide "
        "the loss by the number of micro-batches in its group, backward. After the last "
        "micro-batch of each group: optimizer.step(), then zero_grad(). The last group may be "
        "shorter (7 micro-batches with accum_steps=3 make groups of 3, 3 and 1): it still gets "
        "its step, weighted by its real size. Put the model in training mode first. Nothing to "
        "return."
    ),
    points=6,
    tests=[
        Test("moves the inputs and the labels to `device`", MovesData("accumulate")),
        Test(
            "steps once every accum_steps micro-batches, clears gradients only after a step",
            checks.StepPattern(6, 3),
        ),
        Test("same weights as big-batch training on the same data", checks.EqualsBigBatch(6, 2)),
        Test("the last, shorter group still gets its step", checks.StepPattern(7, 3)),
        Test("the last, shorter group is weighted by its real size", checks.EqualsBigBatch(7, 3)),
    ],
    hints=[
        (
            "Count micro-batches with `for i, (x, y) in enumerate(loader)`. A group ends when "
            "`(i + 1) % accum_steps == 0`, or at the very last micro-batch (`len(loader)` says "
            "which one that is)."
        ),
        (
            "A big batch's loss is the MEAN over its samples. For g equal micro-batches that is "
            "the sum of their g mean losses divided by g, and `backward()` adds gradients up in "
            "`.grad`: so divide each micro-batch's loss by g, the size of its own group "
            "(accum_steps, except in a last, shorter group)."
        ),
        (
            "The shape: `model.train()` and `zero_grad()` once; then for each micro-batch i: move "
            "x and y, work out g for i's group from i, accum_steps and len(loader), backward the "
            "loss divided by g, and if i ends its group: step and zero_grad."
        ),
    ],
)


# ---------------------------------------------------------------- exercise 3: largest_batch
largest_batch = declare.function_exercise(
    "largest_batch",
    title="Find the largest batch that fits",
    prompt=(
        "Write largest_batch(try_batch, limit) -> int. try_batch(n) runs one training step on n "
        "samples and raises an out-of-memory error if it does not fit. Try n = 1, 2, 4, 8, ... "
        "while n <= limit; return the largest n that ran (0 if even 1 does not fit). Catch ONLY "
        "out-of-memory errors: `except memory.OUT_OF_MEMORY:` (torch.OutOfMemoryError on a GPU, "
        "the course's MemoryBudgetExceeded on the stand-in); any other error must reach the "
        "caller."
    ),
    points=4,
    time_limit=30,
    tests=[
        Test("finds the largest power of two that fits", checks.Largest(100, 1024)),
        Test(
            "stops at the limit when everything fits",
            checks.Largest(10**6, 128, what=" (everything fits, limit 128)"),
        ),
        Test(
            "catches the real CUDA error too",
            checks.Largest(16, 512, "cuda", what=" (torch.OutOfMemoryError)"),
        ),
        Test("lets other errors through", checks.OtherErrors()),
        Test(
            "returns 0 when even batch 1 does not fit",
            checks.Largest(0, 64, what=" (nothing fits)"),
        ),
    ],
    hints=[
        (
            "Keep two numbers: `best`, the largest size that ran so far (0 at first), and `n`, "
            "the size to try next (1, then doubled each time). Stop when n passes the limit or a "
            "step runs out of memory."
        ),
        (
            "Why catch only out-of-memory errors? A shape error is a bug: hiding it as 'too big' "
            "makes you shrink the batch forever. `except RuntimeError` is too wide as well: "
            "torch's shape and device errors are RuntimeErrors. `memory.OUT_OF_MEMORY` is a tuple "
            "of the two out-of-memory kinds."
        ),
        (
            "The shape: `best, n = 0, 1`; a while loop over n at most the limit; inside, a try "
            "around `try_batch(n)` whose except clause names `memory.OUT_OF_MEMORY` and leaves "
            "the loop; after a run, remember n and double it. Return best."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
seed_question = declare.quiz(
    "seed_question",
    title="Article A's question, asked of the measurement",
    kind="multiple",
    question=(
        "Article A asks: 'list at least three fixes for CUDA out of memory, and say which is most "
        "fundamental'. In "
    )
    + section("06", "Where the memory goes")
    + (
        " you measured that at batch 1024 the ACTIVATIONS are the largest of the four parts (not "
        "yet more than the other three together). Which of these reduce the activation memory of "
        "one training step, with every weight of the model still trained? Choose all that apply."
    ),
    options={
        "a": "a smaller batch",
        "b": "gradient accumulation (the same effective batch in micro-batches)",
        "c": "activation checkpointing",
        "d": "`torch.cuda.empty_cache()`",
        "e": "mixed precision (`torch.autocast`)",
        "f": "replacing Adam with plain SGD",
        "g": (
            "running the training step under `torch.no_grad()` (article B's 'turning off "
            "gradients')"
        ),
    },
    digest="e5ea4e321992cc72",
    hints=[
        (
            "Activations are what autograd saves in the forward pass for the backward pass. For "
            "each option ask: does it change what is saved, or how big each saved tensor is?"
        ),
        (
            f"Four options are right. {section('06', 'The fixes', start=True)}'s table and "
            "measurements show each fix at work."
        ),
    ],
    why={
        "d": (
            "`empty_cache()` hands back cached blocks that no tensor uses; saved activations are "
            "tensors in use."
        ),
        "f": "SGD keeps less optimizer state, but the optimizer state is not activations.",
        "g": (
            "Under `no_grad` nothing is saved, but there is no graph either: `loss.backward()` "
            "raises, so nothing is trained."
        ),
    },
    explanation=(
        "Batch size, accumulation, checkpointing and autocast all shrink what is saved for "
        "backward; empty_cache frees nothing that is in use, the optimizer's state is not "
        "activations, and a training step cannot run without its graph. Which fix is 'most "
        "fundamental' depends on what your measurement shows dominates: accumulation keeps the "
        "training the same while cutting what dominates here."
    ),
)

state_dominates = declare.quiz(
    "state_dominates",
    title="When the model's state dominates",
    question=(
        "Another run: a large model at batch 8, trained with Adam. The measurement shows weights "
        "+ grads + Adam state are 90% of the peak and activations 10%. Which change buys the most "
        "memory?"
    ),
    options={
        "a": (
            "A smaller model, or an optimizer with less state (SGD keeps 0 or 1 copy of the "
            "weights, Adam 2)"
        ),
        "b": (
            "Halve the batch to 4: the batch is always the first thing to shrink, whatever the "
            "size of the model"
        ),
        "c": "Gradient accumulation in micro-batches of 2, keeping the same effective batch of 8",
        "d": (
            "`torch.cuda.empty_cache()` before each step, so every step starts from an empty cache"
        ),
    },
    digest="93a82f394a5d9243",
    hints=[
        "Which of the four components depend on the batch size at all? "
        f"{section('06', 'Where the memory goes', start=True)}'s curve shows it.",
        "A fix can at most remove the part it shrinks: how big is that part here?",
    ],
    why={
        "b": (
            "Only the activations depend on the batch: here they are 10%, so halving them saves "
            "about 5%."
        ),
        "c": (
            "Accumulation shrinks the activations, which are 10% here; weights, grads and Adam "
            "state stay."
        ),
        "d": (
            "Weights, gradients and Adam's state are tensors in use: `empty_cache()` frees none "
            "of them."
        ),
    },
    explanation=(
        "Batch fixes only touch the 10%: at best they save a tenth. Weights, gradients and "
        "optimizer state do not depend on the batch at all; article A's 'reduce the batch first' "
        "is the right reflex only when activations dominate. Measure before you fix."
    ),
)

empty_cache = declare.quiz(
    "empty_cache",
    title="What does torch.cuda.empty_cache() give you?",
    question="After an out-of-memory error you call `torch.cuda.empty_cache()`. What does it do?",
    options={
        "a": (
            "It frees the tensors your program still references, so the next batch fits where "
            "they were"
        ),
        "b": (
            "It defragments the cache: it moves live tensors together so that one big free block "
            "appears"
        ),
        "c": (
            "It lowers what nvidia-smi shows, but your own tensors can get no more memory than "
            "before"
        ),
        "d": (
            "It clears the gradients like `zero_grad()`, and with them the activations saved for "
            "backward"
        ),
    },
    digest="abde798612087fe9",
    hints=[
        (
            f"{section('06', 'empty_cache', start=True)}'s table: which number changed after "
            "`empty_cache()`, allocated or reserved?"
        ),
        (
            f"{section('06', 'A real out-of-memory error', start=True)} quotes what the allocator "
            "does before it raises an out-of-memory error. What is left for `empty_cache()` to "
            "do afterwards?"
        ),
    ],
    why={
        "a": "A tensor that is still referenced stays where it is: nothing in use is freed.",
        "b": "PyTorch never moves a live tensor. Fragmentation has another answer "
        f"({section('06', 'A real out-of-memory error')}'s message).",
        "d": "It touches no tensor: `.grad` and the saved activations are tensors in use.",
    },
    explanation=(
        "PyTorch's caching allocator would have reused those blocks anyway, and before raising an "
        "out-of-memory error it already returned every cached block it could. empty_cache helps "
        "other processes on the same GPU (and makes nvidia-smi's number drop); it treats a "
        "symptom, not the cause."
    ),
)

oom_message = declare.quiz(
    "oom_message",
    title="Read the message before you fix",
    question=(
        "A training run on an 80 GB GPU stops with: "
        "`CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.19 "
        "GiB of which 301.00 MiB is free. Including non-PyTorch memory, this process has 78.88 GiB "
        "memory in use. Of the allocated memory 61.02 GiB is allocated by PyTorch, and 17.35 GiB "
        "is reserved by PyTorch but unallocated.` "
        "What do you try first?"
    ),
    options={
        "a": (
            "Call `torch.cuda.empty_cache()` just before the failing line, so the cached 17 GiB "
            "is usable"
        ),
        "b": (
            "Halve the batch size: the message says your tensors fill almost the whole card already"
        ),
        "c": (
            "`set_per_process_memory_fraction(1.0)`: the process is capped, as only 301 MiB is free"
        ),
        "d": ("Restart with `PYTORCH_ALLOC_CONF=expandable_segments:True`: the cache is in pieces"),
    },
    digest="4ce538a3fda6a083",
    hints=[
        (
            "Compare two numbers of the message: what was asked for, and what PyTorch holds "
            "reserved but unused."
        ),
        (
            "17 GiB reserved and unused, yet 512 MiB could not be found: why can a request fail "
            "when there is more than enough reserved room?"
        ),
    ],
    why={
        "a": (
            "Before raising, the allocator already returned every cached block it could and tried "
            "again."
        ),
        "b": (
            "It may help, but the message says PyTorch's tensors hold 61 of 79 GiB and 17 GiB "
            "sits unused: look at that first."
        ),
        "c": (
            "A cap would print 'allowed' in the message; free is small because this process "
            "reserved the card."
        ),
    },
    explanation=(
        "17.35 GiB reserved but unallocated is 35 times the 512 MiB asked for: the room exists, "
        "in pieces that do not fit. Expandable segments let the allocator grow one segment "
        "instead of cutting many."
    ),
)

accumulation_conditions = declare.quiz(
    "accumulation_conditions",
    title="When is accumulation exactly the big batch?",
    question=(
        "You replace one step on a batch of 1024 by 4 micro-batches of 256, each loss divided by "
        "4, one `optimizer.step()`. For which model is the result NOT the big-batch step (up to "
        "rounding)?"
    ),
    options={
        "a": (
            "An MLP trained with Adam instead of SGD, whose moving averages are updated once per "
            "step"
        ),
        "b": (
            "A CNN with `BatchNorm2d` layers in training mode, whose statistics come from each "
            "batch"
        ),
        "c": (
            "A model trained with `CrossEntropyLoss()` and its default `reduction='mean'` over "
            "the batch"
        ),
        "d": (
            "A model whose optimizer applies weight decay to every weight at each "
            "`optimizer.step()`"
        ),
    },
    digest="7107acf9702c98c3",
    hints=[
        (
            "Accumulation reproduces the big batch's GRADIENT. What in the model depends on which "
            "samples share a forward pass?"
        ),
        (
            "Sort the options: which act at `optimizer.step()` (once per group, as once per big "
            "batch), and which act inside each forward pass, on the samples it sees?"
        ),
    ],
    why={
        "a": (
            "The optimizer sees only the summed gradient at its one step: Adam's update is the "
            "big batch's."
        ),
        "c": (
            "A mean loss divided by the number of micro-batches is exactly what makes the sum "
            "right."
        ),
        "d": "Weight decay acts at the step, once per group, as it does once per big batch.",
    },
    explanation=(
        "BatchNorm normalizes with the statistics of the samples in one forward pass: 256 at a "
        "time is not 1024 at a time (and its running averages are updated 4 times). Equal "
        "micro-batches, a mean loss and no batch-dependent layers: then accumulation is exact."
    ),
)

adam_bytes = declare.quiz(
    "adam_bytes",
    title="How big is Adam's state?",
    kind="numeric",
    question=(
        "`nn.Linear(1000, 1000)` in float32 (weight and bias) is trained with Adam. After the "
        "first step, how many bytes do Adam's two running averages (`exp_avg` and `exp_avg_sq`, "
        "for both parameters) hold together? Check yourself with your model_state_bytes (the "
        "small step counters add a few bytes)."
    ),
    digest="439e8f5ed26f8df8",
    hints=[
        "Count the parameters first: a 1000 x 1000 weight plus a bias of 1000.",
        (
            "Each running average holds one float32 (4 bytes) per parameter, and Adam keeps two "
            "of them."
        ),
    ],
    explanation=(
        "1000 x 1000 + 1000 = 1,001,000 parameters; two float32 copies of each: 2 x 4 x 1,001,000 "
        "bytes. Weights + grads + Adam = 4 copies of the model before a single activation."
    ),
    why={
        4004000: "That is ONE float32 copy of the parameters: Adam keeps two running averages.",
        8000000: "The bias is missing: its 1000 numbers get running averages too.",
        2002000: "That counts numbers, not bytes: each float32 number takes 4 bytes.",
        16016000: (
            "That adds the weights and the gradients; the question asks for Adam's two averages "
            "only."
        ),
        8008008: (
            "That includes Adam's two step counters (4 bytes each); the question asks for the two "
            "running averages alone."
        ),
    },
)
