"""Chapter 05's exercises and quizzes, declared apart from its demonstrations.

The judge and the grader import this module, not the chapter module (ch05_speedups.py, which
re-exports every name here for the notebook); the checks live in course_lib/checks/amp.py,
timing.py and profiles.py.
"""

import torch

from .. import chapters
from ..checks import amp, profiles
from ..checks.timing import TimeIt
from ..exercises import Declarations, Quiz, Test
from ..i18n import tr
from ..i18n.catalogue import Said, join, listing
from ..sections import section

chapter = chapters.of_module(__name__)  # number and title: course_lib/chapters.py
declare = Declarations(chapter)  # records each exercise and quiz on the chapter

__all__ = [  # the chapter module re-exports these (ch.<name>)
    "chapter",
    "amp_train_step",
    "phase_ms",
    "time_it",
    "bf16_scaler",
    "low_utilization",
    "profile_verdict",
    "scale_after_overflow",
    "compile_control_flow",
]


# ================================================================ exercises and quizzes
# ---------------------------------------------------------------- exercise: amp_train_step
# The checks (and the AMP rig, the scaler spy, the simulated
# GPU clock) live in course_lib/checks/amp.py and timing.py.
amp_train_step = declare.function_exercise(
    "amp_train_step",
    title="One mixed-precision training step, today's API",
    prompt=(
        "Write amp_train_step(model, x, y, optimizer, criterion, scaler, device_type, dtype) -> "
        "float: one training step with automatic mixed precision. Clear the old gradients; run "
        "the forward pass and the loss inside torch.autocast for `device_type` with `dtype`; "
        "backward on the loss scaled by the GradScaler `scaler`; let the scaler step the "
        "optimizer and then update its scale. Return this step's (unscaled) loss as a Python "
        "float. x and y are already on the model's device."
    ),
    points=5,
    tests=[
        Test("runs the forward pass under autocast with the given dtype", amp.Autocast()),
        Test("clears the gradients and calls backward on the scaled loss", amp.ScaledBackward()),
        Test("steps through the scaler, then updates the scale", amp.ScalerStep()),
        Test("returns this step's loss as a Python float", amp.ReturnsLoss()),
    ],
    hints=[
        (
            "It is chapter 03's training step with two changes: the forward pass and the loss run "
            "inside an autocast block, and the GradScaler takes part in backward and in the "
            "update."
        ),
        "The GradScaler has three methods you need, used in this order: `scale` (the loss, before "
        "backward), `step` (takes the optimizer), `update` (no arguments).",
        (
            "The shape of it, in order: clear the gradients; a `with torch.autocast(...)` block "
            "(the device type and the dtype you were given) around the forward pass and the loss; "
            "backward on what the scaler's `scale` returns; the scaler's `step` with the "
            "optimizer; the scaler's `update`; return the loss as a Python float."
        ),
    ],
)


# ------------------------------------------------------------------------------- exercise: phase_ms
# Its check (a real profile, the profiler's own totals,
# the mistakes table) is checks/profiles.py's PhaseMs.
phase_ms = declare.function_exercise(
    "phase_ms",
    title="Read the trace: milliseconds per phase",
    prompt=(
        'Write phase_ms(events) -> dict: from a trace\'s event list (the "traceEvents" of the '
        "file export_chrome_trace wrote), the total milliseconds of each phase labelled by "
        "record_function, over all steps: {'data': ms, 'forward': ms, 'backward': ms, 'step': "
        'ms}, 0.0 for a phase that never ran. A label is a complete event (ph "X") with cat '
        '"user_annotation" and the phase\'s name; its duration, dur, is in microseconds.'
    ),
    points=3,
    tests=[
        Test("a real profile of 3 training steps", profiles.PhaseMs(3)),
        Test(
            "an evaluation profile: no backward, no step",
            profiles.PhaseMs(2, seed=1, train=False, where=" (evaluation profile)"),
        ),
        Test(
            "a CUDA trace: every label also on the GPU's row",
            profiles.PhaseMs(2, seed=2, cuda=True, where=" (a CUDA trace)"),
        ),
    ],
    hints=[
        (
            "Look at one event first: `[e for e in events if e.get('name') == 'forward'][0]`. "
            "Which keys tell you it is a label, and how long it lasted?"
        ),
        (
            "Keep one running total per phase, each starting at 0.0, so that a phase that never "
            "ran is still there. Add only the events that are labels (their `ph` and `cat` say "
            "so) and whose `name` is a phase, and mind the unit `dur` is in."
        ),
    ],
)


