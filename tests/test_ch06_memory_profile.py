"""Chapter 06's PyTorch memory tools: the profiler's memory view and timeline on the CPU (set beside
the course's estimate), the memory viewer's HTML page, the snapshot reader; the CUDA snapshot and
the allocator's fragmentation counters on a GPU."""

import warnings

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


def test_a_frame_name_torch_cannot_decode_still_gives_the_page(profiled, monkeypatch):
    """torch's profiler now and then keeps a frame's name as broken bytes (pytorch#136040)."""
    from torch._C._profiler import _EventType
    from torch.cuda import _memory_viz

    real = _memory_viz._profile_to_snapshot
    python_frames = _EventType.PyCall

    def breaks_on_python_frames(prof):
        if _EventType.PyCall is python_frames:
            raise UnicodeDecodeError("utf-8", b"\xb0", 0, 1, "invalid start byte")
        return real(prof)

    monkeypatch.setattr(_memory_viz, "_profile_to_snapshot", breaks_on_python_frames)
    text = profiling.memory_html(profiled[0], "test_ch06_memory_no_frames.html").read_text()
    assert "snapshot.pickle" in text and len(text) > 10_000
    assert _EventType.PyCall is python_frames  # put back


def test_the_snapshot_reader_on_a_real_profile_shaped_snapshot(profiled):
    from torch.cuda import _memory_viz

    with profiling._python_frames_ignored():  # the frames' names are not what this test reads
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


# (PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF, expandable on torch 2.10+, before 2.10): the new
# name wins when it is set, as c10's AcceleratorAllocatorConfig reads it (the old one only "with
# lower priority"); a torch without that config (2.6 to 2.9) reads only the old name for CUDA
ALLOC_CONF_CASES = (
    ("expandable_segments:True", None, True, False),
    (None, "expandable_segments:True", True, True),
    ("max_split_size_mb:128, expandable_segments : true", None, True, False),
    ("expandable_segments:False", "expandable_segments:True", False, True),
    ("max_split_size_mb:128", "expandable_segments:True", False, True),
    (None, None, False, False),
)


def as_torch(monkeypatch, *, unified: bool) -> None:
    """This torch as 2.10 and newer (the accelerator-wide setter) or as an older one (2.6-2.9)."""
    if unified:
        monkeypatch.setattr(
            torch._C, "_accelerator_setAllocatorSettings", lambda s: None, raising=False
        )
    else:
        monkeypatch.delattr(torch._C, "_accelerator_setAllocatorSettings", raising=False)


@pytest.mark.parametrize("unified", (True, False), ids=("torch2.10+", "torch2.6-2.9"))
@pytest.mark.parametrize("new, old, expected, expected_before", ALLOC_CONF_CASES)
def test_the_allocator_setting_is_read_from_the_names_this_torch_reads(
    new, old, expected, expected_before, unified, monkeypatch
):
    as_torch(monkeypatch, unified=unified)
    for name, value in (("PYTORCH_ALLOC_CONF", new), ("PYTORCH_CUDA_ALLOC_CONF", old)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert ch.expandable_setting() is (expected if unified else expected_before)


def recorded_settings(monkeypatch, *, new_api: bool) -> list:
    """The settings fragmentation_demo passes to the allocator, with a fake GPU."""
    calls = []
    monkeypatch.setattr(ch, "split_pattern", lambda device: {})
    if new_api:
        monkeypatch.setattr(
            torch._C, "_accelerator_setAllocatorSettings", calls.append, raising=False
        )
    else:
        monkeypatch.delattr(torch._C, "_accelerator_setAllocatorSettings", raising=False)
        monkeypatch.setattr(torch.cuda.memory, "_set_allocator_settings", calls.append)
    return calls


@pytest.mark.parametrize("new_api", (True, False), ids=("torch2.10+", "torch2.6-2.9"))
def test_the_fragmentation_demo_puts_back_the_setting_this_torch_read(new_api, monkeypatch):
    """The learner's PYTORCH_ALLOC_CONF is put back where torch read it (2.10 and newer); an older
    torch never read that name, so its allocator had expandable segments off, and off it goes back
    (the old code put back True there, a setting that torch never had)."""
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True")
    calls = recorded_settings(monkeypatch, new_api=new_api)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no FutureWarning from the deprecated setter
        results = ch.fragmentation_demo("cuda")
    assert list(results) == ["expandable_segments:False", "expandable_segments:True"]
    assert calls == [
        "expandable_segments:False",
        "expandable_segments:True",
        f"expandable_segments:{new_api}",  # put back: what this torch read at start-up
    ]


def test_the_deprecated_setter_is_the_one_that_warns(monkeypatch):
    """What the demo avoids: torch 2.13's old setter warns, then calls the new one."""
    if not hasattr(torch._C, "_accelerator_setAllocatorSettings"):
        pytest.skip("an older torch: the old setter is the only one, without a warning")
    calls = []
    monkeypatch.setattr(torch._C, "_accelerator_setAllocatorSettings", calls.append)
    with pytest.warns(FutureWarning, match="_accelerator_setAllocatorSettings"):
        torch.cuda.memory._set_allocator_settings("expandable_segments:False")
    assert calls == ["expandable_segments:False"]
