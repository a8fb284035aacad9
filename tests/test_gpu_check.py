"""The prepared GPU check (benchmarks/gpu_check.sh) and its parts, on this CPU-only machine.

The script's real job needs a CUDA GPU; here we prove what can be proved without one: it ends
at once with every GPU step skipped and the reason; its bookkeeping records a failing step and
goes on; a dry run on a simulated H200 (benchmarks/simulate_gpu: torch's CUDA queries and a fake
nvidia-smi) goes through every step's selection and budget; the figures script measures every
figure key (CUDA's queries simulated, the work done on the CPU); only the tests that need a CUDA
GPU are selected; the wheels install offline, with the machine's versions checked; the nccl
step's code runs with gloo; and the tests that would fail on the GPU machine hold there.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import types
import zipfile

import pytest
import torch

from course_lib import ch05_speedups as ch05
from course_lib import device as dev
from course_lib import measure
from support import NOTEBOOKS, ROOT, benchmark

gpu_cuda_tests, gpu_figures, gpu_wheels, gpu_two = map(
    benchmark, ("gpu_cuda_tests", "gpu_figures", "gpu_wheels", "gpu_two")
)

SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
SIMULATE = (
    ROOT / "benchmarks" / "simulate_gpu"
)  # sitecustomize.py (torch's CUDA queries) and nvidia-smi
needs_bash = pytest.mark.skipif(
    shutil.which("bash") is None or os.name != "posix",
    reason="gpu_check.sh is a bash script for the (Linux) GPU machine",
)
TWO_GPU = ["two-gpu-ddp", "two-gpu-dp", "two-gpu-fsdp"]  # skipped below two GPUs
STEPS = (
    ["wheels"]
    + [f"notebook-{nb.stem}" for nb in NOTEBOOKS]
    + ["cuda-tests", "ddp-nccl", *TWO_GPU, "grader", "figures", "figures-compile"]
)  # in their order


def simulated_h200(**extra) -> dict:
    """The environment of a process on the lent GPU machine, simulated: torch's CUDA queries say
    one NVIDIA H200 (benchmarks/simulate_gpu/sitecustomize.py), a fake nvidia-smi is on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GPU_CHECK_") and k != "CUDA_VISIBLE_DEVICES"
    }
    env.update(
        GPU_CHECK_SIMULATE="1",
        PYTHONPATH=os.pathsep.join([str(SIMULATE), str(ROOT)]),
        PATH=f"{SIMULATE}{os.pathsep}{env['PATH']}",
        **extra,
    )
    return env


