"""Chapter 07's checks: shard_indices (against the real DistributedSampler) and average_gradients,
run in a real gloo group of processes on this machine. Each rank's gradients after the learner's
function travel back as numbers; the judge recomputes every rank's own gradient and the average.
"""

import math
import re

import torch
from torch import nn
from torch.utils.data import DistributedSampler

from .. import ddp_worker
from ..exercises.spec import Fail
from .base import Check, check


# ---------------------------------------------------------------- shard_indices
def sampler_indices(n_samples: int, rank: int, world_size: int) -> list:
    """What the real DistributedSampler(shuffle=False,
    drop_last=False) gives rank `rank` (chapter 07)."""
    return list(
        DistributedSampler(range(n_samples), num_replicas=world_size, rank=rank, shuffle=False)
    )


def _shard_fail(n, rank, world, got, want) -> Fail:
    where = f"n_samples={n}, world_size={world}, rank {rank}"
    per = math.ceil(n / world)
    padded = (list(range(n)) * world)[: per * world]  # 0..n-1, then repeated from the start
    if len(got) < len(want):
        return Fail(
            f"Rank {rank} got too few indices ({where}).",
            expected=want,
            got=got,
            hint=(
                "Every rank must get the same number of samples, ceil(n / world_size), or the "
                "ranks fall out of step (one waits forever in an all-reduce). Pad by repeating "
                "indices from the start."
            ),
        )
    if got == padded[rank * per : (rank + 1) * per]:
        return Fail(
            f"Those are contiguous blocks ({where}).",
            expected=want,
            got=got,
            hint="DistributedSampler deals the indices like cards: rank r gets r, r + world_size, "
            "r + 2 * world_size, ...",
        )
    return Fail(
        f"Wrong indices for {where}.",
        expected=want,
        got=got,
        hint=(
            "Pad the list 0..n-1 to ceil(n / world_size) * world_size by repeating from the "
            "start, then take every world_size-th index starting at rank."
        ),
    )


@check
class Shards(Check):
    """shard_indices gives every rank of every (n_samples, world_size) case its real indices."""

    cases: list

    def run(self, candidate):
        results = []
        for n, world in self.cases:
            for rank in range(world):
                got = candidate(n, rank, world)
                try:
                    results.append([n, rank, world, [int(i) for i in got]])
                except TypeError:
                    results.append([n, rank, world, {"not_ints": type(got).__name__}])
                    return results
        return results

    def judge(self, seen, ref):
        wanted = [(n, rank, world) for n, world in self.cases for rank in range(world)]
        for (n, rank, world), row in zip(wanted, seen):
            if list(row[:3]) != [n, rank, world]:
                raise Fail("The check's record of your answers is out of order.")
            got = row[3]
            if isinstance(got, dict):
                raise Fail("Return a list of ints.", expected="list[int]", got=got["not_ints"])
            want = sampler_indices(n, rank, world)
            if list(got) != want:
                raise _shard_fail(n, rank, world, list(got), want)
        if len(seen) < len(wanted):
            raise Fail("The check's record of your answers is incomplete.")


# ---------------------------------------------------------------- average_gradients
def tiny_problem(world_size: int, per_rank: int = 4, seed: int = 0, frozen: bool = False):
    """The check's small model and batch, the same in every process: (model, x, y) (chapter 07)."""
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    if frozen:
        model[0].requires_grad_(False)  # a frozen layer: its parameters get no .grad
    n = world_size * per_rank
    return model, torch.randn(n, 3, generator=gen), torch.randint(0, 2, (n,), generator=gen)


def gradients(model: nn.Module, x, y) -> list:
    """Each parameter's gradient of the mean cross-entropy
    on (x, y), None where frozen (chapter 07)."""
    model.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(model(x), y).backward()
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]


def _as_lists(grads) -> list:
    return [None if g is None else g.tolist() for g in grads]


class AverageTask:
    """One process of the check: its shard's gradients, then the learner's function, then .grad."""

    def __init__(self, candidate, frozen: bool = False):
        self.candidate, self.frozen = candidate, frozen

    def __call__(self, rank: int, world_size: int) -> dict:
        model, x, y = tiny_problem(world_size, frozen=self.frozen)
        gradients(model, x[rank::world_size], y[rank::world_size])  # this rank's backward
        returned = self.candidate(model)
        return {
            "after": _as_lists(p.grad for p in model.parameters()),
            "returned": type(returned).__name__,
        }

    def __getstate__(
        self,
    ):  # spawned processes (off Linux) get the function's source, not the function
        return {
            "source": ddp_worker.source_of(self.candidate),
            "name": self.candidate.__name__,
            "frozen": self.frozen,
        }

    def __setstate__(self, state):
        namespace = {"torch": torch, "nn": nn, "dist": torch.distributed}
        exec(state["source"], namespace)
        self.candidate, self.frozen = namespace[state["name"]], state["frozen"]


def _stub_shows(candidate) -> None:
    """Call the function once outside any group, on
    a layer without gradients: the stub raises here."""
    try:
        candidate(nn.Linear(1, 1))
    except NotImplementedError:
        raise
    except Exception:  # a real answer may need the process group, which does not exist here
        pass


def _short(error_text: str) -> str:
    """A gloo error without its C++ source location, port numbers and boilerplate advice; a rank
    that lost its peers says so in one stable phrase (which words gloo picks depends on who noticed
    first)."""
    if re.search(
        r"Connection (closed|reset) by peer|Read error|Broken pipe|connectFullMesh", error_text
    ):
        return f"{error_text.split(':')[0]}: the connection to another rank was lost"
    text = re.sub(r"(\[[0-9a-fA-F.:]+\]):\d+", r"\1", re.sub(r"\[/[^\]]*\] ", "", error_text))
    return text.split(" This is typically")[0].rstrip(". ")


