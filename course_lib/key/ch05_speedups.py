"""Answer key for chapter 05 (teacher's copy only).

Each known-wrong answer is built by a small builder with one flag switched on, so it differs
from the reference in exactly one place.
"""

import contextlib

import torch

from course_lib.checks.amp import AmpMatchesReference
from course_lib.checks.profiles import PhaseMs
from course_lib.checks.timing import TimeIt
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def amp_train_step(model, x, y, optimizer, criterion, scaler, device_type, dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=dtype):
        logits = model(x)
        loss = criterion(logits, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


def time_it(fn, device, repeats=5):
    import statistics
    import time

    def sync():
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)

    fn()  # warm-up: the first call pays one-off costs
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def buggy_amp(
    *,
    autocast="today",
    dtype_fixed=None,
    scaled=True,
    step="scaler",
    update=True,
    result="float",
    zero_grad=True,
):
    """amp_train_step with one mistake switched on (each flag's default is the right thing)."""

    def candidate(model, x, y, optimizer, criterion, scaler, device_type, dtype):
        if zero_grad:
            optimizer.zero_grad()
        if autocast == "today":
            context = torch.autocast(device_type=device_type, dtype=dtype_fixed or dtype)
        elif autocast == "cuda_hardcoded":
            context = torch.autocast(device_type="cuda", dtype=dtype)
        elif autocast == "deprecated":
            context = torch.cuda.amp.autocast()
        elif autocast == "outside":  # the forward before the with block, only the loss inside
            logits = model(x)
            with torch.autocast(device_type=device_type, dtype=dtype):
                loss = criterion(logits, y)
            context = None
        elif autocast == "loss_outside":  # the forward inside the with block, the loss after it
            with torch.autocast(device_type=device_type, dtype=dtype):
                logits = model(x)
            loss = criterion(logits, y)
            context = None
        elif autocast == "disabled":
            context = torch.autocast(device_type=device_type, enabled=False)
        else:
            context = contextlib.nullcontext()
        if context is not None:
            with context:
                loss = criterion(model(x), y)
        (scaler.scale(loss) if scaled else loss).backward()
        if step in ("scaler", "both"):
            scaler.step(optimizer)
        if step in ("optimizer", "both"):
            optimizer.step()
        if update:
            scaler.update()
        return {
            "float": lambda: loss.item(),
            "tensor": lambda: loss,
            "scaled": lambda: scaler.scale(loss).item(),
        }[result]()

    return candidate


def buggy_time_it(*, warmup=True, sync="both", stat="median", unit="ms"):
    """time_it with one mistake switched on (each flag's default is the right thing)."""

    def candidate(fn, device, repeats=5):
        import statistics
        import time

        cuda = torch.device(device).type == "cuda"
        if warmup:
            fn()
        times = []
        for _ in range(repeats):
            if sync == "always" or (sync == "both" and cuda):
                torch.cuda.synchronize()
            if sync == "is_available" and torch.cuda.is_available():
                torch.cuda.synchronize(device)
            start = time.perf_counter()
            fn()
            if sync == "always" or (sync in ("both", "after") and cuda):
                torch.cuda.synchronize()
            if sync == "is_available" and torch.cuda.is_available():
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - start)
        value = {"median": statistics.median, "mean": statistics.mean, "min": min}[stat](times)
        return value * 1000 if unit == "ms" else value

    return candidate


def phase_ms(events):
    totals = dict.fromkeys(["data", "forward", "backward", "step"], 0.0)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e.get("name") in totals:
            totals[e["name"]] += e["dur"] / 1000
    return totals


def buggy_phase_ms(
    *, unit="ms", cats=("user_annotation",), match="exact", add=True, what="dur", all_phases=True
):
    """phase_ms with one mistake switched on (defaults are right)."""

    def candidate(events):
        phases = ["data", "forward", "backward", "step"]
        totals = dict.fromkeys(phases, 0.0) if all_phases else {}
        for e in events:
            if e.get("ph") != "X" or e.get("cat") not in cats:
                continue
            for p in phases:
                if (e.get("name") == p) if match == "exact" else (p in e.get("name", "")):
                    value = e["dur"] / (1000 if unit == "ms" else 1) if what == "dur" else 1.0
                    totals[p] = totals.get(p, 0.0) + value if add else value
        return totals

    return candidate


def wrong_phases(label, feedback, **flags):
    return WrongAnswer(label, buggy_phase_ms(**flags), feedback)


def wrong_amp(label, feedback, **flags):
    return WrongAnswer(label, buggy_amp(**flags), feedback)


def wrong_timer(label, feedback, **flags):
    return WrongAnswer(label, buggy_time_it(**flags), feedback)