def run_check(out, timeout=300, **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPU_CHECK_")}
    environ.update({"PYTHON": sys.executable, **env})
    return subprocess.run(
        ["bash", str(SCRIPT), str(out)],
        cwd="/",
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def report_rows(out) -> dict:
    """{step: (result, summary)} of report.md's table."""
    rows = {}
    for line in (out / "report.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and cells[0] != "step":
            rows[cells[0]] = (cells[1], cells[3])
    return rows


@needs_bash
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_without_a_gpu_every_step_is_skipped_with_the_reason(tmp_path, monkeypatch, capsys):
    proc = run_check(tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = report_rows(tmp_path / "out")
    assert sorted(rows) == sorted(STEPS)
    for step, (result, said) in rows.items():
        assert result == "skipped" and "no CUDA GPU" in said, (step, result, said)
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"torch: {torch.__version__}" in report and "nvidia-smi" in report
    first = report.split("## Machine")[0]  # what matters, at a glance
    assert (
        f"**Result: 0 ok, 0 failed, {len(STEPS)} skipped;" in first
        and "- skipped, every GPU step: no CUDA GPU" in first
    )
    assert (
        f'`PYTHON={sys.executable} GPU_CHECK_ONLY="STEP" bash benchmarks/gpu_check.sh '
        f"{tmp_path / 'out'}-rerun`" in first
    )
    figures = json.loads((tmp_path / "out" / "figures.json").read_text())
    assert figures["run"]["gpu"] is None and "no CUDA GPU" in figures["run"]["reason"]
    assert figures["figures"] == {}
    # a report from a machine without a GPU is no reference run: the cells say so
    monkeypatch.setenv(dev.FIGURES_ENV_VAR, str(tmp_path / "out" / "figures.json"))
    monkeypatch.delenv(dev.ENV_VAR, raising=False)
    dev.gpu_only("AMP", figure="ch05.amp")
    assert "No reference GPU run is recorded yet" in capsys.readouterr().out


@needs_bash
def test_a_failing_step_is_recorded_and_the_next_steps_still_run(tmp_path):
    (tmp_path / "no-wheels").mkdir()
    proc = run_check(
        tmp_path / "out",
        GPU_CHECK_ASSUME_GPU="1",
        GPU_CHECK_ONLY="wheels figures",
        GPU_CHECK_WHEELS=str(tmp_path / "no-wheels"),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a step failed
    rows = report_rows(tmp_path / "out")
    assert rows["wheels"][0] == "FAILED (exit 1)" and "--prepare-wheels" in rows["wheels"][1]
    assert rows["figures"][0] == "ok"  # ran after the failure
    assert all(
        rows[s] == ("skipped", "not in GPU_CHECK_ONLY")
        for s in STEPS
        if s not in ("wheels", "figures")
    )
    report = (tmp_path / "out" / "report.md").read_text()
    first = report.split("## Machine")[0]  # the failure, why, and the command that reruns that step
    assert (
        f"**Result: 1 ok, 1 failed, {len(STEPS) - 2} skipped;" in first
    )  # one notebook step per chapter
    assert "- **FAILED (exit 1): wheels**: no wheels in" in first
    assert (
        f"`PYTHON={sys.executable} GPU_CHECK_WHEELS={tmp_path / 'no-wheels'} "
        "GPU_CHECK_ASSUME_GPU=1 "
        f'GPU_CHECK_ONLY="wheels" bash benchmarks/gpu_check.sh {tmp_path / "out"}-rerun`'
    ) in first
    assert "## wheels: last lines of logs/wheels.log" in report
    assert (tmp_path / "out" / "logs" / "figures.log").exists()


@needs_bash
def test_the_time_budget_holds_every_step(tmp_path):
    proc = run_check(tmp_path / "out", GPU_CHECK_ASSUME_GPU="1", GPU_CHECK_SECONDS="1")
    rows = report_rows(tmp_path / "out")
    assert proc.returncode == 0 and sorted(rows) == sorted(STEPS)
    assert all(
        result == "skipped" and said.startswith("out of time") for result, said in rows.values()
    )


def planned_limits(rows) -> dict:
    """{step: seconds} of a dry run's "dry run (limit N s)" results."""
    return {
        step: int(re.fullmatch(r"dry run \(limit (\d+) s\)", result).group(1))
        for step, (result, _) in rows.items()
        if result.startswith("dry run")
    }


def dry_run_on_the_simulated_h200(tmp_path, **env):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    tiny_wheel(wheels)
    proc = run_check(tmp_path / "out", GPU_CHECK_SIMULATE="1", GPU_CHECK_WHEELS=str(wheels), **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return report_rows(tmp_path / "out"), (tmp_path / "out" / "report.md").read_text()


@pytest.fixture(scope="module")
def full_dry_run(tmp_path_factory):
    """One whole dry run on the simulated H200 (every step's selection), read by the tests of what
    its steps select: (rows, report, logs folder)."""
    if shutil.which("bash") is None or os.name != "posix":
        pytest.skip("gpu_check.sh is a bash script for the (Linux) GPU machine")
    tmp = tmp_path_factory.mktemp("dry-run")
    rows, report = dry_run_on_the_simulated_h200(tmp)
    return rows, report, tmp / "out" / "logs"


@needs_bash
def test_a_dry_run_on_the_simulated_h200_goes_through_every_step(full_dry_run):
    """GPU_CHECK_SIMULATE=1: torch says H200, nvidia-smi is the fake; every step runs its selection
    (pytest --collect-only, the scripts' --dry-run) and the budget is planned as if each step took
    all its time: the notebooks get the group's full time first, the figures the rest."""
    rows, report, logs = full_dry_run
    assert list(rows) == STEPS
    limits = planned_limits(rows)
    assert set(limits) == set(STEPS) - set(TWO_GPU), rows
    assert report.startswith(
        f"# GPU check report\n\n**Result: {len(STEPS) - 3} ok (dry run), 0 failed, 3 skipped;"
    )  # the H200 is one GPU: the two-GPU steps say so
    for step in TWO_GPU:
        assert rows[step][0] == "skipped" and rows[step][1].endswith(
            "needs 2 GPUs and this machine has 1 (torch.cuda.device_count())"
        ), rows[step]
    planned = int(re.search(r"planned worst case: (\d+) s", report).group(1))
    assert planned <= 450 and limits["figures-compile"] >= 10
    group = {
        s: limits[s]
        for s in STEPS
        if s.startswith("notebook-") or s in ("cuda-tests", "ddp-nccl", "grader")
    }
    assert set(group.values()) == {
        260
    }  # GROUP_MAX: the notebooks' time is never eaten by earlier steps
    assert limits["wheels"] == 45 and limits["figures"] == 70
    assert "NVIDIA H200, 580.95.05, 143771 MiB, Default" in report and "SIMULATED" in report
    assert "GPU 0: NVIDIA H200, 140 GiB, capability 9.0" in report
    # cuda-tests: only the tests that need a CUDA GPU, and none the grader step or the check runs
    selected = [line for line in (logs / "cuda-tests.log").read_text().splitlines() if "::" in line]
    assert "tests/test_memory.py::test_small_gpu_gives_a_real_oom_and_lifts_the_cap" in selected
    assert selected and not [t for t in selected if "test_gpu_check" in t or "test_grading" in t]
    # every notebook: nbval on cuda, in its own IPython, matplotlib and progress folders
    homes = {
        re.search(r"IPYTHONDIR=(\S+)", (logs / f"{s}.log").read_text()).group(1)
        for s in STEPS
        if s.startswith("notebook-")
    }
    assert len(homes) == len(NOTEBOOKS)
    assert "--nbval-cell-timeout=200" in (logs / "notebook-05_speedups.log").read_text()
    assert "backend nccl" in rows["ddp-nccl"][1] and "CUDA_VISIBLE_DEVICES=''" in rows["grader"][1]
    figures = (logs / "figures.log").read_text()
    assert "ch06.real_oom: would measure" in figures and "ch05.compile:" not in figures
    assert "ch05.compile: " in (logs / "figures-compile.log").read_text()


@needs_bash
def test_a_small_budget_still_gives_the_notebooks_their_time(tmp_path):
    rows, report = dry_run_on_the_simulated_h200(
        tmp_path, GPU_CHECK_SECONDS="300", GPU_CHECK_PLAN_ONLY="1"
    )  # the budget alone: the steps' selections are the test above's
    limits = planned_limits(rows)
    assert min(limits[s] for s in STEPS if s.startswith("notebook-")) >= 200  # GROUP_MIN
    assert rows["figures-compile"] == ("skipped", "out of time (the check stops at 300 s)")
    assert (
        "figures-compile (out of time (the check stops at 300 s))" in report.split("## Machine")[0]
    )


@needs_bash
def test_an_exclusive_compute_mode_runs_the_gpu_steps_one_after_another(tmp_path):
    rows, report = dry_run_on_the_simulated_h200(
        tmp_path, GPU_CHECK_SIMULATE_COMPUTE_MODE="Exclusive_Process", GPU_CHECK_PLAN_ONLY="1"
    )
    assert "compute mode Exclusive_Process: one CUDA process at a time" in report
    limits = planned_limits(rows)
    group = 450 - 45 - 20  # all the time after the wheels: the figures come after, if time is left
    serial = [
        limits[s]
        for s in STEPS
        if s.startswith("notebook-") or s in ("cuda-tests", "ddp-nccl", *TWO_GPU)
    ]
    assert sum(serial) <= group and min(serial) >= group // len(serial)  # shared, none starved
    assert limits["grader"] == group  # it hides the GPU: beside them
    assert rows["figures"][0] == "skipped" and rows["figures"][1].startswith("out of time")


@needs_bash
def test_usage_errors():
    assert subprocess.run(["bash", str(SCRIPT)], capture_output=True).returncode == 2
    assert subprocess.run(["bash", str(SCRIPT), "--nonsense"], capture_output=True).returncode == 2


# --------------------------------------------------------- figure keys: one list, measured as named
def documented_keys() -> dict:
    text = (ROOT / "docs" / "gpu" / "README.md").read_text().split("## Figure keys", 1)[1]
    return dict(re.findall(r"^\| `([\w.]+)` \| (.+?) \|$", text, re.M))


def test_figure_keys_are_one_list_measured_and_documented():
    assert set(gpu_figures.FIGURES) == set(dev.FIGURE_KEYS)
    assert documented_keys() == dev.FIGURE_KEYS


def simulate_cuda_on_the_cpu(monkeypatch):
    """torch.cuda's queries answer as on a one-GPU machine; the work itself runs on the CPU."""
    cuda = torch.cuda
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "device_count", lambda: 1)
    monkeypatch.setattr(cuda, "current_device", lambda: 0)
    monkeypatch.setattr(cuda, "is_bf16_supported", lambda *a, **k: True)
    props = types.SimpleNamespace(name="Simulated GPU", total_memory=80 * 2**30)
    monkeypatch.setattr(cuda, "get_device_properties", lambda d=None: props)
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved"):
        monkeypatch.setattr(cuda, name, lambda d=None: 0)
    for name in ("synchronize", "empty_cache", "reset_peak_memory_stats"):
        monkeypatch.setattr(cuda, name, lambda d=None: None)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self, *a: self)
    monkeypatch.setattr(gpu_figures, "pick_device", lambda: torch.device("cpu"))
    monkeypatch.setenv(
        "COURSE_DEVICE", "cpu"
    )  # else main() sets "cuda" for the rest of this process


@pytest.mark.parametrize("nvidia_smi", ["absent", "on PATH"])
def test_gpu_figures_measure_every_key(monkeypatch, tmp_path, nvidia_smi):
    """Every figure function runs and writes its lines (a real OOM needs a real GPU, and so does
    nn.DataParallel, which moves the model to cuda:0 itself; torch.compile is left out, as compiling
    takes tens of seconds: ch05.compile times the model uncompiled).
    Holds on both kinds of machine: nvidia-smi is made absent, or is the fake one (issue 16)."""
    simulate_cuda_on_the_cpu(monkeypatch)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(SIMULATE) if nvidia_smi == "on PATH" else str(empty))
    monkeypatch.setattr(gpu_figures, "S", dict(gpu_figures.S))
    monkeypatch.setattr(torch, "compile", lambda model, **kwargs: model)
    out = tmp_path / "figures.json"
    skipped = [
        "ch06.real_oom",
        "ch07.data_parallel",
        # CUDA events, sync debug mode, allocator history and settings have no CPU stand-in
        "ch05.nonblocking_d2h",
        "ch05.sync_debug",
        "ch06.memory_snapshot",
        "ch06.fragmentation",
    ]
    assert gpu_figures.main([str(out), "--small", "--skip", *skipped]) == 0
    run = json.loads(out.read_text())
    assert run["run"]["gpu"] == "Simulated GPU" and run["run"]["torch"] == torch.__version__
    assert set(run["figures"]) == set(dev.FIGURE_KEYS) - set(skipped)
    for key, entry in run["figures"].items():
        assert "error" not in entry, (key, entry)
        if key == "ch05.nvidia_smi" and nvidia_smi == "absent":
            assert entry["missing"] == "missing: nvidia-smi is not on the check machine's PATH"
        else:
            assert entry["lines"] and all(isinstance(line, str) for line in entry["lines"]), key
    if nvidia_smi == "on PATH":
        assert "NVIDIA H200, 87 %" in run["figures"]["ch05.nvidia_smi"]["lines"][0]
    # gpu_only shows them as recorded
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv(dev.FIGURES_ENV_VAR, str(out))
    assert "measured on Simulated GPU" in " ".join(dev.reference_figures("ch05.amp"))


def test_dataparallel_on_one_device_is_recorded_as_a_plain_call(monkeypatch):
    """ch07.data_parallel on a 1-GPU machine: what nn.DataParallel does there (here: no GPU at all,
    where it is a plain call too), counted: no replica made, nothing gathered, the same output."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # on any machine
    lines, values = gpu_figures.data_parallel_on_one_gpu(torch.device("cpu"))
    assert values == {"gpus": 1, "same_output": True, "replicate": 0, "gather": 0}
    assert "plain call" in lines[0] and "need 2 or more GPUs" in lines[0]


def test_torch_compile_on_cuda_needs_a_c_compiler_and_python_headers(monkeypatch, tmp_path):
    """Before torch.compile on CUDA the figures ask for what Triton builds with, and record what is
    missing instead of an error; the figures-compile step is then skipped (exit 77) with that
    reason."""
    need = gpu_figures.NEEDS["ch05.compile"]
    assert need(torch.device("cpu")) == ""  # the CPU backend is chapter 05's own business
    monkeypatch.setenv("PATH", str(tmp_path))  # no gcc, no clang
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(gpu_figures.sysconfig, "get_paths", lambda: {"include": str(tmp_path)})
    assert need(torch.device("cuda")).startswith(
        "missing: no C compiler (CC, gcc or clang) / no Python headers"
    )
    simulate_cuda_on_the_cpu(monkeypatch)
    monkeypatch.setattr(gpu_figures, "pick_device", lambda: torch.device("cuda"))
    out = tmp_path / "figures.json"
    assert gpu_figures.main([str(out), "--only", "ch05.compile"]) == gpu_figures.SKIPPED == 77
    assert "no C compiler" in json.loads(out.read_text())["figures"]["ch05.compile"]["missing"]
    cc = tmp_path / "gcc"
    cc.write_text("#!/bin/sh\n")
    cc.chmod(0o755)
    (tmp_path / "Python.h").write_text("")
    assert need(torch.device("cuda")) == ""


def test_copy_bandwidth_is_in_gb_per_s_in_the_chapter_and_the_figures(monkeypatch, capsys):
    """One unit for the host-to-GPU copy bandwidth, named right: GB/s (10**9 bytes per second) in
    chapter 05's copy_benchmark and in the figures (64 MiB in 10 ms is 6.7 GB/s, 6.25 GiB/s)."""
    simulate_cuda_on_the_cpu(monkeypatch)
    monkeypatch.setattr(gpu_figures, "S", dict(gpu_figures.S, copy_mib=64))
    monkeypatch.setattr(
        measure, "time_fn", lambda fn, *args, **kwargs: measure.Timing("copy", [10.0])
    )
    monkeypatch.setattr(ch05, "is_cuda_or_say_so", lambda device, what: True)
    ch05.copy_benchmark(torch.device("cpu"), megabytes=64)
    printed = capsys.readouterr().out
    assert printed.count("-> 6.7 GB/s") == 2, printed
    lines, values = gpu_figures.pinned_copy(torch.device("cpu"))
    assert "6.7 GB/s" in lines[0] and "6.7 GB/s" in lines[1]
    assert values["pinned"]["gb_per_s"] == pytest.approx(64 * 2**20 / 1e9 / 0.010)


def test_one_failing_figure_is_recorded_and_the_rest_measured(monkeypatch, tmp_path):
    simulate_cuda_on_the_cpu(monkeypatch)
    monkeypatch.setattr(gpu_figures, "S", dict(gpu_figures.S))

    def broken(device):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setitem(gpu_figures.FIGURES, "ch01.device_memory", broken)
    out = tmp_path / "figures.json"
    assert (
        gpu_figures.main([str(out), "--small", "--only", "ch01.device_memory", "ch06.empty_cache"])
        == 1
    )
    figures = json.loads(out.read_text())["figures"]
    assert "illegal memory access" in figures["ch01.device_memory"]["error"]
    assert figures["ch06.empty_cache"]["lines"]


# ---------------------------------------------------------------- which tests need a CUDA GPU
def fake_item(name, *reasons, path="tests/test_memory.py", cuda_mark=False):
    marks = {
        "skipif": [types.SimpleNamespace(kwargs={"reason": r}) for r in reasons],
        "cuda": [types.SimpleNamespace(kwargs={})] if cuda_mark else [],
    }
    return types.SimpleNamespace(
        name=name + "[param]",
        originalname=name,
        path=ROOT / path,
        iter_markers=lambda kind: iter(marks.get(kind, [])),
    )


def test_only_tests_that_need_a_cuda_gpu_are_selected():
    assert gpu_cuda_tests.selected(fake_item("test_real_oom", "needs a CUDA GPU"))
    assert gpu_cuda_tests.selected(fake_item("test_anything", cuda_mark=True))
    # a GPU in the name or in another skip reason is not a need for one (issue 16)
    assert not gpu_cuda_tests.selected(fake_item("test_pinned_copy_on_the_gpu"))
    assert not gpu_cuda_tests.selected(
        fake_item("test_script", "gpu_check.sh is a bash script for the GPU machine")
    )
    assert not gpu_cuda_tests.selected(
        fake_item("test_meter_counts", "checks the CPU-only behaviour")
    )
    assert not gpu_cuda_tests.selected(fake_item("test_format_bytes"))
    # the check's own tests and the grading tests belong to other steps
    assert not gpu_cuda_tests.selected(
        fake_item("test_x", "needs a CUDA GPU", path="tests/test_gpu_check.py")
    )
    assert not gpu_cuda_tests.selected(
        fake_item("test_x", cuda_mark=True, path="tests/test_grading_gpu.py")
    )


@needs_bash
def test_cuda_tests_collected_from_the_suite(full_dry_run):
    """Every file that says "needs a CUDA GPU": exactly the tests skipped for that reason. Read from
    the dry run's cuda-tests step: `pytest -p gpu_cuda_tests --collect-only` over those files."""
    files = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").glob("test_*.py")
        if "needs a CUDA GPU" in p.read_text()
    )
    rows, _, logs = full_dry_run
    log = (logs / "cuda-tests.log").read_text()
    command = next(line for line in log.splitlines() if line.startswith("# COURSE_PROGRESS_FILE="))
    assert files and all(f" {name}" in command for name in files), command
    assert "--collect-only" in command and rows["cuda-tests"][0].startswith("dry run")  # exit 0
    found = [line for line in log.splitlines() if "::" in line]
    assert "tests/test_memory.py::test_small_gpu_gives_a_real_oom_and_lifts_the_cap" in found
    assert "tests/test_ch06_out_of_memory.py::test_gpu_oom_demo_raises_the_real_error" in found
    assert not [t for t in found if "test_gpu_check.py" in t or "test_grading" in t]
    # a test that merely talks about GPUs is not among them
    assert not [t for t in found if "test_small_gpu_undoes_the_cap_when_the_block_raises" in t]


# ---------------------------------------------------------------- the wheels, offline
def tiny_wheel(folder, project="tinypkg", version="1.0", requires=()):
    """A minimal wheel: a package, its dist-info (with `requires` as Requires-Dist), and a .data
    folder with purelib and scripts."""
    path = folder / f"{project}-{version}-py3-none-any.whl"
    info = f"{project}-{version}.dist-info"
    needs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{project}/__init__.py", "VALUE = 42\n")
        z.writestr(f"{project}-{version}.data/purelib/{project}_extra.py", "EXTRA = 1\n")
        z.writestr(f"{project}-{version}.data/scripts/tool", "#!/bin/sh\n")
        z.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n{needs}",
        )
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return path


def test_wheels_of_projects_already_installed_are_left_alone(tmp_path):
    wheels = [tiny_wheel(tmp_path, "pytest", "99.0"), tiny_wheel(tmp_path, "Jupyter_Client", "8.0")]
    assert gpu_wheels.project_of(wheels[1]) == "jupyter-client"
    assert gpu_wheels.plan(wheels, version_of={"pytest": "8.3.0"}.get) == ([wheels[1]], [])


def test_installed_versions_too_old_for_a_wheel_get_the_wheel_too(tmp_path):
    """ipykernel needs tornado and pyzmq minimums: a machine's older tornado is shadowed by the
    wheel's (and what that wheel needs is checked in turn); extras and other platforms' needs are
    ignored."""
    kernel = tiny_wheel(
        tmp_path,
        "tinykernel",
        "6.29",
        [
            "tinytornado>=6.1",
            "tinyzmq>=24",
            "tinytest; extra == 'test'",
            "tinywin>=9; sys_platform == 'win32'",
        ],
    )
    tornado = tiny_wheel(tmp_path, "tinytornado", "6.4", ["tiny_async>=2"])
    old_tornado = tiny_wheel(tmp_path, "tinytornado", "5.0")
    zmq = tiny_wheel(tmp_path, "tinyzmq", "26.0")
    asyncio_ = tiny_wheel(tmp_path, "tiny_async", "2.1")
    wheels = [kernel, old_tornado, tornado, zmq, asyncio_]
    machine = {"tinytornado": "5.1", "tinyzmq": "25.1", "tiny-async": "1.0"}
    todo, notes = gpu_wheels.plan(wheels, version_of=machine.get)
    assert todo == [asyncio_, kernel, tornado]  # tinyzmq 25.1 satisfies >=24: the machine's stays
    assert notes == [
        "installing tinytornado 6.4: tinykernel needs >=6.1 and this Python has 5.1",
        "installing tiny-async 2.1: tinytornado needs >=2 and this Python has 1.0",
    ]
    # a requirement nothing here satisfies is said, not hidden
    todo, notes = gpu_wheels.plan(
        [kernel, tornado, asyncio_], version_of={**machine, "tinyzmq": "23.0"}.get
    )
    assert (
        "WARNING: tinykernel needs tinyzmq>=24; this Python has 23.0 and the wheels folder has none"
        in notes
    )
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_wheels.py"), "plan", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "would install 4 of 5 wheels" in proc.stdout, (
        proc.stdout + proc.stderr
    )


