"""Answer key for chapter 06 (teacher's copy only)."""

import torch

from course_lib.checks.memory import EqualsBigBatch, Largest, RealBudget, State, StepPattern
from course_lib.checks.rig import MovesData
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def model_state_bytes(model, optimizer):
    size = lambda t: t.numel() * t.element_size()
    return {
        "weights": sum(size(p) for p in model.parameters()),
        "grads": sum(size(p.grad) for p in model.parameters() if p.grad is not None),
        "optimizer_state": sum(
            size(v)
            for state in optimizer.state.values()
            for v in state.values()
            if isinstance(v, torch.Tensor)
        ),
    }


def train_with_accumulation(model, loader, optimizer, criterion, device, accum_steps):
    model.train()
    optimizer.zero_grad()
    n = len(loader)
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        start = i - i % accum_steps  # the first micro-batch of i's group
        group = min(accum_steps, n - start)  # its real size: shorter for a last, partial group
        loss = criterion(model(x), y) / group
        loss.backward()
        if i + 1 == start + group:
            optimizer.step()
            optimizer.zero_grad()


def largest_batch(try_batch, limit):
    from course_lib.memory import OUT_OF_MEMORY

    best, n = 0, 1
    while n <= limit:
        try:
            try_batch(n)
        except OUT_OF_MEMORY:
            break
        best = n
        n *= 2
    return best


# ---------------------------------------------------------------- wrong answers
def state_bytes_variant(*, unit="bytes", optimizer="measured", grads="measured"):
    """model_state_bytes with one mistake switched on (defaults are right)."""

    def candidate(model, opt):
        size = (
            (lambda t: t.numel())
            if unit == "elements"
            else (lambda t: 4 * t.numel())
            if unit == "float32"
            else (lambda t: t.numel() * t.element_size())
        )
        weights = sum(size(p) for p in model.parameters())
        if grads == "assume":
            grad = weights
        else:
            grad = sum(size(p.grad) for p in model.parameters() if p.grad is not None)
        if optimizer == "forgotten":
            state = 0
        elif optimizer == "two_copies":
            state = 2 * weights
        else:
            state = sum(
                size(v)
                for s in opt.state.values()
                for v in s.values()
                if isinstance(v, torch.Tensor)
            )
        return {"weights": weights, "grads": grad, "optimizer_state": state}

    return candidate


def accumulation_variant(
    *,
    divide="group",
    zero_every_micro=False,
    step_every_micro=False,
    last_group=True,
    zero_grad=True,
):
    """train_with_accumulation with one mistake switched on (defaults are right).

    divide: "group" (the real size of the micro-batch's group),
    "accum_steps" (the last, shorter group too) or "nothing".
    """

    def candidate(model, loader, optimizer, criterion, device, accum_steps):
        model.train()
        optimizer.zero_grad()
        n, pending = len(loader), 0
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            if zero_every_micro:
                optimizer.zero_grad()
            start = i - i % accum_steps
            group = {
                "group": min(accum_steps, n - start),
                "accum_steps": accum_steps,
                "nothing": 1,
            }[divide]
            (criterion(model(x), y) / group).backward()
            pending += 1
            if step_every_micro or pending == accum_steps:
                optimizer.step()
                if zero_grad:
                    optimizer.zero_grad()
                pending = 0 if pending == accum_steps else pending
        if pending and last_group and not step_every_micro:
            optimizer.step()
            optimizer.zero_grad()

    return candidate


def largest_variant(*, catch="oom", result="last_fit", limit="inclusive", none_if_nothing=False):
    """largest_batch with one mistake switched on (defaults are right)."""

    def candidate(try_batch, limit_):
        from course_lib.memory import OUT_OF_MEMORY, MemoryBudgetExceeded, OutOfMemoryError

        errors = {
            "oom": OUT_OF_MEMORY,
            "all": Exception,
            "runtime": RuntimeError,
            "budget_only": MemoryBudgetExceeded,
            "cuda_only": OutOfMemoryError,
        }[catch]
        below = {
            "inclusive": lambda n: n <= limit_,
            "strict": lambda n: n < limit_,
            "ignored": lambda n: True,
        }[limit]
        best, n = (None if none_if_nothing else 0), 1
        while below(n):
            try:
                try_batch(n)
            except errors:
                return n if result == "first_fail" else best
            best = n
            n *= 2
        return best

    return candidate