KEY = {
    "amp_train_step": AnswerKey(
        solution=amp_train_step,
        hidden_tests=[
            Test(
                "float16 with another initial scale: same weights as the reference step",
                AmpMatchesReference(torch.float16, 1024.0, True, " (float16, another scale)"),
                hidden=True,
            ),
            Test(
                (
                    "bfloat16 with a disabled scaler (the bf16 recipe): same weights as the "
                    "reference step"
                ),
                AmpMatchesReference(torch.bfloat16, 2.0**16, False, " (bfloat16, scaler disabled)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            wrong_amp("no autocast", "no autocast was on while the model ran", autocast="off"),
            wrong_amp("autocast switched off", "entered switched off", autocast="disabled"),
            wrong_amp(
                "the deprecated torch.cuda.amp.autocast (a no-op on the CPU)",
                "the deprecated spelling",
                autocast="deprecated",
            ),
            wrong_amp(
                "autocast hard-coded to cuda",
                "Your autocast was for 'cuda'",
                autocast="cuda_hardcoded",
            ),
            wrong_amp(
                "the forward outside autocast, only the loss inside",
                "not while the model ran",
                autocast="outside",
            ),
            wrong_amp(
                "the loss computed after the autocast block",
                "The loss was computed outside the autocast block",
                autocast="loss_outside",
            ),
            wrong_amp(
                "float16 hard-coded", "not with the dtype you were given", dtype_fixed=torch.float16
            ),
            wrong_amp(
                "backward without scaler.scale",
                "`backward()` ran on the unscaled loss",
                scaled=False,
            ),
            wrong_amp("optimizer.step instead of scaler.step", "times too big", step="optimizer"),
            wrong_amp(
                "no scaler at all: loss.backward(); optimizer.step()",
                "the scaler never saw this step",
                scaled=False,
                step="optimizer",
                update=False,
            ),
            wrong_amp("stepping twice", "stepped twice", step="both"),
            wrong_amp("no scaler.update", "scale was never updated", update=False),
            wrong_amp("no zero_grad", "Gradients accumulate", zero_grad=False),
            wrong_amp("returns a tensor", "as a tensor, not a Python float", result="tensor"),
            wrong_amp("returns the scaled loss", "the scaled loss", result="scaled"),
        ],
    ),
    "time_it": AnswerKey(
        solution=time_it,
        hidden_tests=[
            Test(
                "seven repeats on a second GPU, another run pattern",
                TimeIt(
                    [5.0, 6.0, 40.0, 5.5, 7.0, 6.5, 30.0], 7, torch.device("cuda:1"), " (repeats=7)"
                ),
                hidden=True,
            ),
            Test(
                "a CPU device with three repeats, another run pattern",
                TimeIt([2.0, 12.0, 3.0], 3, torch.device("cpu"), " (device cpu, repeats=3)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            wrong_timer("no warm-up", "No warm-up", warmup=False),
            wrong_timer("no synchronize", "never synchronized", sync="none"),
            wrong_timer(
                "synchronize only after the call, not after the warm-up",
                "waited for the warm-up",
                sync="after",
            ),
            wrong_timer("mean instead of median", "the mean", stat="mean"),
            wrong_timer("the fastest run", "the fastest run", stat="min"),
            wrong_timer("returns seconds", "in seconds", unit="s"),
            wrong_timer(
                "synchronizes CUDA even for a CPU device",
                "While timing a CPU device",
                sync="always",
            ),
            wrong_timer(
                "synchronizes when the machine has CUDA, whatever the device",
                "on a GPU machine it waits for the GPU",
                sync="is_available",
            ),
        ],
    ),
    "phase_ms": AnswerKey(
        solution=phase_ms,
        hidden_tests=[
            Test(
                "a CUDA trace of an evaluation loop",
                PhaseMs(3, seed=5, train=False, cuda=True, where=" (a CUDA evaluation trace)"),
                hidden=True,
            ),
            Test(
                "a longer profile, another model start",
                PhaseMs(5, seed=3, where=" (5 steps)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            wrong_phases("microseconds, not milliseconds", "in microseconds", unit="us"),
            wrong_phases(
                "the last step only (overwrites instead of adding)", "one step only", add=False
            ),
            wrong_phases("counts the events", "the number of events", what="count"),
            wrong_phases(
                "adds the GPU's copies of the labels too",
                "the GPU's copies",
                cats=("user_annotation", "gpu_user_annotation"),
            ),
            wrong_phases(
                "matches names with `in` (Optimizer.step#SGD.step counts as step)",
                "contain a phase's word",
                match="substring",
            ),
            wrong_phases(
                "leaves out phases that never ran", "no entry for backward", all_phases=False
            ),
        ],
    ),
    "profile_verdict": AnswerKey(answer="a"),
    "bf16_scaler": AnswerKey(answer="c"),
    "low_utilization": AnswerKey(answer=["a", "c"]),
    "scale_after_overflow": AnswerKey(answer=32768),
    "compile_control_flow": AnswerKey(answer="d"),
}