def test_wheels_install_offline_into_a_target(tmp_path):
    folder = tmp_path / "wheels"
    folder.mkdir()
    tiny_wheel(folder)
    gpu_wheels.unpack(folder / "tinypkg-1.0-py3-none-any.whl", tmp_path / "unpacked")
    assert (tmp_path / "unpacked" / "tinypkg" / "__init__.py").exists()
    assert (tmp_path / "unpacked" / "tinypkg_extra.py").exists()
    assert not list((tmp_path / "unpacked").glob("*.data"))
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_wheels.py"),
            "install",
            str(folder),
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "installing 1: tinypkg" in proc.stdout
    imported = subprocess.run(
        [sys.executable, "-c", "import tinypkg; print(tinypkg.VALUE)"],
        env=dict(os.environ, PYTHONPATH=str(tmp_path / "site")),
        capture_output=True,
        text=True,
    )
    assert imported.stdout.strip() == "42"
    empty = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_wheels.py"),
            "install",
            str(tmp_path / "nothing"),
            str(tmp_path / "site2"),
        ],
        capture_output=True,
        text=True,
    )
    assert empty.returncode == 1 and "--prepare-wheels" in empty.stdout


def test_the_docs_give_the_one_command_and_the_scripts_budget():
    docs = (ROOT / "docs" / "gpu" / "README.md").read_text()
    assert (
        'bash benchmarks/gpu_check.sh "$OUT/gpu"' in docs
        and 'carry:\n["benchmarks/wheels"]' in docs
    )
    assert (
        'GPU_CHECK_SIMULATE=1 PYTHON=.venv/bin/python bash benchmarks/gpu_check.sh "$(mktemp -d)"'
        in docs
    )
    script = SCRIPT.read_text()
    knobs = dict(re.findall(r"(\w+)=(\d+)", re.search(r"^WHEELS_MAX=.*$", script, re.M).group(0)))
    budget = re.search(r'BUDGET="\$\{GPU_CHECK_SECONDS:-(\d+)\}"', script).group(1)
    assert f"default {budget} s for all steps" in docs
    table = docs.split("| step | what it proves | seconds at most |")[1].split("\n\n")[0]
    for step, knob in (
        ("wheels", "WHEELS_MAX"),
        ("figures", "FIGURES_MAX"),
        ("figures-compile", "COMPILE_MAX"),
    ):
        assert re.search(rf"^\| `{step}` \|.*\| {knobs[knob]} \|$", table, re.M), step
    assert (
        f"the group: {knobs['GROUP_MAX']}" in table
        and f"never less than {knobs['GROUP_MIN']} s" in docs
    )


