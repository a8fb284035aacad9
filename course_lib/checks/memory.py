"""Chapter 06's checks: model_state_bytes, train_with_accumulation and largest_batch.

model_state_bytes returns numbers the judge measures itself on the same model; accumulation is
judged on the weights after the epoch (against big-batch SGD on the same data, and against the
weights each known mistake gives); largest_batch on what it returns (a fake card's sizes are
inputs, the right answer follows from them) and on the errors that escape it.
"""

import math

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .. import memory
from ..data import N_CLASSES, N_FEATURES
from ..exercises.spec import Fail
from ..exercises.wire import roundtrip
from ..memory import BUDGET, OutOfMemoryError, format_bytes, step_in_budget
from ..training import train_step, wide_mlp
from .base import Check, attempt, check, is_error, matches, number, shown
from .rig import Trace, checker_threads, watch_gradients

# ---------------------------------------------------------------- model_state_bytes
STATE_CASES = {
    "adam": "a model after two Adam steps",
    "sgd": "plain SGD (keeps no state)",
    "sgd_momentum": "SGD with momentum (one buffer per weight)",
    "bf16": "a model whose first layer is bfloat16 (2 bytes per element), after Adam steps",
    "fresh": "a new model and Adam before any backward() or step()",
}


def state_case(kind: str):
    """A model and optimizer in a known state; returns (model, optimizer, what the case is)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
        if kind == "bf16":
            model[0].to(torch.bfloat16)
        opt = (
            torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            if kind == "sgd_momentum"
            else torch.optim.SGD(model.parameters(), lr=0.1)
            if kind == "sgd"
            else torch.optim.Adam(model.parameters(), lr=1e-3)
        )
        if kind != "fresh":
            for _ in range(2):
                opt.zero_grad()
                x = torch.randn(4, 6, dtype=model[0].weight.dtype)
                out = model[2](model[1](model[0](x)).float())
                out.sum().backward()
                opt.step()
        return model, opt, STATE_CASES[kind]


def step_counter_bytes(optimizer) -> int:
    """Bytes of the optimizer's `step` tensors (Adam: one 0-dim float32 per parameter)."""
    return sum(
        memory.tensor_bytes(v)
        for state in optimizer.state.values()
        for name, v in state.items()
        if name == "step" and isinstance(v, torch.Tensor)
    )


STATE_HINTS = {
    "weights": (
        "Every parameter counts once: its number of elements times the bytes of one element."
    ),
    "grads": "Only parameters whose .grad is not None have gradient memory.",
    "optimizer_state": (
        "optimizer.state holds one dict per parameter: add up the values in those dicts that are "
        "tensors, whatever their names."
    ),
}


@check
class State(Check):
    """model_state_bytes on a model and optimizer in
    a known state, against what the judge measures."""

    kind: str

    def run(self, candidate):
        model, opt, _ = state_case(self.kind)
        return candidate(model, opt)

    def reference(self, solution):
        model, opt, what = state_case(self.kind)
        return {
            "want": memory.state_bytes(model, opt),
            "what": what,
            "counters": step_counter_bytes(opt),
            "elements": {
                "weights": sum(p.numel() for p in model.parameters()),
                "grads": sum(p.grad.numel() for p in model.parameters() if p.grad is not None),
            },
        }

    def judge(self, seen, ref):
        got, want, what, n_elements = seen, ref["want"], ref["what"], ref["elements"]
        if not isinstance(got, dict) or set(got) != set(want):
            raise Fail(
                "Return a dict with exactly the keys 'weights', 'grads', 'optimizer_state'.",
                expected=sorted(want),
                got=shown(got, 100),
            )
        for k in ("weights", "grads", "optimizer_state"):
            if got[k] == want[k]:
                continue
            if k in n_elements and got[k] == n_elements[k] and want[k]:
                raise Fail(
                    f"{k}: you counted elements, not bytes ({what}).",
                    expected=want[k],
                    got=got[k],
                    hint="Multiply each tensor's numel() by its element_size() (4 for float32).",
                )
            if k != "optimizer_state" and got[k] == 4 * n_elements[k] and want[k] != got[k]:
                raise Fail(
                    (
                        f"{k}: you assumed 4 bytes per element, but not every tensor is float32 "
                        f"({what})."
                    ),
                    expected=want[k],
                    got=got[k],
                    hint="t.element_size() gives the real size of t's dtype.",
                )
            if k == "grads" and want[k] == 0:
                raise Fail(
                    f"grads: there are no gradients yet ({what}).",
                    expected=0,
                    got=got[k],
                    hint=(
                        "p.grad is None until a backward() (and again after "
                        "zero_grad(set_to_none=True))."
                    ),
                )
            counters = ref["counters"]
            if k == "optimizer_state" and counters and got[k] == want[k] - counters:
                raise Fail(
                    (
                        f"optimizer_state: {counters} bytes short ({what}): you left out Adam's "
                        "step counters."
                    ),
                    expected=want[k],
                    got=got[k],
                    hint=(
                        "Besides exp_avg and exp_avg_sq, Adam keeps `step` for each parameter: a "
                        "0-dim float32 tensor, 4 bytes. Count every tensor value in "
                        "optimizer.state[p]."
                    ),
                )
            if k == "optimizer_state" and got[k] == 2 * want["weights"] and want[k] != got[k]:
                raise Fail(
                    f"optimizer_state: you estimated 2 x weights instead of measuring ({what}).",
                    expected=want[k],
                    got=got[k],
                    hint="Add up the tensors the optimizer really holds: every tensor value in "
                    "optimizer.state[p] (Adam makes them at its first step; SGD without momentum "
                    "keeps none).",
                )
            raise Fail(
                f"{k} is not right ({what}).",
                expected=want[k],
                got=shown(got[k]),
                hint=STATE_HINTS[k],
            )


