"""Every figure a GPU run records is shown by a cell, measures that cell's workload, and its label
names the workload (issue 38, item 6's last bullet).

The chapters' functions are spied on: the cell's own code and the figure's function each call the
chapter function, the spy records the arguments (defaults applied) and stops the call, and the two
must agree, up to timing-only arguments (repeats, min_run_time). Nothing runs on a GPU.
"""

import contextlib
import inspect

import pytest
import torch
from torch import nn

from course_lib import ch05_speedups as ch05
from course_lib import ch06_out_of_memory as ch06
from course_lib import ch07_dp_vs_ddp as ch07
from course_lib import data, device, hosted, memory, notebooks, profiling, training
from support import benchmark

gpu_figures = benchmark("gpu_figures")
CUDA = torch.device("cuda")
TIMING_ONLY = {"repeats", "min_run_time"}  # how long a figure measures, not what

# figure key -> (chapter module, the function the cell and the figure both call, notebook, cell)
SPIED = {
    "ch05.data_wait": (ch05, "starving_experiment", "05", "c13"),
    "ch05.amp": (ch05, "amp_speed", "05", "c47"),
    "ch05.benchmark": (ch05, "benchmark_measurements", "05", "c09e"),
    "ch05.profiler_cuda": (ch05, "profile_steps", "05", "c15p2"),
    "ch05.item_sync": (ch05, "item_loops", "05", "c52s2"),
    "ch05.compile": (ch05, "compile_timings", "05", "c51"),
    "ch05.nonblocking_d2h": (ch05, "readback_race", "05", "c52s6"),
    "ch05.sync_debug": (ch05, "hidden_syncs", "05", "c52s8"),
    "ch06.estimate_vs_peak": (ch06, "accounting_and_peak", "06", "c10"),
    "ch06.real_oom": (ch06, "gpu_oom_demo", "06", "c19"),
    "ch06.empty_cache": (ch06, "empty_cache_rows", "06", "c33"),
    "ch06.amp_memory": (ch06, "amp_peak", "06", "c42b"),
    "ch06.memory_snapshot": (ch06, "snapshot_oom", "06", "c19i"),
    "ch06.fragmentation": (ch06, "fragmentation_demo", "06", "c19k"),
    "ch07.data_parallel": (ch07, "dataparallel_phases", "07", "c05"),
}
# figures measured by the script's own lines: the sizes (or the difference) their label must name
INLINE = {
    "ch01.device_memory": ("01", "c27", ("1024 x 1024",)),
    "ch01.create_on_device": ("01", "c34", ("4096 x 4096", "the cell: mean of 50")),
    "ch05.sync_timing": ("05", "c03", ("4096 x 4096", "the cell: once")),
    "ch05.pinned_copy": ("05", "c23", ("64 MiB",)),
    "ch05.nvidia_smi": ("05", "c16", ("during a training loop", "the cell: whenever it runs")),
}


class Called(Exception):
    """Raised by the spy: the chapter function was reached, with these arguments."""


def normal(value):
    """An argument as far as the workload goes: devices by type, tensors and models by shape."""
    if isinstance(value, torch.device):
        return value.type
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype)
    if isinstance(value, nn.Module):
        return (type(value).__name__, [tuple(p.shape) for p in value.parameters()])
    if isinstance(value, torch.utils.data.Dataset):
        return (type(value).__name__, len(value))
    if isinstance(value, (tuple, list)):
        return tuple(map(normal, value))
    return value


