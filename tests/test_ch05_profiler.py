"""Chapter 05's PyTorch tools: torch.profiler (a trace produced, parsed and drawn; its split against
the course's timer), torch.utils.benchmark, and the sync points (CPU parts here, CUDA parts on a
GPU). No timing is asserted: only what the tools record and how the course reads it."""

import ast
import gc
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.profiler import record_function
from torch.utils.data import DataLoader, TensorDataset

from course_lib import ch05_speedups as ch
from course_lib import data, profiling, training
from course_lib.checks import profiles
from course_lib.checks.base import rebuild
from course_lib.declared import ch05_speedups as declared
from course_lib.exercises import CORRECT, INCORRECT, Fail, wire
from course_lib.key import ch05_speedups as key

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def profiled():
    """Three labelled steps of a small model, profiled:
    (profiler, LoopTimes, trace path, events)."""
    torch.manual_seed(0)
    loader = DataLoader(
        TensorDataset(torch.randn(96, 64), torch.randint(0, 10, (96,))), batch_size=32
    )
    model = training.digits_mlp()
    step = training.stepper(
        model,
        torch.optim.Adam(model.parameters()),
        nn.CrossEntropyLoss(),
        "cpu",
        phase=record_function,
    )
    prof, times = profiling.profile_training(step, loader, "cpu", steps=3)
    path = profiling.export_trace(prof, "test_ch05_trace.json")
    return prof, times, path, profiling.trace_events(path)


def test_the_trace_is_written_and_parsed_into_labelled_events(profiled):
    _, times, path, events = profiled
    assert path.exists() and path.stat().st_size > 0 and len(times.wait_ms) == 3
    spans = profiling.spans(events)
    assert [name for name, _, _ in spans].count("forward") == 3
    for phase in profiling.PHASES:
        assert sum(name == phase for name, _, _ in spans) == 3, phase
    assert all(start >= 0 and ms > 0 for _, start, ms in spans)
    lanes = profiling.lanes(events)
    assert list(lanes) == list(profiling.PHASES) and all(len(bars) == 3 for bars in lanes.values())


def test_the_trace_adds_up_as_the_profiler_itself_does(profiled):
    prof, _, _, events = profiled
    from_trace, from_table = profiling.phase_totals(events), profiling.label_totals(prof)
    for phase in profiling.PHASES:
        assert math.isclose(from_trace[phase], from_table[phase], rel_tol=1e-3, abs_tol=2e-3), phase
    assert all(v > 0 for v in from_trace.values())


def test_the_profiler_and_the_course_timer_measure_the_same_wait(profiled):
    _, times, _, events = profiled
    totals = profiling.phase_totals(events)
    # the "data" label wraps the same next() call the course's clock reads: it cannot be longer
    assert totals["data"] <= sum(times.wait_ms) * 1.001 + 0.01
    text = profiling.compare_splits(totals, times)
    assert "torch.profiler (labels): data" in text and "course timer (perf_counter): wait" in text


def test_the_timeline_is_drawn_from_the_events(profiled):
    fig = profiling.plot_timeline(profiled[3])
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(reversed(profiling.PHASES))
    assert len(ax.collections) == 4


def test_a_gpu_kernel_lane_appears_for_kernel_events(profiled):
    events = profiled[3] + [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "volta_sgemm",
            "ts": profiling.first_time(profiled[3]) + 10.0,
            "dur": 5.0,
        }
    ]
    assert profiling.lanes(events)["GPU kernels"] == [(0.01, 0.005)]


def test_the_table_is_sorted_by_self_time(profiled):
    prof = profiled[0]
    assert profiling.sort_key("cpu") == "self_cpu_time_total"
    assert profiling.sort_key("cuda") == "self_device_time_total"
    table = profiling.top_operators(prof, "cpu", rows=5)
    assert "Self CPU" in table
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    assert rows[0].key[:30] in table.splitlines()[1]  # the first row under the header


