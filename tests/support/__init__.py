"""What the tests share, imported as ``from support
import ROOT, NOTEBOOKS`` (tests/ is on pytest's path).

The chapter notebooks are found and read by course_lib.notebooks, as the grader and the release
find them; `notebook_cells` reads an exercise's cells out of its notebook; `benchmark` loads a
script of benchmarks/ as a module without putting that folder on sys.path.
"""

import importlib.util
from pathlib import Path

from course_lib import notebooks

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = notebooks.chapter_notebooks()  # the English edition
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))  # the Chinese one
EDITIONS = NOTEBOOKS + ZH_NOTEBOOKS  # what holds of every notebook, whatever its language


# whether a DataLoader with pin_memory=True warns on a machine without an accelerator, in the torch
# releases run (benchmarks/torch_range.py): 2.6 ignores the flag without a word (chapters 03, 05)
PIN_MEMORY_WARNS = {(2, 6): False, (2, 13): True, (2, 15): True}


def pin_memory_warns(default=True) -> bool:
    """What this torch's DataLoader does there, for a release run; else `default`."""
    import torch

    release = tuple(int(n) for n in torch.__version__.split(".")[:2])
    return PIN_MEMORY_WARNS.get(release, default)


def benchmark(name: str):
    """benchmarks/<name>.py as a module (loaded once; the GPU check runs these as scripts)."""
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


__all__ = ["ROOT", "NOTEBOOKS", "ZH_NOTEBOOKS", "EDITIONS", "benchmark", "notebooks"]