def test_the_prepare_command_is_the_documented_one():
    docs = (ROOT / "docs" / "gpu" / "README.md").read_text()
    assert "bash benchmarks/gpu_check.sh --prepare-wheels benchmarks/wheels" in docs
    assert "--prepare-wheels" in SCRIPT.read_text()
    assert set(gpu_wheels.NEEDED) == {"nbval", "nbclient", "nbformat", "ipykernel", "ipywidgets"}


# --------------------------------------------------------- on the GPU machine (simulated): issue 16
def test_the_doctor_cli_test_holds_on_a_gpu_machine():
    """test_cli_doctor_explains_an_unusable_gpu runs `doctor` in a subprocess: where torch sees a
    usable GPU that subprocess must still be told it cannot, or the report says "none"."""
    test = "tests/test_course_lib.py::test_cli_doctor_explains_an_unusable_gpu"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q", test],
        cwd=ROOT,
        env=simulated_h200(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "1 passed" in proc.stdout, (
        proc.stdout[-3000:] + proc.stderr[-2000:]
    )


def test_grading_expectations_are_computed_as_the_grader_runs(tmp_path):
    """gpu_grading.py's expected scores come from a process that sees the GPUs as the grader's
    processes do (hidden): ch01's "only ever asks for GPU 0" scores 0.6 there, 1.2 with a GPU."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_grading.py"),
            str(tmp_path / "work"),
            "--chapter",
            "01",
            "--workers",
            "2",
        ],
        cwd=tmp_path,
        env=simulated_h200(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "3 of 3 submissions graded as the key expects" in proc.stdout
    assert "DIFFERS" not in proc.stdout


# ---------------------------------------------------------------- the nccl path (issue 16, item 4)
def run_ddp_script(*args, env=None):
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_ddp.py"), *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_ddp_script_runs_chapter_07s_worker_at_world_size_1(tmp_path, full_dry_run, capsys):
    """The nccl step's code, with gloo on the CPU: both launchers of chapter 07's worker, world
    size 1, checked against one process; nccl without a GPU is skipped (77) with the reason (its
    main() here: the script's exit code is what main returns); on the simulated H200 the dry run's
    ddp-nccl step plans nccl."""
    proc = run_ddp_script(tmp_path, "--backend", "gloo")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(
        "torch.multiprocessing.spawn: world size 1, backend gloo on cpu, 3 steps"
    )
    assert lines[1].startswith("torchrun: world size 1, backend gloo on cpu, 3 steps")
    assert "WRONG" not in proc.stdout and "2 of 2 launches" in lines[-1]
    assert (tmp_path / "spawn" / "checkpoint.pt").exists() and (
        tmp_path / "torchrun" / "rank0.pt"
    ).exists()
    # what the check would say if a launch had not used the backend asked for
    gpu_ddp = benchmark("gpu_ddp")
    result = gpu_ddp.ddp_worker.LaunchResult(
        gpu_ddp.config_for(tmp_path, "spawn", "gloo"),
        [torch.load(tmp_path / "spawn" / "rank0.pt")],
        1.0,
        "spawn",
    )
    assert gpu_ddp.problems(result, "gloo") == []
    assert gpu_ddp.problems(result, "nccl") == [
        "rank 0 ran with backend gloo on cpu, not nccl on cuda:0"
    ]
    if not torch.cuda.is_available():
        capsys.readouterr()
        assert gpu_ddp.main([str(tmp_path / "nccl")]) == 77
        assert capsys.readouterr().out.startswith("skipped: nccl needs a CUDA GPU")
    rows, _, logs = full_dry_run
    planned = (logs / "ddp-nccl.log").read_text()
    assert rows["ddp-nccl"][0].startswith("dry run")  # the script exited 0
    assert "would launch course_lib.ddp_worker" in planned and "backend nccl" in planned


# ------------------------------------------------- issue 38, item 6: one TMPDIR per step, two GPUs
WRAPPER = '#!/bin/sh\necho "step tmp: $TMPDIR" >&2\nexec "{python}" "$@"\n'


@needs_bash
def test_concurrent_steps_never_share_a_temporary_folder(tmp_path):
    """Chapter 06 writes its snapshots to TMPDIR/pytorch-gpu-course: each step has its own."""
    python = tmp_path / "python"
    python.write_text(WRAPPER.format(python=sys.executable))
    python.chmod(0o755)
    steps = ["notebook-06_out_of_memory", "notebook-05_speedups", "ddp-nccl", "cuda-tests"]
    rows, _ = dry_run_on_the_simulated_h200(
        tmp_path, PYTHON=str(python), GPU_CHECK_ONLY=" ".join(steps)
    )
    seen = {}
    for step in steps:
        log = (tmp_path / "out" / "logs" / f"{step}.log").read_text()
        found = set(re.findall(r"^step tmp: (\S*)$", log, re.M))
        assert len(found) == 1, (step, found)
        seen[step] = found.pop()
    assert len(set(seen.values())) == len(steps), seen
    assert all(os.path.basename(t).startswith("t.") for t in seen.values()), seen
    assert all(rows[s][0].startswith("dry run") for s in steps), rows


def _gpus(monkeypatch, count: int) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: True)


@pytest.mark.parametrize("count", [0, 1, 2])
def test_the_two_gpu_steps_run_only_where_two_gpus_are(monkeypatch, capsys, tmp_path, count):
    _gpus(monkeypatch, count)
    for path in gpu_two.PATHS:
        code = gpu_two.main([str(tmp_path), "--path", path, "--dry-run"])
        said = capsys.readouterr().out.strip()
        if count < 2:
            assert code == 77 and said == (
                f"skipped: {gpu_two.WHAT[path]} needs 2 GPUs and this machine has {count} "
                "(torch.cuda.device_count())"
            )
        else:
            assert code == 0 and said.startswith(f"would run {gpu_two.WHAT[path]}"), said


@needs_bash
def test_on_two_simulated_gpus_the_check_plans_the_two_gpu_steps(tmp_path):
    rows, _ = dry_run_on_the_simulated_h200(
        tmp_path, GPU_CHECK_SIMULATE_GPUS="2", GPU_CHECK_ONLY=" ".join(TWO_GPU)
    )
    for step in TWO_GPU:
        assert rows[step][0].startswith("dry run"), rows[step]
        assert "would run" in (tmp_path / "out" / "logs" / f"{step}.log").read_text()


def test_the_two_rank_ddp_path_checks_what_chapter_07_teaches(tmp_path, capsys):
    """Its code with gloo on two CPU processes: both launchers, every rank checked."""
    assert gpu_two.main([str(tmp_path), "--path", "ddp", "--backend", "gloo"]) == 0
    out = capsys.readouterr().out
    assert "spawn: 2 ranks, backend gloo on cpu, cpu" in out and "WRONG" not in out
    assert out.strip().endswith("2 of 2 launches of chapter 07's DDP worker, 2 ranks as taught")
    result = gpu_two.ddp_worker.LaunchResult(
        gpu_two.config_for(tmp_path, "spawn", "gloo", "ddp"),
        [torch.load(tmp_path / "spawn" / f"rank{r}.pt") for r in (0, 1)],
        1.0,
        "spawn",
    )
    assert gpu_two.ddp_problems(result, "gloo") == []
    assert gpu_two.ddp_problems(result, "nccl")[:1] == [
        "rank 0 ran with backend gloo on cpu, not nccl on cuda:0"
    ]
