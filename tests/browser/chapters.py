"""Per chapter: which widgets a learner uses, what
they do with them, what they must read; one exercise.

Every notebooks/NN_*.ipynb is found, opened, run and checked for cell errors, broken widgets and
missing plots without help from this file. Its entry here adds the learner's interactions and one
exercise; a chapter without an entry fails with a request for one. Adding a chapter is one entry
in CHAPTERS, keyed by the notebook's name without .ipynb:

- `cell`: a piece of text from the code cell that displays the widget;
- steps (steps.py): Select, Choose, Toggle, Click, RunCell do; Expect, ExpectNot, ExpectImages read
  the text (regular expressions) or the images of that cell's output;
- the exercise: a wrong answer typed into its stub cell and the feedback it must get; the right
  answer defaults to the reference solution in course_lib/key.
"""

from dataclasses import dataclass

from .steps import (
    Choose,
    Click,
    Expect,
    ExpectFits,
    ExpectImages,
    ExpectNot,
    RunCell,
    Select,
    Toggle,
)


@dataclass(frozen=True)
class Interaction:
    widget: str  # what the learner sees, for failure messages
    cell: str  # text of the code cell that displays the widget
    steps: tuple  # actions and the text that must then be on the screen


@dataclass(frozen=True)
class Exercise:
    name: str  # the exercise = the learner's function name
    wrong: str  # a wrong answer a learner might type into the stub cell
    wrong_feedback: tuple = ()  # patterns the check must show, besides "Incorrect" and a "Hint:"
    right: str = None  # default: the reference solution from the answer key


@dataclass(frozen=True)
class BrowserSpec:
    interactions: tuple = ()
    exercise: Exercise = None
    run_timeout: float = 240  # seconds for Run All Cells on a busy 2-core machine
    why_no_interaction: str = ""  # set only when a chapter really has no widget to use


