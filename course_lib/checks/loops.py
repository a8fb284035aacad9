"""Chapter 03's checks: train_one_epoch and evaluate on the probed rig (rig.py).

Each check builds the rig it needs so that one mistake changes one observable value:
BatchNorm's running statistics (first layer, fed the raw inputs) move only in training mode
and once per batch; without dropout the weights after an epoch depend only on the order of
zero_grad, backward and step; with a learning rate of 0 every batch's loss is known in advance.
The judge recomputes those values from the same seed and data with the course's own loops;
what the probes recorded only chooses the words of the feedback.
"""

import torch
from torch import nn

from .. import training
from ..exercises.spec import Fail
from ..exercises.wire import TensorValue, roundtrip
from .base import Check, check, close, number, same_values, shown, tensor_fail, type_name
from .rig import RIG_CALLS, checker_threads, make_rig


def averaging_fail(what: str, got: float, values: list, sizes: list, where: str) -> Fail:
    """Name the averaging mistake behind a wrong mean, when it is a known one."""
    want = sum(v * n for v, n in zip(values, sizes)) / sum(sizes)
    known = [
        (
            sum(v * n for v, n in zip(values, sizes)),
            "a sum over the samples, not the mean",
            "Divide the total by the number of samples.",
        ),
        (
            sum(values),
            "a sum of the batch means, not the mean",
            "Weight each batch's mean by its size, then divide by the number of samples.",
        ),
        (
            values[-1],
            "the last batch's value only",
            "Accumulate over all batches, not just the last one.",
        ),
        (
            sum(values) / len(values),
            "a mean over batches, not over samples",
            (
                "The last batch is smaller: weight each batch by its batch size (x.size(0)), then "
                "divide by the number of samples."
            ),
        ),
    ]
    for value, problem, hint in known:
        if close(got, value):
            return Fail(
                f"The {what} you returned is {problem}{where}.",
                expected=f"{want:.6f}",
                got=f"{got:.6f}",
                hint=hint,
            )
    return Fail(
        f"The {what} is not the mean over all samples{where}.",
        expected=f"{want:.6f}",
        got=f"{got:.6f}",
        hint="Keep two running numbers over the batches, the sum of (batch value x batch size) and "
        "the number of samples; divide once, after the loop.",
    )


# ----------------------------------------------------------- trusted loops (the judge's references)
def course_loop(batches=None, zero_grad=True, passes=1):
    """The course's training loop over the first `batches` batches, `passes` forwards per batch."""

    def run(model, loader, device, optimizer, criterion):
        model.train()
        for i, (x, y) in enumerate(loader):
            if i == batches:
                break
            x, y = x.to(device), y.to(device)
            for _ in range(passes):
                if zero_grad:
                    optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()

    return run


def _stats_after_each_batch(mode: str = "eval", passes: int = 1) -> dict:
    """BatchNorm's statistics on a fresh norm rig
    before any batch and after each (training mode)."""
    rig = make_rig(mode=mode, norm=True)
    runs = [course_loop(k, passes=passes) for k in range(1, len(rig.loader) + 1)]
    after = []
    for loop in runs:
        again = make_rig(mode=mode, norm=True)
        again.train(loop)
        after.append(again.statistics())
    return roundtrip({"initial": rig.statistics(), "after": after})


def _weights_after(loop, **rig_options) -> list:
    rig = make_rig(**rig_options)
    rig.train(loop)
    return rig.parameters()


def _batch_values(n: int, batch_size: int, mode: str) -> dict:
    """Each batch's mean loss, hits and size on a rig whose weights never change (the judge's)."""
    rig = make_rig(n=n, batch_size=batch_size, mode=mode, dropout=0.0, lr=0.0)
    values, correct, sizes = [], [], []
    with torch.no_grad(), checker_threads():
        rig.model.train(mode == "train")
        for x, y in rig.loader:
            logits = rig.model(x)
            values.append(nn.functional.cross_entropy(logits, y).item())
            correct.append((logits.argmax(dim=1) == y).sum().item())
            sizes.append(len(y))
    return {"values": values, "correct": correct, "sizes": sizes}


def _batches_seen(rig) -> int:
    return len([c for c in rig.trace.losses if c.value is not None])


def _prefix(ref: dict, seen_batches, strict: bool) -> int:
    """How many batches the mean runs over: all
    (strict), or those the learner's loop went through."""
    total = len(ref["values"])
    if strict or not isinstance(seen_batches, int) or isinstance(seen_batches, bool):
        return total
    return max(1, min(total, seen_batches))


# ---------------------------------------------------------------- train_one_epoch
EVAL_MODE_HINT = (
    "evaluate() switches dropout and batch norm to eval mode; without model.train() "
    "the next epoch trains with dropout silently off."
)