# ---------------------------------------------------------------- exercise: time_it
time_it = declare.function_exercise(
    "time_it",
    title="Timing a GPU correctly",
    prompt=(
        "Write time_it(fn, device, repeats=5) -> float: how long one call of fn() takes, in "
        "milliseconds. Call fn() once untimed (warm-up), then time `repeats` calls with "
        "time.perf_counter(). When device is a CUDA device, call torch.cuda.synchronize(device) "
        "before starting and before stopping the clock (never on other devices). Return the "
        "median of the timed calls, in milliseconds, as a float."
    ),
    points=4,
    tests=[
        Test(
            "warms up, synchronizes, returns the median in ms (simulated GPU)",
            TimeIt([10.0, 14.0, 11.0, 50.0, 12.0], 5, torch.device("cuda")),
        ),
        Test(
            "the same with repeats=3",
            TimeIt([8.0, 30.0, 9.0], 3, torch.device("cuda"), " (three repeats)"),
        ),
        Test(
            "a CPU device on a machine without CUDA: no CUDA calls, the median in ms",
            TimeIt([3.0, 5.0, 4.0, 9.0, 2.0], 5, torch.device("cpu"), " (a CPU device, no GPU)"),
        ),
        Test(
            "a CPU device on a machine that has a GPU: still no CUDA calls",
            TimeIt(
                [3.0, 5.0, 4.0, 9.0, 2.0],
                5,
                torch.device("cpu"),
                " (a CPU device, a GPU machine)",
                machine_has_cuda=True,
            ),
        ),
    ],
    hints=[
        (
            "Three rules: one untimed warm-up call; on a CUDA device, wait for the GPU "
            "(`torch.cuda.synchronize`) before each clock reading; report the median, in "
            "milliseconds."
        ),
        (
            "Decide whether to synchronize from the device you were given (its `.type`), never "
            "from whether the machine has a GPU: on a CPU device, `torch.cuda` has nothing to do "
            "with your timing."
        ),
        (
            "The shape of it: `fn()` once, untimed; then, `repeats` times: wait for the device if "
            "it is CUDA, read the clock, call `fn()`, wait for the device if it is CUDA, read the "
            "clock again and keep the difference in milliseconds; return the median of what you "
            "kept."
        ),
    ],
)


# ---------------------------------------------------------------- quizzes
bf16_scaler = declare.quiz(
    "bf16_scaler",
    title="Does bfloat16 need a GradScaler?",
    question=(
        "You train with `torch.autocast(device_type, dtype=torch.bfloat16)`. Do you need a "
        "GradScaler?"
    ),
    options={
        "a": "Yes: bfloat16 has float16's 5 exponent bits, so small gradients underflow",
        "b": "Yes: `torch.autocast` refuses bfloat16 unless a GradScaler is enabled",
        "c": "No: its range goes as low as float32's, so gradients too small for float16 survive",
        "d": "No: autocast keeps every gradient in float32, so no 16-bit dtype needs a scaler",
    },
    digest="659f8988bebabc50",
    hints=[
        "Compare the 'smallest normal' column of float16 and bfloat16 in the table above.",
        "Underflow is about range (exponent bits), not precision (mantissa bits).",
    ],
    why={
        "a": (
            "Count again in the table above: bfloat16's smallest normal number is about 1e-38, "
            "float16's about 6e-5. They do not share an exponent width."
        ),
        "b": (
            "Autocast accepts bfloat16 on its own: the autocast table above was recorded without "
            "any scaler."
        ),
        "d": (
            "Only the weights' `.grad` is float32. The gradients flowing back through the layers "
            "are computed in the 16-bit dtype, and in float16 the small ones underflow there: "
            "that is why float16 does need a scaler."
        ),
    },
    explanation=(
        "bfloat16 keeps float32's 8 exponent bits (smallest normal about 1e-38); float16 has 5 "
        "(about 6e-5, and 0 below about 3e-8), which is why float16 needs the loss scaled up "
        "before backward. bfloat16 pays with precision instead: 7 stored mantissa bits, float16 "
        "10."
    ),
)