def spy(monkeypatch, module, name) -> None:
    """Replace module.name by a function that raises Called with its bound arguments."""
    signature = inspect.signature(getattr(module, name))

    def called(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        raise Called({k: normal(v) for k, v in bound.arguments.items() if k not in TIMING_ONLY})

    monkeypatch.setattr(module, name, called)


def cell_source(chapter: str, cell_id: str) -> str:
    """The code of an English notebook's cell."""
    return notebooks.cell(chapter, cell_id)


def fake_gpu_machine(monkeypatch) -> None:
    """torch.cuda's queries answer as on a machine with 2 GPUs; the cells' GPU notes are quiet."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_per_process_memory_fraction", lambda d=None: 1.0)
    monkeypatch.setattr(hosted, "gpu_note", lambda topic: None)  # tested in test_hosted_gpu_notes


def cell_call(chapter, cell_id, module) -> dict:
    """Run the cell as on a CUDA machine until it reaches the spied function; its arguments."""
    train_set, _ = data.digits_split(test_fraction=0.2, seed=0)
    names = dict(
        ch=module,
        device=CUDA,
        train_set=train_set,
        augmented=ch05.AugmentedDigits(train_set),
        torch=torch,
        nn=nn,
        data=data,
        memory=memory,
        profiling=profiling,
        training=training,
        seed_everything=lambda *a: None,
        gpu_only=lambda *a, **k: True,
        pick_device=lambda: CUDA,
        display=print,
        expect_error=lambda *a, **k: contextlib.nullcontext(),
    )
    # chapter 05's compile cell switches the measurement off by default: the learner turns it on
    source = cell_source(chapter, cell_id).replace("RUN_COMPILE = False", "RUN_COMPILE = True")
    with pytest.raises(Called) as called:
        exec(compile(source, f"{chapter}:{cell_id}", "exec"), names)
    return called.value.args[0]


def figure_call(key, module) -> dict:
    """Run the figure's function as the GPU check would, until it reaches the spied function."""
    with pytest.raises(Called) as called:
        gpu_figures.FIGURES[key](CUDA)
    return called.value.args[0]


@pytest.mark.parametrize("key", sorted(SPIED))
def test_each_figure_measures_its_cells_workload(monkeypatch, key):
    """The figure calls the chapter function with the same arguments as the cell beside which it
    is shown (defaults applied; on a machine with 2 GPUs for chapter 07's)."""
    module, name, chapter, cell_id = SPIED[key]
    monkeypatch.setattr(gpu_figures, "S", dict(gpu_figures.S))  # the full sizes
    fake_gpu_machine(monkeypatch)
    spy(monkeypatch, module, name)
    assert figure_call(key, module) == cell_call(chapter, cell_id, module)


@pytest.mark.parametrize("key", sorted(SPIED))
def test_each_label_names_the_workload(key):
    """Every number the cell's call fixes (sizes, steps, batch) is in the figure's label."""
    module, name, chapter, cell_id = SPIED[key]
    with pytest.MonkeyPatch.context() as mp:
        fake_gpu_machine(mp)
        spy(mp, module, name)
        arguments = cell_call(chapter, cell_id, module)
    label = device.FIGURE_KEYS[key]
    numbers = [v for v in arguments.values() if isinstance(v, int) and not isinstance(v, bool)]
    sizes = [v for v in arguments.values() if isinstance(v, tuple)]
    numbers += [n for v in sizes if all(isinstance(n, int) for n in v) for n in v]
    for number in (n for n in numbers if n > 1):
        spelled = {str(number), f"{number / 2**30:g} GiB", f"{number / 2**20:g} MiB"}
        assert any(s in label for s in spelled), (key, number, label)


@pytest.mark.parametrize("key", sorted(INLINE))
def test_inline_figures_name_their_sizes_and_differences(key):
    """A figure the script measures with its own lines names its sizes and how it differs."""
    chapter, cell_id, named = INLINE[key]
    assert f'"{key}"' in cell_source(chapter, cell_id) or key == "ch05.nvidia_smi"
    for words in named:
        assert words in device.FIGURE_KEYS[key], (key, words)


def test_every_figure_is_listed_here():
    assert set(SPIED) | set(INLINE) == set(device.FIGURE_KEYS)


def shown_by(key: str, notebook) -> bool:
    """Does a code cell of the notebook name `key`, or call a chapter function that does?"""
    code = "\n".join(notebooks.code(notebook))
    if f'"{key}"' in code:
        return True
    module = {"05": ch05, "06": ch06, "07": ch07}.get(key[2:4])
    return module is not None and any(
        f'"{key}"' in inspect.getsource(fn) and f"ch.{fn.__name__}(" in code
        for fn in vars(module).values()
        if inspect.isfunction(fn) and fn.__module__ == module.__name__
    )


@pytest.mark.parametrize("key", sorted(device.FIGURE_KEYS))
def test_every_recorded_figure_is_shown_by_a_cell(key):
    """In both editions (the Chinese code cells equal the English ones)."""
    english = notebooks.path_of(key[2:4])
    for notebook in (english, english.parent / "zh" / english.name):
        assert shown_by(key, notebook), f"no cell of {notebook.name} shows {key}"