@check
class TrainMode(Check):
    """From eval mode (as after evaluate()), the loop trains in training mode: BatchNorm's running
    statistics must move as they do in training mode, batch after batch."""

    def run(self, candidate):
        rig = make_rig(mode="eval", norm=True)
        rig.train(candidate)
        return {"stats": rig.statistics(), "modes": [f.training for f in rig.trace.forwards][:200]}

    def reference(self, solution):
        return _stats_after_each_batch()

    def judge(self, seen, ref):
        stats, modes = seen["stats"], seen["modes"]
        if any(same_values(stats, after) for after in ref["after"]):
            return
        if not modes and same_values(stats, ref["initial"]):
            raise Fail("Your function never called the model.")
        got = (
            f"{modes.count(False)} of {len(modes)} forward passes in eval mode"
            if modes and not all(modes)
            else (
                "no forward pass in training mode: BatchNorm's running statistics did not move as "
                "in training"
            )
        )
        raise Fail(
            (
                "The model ran in eval mode during training: call model.train() at the start of "
                "the epoch."
            ),
            expected="model.training == True in every forward pass",
            got=got,
            hint=EVAL_MODE_HINT,
        )


def _first(flags: list, wanted) -> int:
    return next((i for i, f in enumerate(flags) if f == wanted), 0)


@check
class GradientOrder(Check):
    """zero_grad, forward, backward, step on every batch: judged on the weights after the epoch
    (no dropout, so they depend on nothing else), against the course's loop from the same start."""

    def run(self, candidate):
        rig = make_rig(dropout=0.0)
        rig.train(candidate)
        trace = rig.trace
        return {
            "params": rig.parameters(),
            "steps": [[s["backwards"], s["grad"]] for s in trace.steps[:100]],
            "clean": [bool(b["clean"]) for b in trace.backwards[:100]],
        }

    def reference(self, solution):
        total = len(make_rig().loader)
        after = lambda **kw: [
            _weights_after(course_loop(k, **kw), dropout=0.0) for k in range(1, total + 1)
        ]
        return roundtrip(
            {
                "correct": after(),
                "accumulated": after(zero_grad=False),
                "initial": make_rig(dropout=0.0).parameters(),
            }
        )

    def judge(self, seen, ref):
        params, steps, clean = seen["params"], seen["steps"], seen["clean"]
        if any(same_values(params, w) for w in ref["correct"]):
            return
        dirty = [i for i, c in enumerate(clean) if not c]
        if any(same_values(params, w) for w in ref["accumulated"]):
            raise Fail(
                (
                    f"Gradients accumulate: at batch {(dirty or [1])[0] + 1}, backward() added "
                    "this batch's gradients to the previous batch's."
                ),
                expected="clean gradients before every backward()",
                got=f"stale gradients at {len(dirty)} of {len(clean)} backward() calls"
                if dirty
                else "the weights of a loop that never clears the gradients",
                hint="Call optimizer.zero_grad() once per batch, before loss.backward().",
            )
        unchanged = same_values(params, ref["initial"])
        if not steps and unchanged:
            raise Fail("optimizer.step() was never called: the weights never change.")
        if not clean and unchanged:
            raise Fail("loss.backward() was never called: there are no gradients to step with.")
        early = [i for i, (backwards, _) in enumerate(steps) if backwards < i + 1]
        if early:
            raise Fail(
                (
                    "optimizer.step() came before loss.backward(): it updated the weights with "
                    "gradients that were not computed yet."
                ),
                expected="zero_grad, forward, backward, step",
                got=f"step() {len(early)} time(s) before that batch's backward()",
                hint=(
                    "loss.backward() computes the gradients; optimizer.step() uses them. In that "
                    "order."
                ),
            )
        wiped = [i for i, (_, grad) in enumerate(steps) if grad != "set"]
        if wiped or unchanged:
            raise Fail(
                (
                    "step() found no gradients: zero_grad() ran between backward() and step() and "
                    "wiped this batch's gradients."
                ),
                expected="zero_grad, forward, backward, step",
                got=f"empty gradients at {len(wiped)} of {len(steps)} steps"
                if wiped
                else "the weights never changed",
                hint="Move zero_grad() to the start of the loop body (or right after step()).",
            )
        if dirty:
            raise Fail(
                (
                    f"Gradients accumulate: at batch {dirty[0] + 1}, backward() added this "
                    "batch's gradients to the previous batch's."
                ),
                expected="clean gradients before every backward()",
                got=f"stale gradients at {len(dirty)} of {len(clean)} backward() calls",
                hint="Call optimizer.zero_grad() once per batch, before loss.backward().",
            )
        raise Fail(
            (
                "After one epoch your weights are not those of one zero_grad, forward, backward "
                "and step per batch."
            ),
            hint="One zero_grad, forward, backward and step per batch, nothing more.",
        )