low_utilization = declare.quiz(
    "low_utilization",
    title="The GPU sits at 30% utilization",
    kind="multiple",
    question=(
        "`nvidia-smi` shows your GPU at about 30% utilization during training. This chapter's "
        "step timer (wait = `next(iterator)` hands over a batch; compute = copy to the GPU, "
        "forward, backward, update) says most of each step is spent waiting. Which changes "
        "shorten the wait? Choose all that apply."
    ),
    options={
        "a": "More DataLoader workers (`num_workers`), so batches are prepared in parallel",
        "b": "`pin_memory=True` in the DataLoader, with `.to(device, non_blocking=True)`",
        "c": "Make the per-item preprocessing cheaper (or do it once, ahead of training)",
        "d": "`torch.cuda.empty_cache()` after every step, so each batch finds free memory",
        "e": "Wrap the model in `nn.DataParallel`, so the one GPU gets more work per step",
    },
    digest="a167ae89d7f783cb",
    hints=[
        (
            "For each change, ask which part of the step it speeds up: building the next batch "
            "(the wait) or copying and computing on it (the compute)."
        ),
        (
            "Go back to the definition of wait and compute at the start of "
            f"{section('05', 'Is the GPU starving')}."
        ),
    ],
    why={
        "b": (
            "Pinned memory with non_blocking speeds up the copy to the GPU, which this timer "
            "counts as compute, not as waiting: the loader builds batches no faster."
        ),
        "d": (
            "empty_cache hands cached GPU memory back to the driver; it does not make the loader "
            "any faster (and the next allocation gets slower)."
        ),
        "e": (
            "DataParallel splits a batch over several GPUs; on one GPU it only adds work, and the "
            "loader stays as slow as before."
        ),
    },
    explanation=(
        "The wait is the loader building batches: build them in parallel (workers) and make each "
        "cheaper. Pinned memory and non_blocking are worth having on a GPU, but they speed up the "
        "copy, which is part of the compute here; empty_cache and DataParallel on one GPU add "
        "work."
    ),
)

# what the learner's last profile showed (ch05_speedups.profile_steps fills it in the notebook;
# empty in a grader, which then judges by the key)
PROFILE_READING = {}
# which option of `profile_verdict` shortens each phase
PHASE_OPTIONS = {"data": "a", "forward": "b", "backward": "c", "step": "d"}
# (the start of an operator's name in the table, what it is in this chapter's profiled steps)
OPERATOR_ROLES = (
    ("aten::bmm", "inside `affine_grid`: the augmentation, so data"),
    ("aten::affine_grid", "the augmentation's `affine_grid`: data"),
    ("aten::grid_sampler", "the augmentation's `grid_sample`: data"),
    ("aten::avg_pool2d", "the augmentation's pooling back to 8x8: data"),
    ("aten::upsample", "the augmentation's upsampling: data"),
    ("enumerate(DataLoader)", "the DataLoader handing over each batch: data"),
    ("aten::mm", "the model's Linear layers, in forward and in backward's gradients"),
    ("aten::addmm", "the model's Linear layers: forward"),
    ("Optimizer.step", "Adam's update: step"),
)
# what shortens each phase, said after a right answer
PHASE_REMEDIES = {
    "data": (
        "Workers build batches in parallel with the training, and cheaper preprocessing shortens "
        "each one; the other options speed up phases that are a smaller share of your step."
    ),
    "forward": "torch.compile fuses the forward's kernels; faster batches would not shorten it.",
    "backward": (
        "Autocast computes the backward's matrix products in 16 bits; whether that is faster on "
        "your hardware is what section 5 measures."
    ),
    "step": "A lighter optimizer shortens the update; the other phases are a smaller share.",
}


def operator_role(name: str) -> str:
    """What an operator of the profile table is in this chapter's steps, or "" (chapter 05)."""
    return next((tr(role) for start, role in OPERATOR_ROLES if name.startswith(start)), "")