def _errors_fail(errors: dict, world: int) -> Fail:
    """Feedback for ranks that raised: a collective
    that some rank skipped, or an error on every rank."""
    rank, text = next(iter(errors.items()))
    text = _short(text)
    if len(errors) < world:
        fine = min(set(range(world)) - set(errors))
        return Fail(
            f"Rank {rank} raised {text}, while rank {fine} finished without error.",
            hint=(
                "A collective such as `all_reduce` must be called by EVERY rank, the same number "
                "of times, in the same order. A rank that skips one leaves the others waiting for "
                "it (here they failed when it left; in a real run they wait until the timeout)."
            ),
        )
    return Fail(
        f"Every rank raised an error; rank {rank}: {text}",
        hint=(
            "Parameters of a frozen layer have `.grad` None: there is nothing to average for them."
        ),
    )


def _values_fail(own: list, results: list, world: int) -> Fail:
    """Feedback for ranks that finished: compare what .grad holds with the ranks' own gradients
    (`own`: the judge's, per rank)."""
    own = [[None if g is None else torch.tensor(g) for g in r] for r in own]
    after = [[None if g is None else torch.tensor(g) for g in r["after"]] for r in results]
    for p in range(len(own[0])):
        if own[0][p] is None:
            if any(a[p] is not None for a in after):
                return Fail(
                    (
                        f"Parameter {p} is frozen (`.grad` None) but has a gradient after your "
                        "function."
                    ),
                    hint="Leave parameters whose `.grad` is None alone.",
                )
            continue
        if any(a[p] is None for a in after):
            return Fail(
                f"After your function, parameter {p}'s `.grad` is None.",
                hint=(
                    "The average must end up in each parameter's `.grad`, where optimizer.step() "
                    "reads it."
                ),
            )
        mean = torch.stack([o[p] for o in own]).mean(dim=0)
        if all(torch.allclose(a[p], o[p], atol=1e-6) for a, o in zip(after, own)):
            returned = results[0]["returned"]
            extra = (
                f" Your function returned a {returned}, but" if returned != "NoneType" else " And"
            )
            return Fail(
                (
                    "After your function, every rank still holds its OWN gradient: nothing was "
                    f"averaged.{extra} the optimizer reads `p.grad`, nothing else."
                ),
                hint=(
                    "`dist.all_reduce(t)` changes `t` itself, in place, on every rank, and "
                    "returns nothing useful: give it the gradient tensor itself, not a copy or a "
                    "new result."
                ),
            )
        if any(not torch.allclose(a[p], after[0][p], atol=1e-6) for a in after):
            return Fail(
                (
                    f"The ranks ended with different values for parameter {p}'s gradient: their "
                    "replicas would drift apart at the next step."
                ),
                hint="Every rank must run the same all-reduce on the same parameters.",
            )
        if torch.allclose(after[0][p], mean * world, atol=1e-5):
            return Fail(
                (
                    f"Every rank holds the SUM of the {world} ranks' gradients, {world} times the "
                    "average."
                ),
                hint="`all_reduce` adds (its default op is SUM). DDP divides each gradient by the "
                "world size (`dist.get_world_size()`), so the sum becomes the mean.",
            )
        if not torch.allclose(after[0][p], mean, atol=1e-5):
            return Fail(
                f"Parameter {p}: not the average of the {world} ranks' gradients.",
                expected=[round(v, 4) for v in mean.flatten().tolist()[:4]],
                got=[round(v, 4) for v in after[0][p].flatten().tolist()[:4]],
                hint=(
                    "Divide by the number of ranks in the group, `dist.get_world_size()`, not by "
                    "a fixed number."
                ),
            )
    return None


@check
class Average(Check):
    """average_gradients in `world_size` processes of a real gloo group: every rank's .grad after it
    (numbers) against the ranks' own gradients and their average, which the judge computes."""

    warm = False  # a warm-up would start a process group in the zygote
    world_size: int
    frozen: bool = False

    def run(self, candidate):
        _stub_shows(candidate)
        try:
            results = ddp_worker.run_in_group(AverageTask(candidate, self.frozen), self.world_size)
        except TimeoutError:
            return {"timed_out": True}
        return {"timed_out": False, "results": [[status, value] for status, value in results]}

    def reference(self, solution):
        world = self.world_size
        own = []
        for rank in range(world):
            model, x, y = tiny_problem(world, frozen=self.frozen)
            own.append(_as_lists(gradients(model, x[rank::world], y[rank::world])))
        model, x, y = tiny_problem(world, frozen=self.frozen)
        return {"own": own, "full": [g.tolist() for g in gradients(model, x, y) if g is not None]}

    def judge(self, seen, ref):
        world = self.world_size
        if seen["timed_out"]:
            raise Fail(
                f"The {world} processes did not finish within the time limit.",
                hint="A rank waits inside a collective until every rank has called it: check that "
                "every rank makes the same calls (or look for an endless loop).",
            )
        results = seen["results"]
        if len(results) != world:
            raise Fail(f"{len(results)} of the {world} processes reported back.")
        errors = {r: value for r, (status, value) in enumerate(results) if status != "ok"}
        if errors:
            raise _errors_fail({r: str(v) for r, v in errors.items()}, world)
        fail = _values_fail(ref["own"], [value for _, value in results], world)
        if fail:
            raise fail
        after = [torch.tensor(g) for g in results[0][1]["after"] if g is not None]
        full = [torch.tensor(g) for g in ref["full"]]
        if len(after) != len(full) or not all(
            torch.allclose(a, f, atol=1e-5) for a, f in zip(after, full)
        ):
            raise Fail("The ranks agree, but not on the gradient of the whole batch.")