@check
class ReturnsFloat(Check):
    """train_one_epoch returns a Python float (its type, as it arrived)."""

    def run(self, candidate):
        return make_rig().train(candidate)

    def judge(self, seen, ref):
        if isinstance(seen, TensorValue):
            raise tensor_fail(seen, "the loss")
        if not isinstance(seen, float):
            raise Fail(
                "Return the epoch's mean loss as a Python float.",
                expected="float",
                got=type_name(seen),
            )


@check
class MeanLoss(Check):
    """train_one_epoch returns the mean loss over n samples in batches of batch_size. The rig's
    learning rate is 0 and it has no dropout, so the judge knows every batch's loss in advance;
    `strict`: over every batch (else over the batches the loop went through: another test's job)."""

    n: int
    batch_size: int
    where: str = ""
    strict: bool = False

    def run(self, candidate):
        rig = make_rig(n=self.n, batch_size=self.batch_size, dropout=0.0, lr=0.0)
        result = rig.train(candidate)
        return {"result": result, "batches": _batches_seen(rig)}

    def reference(self, solution):
        return _batch_values(self.n, self.batch_size, "train")

    def judge(self, seen, ref):
        if not seen["batches"]:
            raise Fail(f"Your function never called criterion(logits, y){self.where}.")
        k = _prefix(ref, seen["batches"], self.strict)
        values, sizes = ref["values"][:k], ref["sizes"][:k]
        got = number(seen["result"])
        if got is None:
            raise Fail(f"Return the mean loss as a number{self.where}.", expected="a float")
        if not close(got, sum(v * s for v, s in zip(values, sizes)) / sum(sizes)):
            raise averaging_fail("loss", got, values, sizes, self.where)


@check
class EveryBatch(Check):
    """The loop goes through every batch once. Training: BatchNorm's running statistics must be
    those after every batch, once (the judge's); evaluation: the forwards the probe counted."""

    call: str = "train"

    def run(self, candidate):
        rig = make_rig(norm=self.call == "train")
        RIG_CALLS[self.call](rig, candidate)
        seen = {"forwards": len(rig.trace.forwards)}
        if self.call == "train":
            seen["stats"] = rig.statistics()
        return seen

    def reference(self, solution):
        ref = _stats_after_each_batch(mode="train") if self.call == "train" else {}
        if self.call == "train":
            ref["twice"] = _stats_after_each_batch(mode="train", passes=2)["after"][-1]
        ref["total"] = len(make_rig().loader)
        return ref

    def judge(self, seen, ref):
        total, forwards = ref["total"], seen["forwards"]
        if self.call == "train":
            stats = seen["stats"]
            if same_values(stats, ref["after"][-1]):
                return
            stopped = next(
                (k + 1 for k, after in enumerate(ref["after"][:-1]) if same_values(stats, after)),
                None,
            )
            if stopped is not None:
                forwards = min(forwards, stopped) if forwards else stopped
            elif same_values(stats, ref["twice"]):
                forwards = max(forwards, 2 * total)
            elif forwards == total:
                raise Fail(
                    f"The model did not see each of the {total} batches once in training mode.",
                    expected=f"{total} batches",
                    hint="One forward per batch, in training mode.",
                )
        if forwards < total:
            raise Fail(
                f"The loop stopped after {forwards} of {total} batches.",
                expected=f"{total} batches",
                got=f"{forwards}",
                hint="No break or return inside the loop: an epoch is one full pass "
                "over the loader.",
            )
        if forwards > total:
            raise Fail(
                f"The model ran {forwards} times for {total} batches.",
                expected="one forward per batch",
                got=f"{forwards} forwards",
            )


@check
class MatchesReference(Check):
    """One epoch from the same start leaves the same weights as the course's loop (training.py)."""

    def run(self, candidate):
        rig = make_rig()
        rig.train(candidate)
        return rig.parameters()

    def reference(self, solution):
        return roundtrip(_weights_after(lambda *args: training.train_epoch(*args)))

    def judge(self, seen, ref):
        if not same_values(seen, ref, atol=1e-6):
            raise Fail(
                (
                    "After one epoch from the same start, your weights differ from the reference "
                    "run's."
                ),
                hint="One zero_grad, forward, backward and step per batch, nothing more.",
            )


# ---------------------------------------------------------------- evaluate
@check
class EvalMode(Check):
    """From training mode (as after train_one_epoch), evaluate runs in eval mode: BatchNorm's
    running statistics must not move."""

    def run(self, candidate):
        rig = make_rig(mode="train", norm=True)
        rig.evaluate(candidate)
        return {"stats": rig.statistics(), "modes": [f.training for f in rig.trace.forwards][:200]}

    def reference(self, solution):
        return roundtrip(make_rig(mode="train", norm=True).statistics())

    def judge(self, seen, ref):
        stats, modes = seen["stats"], seen["modes"]
        unchanged = same_values(stats, ref)
        if not modes and unchanged:
            raise Fail("Your function never called the model.")
        if unchanged and not any(modes):
            return
        got = (
            f"{sum(modes)} of {len(modes)} forward passes in training mode"
            if any(modes)
            else "BatchNorm's running statistics moved, as only in training mode"
        )
        raise Fail(
            "The model ran in training mode during evaluation (dropout still dropping): "
            "call model.eval() first.",
            expected="model.training == False in every forward pass",
            got=got,
            hint=(
                "model.eval() switches dropout off and makes batch norm use its running statistics."
            ),
        )