def largest_phase(reading: dict) -> str:
    phases = reading["phases"]
    return max(phases, key=phases.get)


def phase_share(reading: dict, phase: str) -> str:
    """ "31 ms of the 40 ms the four labels hold (78%)": one phase of a profile reading."""
    phases = reading["phases"]
    total = sum(phases.values()) or 1.0
    return tr(
        f"{phases[phase]:.0f} ms of the {total:.0f} ms the four labels hold "
        f"({phases[phase] / total:.0%})"
    )


def profile_explanation(reading: dict) -> str:
    """What the learner's own profile shows: its largest phase, its top operators and what each
    is, and what shortens that phase (chapter 05)."""
    phase = largest_phase(reading)
    named = [join([f"`{op}`", operator_role(op)], ": ") for op in reading["top"]]
    usual = (
        ""
        if phase == "data"
        else tr(
            "On most machines the data phase is the largest after the warm-up step: run the "
            "profile cell again to see whether this was a busy moment of yours."
        )
    )
    return join(
        [
            tr(f"In your profile, {phase} is the largest phase: {phase_share(reading, phase)}."),
            tr(f"The table's top rows by self time: {listing(named)}."),
            tr(PHASE_REMEDIES[phase]),
            usual,
        ]
    )


class ProfileQuiz(Quiz):
    """The quiz about the learner's own profile: where the learner profiled in this process (the
    notebook), the right answer is the option of the phase their profile shows largest, and the
    feedback names what their table shows; elsewhere (a grader, which has no profile of theirs)
    the key's answer, by its digest."""

    judged_live = True  # in the notebook, right or wrong depends on what was measured there

    def measured_answer(self) -> str:
        return PHASE_OPTIONS[largest_phase(PROFILE_READING)] if PROFILE_READING else ""

    def is_right(self, normalized: str) -> bool:
        measured = self.measured_answer()
        return normalized == measured if measured else super().is_right(normalized)

    @property
    def explanation(self) -> str:
        return profile_explanation(PROFILE_READING) if PROFILE_READING else self._explanation

    @explanation.setter
    def explanation(self, text: str) -> None:
        self._explanation = text

    def wrong_feedback(self, normalized: str, hint_below: bool = False) -> str:
        if not PROFILE_READING:
            return super().wrong_feedback(normalized, hint_below)
        phase = next(p for p, letter in PHASE_OPTIONS.items() if letter == normalized)
        share = phase_share(PROFILE_READING, phase)
        said = tr(f"In your profile, {phase} took {share}: another phase took more.")
        why = [tr(self.why[normalized])] if normalized in self.why else []
        return join([tr("Not quite."), Said(f"{normalized}) {said}"), *why])


profile_verdict = ProfileQuiz(
    chapter,
    "profile_verdict",
    title="Read your profile",
    question=(
        "Your profile of four training steps on the augmented digits (`num_workers=0`): the "
        "operator table, the timeline and the split printed under it. Which phase takes most of "
        "each step, and which change shortens it?"
    ),
    options={
        "a": "data: build the batches in DataLoader workers, or make the augmentation cheaper",
        "b": "forward: compile the model with `torch.compile`, so its layers' kernels are fused",
        "c": "backward: run the step under `torch.autocast`, so gradients are computed in 16 bits",
        "d": "step: swap Adam for plain SGD, which keeps no running averages per weight",
    },
    digest="12a95ed5d23397f8",
    hints=[
        (
            "Read the split printed under the timeline, or compare the lengths of the four lanes: "
            "which phase is the largest?"
        ),
        "A change can only shorten the phase it works on: which phase does each option speed up?",
    ],
    why={
        "b": (
            "Look at the forward lane and its milliseconds in the split: fusing its kernels can "
            "shorten only that part, and it is not where most of each step goes."
        ),
        "c": (
            "Compare the backward lane with the others in your timeline: 16-bit gradients shorten "
            "only that lane, a small share of each step here."
        ),
        "d": (
            "The step lane (the optimizer's update) is one of the short ones in your timeline: a "
            "lighter optimizer cannot shorten the rest of the step."
        ),
    },
    explanation=(
        "After the untimed warm-up step, the data phase (each augmented batch built in this "
        "process, as `num_workers=0` does) is most of every profiled step: the split under the "
        "timeline says so, and so does the table, whose top rows are the augmentation's own "
        "operators: `aten::bmm` (inside `affine_grid`), `aten::avg_pool2d` (pooling back to "
        "8x8), `aten::grid_sampler_2d`, while the model's `aten::mm` and `aten::addmm` come "
        "lower. Workers "
        "build batches in parallel with the training, and cheaper preprocessing shortens each "
        "one; the other options speed up phases that are a small share of the step."
    ),
)
chapter.add(profile_verdict)  # a Quiz judged against the learner's own profile

