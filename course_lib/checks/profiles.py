"""Chapter 05's phase_ms checks: the phases of a real profile.

phase_ms reads the events of a real profile the judge makes and sends as the test's input; its
totals are judged against what the profiler itself added up (key_averages) for that profile.
"""

import copy
import math

import torch
from torch import nn
from torch.profiler import record_function
from torch.utils.data import DataLoader, TensorDataset

from .. import profiling, training
from ..exercises.spec import Fail
from ..exercises.wire import TensorValue
from .base import (
    Check,
    check,
    number,
    shown,
    type_name,
)
from .rig import checker_threads


# ---------------------------------------------------- phase_ms: a real trace, the profiler's totals
def tiny_profile(steps: int = 3, seed: int = 0, train: bool = True) -> tuple:
    """A real CPU profile of `steps` labelled steps of a tiny model (train: all four phases; else
    data and forward only, as an evaluation loop): (its trace events, the profiler's own ms per
    phase) (chapter 05)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer, criterion = torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss()
    loader = DataLoader(
        TensorDataset(torch.randn(16 * steps, 12), torch.randint(0, 4, (16 * steps,))),
        batch_size=16,
    )

    def step(x, y):
        training.train_step(model, optimizer, criterion, x, y, phase=record_function)

    def evaluate(x, y):
        with torch.no_grad(), record_function("forward"):
            criterion(model(x), y)

    with checker_threads():
        prof, _ = profiling.profile_training(
            step if train else evaluate, loader, "cpu", steps=steps
        )
    return profiling.events_of(prof), profiling.label_totals(prof)


def as_cuda_trace(events: list) -> list:
    """The events as a CUDA trace lists them: each label also
    on the GPU's row ("gpu_user_annotation") (chapter 05)."""
    copies = [
        dict(e, cat="gpu_user_annotation", ts=e["ts"] + 5.0, dur=e["dur"] / 2, pid=1, tid=7)
        for e in events
        if e.get("cat") == "user_annotation"
    ]
    return events + copies


def phase_ms_mistakes(events: list, want: dict) -> list:
    """(what a typical mistake returns, the problem, a
    hint) for these events: the judge's table (chapter 05)."""
    complete = [e for e in events if e.get("ph") == "X"]
    labels = [e for e in complete if e.get("cat") == "user_annotation"]
    mine = [e for e in labels if e.get("name") in profiling.PHASES]
    last = {p: next((e["dur"] / 1000 for e in reversed(mine) if e["name"] == p), 0.0) for p in want}
    both = {p: sum(e["dur"] / 1000 for e in complete if e.get("name") == p) for p in want}
    loose = {p: sum(e["dur"] / 1000 for e in labels if p in str(e.get("name"))) for p in want}
    looser = {p: sum(e["dur"] / 1000 for e in complete if p in str(e.get("name"))) for p in want}
    counts = {p: float(sum(e["name"] == p for e in mine)) for p in want}
    substring = (
        "too large: other events whose names contain a phase's word were added "
        '(e.g. "Optimizer.step#SGD.step")',
        "Compare names exactly (`==`), not with `in`.",
    )
    return [
        (
            {p: v * 1000 for p, v in want.items()},
            "in microseconds, not milliseconds",
            "A trace's `dur` (and `ts`) are microseconds: divide by 1000.",
        ),
        (
            last,
            "the duration of one step only (each phase's last event)",
            (
                "Every step has its own event for each phase: add them all up (`+=`), do not "
                "overwrite."
            ),
        ),
        (
            counts,
            "the number of events per phase, not their duration",
            "Add up each event's `dur`.",
        ),
        (
            both,
            "too large: the GPU's copies of the labels were added too",
            (
                'In a CUDA trace each label appears twice: on the CPU (`cat` "user_annotation") '
                "and on the GPU's row (\"gpu_user_annotation\"). Count the CPU's only."
            ),
        ),
        (loose, *substring),
        (looser, *substring),
    ]


def _same_ms(got: dict, want: dict) -> bool:
    return all(
        got.get(p) is not None and math.isclose(got[p], v, rel_tol=1e-3, abs_tol=2e-3)
        for p, v in want.items()
    )


def _ms(totals: dict) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in totals.items())


@check
class PhaseMs(Check):
    """phase_ms on the events of a real profile (as a CUDA trace lists them, with `cuda`): the dict
    it returns against the profiler's own totals (key_averages) of that same profile, which the
    judge made.

    The judge makes the profile and sends its events as this test's input (`inputs()`); the
    learner's check makes its own. The run half only reports what the function returned."""

    steps: int
    seed: int = 0
    train: bool = True
    cuda: bool = False
    where: str = ""
    events: list = None  # the trace the run half reads: made once, by whoever holds the check first

    def profile(self) -> tuple:
        """(events, ms per phase): a profile made here once, or the events this check was given."""
        made = self.__dict__.get("_profile")
        if made is None:
            if self.events is not None:  # rebuilt from its inputs: the labels' own totals
                made = (self.events, profiling.phase_totals(self.events))
            else:
                events, want = tiny_profile(self.steps, self.seed, self.train)
                made = (as_cuda_trace(events) if self.cuda else events, want)
            self.events = made[0]
            self.__dict__["_profile"] = made
        return made

    def inputs(self) -> dict:
        self.profile()
        return super().inputs()

    def run(self, candidate):
        events = self.profile()[0]
        with checker_threads():
            return {"returned": candidate(copy.deepcopy(events))}

    def reference(self, solution):
        events, want = self.profile()
        return {"want": want, "mistakes": phase_ms_mistakes(events, want)}

    def judge(self, seen, ref):
        got, want, where = seen["returned"], ref["want"], self.where
        if isinstance(got, TensorValue):
            raise Fail(
                f"Return a dict of Python floats{where}, not a tensor.",
                expected="{'data': ms, ...}",
            )
        if not isinstance(got, dict):
            raise Fail(
                f"Return a dict phase -> milliseconds{where}.",
                expected="a dict with the four phases",
                got=f"{type_name(got)}: {shown(got)}",
            )
        got = {str(k): number(v) for k, v in got.items()}
        missing = [p for p in want if p not in got]
        if missing:
            raise Fail(
                f"Your dict has no entry for {', '.join(missing)}{where}.",
                expected=f"keys {list(want)}",
                got=f"keys {list(got)}",
                hint=(
                    "Give every phase a value, 0.0 for a phase that never ran (an evaluation loop "
                    "has no backward and no step)."
                ),
            )
        if any(got[p] is None for p in want):
            raise Fail(f"Each value must be a number of milliseconds{where}.")
        for value, problem, hint in ref["mistakes"]:
            if _same_ms(got, value) and not _same_ms(value, want):
                raise Fail(
                    f"Your totals are {problem}{where}.",
                    expected=_ms(want),
                    got=_ms(got),
                    hint=hint,
                )
        if not _same_ms(got, want):
            raise Fail(
                f"Your totals differ from what the profiler itself adds up (key_averages){where}.",
                expected=_ms(want),
                got=_ms(got),
                hint=(
                    'Take the complete events (`ph` "X") whose `cat` is "user_annotation" and '
                    "whose name is one of the phases; add up their `dur` per phase; divide by "
                    "1000."
                ),
            )
