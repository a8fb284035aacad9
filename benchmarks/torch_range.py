"""The course on other PyTorch releases (issue 38, items 3 and 5): one table, per part and version.

    python benchmarks/torch_range.py --python /work/venvs/torch26/bin/python [--python ...]
    python benchmarks/torch_range.py --build 2.6.0 --build 2.15.0 [--venvs /work/venvs]
    ... [--parts notebooks claims hosted] [--notebooks 01 03] [--json OUT.json]

Each `--python` is a virtual environment that holds one torch (a CUDA build from the package
index is several GB: a script's job, never CI's) and the course's other dependencies; `--build
VERSION` makes one first (`VENVS/torchXY`: torch==VERSION, then the course's dependencies with
pip choosing versions that fit that torch, then this checkout `pip install -e . --no-deps`).
With that interpreter, the checkout's own course_lib first on the path, it runs:
  notebooks  every notebook of both editions under nbval-lax (`-n 0`, niced, one pytest each);
  claims     the tests that pin what the text says of torch's APIs (CLAIMS below, one run a group);
  hosted     benchmarks/hosted_sim.py with that torch as the platform's (Colab, Kaggle,
             ModelScope markers; chapters 01 and 03), torch's version and files unchanged after;
and prints a table: one row per notebook, claim group and platform, one column per torch.
A measurement run by hand, not a CI test (it takes about an hour per version on 2 cores).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NICE = ["nice", "-n", "15"]
# The claim tests: each pins a behaviour of a torch API that a chapter's text, the checks, the
# explainer or the grader relies on (group name -> test files, run with that torch).
CLAIMS = {
    "text claims (autocast, DataLoader, dtypes, losses)": ["tests/test_text_claims.py"],
    "chapter 01-04 helpers": [
        "tests/test_ch01_device_check.py",
        "tests/test_ch02_same_device_rule.py",
        "tests/test_ch03_training_template.py",
        "tests/test_ch04_common_errors.py",
    ],
    "chapter 05 (AMP, compile, profiler)": [
        "tests/test_ch05_speedups.py",
        "tests/test_ch05_profiler.py",
    ],
    "chapter 06 (allocator, memory)": [
        "tests/test_ch06_out_of_memory.py",
        "tests/test_ch06_memory_profile.py",
        "tests/test_memory.py",
    ],
    "chapter 07-08 (DDP, FSDP2)": ["tests/test_ch07_dp_vs_ddp.py", "tests/test_ch08_sharding.py"],
    "device picks, GPU conditions, measure": [
        "tests/test_device_gpu_conditions.py",
        "tests/test_course_lib.py",
        "tests/test_measure.py",
        "tests/test_data_training.py",
    ],
    "explainer (torch's own messages)": [
        "tests/test_explain.py",
        "tests/test_explain_families.py",
        "tests/test_explain_heldout_3.py",
    ],
    "checks and grader (answer keys, self-test)": [
        "tests/test_exercise_keys.py",
        "tests/test_grading_selftest.py",
    ],
}
PLATFORMS = ("colab", "kaggle", "modelscope")
EDITIONS = {"en": "notebooks", "zh": "notebooks/zh"}
DEPENDENCIES = [  # pyproject.toml's, and the test tools the runs above need
    "jupyterlab>=4.2",
    "ipywidgets>=8.1",
    "matplotlib>=3.8",
    "tqdm>=4.66",
    "nbformat>=5.9",
    "nbclient>=0.10",
    "ipykernel>=6.29",
    "pytest>=8,<9",
    "pytest-xdist>=3.6,<4",
    "nbval>=0.11",
    "mistune>=3,<4",
    "setuptools>=68",  # the build backend hosted_sim.py's wheel is built with (no isolation)
]
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")
CLOSING = re.compile(r"^=* ?(?:\d+ \w+(?:, )?)+ in [\d.]+s", re.M)  # pytest's closing line


def environment() -> dict:
    """The runs' environment: the checkout first on the path, one thread, no display, English."""
    env = dict(os.environ)
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", MPLBACKEND="Agg", COURSE_LANG="en")
    env.pop("COURSE_DEVICE", None)
    return env


def torch_of(python: str) -> str:
    """The torch version `python` imports."""
    done = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True
    )
    return done.stdout.strip() or f"no torch ({done.stderr.strip()[-200:]})"


def build(version: str, venvs: Path, ignore_constraints: bool) -> str:
    """Make VENVS/torchXY with torch==VERSION and the course's dependencies; its python."""
    venv = venvs / ("torch" + "".join(version.split(".")[:2]))
    python = venv / "bin" / "python"
    if python.exists() and torch_of(str(python)).startswith(version):
        return str(python)
    env = dict(os.environ)
    if ignore_constraints:  # a pip configuration that caps torch (a machine's own mirror)
        empty = venvs / "no-constraints.txt"
        empty.write_text("")
        env["PIP_CONSTRAINT"] = str(empty)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--progress-bar", "off"]
    started = time.monotonic()
    subprocess.run(NICE + pip + [f"torch=={version}"], check=True, env=env)
    subprocess.run(NICE + pip + DEPENDENCIES + [f"torch=={version}"], check=True, env=env)
    subprocess.run(pip + ["--no-deps", "-e", str(ROOT)], check=True, env=env)
    print(f"built {venv} in {time.monotonic() - started:.0f} s", flush=True)
    return str(python)


