"""What the zygote does once, so that no graded process pays for it (zygote).

Importing torch and the public course, drawing a matplotlib figure, torch's first optimizer,
DataLoader and meta-tensor use, the visible tests' reference data, and each needed test's run
half once on a function that does nothing: the rigs, loaders and dispatch modes a check child
uses are warm, and no answer key, reference solution or submission was ever in this process.
"""

import importlib
import io
import os
import pkgutil
import warnings

# Left out: the key and the grader (never in a graded process before its job), and the Chinese
# edition's switch, whose import turns Chinese on for every process forked after it: each
# notebook imports it itself, or not.
LEFT_OUT = ("course_lib.key", "course_lib.grading", "course_lib.zh")
# What graded notebooks import beyond the course, once here instead of in each notebook process:
# widgets and display, progress bars, and what a DataLoader with workers loads (chapter 03 on).
NOTEBOOK_IMPORTS = (
    "ipywidgets",
    "IPython.display",
    "tqdm.auto",
    "multiprocessing.popen_fork",
    "multiprocessing.queues",
    "multiprocessing.synchronize",
)


def public_modules(package_path, prefix: str = "course_lib.") -> list:
    """Names of every course_lib module but the key's and the grader's, found without importing
    those packages (pkgutil.walk_packages would import each package to look inside it)."""
    names = []
    for info in pkgutil.iter_modules(package_path, prefix):
        if info.name.startswith(LEFT_OUT):
            continue
        names.append(info.name)
        if info.ispkg:
            names += public_modules(
                [os.path.join(package_path[0], info.name.rsplit(".", 1)[1])], info.name + "."
            )
    return names


def import_everything() -> None:
    """Every course_lib module except the key and the grader, and what notebooks use at once
    (then the zygote forks the judge, which needs no more: `draw_and_read` follows)."""
    import course_lib

    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in public_modules(course_lib.__path__):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that cannot load here is loaded by whoever needs it
            pass
    for name in (*NOTEBOOK_IMPORTS, "inspect", "logging", "typing"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def draw_and_read() -> None:
    """What only graded notebooks use: matplotlib drawn once, the digits table read once."""
    _draw_once()
    _read_data_once()


def _read_data_once() -> None:
    """The digits table (course_lib/assets), parsed once: notebooks from chapter 03 on read it."""
    from ..data import load_digits

    load_digits()


def _draw_once() -> None:
    """matplotlib with its fonts loaded (a child
    would otherwise rebuild the font cache: seconds)."""
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
        for x, y in DataLoader(
            TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4
        ):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    with torch.no_grad():
        model.to("meta").eval()(torch.randn(2, 4, device="meta"))
        try:  # the device-mismatch error every chapter teaches
            nn.Linear(4, 2)(torch.randn(2, 4, device="meta"))
        except RuntimeError:
            pass


def visible_references(exercise_ids: list) -> None:
    """The reference data of these exercises' visible tests, computed once (for notebook
    processes): a notebook's own `ch.<exercise>.check(...)` cells then find it ready (it is
    public: the student bundle computes the same). Then their chapters' FIRST_USES."""
    from ..exercises import get

    exercises = [get(i) for i in exercise_ids]
    for ex in exercises:
        for test in getattr(ex, "tests", []):
            try:
                test.check.reference_value(None)
            except Exception:  # noqa: BLE001 - computed again where needed
                continue
    for warm in chapter_first_uses({ex.chapter.module for ex in exercises}):
        try:
            warm()
        except Exception:  # noqa: BLE001 - a warm-up that fails costs only its speed-up
            continue


def _compiler_stack() -> None:
    """torch.compile's first call imports TorchDynamo and Inductor (seconds); compiles nothing."""
    import torch

    torch.compile(torch.nn.Linear(2, 2))


# (what a chapter module calls, the warm-up that pays its first use once, in the zygote, for every
# notebook process of that chapter); only where the chapter is graded.
FIRST_USES = (("torch.compile(", _compiler_stack),)


def chapter_first_uses(modules) -> list:
    """The FIRST_USES warm-ups that these chapter modules' code calls for."""
    import importlib.util

    texts = []
    for name in sorted(modules):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            with open(spec.origin, encoding="utf-8") as f:
                texts.append(f.read())
    return [warm for trigger, warm in FIRST_USES if any(trigger in text for text in texts)]


def _does_nothing(*args, **kwargs):
    return None


def warm_run_halves(specs: list) -> None:
    """Each [builder, inputs as a wire line] test's
    run half once, on a function that does nothing."""
    from ..checks.base import rebuild
    from ..exercises import wire
    from ..exercises.runner import observe, warm_up

    warm_up()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for builder, inputs in specs:
            try:
                check = rebuild(builder, wire.loads(inputs))
                if getattr(check, "warm", True):
                    observe(check, _does_nothing, 30)
            except Exception:  # noqa: BLE001 - a warm-up that fails costs only its speed-up
                continue