# ---------------------------------------------------------------- train_with_accumulation
ACC_IN, ACC_OUT = 12, 4


def acc_model(seed: int = 0) -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(ACC_IN, 16), nn.ReLU(), nn.Linear(16, ACC_OUT))


def acc_loader(n_micro: int, micro: int, seed: int = 0) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_micro * micro, ACC_IN, generator=g)
    y = torch.randint(0, ACC_OUT, (n_micro * micro,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=micro)


def run_acc(candidate, loader, accum_steps, model=None, device="cpu", seed=0):
    """Run the candidate on a fresh model with plain
    SGD; return (model, trace of steps and backwards)."""
    model = model or acc_model(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    trace = Trace()
    watch_gradients(model[0].weight, optimizer, trace)
    with torch.random.fork_rng(), checker_threads():
        candidate(model, loader, optimizer, nn.CrossEntropyLoss(), device, accum_steps)
    return model, trace


def reference_big_batch(
    loader, accum_steps, seed=0, divide_by=None, skip_short_group=False
) -> nn.Module:
    """The same data in big batches of accum_steps
    micro-batches, one ordinary SGD step per big batch.

    `divide_by(g)`: what each micro-batch loss of a group of g micro-batches was divided by; the
    right answer divides by g itself (the default), and then each step IS the big batch's step.
    """
    model = acc_model(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for x, y in DataLoader(loader.dataset, batch_size=loader.batch_size * accum_steps):
        group = math.ceil(len(x) / loader.batch_size)
        if (
            skip_short_group and group < accum_steps
        ):  # a known mistake: no step for a last, shorter group
            break
        factor = group / divide_by(group) if divide_by else 1.0
        optimizer.zero_grad()
        (factor * nn.functional.cross_entropy(model(x), y)).backward()
        optimizer.step()
    return model


def weights_equal(a, b) -> bool:
    return all(
        torch.allclose(p, q, rtol=1e-4, atol=1e-6) for p, q in zip(a.parameters(), b.parameters())
    )


def _weights(model) -> list:
    return [p.detach().clone() for p in model.parameters()]


def _divisions(k: int) -> dict:
    """Each way to divide a group's micro-batch losses:
    by the group's size, by accum_steps, not at all."""
    return {"group": None, "accum_steps": lambda g: k, "nothing": lambda g: 1}


@check
class StepPattern(Check):
    """Steps once every accum_steps micro-batches, clears gradients only after a step. The probes
    say when step() and backward() ran (the words of the feedback); the weights must be those of
    that stepping pattern, whatever the loss was divided by (that is another test's job)."""

    n_micro: int
    accum_steps: int

    def run(self, candidate):
        model, trace = run_acc(candidate, acc_loader(self.n_micro, 8), self.accum_steps)
        return {
            "steps": [s["backwards"] for s in trace.steps][:200],
            "clean": [bool(b["clean"]) for b in trace.backwards][:200],
            "params": _weights(model),
        }

    def reference(self, solution):
        loader = acc_loader(self.n_micro, 8)
        return roundtrip(
            [
                _weights(reference_big_batch(loader, self.accum_steps, divide_by=d))
                for d in _divisions(self.accum_steps).values()
            ]
        )

    def judge(self, seen, ref):
        n_micro, accum_steps = self.n_micro, self.accum_steps
        want = list(range(accum_steps, n_micro + 1, accum_steps))
        if n_micro % accum_steps:
            want.append(n_micro)
        got, clean = list(seen["steps"]), list(seen["clean"])
        where = f" ({n_micro} micro-batches, accum_steps={accum_steps})"
        if len(clean) != n_micro:
            raise Fail(
                f"backward() ran {len(clean)} times for {n_micro} micro-batches{where}.",
                expected=f"{n_micro} backward() calls",
                got=len(clean),
                hint="One forward and one backward per micro-batch; only the step waits.",
            )
        if got == list(range(1, n_micro + 1)):
            raise Fail(
                (
                    f"optimizer.step() ran after every micro-batch{where}: that is ordinary "
                    "small-batch training."
                ),
                expected=f"steps after micro-batches {want}",
                got=f"steps after {got}",
                hint=(
                    "Count micro-batches with enumerate(loader): a group ends after every "
                    "accum_steps-th one."
                ),
            )
        if got == want[:-1] and n_micro % accum_steps:
            raise Fail(
                f"The last, shorter group never got its step: its gradients were computed and then "
                f"thrown away{where}.",
                expected=f"steps after micro-batches {want}",
                got=f"steps after {got}",
                hint="After the loop, if some micro-batches were accumulated since the last step, "
                "step once more.",
            )
        if got != want:
            raise Fail(
                f"The optimizer stepped at the wrong moments{where}.",
                expected=f"after micro-batches {want}",
                got=f"after {got}",
                hint="Count micro-batches with enumerate(loader).",
            )
        starts = {0} | set(want[:-1])
        for i, was_clean in enumerate(clean):
            if i in starts and not was_clean:
                raise Fail(
                    (
                        "Gradients from the previous group leaked into the next one (micro-batch "
                        f"{i + 1}){where}."
                    ),
                    hint="optimizer.zero_grad() after each step (and once before the loop).",
                )
            if i not in starts and was_clean:
                raise Fail(
                    (
                        f"The gradients were cleared inside a group (before micro-batch {i + 1}): "
                        f"only the last micro-batch of each group reached the step{where}."
                    ),
                    expected="gradients that add up over accum_steps micro-batches",
                    got="zero_grad() before every micro-batch",
                    hint=(
                        "Accumulating IS not clearing: zero_grad only right after optimizer.step()."
                    ),
                )
        if not any(
            matches(seen["params"], [w.values for w in weights], rtol=1e-4) for weights in ref
        ):
            raise Fail(
                f"The weights after the epoch are not those of one step per group of {accum_steps} "
                f"micro-batches{where}.",
                hint=(
                    "Per micro-batch: forward, scale the loss, backward. Per group: step, then "
                    "zero_grad."
                ),
            )


def _accumulation_mistakes(loader, k, seed):
    """(weights a known mistake gives, what it did, a
    hint that does not give the line) (chapter 06)."""
    return (
        (
            reference_big_batch(loader, k, seed, divide_by=lambda g: 1),
            (
                "Your steps are too big: a group's gradient became the SUM of its micro-batch "
                "gradients, not their mean"
            ),
            "The big batch's loss is a mean: scale each micro-batch's loss down before backward().",
        ),
        (
            reference_big_batch(loader, 1, seed, divide_by=lambda g: k),
            (
                "Your weights are those of ordinary small-batch training with a smaller learning "
                "rate: the optimizer stepped after every micro-batch"
            ),
            "Gradients add up in .grad while you do not step: step only once per group.",
        ),
        (
            reference_big_batch(loader, k, seed, skip_short_group=True),
            (
                "All full groups match the big batch, but the last, shorter group never took its "
                "step: its gradients were computed, then thrown away"
            ),
            (
                "After the loop, if micro-batches were accumulated since the last step, step once "
                "more (that group's losses divided by its own number of micro-batches)."
            ),
        ),
        (
            reference_big_batch(loader, k, seed, divide_by=lambda g: k),
            (
                "All groups but the last match the big batch; the last, shorter group does not: "
                "its losses were divided as if it were a full group, so its step came out too "
                "small"
            ),
            (
                "A group of g micro-batches is a big batch of g micro-batches: its mean loss "
                "divides by g. len(loader) tells you how many micro-batches there are, so you "
                "know how big the last group is."
            ),
        ),
    )


@check
class EqualsBigBatch(Check):
    """After one epoch, the learner's weights equal
    big-batch SGD's on the same data (the judge's)."""

    n_micro: int
    accum_steps: int

    def run(self, candidate):
        loader = acc_loader(self.n_micro, 8, seed=self.accum_steps)
        model, _ = run_acc(candidate, loader, self.accum_steps, seed=self.accum_steps)
        return _weights(model)

    def reference(self, solution):
        k = self.accum_steps
        loader = acc_loader(self.n_micro, 8, seed=k)
        mistakes = [
            [_weights(w), what, hint] for w, what, hint in _accumulation_mistakes(loader, k, k)
        ]
        return roundtrip(
            {"right": _weights(reference_big_batch(loader, k, seed=k)), "mistakes": mistakes}
        )

    def judge(self, seen, ref):
        if matches(seen, [w.values for w in ref["right"]], rtol=1e-4):
            return
        where = f" ({self.n_micro} micro-batches of 8, accum_steps={self.accum_steps})"
        for weights, what, hint in ref["mistakes"]:
            if matches(seen, [w.values for w in weights], rtol=1e-4):
                raise Fail(
                    what + where + ".",
                    expected="the weights of big-batch training on the same data",
                    hint=hint,
                )
        raise Fail(
            (
                "After training, your weights differ from ordinary big-batch training on the "
                f"same data{where}."
            ),
            hint=(
                "Per micro-batch: forward, scale the loss, backward. Per group: step, then "
                "zero_grad."
            ),
        )


# ---------------------------------------------------------------- largest_batch
ERRORS = {"budget": memory.MemoryBudgetExceeded, "cuda": OutOfMemoryError}
OOM_KINDS = ("MemoryBudgetExceeded", "OutOfMemoryError")


def fake_card(fits_up_to: int, error=memory.MemoryBudgetExceeded, broken: int = None):
    """(try_batch, tried): a card that fits up to `fits_up_to` samples and raises `error` above,
    maybe another error at `broken`; `tried` lists the sizes asked for (kept outside the learner's
    reach)."""
    tried = []

    def try_batch(n: int):
        tried.append(n)
        if n == broken:
            raise RuntimeError(
                "mat1 and mat2 shapes cannot be multiplied (a bug, not a memory problem)"
            )
        if n > fits_up_to:
            raise error(f"out of memory at batch {n} (a test card that fits {fits_up_to})")

    return try_batch, tried


def largest_fit(fits_up_to: int, limit: int) -> int:
    """The largest power of two at most `limit` that fits (0 if even 1 does not)."""
    want = 0
    while want * 2 <= limit and max(1, want * 2) <= fits_up_to:
        want = max(1, want * 2)
    return want


@check
class Largest(Check):
    """largest_batch on a fake card that fits `fits_up_to` samples and raises `error` above."""

    fits_up_to: int
    limit: int
    error: str = "budget"  # budget: the course's MemoryBudgetExceeded; cuda: torch.OutOfMemoryError
    what: str = ""

    def run(self, candidate):
        try_batch, tried = fake_card(self.fits_up_to, ERRORS[self.error])
        got, error = attempt(lambda: candidate(try_batch, self.limit), candidate)
        return {"got": got, "tried": tried[:200], "error": error}

    def judge(self, seen, ref):
        what, limit, error, tried = self.what, self.limit, seen["error"], list(seen["tried"])
        if error is not None:
            if error["type"] in OOM_KINDS:
                raise Fail(
                    (
                        f"Your function let {error['type']} escape{what}: that is an "
                        "out-of-memory error too."
                    ),
                    got=f"{error['type']}: {error['message']}",
                    hint=(
                        "memory.OUT_OF_MEMORY is a tuple of both kinds: torch.OutOfMemoryError (a "
                        "real GPU) and MemoryBudgetExceeded (the course's stand-in). Catch the "
                        "tuple."
                    ),
                )
            raise Fail(f"Your code raised {error['text']}")
        over = [n for n in tried if isinstance(n, (int, float)) and n > limit]
        if over:
            raise Fail(
                f"You tried batch {over[0]}, above the limit {limit}{what}.",
                expected=f"sizes <= {limit}",
                got=tried,
                hint="Stop doubling before the size passes the limit.",
            )
        got, want = seen["got"], largest_fit(self.fits_up_to, limit)
        if got == want and isinstance(got, (int, float)) and not isinstance(got, bool):
            return
        if want == 0 and got is None:
            raise Fail(
                f"Even batch 1 does not fit here{what}: return 0, a number.", expected=0, got=None
            )
        if got == max(1, want * 2) and got in tried:
            raise Fail(
                f"You returned the first size that did NOT fit{what}.",
                expected=want,
                got=got,
                hint="Remember the last size that ran; return that one.",
            )
        if want == limit and got == want // 2 and limit not in tried:
            raise Fail(
                (
                    f"You never tried the limit itself, {limit}{what}: a batch of exactly `limit` "
                    "is allowed."
                ),
                expected=want,
                got=got,
                hint="Keep doubling while n is at most the limit, not below it.",
            )
        raise Fail(
            f"Not the largest power-of-two batch that fits{what}.",
            expected=want,
            got=shown(got),
            hint=(
                "Remember the last size that ran; double n while it is at most the limit; stop at "
                "the first out-of-memory error."
            ),
        )


@check
class OtherErrors(Check):
    """A shape error at batch 8 reaches the caller instead of counting as out of memory."""

    def run(self, candidate):
        try_batch, _ = fake_card(fits_up_to=64, broken=8)
        got, error = attempt(lambda: candidate(try_batch, 1024), candidate)
        return {"got": got, "error": error}

    def judge(self, seen, ref):
        error = seen["error"]
        if error is not None:
            if (
                is_error(error, "RuntimeError")
                and "shapes cannot be multiplied" in error["message"]
                and error["type"] not in OOM_KINDS
            ):
                return
            raise Fail(f"Your code raised {error['text']}")
        raise Fail(
            "A shape error at batch 8 was swallowed as if it were out of memory.",
            expected="the RuntimeError about shapes raised to the caller",
            got=f"returned {shown(seen['got'])}",
            hint="Catch only out-of-memory errors: except memory.OUT_OF_MEMORY (a tuple of "
            "torch.OutOfMemoryError and the course's MemoryBudgetExceeded). `except RuntimeError` "
            "catches far more: shape errors, device mismatches...",
        )


def budget_card(n_max: int = 2048, budget: int = None):
    """try_batch on the CPU stand-in: one Adam step of a fresh wide_mlp on n samples inside `budget`
    (chapter 06's model and budget)."""
    budget = budget or BUDGET
    g = torch.Generator().manual_seed(0)
    x, y = (
        torch.randn(n_max, N_FEATURES, generator=g),
        torch.randint(0, N_CLASSES, (n_max,), generator=g),
    )

    def try_batch(n: int):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = wide_mlp()
        optimizer, criterion = torch.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss()
        train_step(model, optimizer, criterion, x[:8], y[:8])
        step_in_budget(model, optimizer, criterion, x[:n], y[:n], budget)

    return try_batch


@check
class RealBudget(Check):
    """On the course's memory budget with a real model: the answer, against every power of two the
    judge tries itself."""

    def run(self, candidate):
        with checker_threads():
            return candidate(budget_card(), 2048)

    def reference(self, solution):
        try_batch, want = budget_card(), 0
        with checker_threads():
            for n in (2**k for k in range(12)):
                if not memory.fits_call(try_batch, n):
                    break
                want = n
        return {"want": want, "budget": BUDGET}

    def judge(self, seen, ref):
        if isinstance(seen, bool) or number(seen) != ref["want"]:
            raise Fail(
                (
                    f"On the course's {format_bytes(ref['budget'])} budget with a real model, the "
                    "answer is not right."
                ),
                expected=ref["want"],
                got=shown(seen),
            )