KEY = {
    "model_state_bytes": AnswerKey(
        solution=model_state_bytes,
        hidden_tests=[
            Test("SGD with momentum", State("sgd_momentum"), hidden=True),
            Test("plain SGD keeps no state", State("sgd"), hidden=True),
        ],
        wrong_answers=[
            WrongAnswer(
                "counts elements, not bytes",
                state_bytes_variant(unit="elements"),
                "elements, not bytes",
            ),
            WrongAnswer(
                "forgets the optimizer state",
                state_bytes_variant(optimizer="forgotten"),
                "optimizer_state is not right",
            ),
            WrongAnswer(
                "estimates Adam as 2 x weights instead of measuring",
                state_bytes_variant(optimizer="two_copies"),
                "estimated 2 x weights",
            ),
            WrongAnswer(
                "assumes a gradient for every weight",
                state_bytes_variant(grads="assume"),
                "no gradients yet",
            ),
            WrongAnswer(
                "assumes 4 bytes per element (ignores the dtype)",
                state_bytes_variant(unit="float32"),
                "4 bytes per element",
            ),
        ],
    ),
    "train_with_accumulation": AnswerKey(
        solution=train_with_accumulation,
        hidden_tests=[
            Test(
                "same weights as big-batch training, accum_steps=3",
                EqualsBigBatch(9, 3),
                hidden=True,
            ),
            Test("accum_steps=1 is ordinary training", EqualsBigBatch(4, 1), hidden=True),
            Test("a shorter last group, accum_steps=2", StepPattern(5, 2), hidden=True),
            Test(
                "a last group of two micro-batches weighted by its real size",
                EqualsBigBatch(10, 4),
                hidden=True,
            ),
            Test(
                "works when `device` is given as a string",
                MovesData("accumulate", as_string=True, where=" (device given as a string)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            WrongAnswer(
                "divides the last, shorter group by accum_steps (unweighted leftover)",
                accumulation_variant(divide="accum_steps"),
                "the last, shorter group does not",
            ),
            WrongAnswer(
                "forgets to divide the loss",
                accumulation_variant(divide="nothing"),
                "SUM of its micro-batch gradients",
            ),
            WrongAnswer(
                "steps after every micro-batch",
                accumulation_variant(step_every_micro=True),
                "after every micro-batch",
            ),
            WrongAnswer(
                "zero_grad before every micro-batch",
                accumulation_variant(zero_every_micro=True),
                "cleared inside a group",
            ),
            WrongAnswer(
                "drops the last, shorter group",
                accumulation_variant(last_group=False),
                "never got its step",
            ),
            WrongAnswer(
                "never clears the gradients after a step",
                accumulation_variant(zero_grad=False),
                "leaked into the next one",
            ),
        ],
    ),
    "largest_batch": AnswerKey(
        solution=largest_batch,
        hidden_tests=[
            Test("on the course's memory budget with a real model", RealBudget(), hidden=True),
            Test("another card: fits 300 of at most 4096", Largest(300, 4096), hidden=True),
            Test(
                "a limit that is a power of two",
                Largest(10**6, 64, what=" (limit 64)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            WrongAnswer(
                "returns the first size that failed",
                largest_variant(result="first_fail"),
                "first size that did NOT fit",
            ),
            WrongAnswer(
                "except Exception: hides a shape bug", largest_variant(catch="all"), "was swallowed"
            ),
            WrongAnswer(
                "except RuntimeError: hides a shape bug",
                largest_variant(catch="runtime"),
                "was swallowed",
            ),
            WrongAnswer(
                "catches only the course's budget error",
                largest_variant(catch="budget_only"),
                "let OutOfMemoryError escape",
            ),
            WrongAnswer(
                "catches only torch.OutOfMemoryError",
                largest_variant(catch="cuda_only"),
                "let MemoryBudgetExceeded escape",
            ),
            WrongAnswer(
                "stops below the limit (n < limit)",
                largest_variant(limit="strict"),
                "never tried the limit itself",
            ),
            WrongAnswer("ignores the limit", largest_variant(limit="ignored"), "above the limit"),
            WrongAnswer(
                "returns None when nothing fits", largest_variant(none_if_nothing=True), "return 0"
            ),
        ],
    ),
    "seed_question": AnswerKey(answer=["a", "b", "c", "e"]),
    "state_dominates": AnswerKey(answer="a"),
    "empty_cache": AnswerKey(answer="c"),
    "oom_message": AnswerKey(answer="d"),
    "accumulation_conditions": AnswerKey(answer="b"),
    "adam_bytes": AnswerKey(answer=8008000),
}