def pytest(python: str, paths: list, extra=()) -> dict:
    """One niced `pytest -n 0` over `paths` with `python`: its counts, seconds and failures."""
    command = NICE + [python, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider"]
    started = time.monotonic()
    done = subprocess.run(
        command + list(extra) + paths, cwd=ROOT, env=environment(), capture_output=True, text=True
    )
    tail = done.stdout[-20000:]
    closing = CLOSING.findall(tail)
    counts = {kind.rstrip("s"): int(n) for n, kind in COUNT.findall(closing[-1] if closing else "")}
    failed = [line for line in tail.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return {
        "ok": done.returncode == 0,
        "rc": done.returncode,
        "counts": counts,
        "seconds": round(time.monotonic() - started),
        "failed": failed[:20],
        "tail": "" if done.returncode == 0 else tail[-4000:],
    }


def notebooks(python: str, chapters, editions=("en", "zh")):
    """Every notebook of both editions (or those of `chapters`) under nbval-lax, one run each:
    (row, result) pairs as they finish."""
    found = [p for e in editions for p in sorted(ROOT.glob(f"{EDITIONS[e]}/*.ipynb"))]
    chosen = [p for p in found if not chapters or p.name[:2] in chapters]
    # --nbval-current-env: the kernel is this interpreter, whatever kernelspec the machine has
    extra = ["--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=900"]
    for path in chosen:
        name = str(path.relative_to(ROOT))
        yield name, pytest(python, [name], extra)


def claims(python: str, *unused):
    """The claim tests, one pytest run per group: (row, result) pairs."""
    for group, files in CLAIMS.items():
        yield group, pytest(python, files)


def hosted(python: str, *unused):
    """benchmarks/hosted_sim.py run by `python`, its torch the platform's: a row per platform."""
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    command = [python, str(ROOT / "benchmarks" / "hosted_sim.py"), "--platform", *PLATFORMS]
    started = time.monotonic()
    done = subprocess.run(
        NICE + command + ["--platform-site", site], cwd=ROOT, capture_output=True, text=True
    )
    reports, text, decoder = {}, done.stdout, json.JSONDecoder()
    while (start := text.find("{")) >= 0:
        report, end = decoder.raw_decode(text[start:])
        reports[report["platform"]] = report
        text = text[start + end :]
    for platform in PLATFORMS:
        report = reports.get(platform)
        if report is None:
            yield f"hosted {platform}", {"ok": False, "tail": done.stderr[-4000:], "failed": []}
            continue
        bad = {n: r for n, r in report["chapters"].items() if r.get("errors") or "failed" in r}
        yield (
            f"hosted {platform}",
            {
                "ok": report["torch_unchanged"] and not bad,
                "torch_unchanged": report["torch_unchanged"],
                "torch": report["torch_before"]["version"],
                "chapters": sorted(report["chapters"]),
                "widget_model": sorted(
                    {r.get("widget_model") for r in report["chapters"].values()}
                ),
                "failed": [f"{n}: {json.dumps(r)[:600]}" for n, r in bad.items()],
                "seconds": round(time.monotonic() - started),
            },
        )


PARTS = {"notebooks": notebooks, "claims": claims, "hosted": hosted}


def cell(result: dict) -> str:
    """A table cell: pass/FAIL with the counts."""
    if result is None:
        return "-"
    counts = result.get("counts", {})
    said = ", ".join(f"{n} {k}" for k, n in counts.items() if k != "skipped" and n)
    word = "pass" if result["ok"] else "FAIL"
    return f"{word} ({said})" if said else word


def table(results: dict) -> str:
    """A Markdown table: one row per notebook / claim group / platform, one column per torch."""
    versions = list(results)
    rows = list(dict.fromkeys(row for version in versions for row in results[version]))
    lines = ["| | " + " | ".join(versions) + " |", "|---" * (len(versions) + 1) + "|"]
    for row in rows:
        cells = [cell(results[v].get(row)) for v in versions]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Build or take each environment, run the parts, print the table; exit 1 on a failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], help="a venv's interpreter")
    parser.add_argument("--build", action="append", default=[], help="a torch version to build")
    parser.add_argument("--venvs", type=Path, default=Path("/work/venvs"))
    parser.add_argument("--ignore-pip-constraints", action="store_true")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--notebooks", nargs="*", default=[], help="chapters, e.g. 01 03")
    parser.add_argument("--editions", nargs="+", choices=list(EDITIONS), default=list(EDITIONS))
    parser.add_argument("--json", type=Path, help="write every result here")
    parser.add_argument("--table", type=Path, nargs="+", help="only print the table of these JSONs")
    args = parser.parse_args(argv)
    if args.table:  # runs made apart (one per version or edition), one table
        merged = {}
        for path in args.table:
            for version, rows in json.loads(path.read_text(encoding="utf-8")).items():
                merged.setdefault(version, {}).update(rows)
        print(table(merged))
        return 0
    pythons = args.python + [build(v, args.venvs, args.ignore_pip_constraints) for v in args.build]
    results = {}
    for python in pythons:
        version = torch_of(python)
        print(f"torch {version} ({python})", flush=True)
        rows = results.setdefault(version, {})
        for part in args.parts:
            for row, result in PARTS[part](python, args.notebooks, args.editions):
                rows[row] = result
                print(f"  {row}: {cell(result)} ({result.get('seconds', '?')} s)", flush=True)
                if args.json:  # a long run keeps what it measured
                    args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(table(results))
    for version, rows in results.items():
        for row, result in rows.items():
            for line in result.get("failed", []):
                print(f"{version} {row}: {line}")
    return 0 if all(r["ok"] for rows in results.values() for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