CHAPTERS = {
    "01_device_check": BrowserSpec(
        interactions=(
            Interaction(
                "machine explorer",
                "ch.machine_explorer()",
                (
                    Select("Machine:", "4-GPU server"),
                    Expect(r"cuda:0 -> ok"),
                    ExpectNot("-> CRASHES at the first"),  # a whole phrase of the message, so
                    Select("Machine:", "CPU-only laptop"),  # the Chinese page is read in Chinese
                    Expect(r"-> CRASHES at the first"),
                ),
            ),
            Interaction(
                "quiz: what does torch.device('cuda') do?",
                "ch.device_label.ask()",
                (
                    Choose("a) PyTorch raises"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"never asks the"),
                    Click("Show a hint (1 of 2)"),
                    Expect(r"Hint 1 of 2:"),
                    Choose("c) Nothing happens on a GPU"),
                    Click("Check"),
                    Expect(r"Correct: What does"),
                ),
            ),
            Interaction(
                "quiz: which error will this raise?",
                "ch.model_vs_input.ask()",
                (
                    Choose("b) No error"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"silently slow"),
                    ExpectNot(r"the code raised"),
                    Choose("d) RuntimeError"),
                    Click("Check"),
                    Expect(r"the code raised: RuntimeError"),
                ),
            ),
            Interaction(
                "quiz: which lines create the tensor on the device?",
                "ch.created_on_device.ask()",
                (
                    Choose("a) torch.randn(32, 10, device=device)"),
                    Choose("c) torch.zeros_like(x)"),
                    Click("Check"),
                    Expect(r"Correct: Which lines"),
                ),
            ),
        ),
        exercise=Exercise(
            "choose_device",
            wrong='def choose_device():\n    return "cpu"\n',
            wrong_feedback=(r"not a torch\.device", r"Hint: Wrap the name"),
        ),
    ),
    "02_same_device_rule": BrowserSpec(
        interactions=(
            # "workshop" is meta on a CPU-only machine and
            # the GPU elsewhere: the captions say which.
            Interaction(
                "warehouse and workshop",
                "ch.warehouse_and_workshop()",
                (
                    Toggle("model:", "workshop"),
                    Toggle("You predict:", "it will raise an error"),
                    Click("Run the step for real"),
                    Expect(r"really did:\s*raised", zh=r"实际的结果：\s*报错了"),
                    Expect(r"RuntimeError"),
                    Expect(r"✔ right", zh=r"✔ 猜对了"),
                    Toggle("inputs:", "workshop"),
                    Expect(r"Changed: press the button"),
                    ExpectNot(r"RuntimeError"),
                    Toggle("labels:", "workshop"),
                    Toggle("loss:", "workshop"),
                    Toggle("You predict:", "it will run"),
                    Click("Run the step for real"),
                    Expect(r"really did:\s*ran", zh=r"实际的结果：\s*跑通了"),
                    ExpectNot(r"RuntimeError"),
                    Expect(r"✔ right", zh=r"✔ 猜对了"),
                ),
            ),
            Interaction(
                "all 16 placements, after the quiz",
                "ch.placements_reveal(other)",
                (
                    ExpectNot(r"what really happened"),
                    Click("Run all 16 placements"),
                    Expect(r"what really happened"),
                ),
            ),
        ),
        exercise=Exercise(
            "move_to",
            wrong="def move_to(batch, device):\n    batch.to(device)\n    return batch\n",
            wrong_feedback=(r"came back on cpu", r"Hint: x\.to\(device\) returns a NEW tensor"),
        ),
    ),
    "03_training_template": BrowserSpec(
        interactions=(
            # Re-running the training cell redraws tqdm's widget bar from 0 to the last batch.
            Interaction(
                "training progress bar",
                "history = training.fit(",
                (
                    RunCell(),
                    Expect(r"training: 100%", zh=r"训练: 100%"),
                    Expect(r"\b(\d+)/\1 \["),
                    Expect(r"\d+ epochs: train loss", zh=r"\d+ 个 epoch：训练损失"),
                ),
            ),
            Interaction(
                "loss and accuracy curves",
                "training.plot_history(history",
                (RunCell(), ExpectImages(1)),
            ),
            Interaction(
                "quiz: when does article B's sigmoid branch run?",
                "ch.seed_branch.ask()",
                (
                    Choose("a) For inputs with an odd number"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"built for 10 inputs"),
                    Choose("d) Never"),
                    Click("Check"),
                    Expect(r"Correct: When does"),
                ),
            ),
        ),
        exercise=Exercise(
            "train_one_epoch",
            wrong=(
                "def train_one_epoch(model, loader, device, optimizer, criterion):\n"
                "    model.train()\n"
                "    total, count = 0.0, 0\n"
                "    for x, y in loader:          # the batch is never moved to the device\n"
                "        optimizer.zero_grad()\n"
                "        loss = criterion(model(x), y)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n"
                "        total += loss.item() * x.size(0)\n"
                "        count += x.size(0)\n"
                "    return total / count\n"
            ),
            wrong_feedback=(
                r"The inputs x reached the model on cpu",
                r"Hint: Inside the loop, move every batch",
            ),
        ),
    ),
    "04_common_errors": BrowserSpec(
        interactions=(
            # An "error" quiz: the check runs the code for
            # real and says what it raised (only once right).
            Interaction(
                "quiz: which error will this raise? (DataParallel checkpoint)",
                "ch.dp_checkpoint.ask()",
                (
                    Choose("c) No error"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"Nothing strips prefixes"),
                    ExpectNot(r"the code raised"),
                    Choose("b) RuntimeError: Missing key"),
                    Click("Check"),
                    Expect(r"Correct: Which error"),
                ),
            ),
            Interaction(
                "quiz: what is wrong with this code?",
                "ch.what_is_wrong.ask()",
                (
                    Choose("a) 'cuda' is hard-coded"),
                    Choose("b) x and y stay on the CPU"),
                    Choose("d) there is no zero_grad"),
                    Click("Check"),
                    Expect(r"Correct: Article A's question"),
                ),
            ),
            Interaction(
                "quiz: a message not shown before (Input type ... weight type)",
                "ch.input_type.ask()",
                (
                    Choose("a) The images are float64"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"would read DoubleTensor"),
                    Choose("d) The batch is still on the CPU"),
                    Click("Check"),
                    Expect(r"Correct: A message you have"),
                ),
            ),
            Interaction(
                "the explainer's panel for that message",
                'explain(ch.UNSEEN_MESSAGES["input_type"])',
                (
                    RunCell(),
                    Expect(r"Course explainer: Tensors on two devices"),
                    Expect(r"Taught in:"),
                ),
            ),
            Interaction(
                "the cheat sheet, rendered from the explainer",
                "cheat_sheet()",
                (
                    RunCell(),
                    Expect(r"Cannot re-initialize CUDA in forked subprocess"),
                    Expect(r"4a\. Saved on a GPU"),
                ),
            ),
        ),
        exercise=Exercise(
            "add_positions",
            wrong="def add_positions(x):\n    return x + torch.arange(x.shape[-1])\n",
            wrong_feedback=(
                r"On a meta input your function failed",
                r"Hint: torch\.arange makes its tensor on the CPU",
            ),
        ),
    ),
    "05_speedups": BrowserSpec(
        interactions=(
            Interaction(
                "data-wait vs compute bars",
                "measure.plot_breakdowns(breakdowns",
                (RunCell(), ExpectImages(1)),
            ),
            Interaction(
                "benchmark.Compare over sizes and dtypes",
                "ch.benchmark_compare(device",
                (Expect(r"matmul on cpu"), Expect(r"256x256"), Expect(r"bfloat16")),
            ),
            Interaction(
                "the profiler's table, sorted by self time",
                "profiling.top_operators(prof",
                (Expect(r"Self CPU", zh=r"自身 CPU"), Expect(r"enumerate\(DataLoader\)")),
            ),
            Interaction(
                "the trace's timeline, drawn from its events",
                "profiling.plot_timeline(events",
                (RunCell(), ExpectImages(1)),
            ),
            Interaction(
                "the profiler's split beside the course's timer",
                "profiling.compare_splits(",
                (
                    Expect(r"torch\.profiler \(labels\): data"),
                    Expect(r"course timer \(perf_counter\): wait"),
                ),
            ),
            Interaction(
                "quiz: read your profile",
                "ch.profile_verdict.ask()",
                # judged against the profile this page's kernel measured (on a loaded machine
                # the step phase can be the largest): the verdict names the chosen phase's share
                # either way, right or wrong
                (
                    Choose("b) forward"),
                    Click("Check"),
                    Expect(
                        r"In your profile, forward (took|is the largest phase)",
                        zh=r"在你的 profile 里，(forward 阶段|最大的阶段是 forward)",
                    ),
                    Choose("a) data"),
                    Click("Check"),
                    Expect(
                        r"In your profile, data (took|is the largest phase)",
                        zh=r"在你的 profile 里，(data 阶段|最大的阶段是 data)",
                    ),
                ),
            ),
            Interaction(
                "quiz: the GPU sits at 30% utilization",
                "ch.low_utilization.ask()",
                (
                    Choose("b) pin_memory=True"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"counts as compute, not as waiting"),
                    Choose("b) pin_memory=True"),  # a checkbox: untick it again
                    Choose("a) More DataLoader workers"),
                    Choose("c) Make the per-item preprocessing cheaper"),
                    Click("Check"),
                    Expect(r"Correct: The GPU sits at 30% utilization"),
                ),
            ),
            Interaction(
                "quiz: Python control flow under torch.compile",
                "ch.compile_control_flow.ask()",
                (
                    Choose("a) A graph break at the loop"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Choose("d) The loop is unrolled"),
                    Click("Check"),
                    Expect(r"Correct: Python control flow under torch.compile"),
                ),
            ),
            Interaction(
                "what TorchDynamo did, shown after the quiz",
                "after=ch.compile_control_flow",
                (
                    Click("Show what TorchDynamo did"),
                    Expect(r"1 graph\(s\), 0 graph break\(s\)", zh=r"1 张计算图，0 处图中断"),
                    Expect(r"depth=3: compiled a new graph", zh=r"depth=3：编译了一张新图"),
                ),
            ),
        ),
        exercise=Exercise(
            "time_it",
            wrong=(
                "def time_it(fn, device, repeats=5):\n"
                "    import statistics, time\n"
                "    fn()\n"
                "    times = []\n"
                "    for _ in range(repeats):          # never synchronizes\n"
                "        start = time.perf_counter()\n"
                "        fn()\n"
                "        times.append((time.perf_counter() - start) * 1000)\n"
                "    return statistics.median(times)\n"
            ),
            wrong_feedback=(r"You never synchronized", r"Hint: CUDA runs asynchronously"),
        ),
    ),
    "06_out_of_memory": BrowserSpec(
        interactions=(
            Interaction(
                "memory per component vs batch size",
                "ch.plot_curve(curve)",
                (
                    RunCell(),
                    ExpectImages(1),
                    Expect(r"the activations are the largest of the four parts"),
                    Expect(r"they outweigh the other three together"),
                ),
            ),
            Interaction(
                "the profiler's memory timeline beside the estimate",
                "profiling.plot_memory_timeline(",
                (RunCell(), ExpectImages(1), Expect(r"PyTorch says:")),
            ),
            Interaction(
                "the timeline's parts beside the course's estimate",
                "ch.timeline_vs_estimate(",
                (
                    Expect(r"profiler, at its peak"),
                    Expect(r"optimizer state"),
                    Expect(r"autograd detail"),
                ),
            ),
            Interaction(
                "quiz: read the out-of-memory message",
                "ch.oom_message.ask()",
                (
                    Choose("a) Call torch.cuda.empty_cache()"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"already returned every cached block"),
                    ExpectNot(r"Correct:"),
                    Click("Show a hint (1 of 2)"),
                    Expect(r"Hint 1 of 2:"),
                    Choose("d) Restart with"),
                    Click("Check"),
                    Expect(r"Correct: Read the message"),
                ),
            ),
            Interaction(
                "quiz: what does empty_cache give you?",
                "ch.empty_cache.ask()",
                (
                    Choose("a) It frees the tensors"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"still referenced stays"),
                    Choose("c) It lowers what nvidia-smi shows"),
                    Click("Check"),
                    Expect(r"Correct: What does"),
                ),
            ),
            Interaction(
                "quiz: article A's question, asked of the measurement",
                "ch.seed_question.ask()",
                (
                    Choose("d) torch.cuda.empty_cache()"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(
                        r"saved activations are tensors in use",
                        zh=r"保存下来的激活值是正在使用的张量",
                    ),
                    Choose("d) torch.cuda.empty_cache()"),  # a checkbox: untick it again
                    Choose("a) a smaller batch"),
                    Choose("b) gradient accumulation"),
                    Choose("c) activation checkpointing"),
                    Choose("e) mixed precision"),
                    Click("Check"),
                    Expect(r"Correct: Article A's question"),
                ),
            ),
        ),
        exercise=Exercise(
            "train_with_accumulation",
            wrong=(
                "def train_with_accumulation(model, loader, optimizer, criterion, device, "
                "accum_steps):\n    model.train()\n    optimizer.zero_grad()\n    for i, (x, "
                "y) in enumerate(loader):\n        x, y = x.to(device), y.to(device)\n        "
                "(criterion(model(x), y) / accum_steps).backward()\n        if (i + 1) % "
                "accum_steps == 0 or i + 1 == len(loader):\n            "
                "optimizer.step()\n            optimizer.zero_grad()\n"
            ),
            wrong_feedback=(
                r"the last, shorter group does not",
                r"Hint: A group of g micro-batches",
            ),
        ),
    ),
    "07_dp_vs_ddp": BrowserSpec(
        interactions=(
            Interaction(
                "the run, launched with torchrun",
                "result = ddp_worker.launch_torchrun(config)",
                (
                    Expect(
                        r"torchrun: 2 processes, backend gloo", zh=r"torchrun：2 个进程，后端 gloo"
                    ),
                    Expect(
                        r"rank 1 got from torchrun: \{'RANK': '1'",
                        zh=r"rank 1 从 torchrun 得到的环境变量：\{'RANK': '1'",
                    ),
                ),
            ),
            Interaction(
                "DP vs DDP, one training step phase by phase",
                "ch.step_through()",
                (
                    Expect(r"DataParallel, phase 1 of 8: scatter"),
                    ExpectImages(1),
                    ExpectFits(1000),
                    ExpectFits(800),
                    Click("next ▶"),
                    Expect(r"phase 2 of 8: replicate", zh=r"第 2 阶段（共 8 个）：复制模型"),
                    Expect(r"cuda:0 \(main\)"),
                    Toggle("strategy:", "DistributedDataParallel"),
                    Expect(r"phase 1 of 4: load", zh=r"第 1 阶段（共 4 个）：读取数据"),
                    Click("next ▶"),
                    Click("next ▶"),
                    Expect(
                        r"phase 3 of 4: backward \+ all-reduce",
                        zh=r"第 3 阶段（共 4 个）：反向传播 \+ all-reduce",
                    ),
                    Expect(r"cuda:3 → cuda:0"),
                    Select("model:", "digits MLP (this chapter's, hidden 64)"),
                    Expect(r"4,810 float32 parameters", zh=r"4,810 个 float32 参数"),
                ),
            ),
            Interaction(
                "quiz: which rank writes the checkpoint?",
                "ch.who_saves.ask()",
                (
                    Choose("a) Every rank"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"The 4 files would hold the same numbers"),
                    Choose("d) Rank 0 alone, then a barrier"),
                    Click("Check"),
                    Expect(r"Correct: Which rank"),
                ),
            ),
        ),
        # Checked in real gloo processes forked from the Jupyter kernel.
        exercise=Exercise(
            "average_gradients",
            wrong="import torch.distributed as dist\n\n\n"
            "def average_gradients(model):\n"
            "    for p in model.parameters():\n"
            "        dist.all_reduce(p.grad)\n",
            wrong_feedback=(r"SUM of the 2 ranks", r"Hint: .?all_reduce.? adds"),
        ),
    ),
    "08_sharding": BrowserSpec(
        interactions=(
            Interaction(
                "the sharded run, launched with torchrun",
                "print(ch.describe_shards(result))",
                (
                    Expect(
                        r"rank 0: 9,605 of 19,210 parameters \(50\.0%\)",
                        zh=r"rank 0：持有 19,210 个参数中的 9,605 个（50\.0%）",
                    ),
                    Expect(
                        r"rank 1: 9,605 of 19,210", zh=r"rank 1：持有 19,210 个参数中的 9,605 个"
                    ),
                ),
            ),
            Interaction(
                "what one rank holds, DDP beside FSDP",
                "ch.plot_bytes(result)",
                (RunCell(), ExpectImages(1)),
            ),
            Interaction(
                "quiz: when does sharding pay?",
                "ch.when_sharding_pays.ask()",
                (
                    Choose("b) The model fits with room to spare"),
                    Click("Check"),
                    Expect(r"Incorrect"),
                    Expect(r"nothing is gained"),
                    Choose("b) The model fits with room to spare"),  # a checkbox: untick it again
                    Choose("a) The weights, gradients"),
                    Choose("c) The model's state fits"),
                    Click("Check"),
                    Expect(r"Correct: When does sharding pay"),
                ),
            ),
        ),
        # Checked against FSDP itself: real gloo processes forked from the Jupyter kernel.
        exercise=Exercise(
            "rank_bytes",
            wrong=(
                "def rank_bytes(shapes, world_size, rank, sharded):\n"
                "    import math\n"
                "    numbers = sum(math.prod(s) for s in shapes)\n"
                "    if sharded:\n"
                "        numbers = numbers / world_size          # an even split\n"
                "    return {'parameters': 4 * numbers, 'gradients': 4 * numbers,\n"
                "            'optimizer_state': 8 * numbers + 4 * len(shapes)}\n"
            ),
            wrong_feedback=(
                r"an even split of every parameter",
                r"Hint: FSDP does not cut a tensor anywhere",
            ),
        ),
    ),
}