@pytest.mark.parametrize("collector_on", [True, False])
def test_the_averages_are_read_with_the_collector_paused_and_it_is_restored(profiled, collector_on):
    class Spy:  # stands in for a profile: records whether the collector ran during the call
        def key_averages(self):
            self.seen = gc.isenabled()
            return profiled[0].key_averages()

    spy, was_on = Spy(), gc.isenabled()
    (gc.enable if collector_on else gc.disable)()
    try:
        averages = profiling.averages(spy)
        assert spy.seen is False and gc.isenabled() is collector_on
    finally:
        (gc.enable if was_on else gc.disable)()
    assert {e.key for e in averages} == {e.key for e in profiled[0].key_averages()}


def test_the_trace_file_is_parsed_with_the_collector_paused(profiled, monkeypatch):
    seen, loads = [], profiling.json.loads
    monkeypatch.setattr(
        profiling.json, "loads", lambda text: seen.append(gc.isenabled()) or loads(text)
    )
    was_on = gc.isenabled()
    gc.enable()
    try:
        events = profiling.trace_events(profiled[2])
        assert seen == [False] and gc.isenabled()
    finally:
        (gc.enable if was_on else gc.disable)()
    assert len(events) == len(profiled[3])


def test_profiling_leaves_no_kineto_lines_on_stderr(capfd):
    with profiling.profiled("cpu") as prof:
        torch.randn(8, 8) @ torch.randn(8, 8)
    captured = capfd.readouterr()
    assert "profiler_start" not in captured.err and "USDT" not in captured.err
    assert any(e.key == "aten::mm" for e in prof.key_averages())


def test_the_chapter_profile_labels_the_augmented_steps(monkeypatch):
    # what profile_steps keeps judges profile_verdict: no other test of this process may see it
    monkeypatch.setattr(declared, "PROFILE_READING", {})
    train_set = data.digits_split(test_fraction=0.2, seed=0)[0]
    prof, times = ch.profile_steps(ch.AugmentedDigits(train_set), "cpu", steps=2)
    keys = {e.key for e in prof.key_averages()}
    assert set(profiling.PHASES) <= keys and "aten::grid_sampler_2d" in keys
    assert len(times.wait_ms) == 2


# ---------------------------------------------------------------- torch.utils.benchmark
def test_benchmark_timer_beside_time_fn():
    result = ch.timer_vs_time_fn("cpu", n=32, min_run_time=0.01)
    m = result["Timer"]
    assert m.number_per_run >= 1 and len(m.times) >= 1 and m.task_spec.num_threads == 1
    text = ch.show_timer_vs_time_fn(result)
    assert "blocks of" in text and "thread(s)" in text and "7 single timed calls" in text


def test_benchmark_compare_has_a_cell_per_size_and_dtype():
    table = str(
        ch.benchmark_compare(
            "cpu", sizes=(8, 16), dtypes=(torch.float32, torch.bfloat16), min_run_time=0.005
        )
    )
    for text in ("8x8", "16x16", "float32", "bfloat16", "matmul on cpu"):
        assert text in table


