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
NOTEBOOKS = notebooks.chapter_notebooks()


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


__all__ = ["ROOT", "NOTEBOOKS", "benchmark", "notebooks"]
