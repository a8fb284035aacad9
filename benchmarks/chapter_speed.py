"""How long each chapter takes under nbval, against the floor (issue 20, item 2).

    .venv/bin/python benchmarks/chapter_speed.py [--repeat 2] [--cells 8] [05 07 ...]

The floor is a notebook that only imports torch, matplotlib and ipywidgets: what any chapter
pays before its first line of teaching (pytest and nbval start, a kernel starts, the imports).
Each notebook runs as `pytest --nbval-lax NOTEBOOK` in its own process, one after another, the
floor first, in `--repeat` rounds (the best time counts: the machine is shared; round by round,
the floor meets the same load as the chapters); the figure is
each chapter's time over the floor's (goal: within 1.5x, none over 2x). Beside it, the time
over the training floor's: the floor plus one optimizer step, which imports torch._dynamo (what
PyTorch pays on the first step of any notebook that trains), and each chapter's code cells (each
costs a few ms under nbval). `--cells N` then runs
each chapter once more with nbclient and lists its N slowest cells, to say where time goes.
Prints the load average beside each figure, and the CPU-seconds of each run (user + system of
pytest, its kernel and what they started and reaped): on a shared machine wall time follows the
load, CPU-seconds much less. A measurement, not a pass/fail test.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_lib import notebooks  # noqa: E402

FLOOR_CELLS = [
    "import torch\nimport matplotlib.pyplot as plt\nimport ipywidgets\n",
    "print(torch.__version__)",
]
# What PyTorch adds on the first optimizer step of any notebook that trains: the step imports
# torch._dynamo (torch.optim's _use_grad_for_differentiable), about 0.4x of the floor on 2 cores.
# Shown beside the floor, not instead of it: the goal is stated against the floor.
TRAINING_FLOOR_CELLS = FLOOR_CELLS + [
    "model = torch.nn.Linear(4, 2)\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "model(torch.randn(8, 4)).sum().backward()\n"
    "optimizer.step()",
]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def floor_notebook(folder: Path, sources: list = FLOOR_CELLS, name: str = "00_floor") -> Path:
    """A clean notebook of `sources` (default the floor: the imports every chapter makes)."""
    cells = [
        {
            "cell_type": "code",
            "id": f"f{i}",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": text,
        }
        for i, text in enumerate(sources)
    ]
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = folder / f"{name}.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n")
    return path


def environment(folder: Path) -> dict:
    """What the suite gives nbval's kernels (tests/conftest.py): one thread, a throwaway progress
    file, English unless the notebook turns Chinese on."""
    return dict(
        os.environ,
        OMP_NUM_THREADS="1",
        COURSE_PROGRESS_FILE=str(folder / "progress.json"),
        COURSE_LANG="en",
        PYTHONDONTWRITEBYTECODE="1",
    )


def nbval_seconds(path: Path, env: dict) -> tuple:
    """(wall seconds, CPU-seconds) of `pytest --nbval-lax path` in a new process (it must pass)."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "-o",
        "addopts=",
        "--nbval-lax",
        "--rootdir",
        str(path.parent),
        str(path),
    ]
    start, before = time.perf_counter(), os.times()
    proc = subprocess.run(cmd, cwd=str(path.parent), env=env, capture_output=True, text=True)
    seconds, after = time.perf_counter() - start, os.times()
    if proc.returncode != 0:
        raise SystemExit(f"{path.name} failed under nbval:\n{proc.stdout[-3000:]}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return seconds, cpu


def slowest_cells(path: Path, env: dict, n: int) -> list:
    """[(seconds, cell id, first line)] of the n slowest cells, from nbclient's own timing."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    os.environ.update(
        OMP_NUM_THREADS=env["OMP_NUM_THREADS"], COURSE_PROGRESS_FILE=env["COURSE_PROGRESS_FILE"]
    )
    client.execute()
    rows = []
    for cell in nb.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type != "code" or "iopub.execute_input" not in timing:
            continue
        from datetime import datetime

        start = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
        first = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""
        rows.append(((end - start).total_seconds(), cell.get("id", "?"), first))
    return sorted(rows, reverse=True)[:n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each notebook; best counts")
    parser.add_argument("--cells", type=int, default=0, help="list each chapter's N slowest cells")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="chapter-speed-"))
    env = environment(folder)
    chosen = [
        p for p in notebooks.chapter_notebooks() if not args.chapters or p.name[:2] in args.chapters
    ]
    copies = []
    for path in chosen:  # run copies, so that nothing is written beside the course's notebooks
        copy = folder / path.name
        copy.write_bytes(path.read_bytes())
        copies.append(copy)
    floor = floor_notebook(folder)
    training_floor = floor_notebook(folder, TRAINING_FLOOR_CELLS, "00_training_floor")
    print(f"{os.cpu_count()} CPUs; load average {load()}; best of {args.repeat} run(s) each")
    best, cpu = {}, {}
    runs = {path: [] for path in [floor, training_floor, *copies]}
    for _ in range(args.repeat):  # round by round: the floor is measured beside the chapters
        for path in runs:
            before = load()
            runs[path].append(nbval_seconds(path, env))
            print(
                f"  {path.stem:<22} {runs[path][-1][0]:6.1f} s  {runs[path][-1][1]:5.1f} CPU-s  "
                f"(load before {before})",
                flush=True,
            )
    for path, times in runs.items():
        best[path], cpu[path] = min(r[0] for r in times), min(r[1] for r in times)
    base, trained = best[floor], best[training_floor]
    print(f"\nfloor (imports torch, matplotlib, ipywidgets): {base:.1f} s, {cpu[floor]:.1f} CPU-s")
    print(
        f"training floor (the floor + one optimizer step): {trained:.1f} s, "
        f"{trained / base:.2f}x the floor; {cpu[training_floor]:.1f} CPU-s"
    )
    for path in copies:
        ratio, cells = best[path] / base, len(notebooks.code(path))
        mark = "" if ratio <= 1.5 else ("  over 1.5x" if ratio <= 2 else "  OVER 2x")
        print(
            f"  {path.stem:<22} {best[path]:6.1f} s  {ratio:4.2f}x the floor{mark}; "
            f"{best[path] / trained:4.2f}x the training floor; {cells:2d} code cells; "
            f"{cpu[path]:5.1f} CPU-s, {cpu[path] / cpu[floor]:4.2f}x the floor's"
        )
    total = sum(best[p] for p in copies)
    print(
        f"all {len(copies)} chapters: {total:.1f} s, {total / (base * len(copies)):.2f}x the floor "
        f"on average; load average now {load()}"
    )
    if args.cells:
        for path in copies:
            print(f"\n{path.stem}: its {args.cells} slowest cells (nbclient; load {load()})")
            for seconds, cell_id, first in slowest_cells(path, env, args.cells):
                print(f"  {seconds:6.2f} s  {cell_id:<8} {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
