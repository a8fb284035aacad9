"""What a zygote does once, so that no graded process pays for it (grader).

Importing torch and the course, drawing a matplotlib figure, torch's first optimizer,
DataLoader and meta-tensor use, and (check zygote only) every reference solution run
through its own check, which also proves the answer key right.
"""
import importlib
import io
import os
import pkgutil

from ..exercises import get


def import_everything() -> None:
    """Every course_lib module except the key and the grader, and what notebooks use at once."""
    import course_lib
    os.environ.setdefault("MPLBACKEND", "Agg")
    for info in pkgutil.walk_packages(course_lib.__path__, "course_lib."):
        if not info.name.startswith(("course_lib.key", "course_lib.grading")):
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - a module that cannot load here is loaded by whoever needs it
                pass
    for name in ("ipywidgets", "IPython.display", "tqdm.auto", "inspect", "logging", "typing"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    _draw_once()


def _draw_once() -> None:
    """matplotlib with its fonts loaded (a child would otherwise rebuild the font cache: seconds)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0], label="warm-up")
    ax.set_title("warm-up")
    ax.legend()
    fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)


def torch_first_use() -> None:
    """What costs seconds the first time in a process: optimizers, DataLoader, meta tensors."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    for opt in (torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.Adam(model.parameters())):
        for x, y in DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    with torch.no_grad():
        model.to("meta").eval()(torch.randn(2, 4, device="meta"))
        try:  # the device-mismatch error every chapter teaches
            nn.Linear(4, 2)(torch.randn(2, 4, device="meta"))
        except RuntimeError:
            pass


def test_specs(exercise) -> list:
    """[(name, weight, hidden)] of a function exercise's tests; key tests count as hidden."""
    return [(t.name, t.weight, t.hidden or i >= len(exercise.tests))
            for i, t in enumerate(exercise.all_tests(include_hidden=True))]


def warm_checks(exercise_ids: list) -> tuple:
    """Run every reference solution once; returns ({id: test specs}, [problems of the key])."""
    specs, problems = {}, []
    for ex in (get(i) for i in exercise_ids):
        key = ex.key()
        if ex.kind == "function":
            specs[ex.id] = test_specs(ex)
            if key is None or key.solution is None:
                problems.append(f"{ex.id}: no answer key; only visible tests are graded")
                continue
            result = ex.check(key.solution, include_hidden=True, record=False)
        elif key is not None and key.answer is not None:
            result = ex.check(key.answer, record=False)
        else:
            continue
        if not result.correct:
            problems.append(f"{ex.id}: the reference answer fails its own check ({result.status})")
    return specs, problems