@check
class NoGraph(Check):
    """evaluate builds no autograd graph: the probe notes whether autograd recorded at each forward
    (in-process evidence only; see docs/grading-threat-model.md)."""

    def run(self, candidate):
        rig = make_rig(mode="eval")
        rig.evaluate(candidate)
        return [f.grad_enabled for f in rig.trace.forwards][:200]

    def judge(self, seen, ref):
        recording = [bool(r) for r in seen]
        if any(recording):
            raise Fail(
                "Autograd recorded a graph during evaluation: wrap the loop in torch.no_grad() "
                "(or torch.inference_mode()).",
                expected="torch.is_grad_enabled() == False in the forward",
                got=f"a graph built in {sum(recording)} of {len(recording)} forward passes",
                hint=(
                    "model.eval() does NOT turn off gradients; it only changes dropout and batch "
                    "norm. Without no_grad every activation is kept for a backward that never "
                    "comes."
                ),
            )


@check
class EvalReturns(Check):
    """evaluate returns two Python floats (their types, as they arrived)."""

    def run(self, candidate):
        return make_rig(mode="eval").evaluate(candidate)

    def judge(self, seen, ref):
        if not isinstance(seen, (tuple, list)) or len(seen) != 2:
            raise Fail(
                "Return two numbers: (mean_loss, accuracy).",
                expected="a tuple of 2 floats",
                got=shown(seen),
            )
        for name, value in zip(("the loss", "the accuracy"), seen):
            if isinstance(value, TensorValue):
                raise tensor_fail(value, name)
            if not isinstance(value, float):
                raise Fail(
                    f"Return {name} as a Python float.", expected="float", got=type_name(value)
                )


@check
class EvalValues(Check):
    """evaluate returns the loss and accuracy over n samples in batches of batch_size; the judge
    knows each batch's loss and hits (eval mode, weights that evaluate must not change)."""

    n: int
    batch_size: int
    where: str = ""
    strict: bool = False

    def run(self, candidate):
        rig = make_rig(n=self.n, batch_size=self.batch_size, mode="eval")
        result = rig.evaluate(candidate)
        return {"result": result, "batches": _batches_seen(rig)}

    def reference(self, solution):
        return _batch_values(self.n, self.batch_size, "eval")

    def judge(self, seen, ref):
        where, result = self.where, seen["result"]
        if not seen["batches"]:
            raise Fail(f"Your function never called criterion(logits, y){where}.")
        k = _prefix(ref, seen["batches"], self.strict)
        values, correct, sizes = ref["values"][:k], ref["correct"][:k], ref["sizes"][:k]
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise Fail(f"Return (mean_loss, accuracy){where}.", got=shown(result))
        loss, accuracy = (number(v) for v in result)
        if loss is None or accuracy is None:
            raise Fail(f"Both values must be numbers{where}.", got=shown(result))
        if not close(loss, sum(v * s for v, s in zip(values, sizes)) / sum(sizes)):
            raise averaging_fail("loss", loss, values, sizes, where)
        want = sum(correct) / sum(sizes)
        if close(accuracy, 100 * want) and not close(want, 0):
            raise Fail(
                f"The accuracy is a percentage; return a fraction between 0 and 1{where}.",
                expected=f"{want:.4f}",
                got=f"{accuracy:.4f}",
                hint="Do not multiply by 100.",
            )
        if not close(accuracy, want):
            raise averaging_fail(
                "accuracy", accuracy, [c / s for c, s in zip(correct, sizes)], sizes, where
            )


@check
class LeavesWeightsAlone(Check):
    """evaluate changes no weight and leaves no gradient (the weights and gradients, by value)."""

    def run(self, candidate):
        rig = make_rig(mode="eval")
        rig.evaluate(candidate)
        return {"params": rig.parameters(), "grads": [p.grad for p in rig.model.parameters()]}

    def reference(self, solution):
        return roundtrip(make_rig(mode="eval").parameters())

    def judge(self, seen, ref):
        changed = not same_values(seen["params"], ref, atol=0, rtol=0)
        if changed or any(g is not None for g in seen["grads"]):
            raise Fail(
                "Evaluation changed the model or computed gradients; it must only measure.",
                hint="No backward(), no step() in evaluate.",
            )