def module_level_imports(source: str) -> set:
    """The modules a file imports when it is imported: its top-level imports, those inside
    top-level `if`/`try` blocks too, but not under `if TYPE_CHECKING:`."""
    found, todo = set(), list(ast.parse(source).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody
    return found


def test_no_course_module_imports_torch_utils_benchmark_when_imported():
    """progress(), in every notebook's last cell, imports every chapter module: at module level,
    torch.utils.benchmark (which pulls in setuptools) would cost each notebook 0.1-0.3 s."""
    package = Path(ch.__file__).parent
    heavy = {
        str(path.relative_to(package)): sorted(
            m
            for m in module_level_imports(path.read_text(encoding="utf-8"))
            if m.startswith("torch.utils.benchmark")
        )
        for path in sorted(package.rglob("*.py"))
    }
    assert {path: names for path, names in heavy.items() if names} == {}
    sample = "from torch.utils import benchmark\nif TYPE_CHECKING:\n    import setuptools\n"
    assert module_level_imports(sample) == {"torch.utils", "torch.utils.benchmark"}


BENCHMARK_WITHOUT_SETUPTOOLS = """
import sys
from course_lib import ch05_speedups as ch
ch.timer_vs_time_fn("cpu", n=8, min_run_time=0.001)
print("setuptools" in sys.modules)
from torch.utils import cpp_extension
print(callable(cpp_extension.load), "setuptools" in sys.modules)
"""


def test_torch_utils_benchmark_leaves_setuptools_until_a_cpp_timer_needs_it():
    """The chapter's Timer runs without setuptools; torch.utils.cpp_extension still loads in full
    (and imports it) at the first use of one of its names. A fresh process: pytest has imported
    setuptools already."""
    out = subprocess.run(
        [sys.executable, "-c", BENCHMARK_WITHOUT_SETUPTOOLS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(Path(ch.__file__).parent.parent),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "True"]


def test_the_timer_threads_are_restored():
    before = torch.get_num_threads()
    ch.timer_vs_time_fn("cpu", n=16, min_run_time=0.005)
    assert torch.get_num_threads() == before


# ---------------------------------------------------------------- sync points
def test_item_loops_train_the_same_way_on_the_cpu():
    timings = ch.item_loops("cpu", steps=3, batch=8, width=8)
    assert list(timings) == [".item() every step", "summed on the device, .item() once"]
    assert all(len(t.ms) == 3 for t in timings.values())
    assert "summing on the device:" in ch.show_item_loops(timings)


@cuda_only
def test_reading_a_nonblocking_copy_after_its_event_is_always_right():
    counts = ch.readback_race(torch.device("cuda"), n=2**20, rounds=3, work=2048)
    assert len(counts) == 3 and all(late == 0 for _, late in counts)


@cuda_only
def test_sync_debug_mode_finds_the_item_and_the_mask():
    found = ch.hidden_syncs(torch.device("cuda"), steps=2)
    assert any(".item()" in line for line in found) and any("[y > 4]" in line for line in found)
    assert torch.cuda.get_sync_debug_mode() == 0


# ---------------------------------------------------------------- the exercise reads a real trace
def test_phase_ms_checker_uses_the_profilers_own_totals():
    events, want = profiles.tiny_profile(2, seed=4)
    assert set(want) == set(profiling.PHASES) and all(v > 0 for v in want.values())
    assert profiling.phase_totals(events).keys() == want.keys()
    cuda = profiles.as_cuda_trace(events)
    assert sum(e.get("cat") == "gpu_user_annotation" for e in cuda) == sum(
        e.get("cat") == "user_annotation" for e in events
    )


def test_phase_ms_the_child_reads_the_judges_trace_and_the_judge_its_own_totals():
    """The judge makes the profile; its events are the test's input (plain data through the
    wire); the child's copy of the check reads exactly those; the verdict compares with the
    judge's totals."""
    judge_side = profiles.PhaseMs(2, seed=6)
    builder, inputs = judge_side.for_child()
    child_side = rebuild(builder, wire.loads(wire.dumps(inputs)))
    assert builder == "profiles.PhaseMs" and child_side.events == judge_side.events
    right = wire.roundtrip(child_side.run(key.phase_ms))
    judge_side.judge(right, judge_side.reference_value(None))  # passes
    assert set(right) == {"returned"}  # the child reports what the function returned, nothing else
    other = [
        dict(e, dur=e["dur"] * 2) if "dur" in e else e for e in child_side.events
    ]  # another trace
    with pytest.raises(Fail, match="differ from what the profiler"):
        judge_side.judge({"returned": key.phase_ms(other)}, judge_side.reference_value(None))


def test_phase_ms_from_the_reference_and_a_variant():
    def written_differently(events):
        out = {}
        for e in (e for e in events if e.get("ph") == "X"):
            if e.get("cat") == "user_annotation" and e["name"] in (
                "data",
                "forward",
                "backward",
                "step",
            ):
                out[e["name"]] = out.get(e["name"], 0) + e["dur"] * 1e-3
        return {p: out.get(p, 0.0) for p in ("data", "forward", "backward", "step")}

    assert (
        ch.phase_ms.check(written_differently, include_hidden=True, record=False).status == CORRECT
    )
    assert (
        ch.phase_ms.check(lambda events: {"data": 1.0}, include_hidden=True, record=False).status
        == INCORRECT
    )
