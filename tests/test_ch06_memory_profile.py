"""Chapter 06's PyTorch memory tools: the profiler's memory view and timeline on the CPU (set beside
the course's estimate), the memory viewer's HTML page, the snapshot reader; the CUDA snapshot and
the allocator's fragmentation counters on a GPU."""

import pytest
import torch
from matplotlib.figure import Figure

from course_lib import ch06_out_of_memory as ch
from course_lib import data, memory, profiling

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def train_set():
    return data.digits_split(test_fraction=0.2, seed=0)[0]


@pytest.fixture(scope="module")
def profiled(train_set):
    prof, estimated = ch.profiled_step("cpu", train_set, batch_size=128, steps=2)
    return prof, estimated, profiling.memory_timeline(prof, "cpu")


def test_the_timeline_names_its_columns_as_chapter_06_does(profiled):
    timeline = profiled[2]
    assert set(memory.COMPONENTS) <= set(timeline["parts"])
    lengths = {len(values) for values in timeline["parts"].values()}
    assert lengths == {len(timeline["ms"])} and len(timeline["ms"]) > 10
    assert timeline["ms"][0] == 0 and timeline["ms"] == sorted(timeline["ms"])


def test_the_profiler_counts_weights_and_adam_as_the_estimate_does(profiled):
    _, estimated, timeline = profiled
    between = profiling.at_end(
        timeline
    )  # after the last step: weights, gradients, Adam's state, the batch
    assert between["weights"] == estimated["weights"] and between["grads"] == estimated["grads"]
    parameter_tensors = (
        6  # 3 Linear layers, weight and bias each: one 4-byte Adam step counter per tensor
    )
    assert between["optimizer_state"] == estimated["optimizer_state"] + 4 * parameter_tensors
    peak = profiling.at_peak(timeline)
    assert peak["activations"] > 0 and peak["inputs (the batch)"] > 0
    assert sum(peak.values()) > sum(between.values())


def test_the_timeline_records_said_deprecation_text_as_a_string(profiled):
    assert isinstance(profiled[2]["said"], str)


def test_timeline_plot_and_table(profiled):
    prof, estimated, timeline = profiled
    fig = profiling.plot_memory_timeline(timeline, estimate=estimated)
    assert isinstance(fig, Figure) and fig.axes[0].get_legend() is not None
    html = ch.timeline_vs_estimate(timeline, estimated).data
    for text in ("the course&#x27;s estimate", "profiler, at its peak", "optimizer state", "total"):
        assert text in html
    assert "Self CPU Mem" in profiling.memory_table(prof, "cpu")


def test_the_memory_viewer_page_holds_the_profile(profiled):
    path = profiling.memory_html(profiled[0], "test_ch06_memory.html")
    text = path.read_text()
    assert "MemoryViz.js" in text and "snapshot.pickle" in text and len(text) > 10_000


def test_the_snapshot_reader_on_a_real_profile_shaped_snapshot(profiled):
    from torch.cuda import _memory_viz

    snapshot = _memory_viz._profile_to_snapshot(profiled[0])
    snapshot["device_traces"][-1].append(
        {"action": "oom", "size": 3 * 2**20, "device_free": 2**20, "frames": []}
    )
    facts = ch.read_snapshot(snapshot)
    assert (
        facts["asked for at the OOM"] == 3 * 2**20
        and facts["free on the GPU at the OOM (CUDA's count)"] == 2**20
    )
    assert facts["events recorded"] > 10 and facts["segments held"] >= 1
    assert "3.00 MiB" in ch.snapshot_table(facts).data


def test_a_snapshot_without_an_oom_says_none():
    facts = ch.read_snapshot(
        {
            "segments": [
                {
                    "total_size": 2**21,
                    "blocks": [
                        {"size": 2**20, "state": "active_allocated"},
                        {"size": 2**20, "state": "inactive"},
                    ],
                }
            ],
            "device_traces": [[]],
        }
    )
    assert facts["asked for at the OOM"] is None
    assert facts["largest free block"] == facts["in tensors (active blocks)"] == 2**20


@cuda_only
def test_a_real_oom_snapshot_holds_its_oom_event():
    path, message = ch.snapshot_oom(torch.device("cuda"), limit_bytes=2**30)
    facts = ch.read_snapshot(ch.load_snapshot(path))
    assert "out of memory" in message.lower() and facts["asked for at the OOM"] > 0
    assert ch.snapshot_html(path).stat().st_size > 0


@cuda_only
def test_expandable_segments_change_the_counters_and_are_switched_back():
    results = ch.fragmentation_demo(torch.device("cuda"))
    plain, expandable = results["expandable_segments:False"], results["expandable_segments:True"]
    assert plain["inactive_split_bytes.all.current"] > 0 and plain["segment.all.current"] == 2
    assert expandable["reserved_bytes.all.current"] < plain["reserved_bytes.all.current"]
