"""Answer key for chapter 03 (teacher's copy only).

The wrong answers are built by two small loop builders, one flag per realistic mistake, so
each known-wrong variant differs from the reference in exactly one place.
"""

import torch

from course_lib.checks import loops
from course_lib.checks.rig import MovesData
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def train_one_epoch(model, loader, device, optimizer, criterion):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * x.size(0)
        count += x.size(0)
    return total / count


def evaluate(model, loader, device, criterion):
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total += criterion(logits, y).item() * x.size(0)
            correct += (logits.argmax(dim=1) == y).sum().item()
            count += x.size(0)
    return total / count, correct / count


def buggy_train(
    *,
    train=True,
    move_x="assign",
    move_y=True,
    zero_grad="before",
    step_first=False,
    result="mean",
    stop_after=None,
):
    """train_one_epoch with one mistake switched on (each flag's default is the right thing)."""

    def candidate(model, loader, device, optimizer, criterion):
        if train:
            model.train()
        batch_losses, sizes, graph_total = [], [], 0
        for i, (x, y) in enumerate(loader):
            if i == stop_after:
                break
            if move_x == "assign":
                x = x.to(device)
            elif move_x == "discard":
                x.to(device)
            if move_y:
                y = y.to(device)
            if zero_grad == "before":
                optimizer.zero_grad()
            loss = criterion(model(x), y)
            if step_first:
                optimizer.step()
            loss.backward()
            if zero_grad == "between":
                optimizer.zero_grad()
            if not step_first:
                optimizer.step()
            if result == "tensor":
                graph_total = graph_total + loss * len(y)
            batch_losses.append(loss.item())
            sizes.append(len(y))
        total = sum(v * n for v, n in zip(batch_losses, sizes))
        return {
            "mean": lambda: total / sum(sizes),
            "sum": lambda: total,
            "last": lambda: batch_losses[-1],
            "batch_mean": lambda: sum(batch_losses) / len(batch_losses),
            "tensor": lambda: graph_total / sum(sizes),
        }[result]()

    return candidate


def buggy_evaluate(
    *,
    eval_mode=True,
    no_grad=True,
    move_x=True,
    loss_mean="samples",
    accuracy="fraction",
    as_tensors=False,
):
    """evaluate with one mistake switched on (each flag's default is the right thing)."""

    def candidate(model, loader, device, criterion):
        if eval_mode:
            model.eval()
        losses, hits, sizes = [], [], []
        with torch.set_grad_enabled(not no_grad):
            for x, y in loader:
                x = x.to(device) if move_x else x
                y = y.to(device)
                logits = model(x)
                losses.append(criterion(logits, y))
                hits.append((logits.argmax(dim=1) == y).sum())
                sizes.append(len(y))
        n = sum(sizes)
        if as_tensors:
            return sum(v * s for v, s in zip(losses, sizes)) / n, sum(hits) / n
        losses, hits = [v.item() for v in losses], [h.item() for h in hits]
        loss = (
            sum(v * s for v, s in zip(losses, sizes)) / n
            if loss_mean == "samples"
            else sum(losses) / len(losses)
        )
        fraction = sum(hits) / n
        return loss, 100 * fraction if accuracy == "percent" else fraction

    return candidate


def wrong(label, feedback, **flags):
    return WrongAnswer(label, buggy_train(**flags), feedback)


def wrong_eval(label, feedback, **flags):
    return WrongAnswer(label, buggy_evaluate(**flags), feedback)


KEY = {
    "train_one_epoch": AnswerKey(
        solution=train_one_epoch,
        hidden_tests=[
            Test(
                "same weights as a reference run from the same start",
                loops.MatchesReference(),
                hidden=True,
            ),
            Test(
                "mean over samples on another loader",
                loops.MeanLoss(50, 7, " (50 samples in batches of 7)", strict=True),
                hidden=True,
            ),
            Test(
                "works when `device` is given as a string",
                MovesData("train", as_string=True, where=" (device given as a string)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            wrong("returns the sum", "a sum over the samples", result="sum"),
            wrong("forgets model.train()", "call model.train()", train=False),
            wrong("never moves the inputs", "The inputs x reached the model on cpu", move_x="none"),
            wrong("never moves the labels", "The labels y reached the loss on cpu", move_y=False),
            wrong(
                "x.to(device) without assignment",
                "Tensor.to returns a new tensor",
                move_x="discard",
            ),
            wrong("no zero_grad: gradients accumulate", "Gradients accumulate", zero_grad="never"),
            wrong(
                "zero_grad between backward and step",
                "wiped this batch's gradients",
                zero_grad="between",
            ),
            wrong("step before backward", "step() came before loss.backward()", step_first=True),
            wrong("returns a tensor that keeps the graph", "not a Python float", result="tensor"),
            wrong("returns the last batch's loss", "the last batch's value", result="last"),
            wrong("averages the batch means", "a mean over batches", result="batch_mean"),
            wrong("stops after the first batch", "stopped after 1 of 3 batches", stop_after=1),
        ],
    ),
    "evaluate": AnswerKey(
        solution=evaluate,
        hidden_tests=[
            Test(
                "leaves the weights alone and computes no gradients",
                loops.LeavesWeightsAlone(),
                hidden=True,
            ),
            Test(
                "loss and accuracy on another loader",
                loops.EvalValues(50, 7, " (50 samples in batches of 7)", strict=True),
                hidden=True,
            ),
            Test(
                "works when `device` is given as a string",
                MovesData("evaluate", as_string=True, where=" (device given as a string)"),
                hidden=True,
            ),
        ],
        wrong_answers=[
            wrong_eval("averages the batch means", "a mean over batches", loss_mean="batches"),
            wrong_eval("forgets model.eval()", "call model.eval()", eval_mode=False),
            wrong_eval("forgets torch.no_grad()", "torch.no_grad()", no_grad=False),
            wrong_eval(
                "forgets to move the inputs (article A's error 2)",
                "The inputs x reached the model",
                move_x=False,
            ),
            wrong_eval("accuracy in percent", "a fraction between 0 and 1", accuracy="percent"),
            wrong_eval("returns tensors", "not a Python float", as_tensors=True),
        ],
    ),
    "seed_dynamicnet": AnswerKey(answer="c"),
    "seed_branch": AnswerKey(answer="d"),
    "eval_vs_no_grad": AnswerKey(answer=["a", "c"]),
}