scale_after_overflow = declare.quiz(
    "scale_after_overflow",
    title="The scale after an overflow",
    kind="numeric",
    question=(
        "A `torch.amp.GradScaler` starts with its default scale 65536. In the first step a "
        "gradient overflows to inf. `scaler.step(optimizer)` skips that update; then "
        "`scaler.update()` runs with the default `backoff_factor` 0.5. What is "
        "`scaler.get_scale()` now?"
    ),
    digest="dc3fd0bbd381aee6",
    hints=[
        "After a step with inf or nan gradients, update() multiplies the scale by backoff_factor.",
        (
            "Which scale did this step start from, and what does multiplying by a factor of 0.5 "
            "do to a number? Work it out from those two."
        ),
    ],
    why={
        65536: (
            "That is the scale before `update()`: after a step with inf or nan gradients, it "
            "changes."
        ),
        131072: (
            "The scale grows (x2) only after 2000 clean steps in a row; an overflow makes it "
            "smaller."
        ),
        0: (
            "The scale is multiplied by the backoff factor, not set to 0: a scale of 0 would turn "
            "every scaled loss, and so every gradient, into 0."
        ),
        0.5: (
            "0.5 is the backoff factor itself: update() multiplies the scale by it, it does not "
            "become the scale."
        ),
    },
    explanation=(
        "The scale is multiplied by backoff_factor (0.5) after a step with inf or nan gradients, "
        "and grows by growth_factor (2) only after growth_interval (2000) clean steps in a row."
    ),
)

compile_control_flow = declare.quiz(
    "compile_control_flow",
    title="Python control flow under torch.compile",
    question=(
        "LoopNet's forward runs `for _ in range(depth): h = relu(self.middle(h))`, where `depth` "
        "is a Python int passed to forward. You call the compiled model with `depth=2`, then with "
        "`depth=3`. What happens?"
    ),
    options={
        "a": (
            "A graph break at the loop: the loop runs in plain Python, the layers around it "
            "compiled"
        ),
        "b": (
            "One graph for every depth: the loop stays a loop in the graph and reads `depth` at "
            "run time"
        ),
        "c": (
            "`depth=3` raises an error: a compiled model's control flow is fixed by its first call"
        ),
        "d": (
            "The loop is unrolled for `depth=2` and guarded; `depth=3` fails the guard, so it "
            "recompiles"
        ),
    },
    digest="5f0c12e0a7fc60ad",
    hints=[
        (
            "TorchDynamo reads the Python code while it runs once, and records the tensor "
            "operations it sees."
        ),
        "A Python int is known while tracing; a tensor's value is not.",
    ],
    why={
        "a": (
            "Graph breaks come from what TorchDynamo cannot follow (a print, a branch on a "
            "tensor's value); a loop over range of a known int is something it can follow."
        ),
        "b": (
            "A traced graph has no Python loop in it: it holds the operations that ran while "
            "tracing."
        ),
        "c": (
            "Nothing raises: a compiled model keeps working for new inputs; the question is what "
            "it costs."
        ),
    },
    explanation=(
        "TorchDynamo runs the Python code once while tracing: range(2) becomes two copies of the "
        "layer in the graph, and a guard records depth == 2. depth=3 fails that guard, so a "
        "second graph is compiled (with a recompile limit, after which it falls back to eager). "
        "Graph breaks come from code it cannot trace, such as print or an if on a tensor's value."
    ),
)
