"""Chapter 08: FSDP2 in 2 real gloo processes launched by torchrun (each rank holds 1/N of the
parameters, within one layer's rounding; the losses and weights are DDP's), what the ranks record,
the arithmetic of the ZeRO table, and the exercise's reference against real runs of other sizes."""

import math
from types import SimpleNamespace

import pytest

from course_lib import ch08_sharding as ch
from course_lib import ddp_worker, sharding
from course_lib.checks.base import rebuild
from course_lib.checks.sharding import RankBytes
from course_lib.exercises import NOT_ATTEMPTED, Fail, wire
from course_lib.key import ch08_sharding as key
from course_lib.memory import format_bytes


@pytest.fixture(scope="module")
def run():
    """The chapter's run with 255 hidden units: 255
    rows do not divide by 2 (rank 0 gets one more row)."""
    return ddp_worker.launch_torchrun(ch.run_config(hidden=255))


def test_each_rank_holds_one_nth_of_the_parameters_within_one_layers_rounding(run):
    total = run.ranks[0]["total_parameters"]
    assert total == 64 * 255 + 255 + 255 * 10 + 10
    counts = [r["holds"]["FSDP"]["parameter_count"] for r in run.ranks]
    assert sum(counts) == total and len(counts) == 2
    one_row = max(
        math.prod(full[1:]) + 1 for _, full, _ in run.ranks[0]["shards"] if len(full) == 2
    )  # a row + its bias
    assert all(abs(c - total / 2) <= one_row for c in counts), counts
    assert counts[0] - counts[1] == 64 + 1  # rank 0 holds row 128 of Linear(64, 255), and its bias
    for r in run.ranks:
        assert r["holds"]["DDP"]["parameter_count"] == total and r["backend"] == "gloo"


def test_fsdp_trains_what_ddp_trains(run):
    for r in run.ranks:
        ddp, fsdp = r["losses"]["DDP"], r["losses"]["FSDP"]
        assert len(ddp) == len(fsdp) == 3 and max(abs(a - b) for a, b in zip(ddp, fsdp)) < 1e-5
        assert r["weights_gap"] < 1e-5
    assert (
        run.ranks[0]["losses"]["DDP"] != run.ranks[1]["losses"]["DDP"]
    )  # each rank its own batches


def test_the_bytes_halve_with_the_rows_and_adam_keeps_its_counters_whole(run):
    for r in run.ranks:
        ddp, fsdp = r["holds"]["DDP"], r["holds"]["FSDP"]
        assert ddp["parameters"] == ddp["gradients"] == 4 * r["total_parameters"]
        assert fsdp["parameters"] == fsdp["gradients"] == 4 * fsdp["parameter_count"]
        assert ddp["optimizer_state"] == 2 * ddp["parameters"] + 4 * 4
        assert fsdp["optimizer_state"] == 2 * fsdp["parameters"] + 4 * 4
    shapes = [full for _, full, _ in run.ranks[0]["shards"]]
    for r in run.ranks:  # the exercise's reference says what the live run measured
        want = key.rank_bytes(shapes, 2, r["rank"], True)
        assert all(want[p] == r["holds"]["FSDP"][p] for p in sharding.PARTS)


def test_the_profiler_saw_each_runs_collectives(run):
    sent = run.ranks[0]["sent"]
    total, mine = run.ranks[0]["total_parameters"], run.ranks[0]["holds"]["FSDP"]["parameter_count"]
    assert [name for name, _ in sent["DDP"]] == ["gloo:all_reduce"] and sum(
        n for _, n in sent["DDP"]
    ) == total
    gathers = [n for name, n in sent["FSDP"] if name == "gloo:all_gather"]
    assert (
        len(gathers) == 4 and sum(gathers) == 2 * mine
    )  # each layer's rows, in forward and in backward
    assert "all_gather" in ch.collectives_report(run)


def test_reports_and_the_plot(run):
    total = run.ranks[0]["total_parameters"]
    counts = [r["holds"]["FSDP"]["parameter_count"] for r in run.ranks]
    assert all(f"{c:,} of {total:,} parameters" in ch.describe_shards(run) for c in counts)
    assert "largest |difference|" in ch.losses_report(run) and "FSDP / DDP" in ch.bytes_report(run)
    fig = ch.plot_bytes(run)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [
        "parameters",
        "gradients",
        "Adam's state",
    ]


def test_zero_table_and_ring_arithmetic():
    assert ch.ring_numbers(1000, 2) == {"DDP": 1000.0, "FSDP": 1500.0}
    assert ch.ring_numbers(800, 8) == {"DDP": 1400.0, "FSDP": 2100.0}
    table = ch.zero_table([(1024,)], 4)
    assert "16.00 KiB" in table.splitlines()[2] and table.splitlines()[-1].endswith("4.00 KiB")
    # 8 ranks: torch.chunk gives Linear(256, 10)'s 10 rows as 2, 2, 2, 2, 2, 0, 0, 0
    assert ch.rank0_share(ch.CHAPTER_SHAPES, 8) == 32 * 64 + 32 + 2 * 256 + 2 == 2594
    last = ch.zero_table(ch.CHAPTER_SHAPES, 8).splitlines()[-1]
    assert last.endswith(format_bytes(16 * 2594))  # not 19,210 / 8 = 2,401.25 numbers


def test_the_task_travels_on_torchrun_s_command_line(monkeypatch):
    config = ch.run_config()
    line = ddp_worker.torchrun_command(config, "python")
    assert line[3:7] == ["--nnodes", "1", "--nproc-per-node", "2"] and line[-2:] == [
        "--task",
        "shard",
    ]
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert ddp_worker.parse_config(ddp_worker.worker_arguments(config)).task == "shard"
    with pytest.raises(ValueError, match="unknown task"):
        ddp_worker.task_function("nope")


def test_measured_holdings_agree_with_the_reference_on_other_sizes():
    shapes = ((5, 3), (5,), (2, 5), (2,))
    runs = sharding.measure_holdings(shapes, 3)
    for rank, found in enumerate(runs):
        for sharded, name in ((False, "DDP"), (True, "FSDP")):
            assert key.rank_bytes(list(shapes), 3, rank, sharded) == found[name], (rank, name)
    assert runs[2]["FSDP"]["parameters"] == 4 * (
        1 * 3 + 1 + 0 + 0
    )  # 5 rows -> 2, 2, 1; 2 rows -> 1, 1, 0


def test_a_stub_is_not_attempted_without_starting_processes(monkeypatch):
    monkeypatch.setattr(
        sharding, "measure_holdings", lambda *a: pytest.fail("the stub must not start a run")
    )

    def rank_bytes(shapes, world_size, rank, sharded):
        raise NotImplementedError

    assert ch.rank_bytes.check(rank_bytes, record=False).status == NOT_ATTEMPTED


def test_the_child_only_predicts_and_the_judge_measures(monkeypatch):
    """The run half calls the function for every rank, DDP then FSDP, and starts no process; what
    it reports is the predictions (plain data through the wire). The judge's reference is its own
    run."""
    test = RankBytes(((5, 3), (5,)), 3, " (t)")
    builder, inputs = test.for_child()
    child = rebuild(builder, wire.loads(wire.dumps(inputs)))
    calls = []

    def spy(shapes, world_size, rank, sharded):
        calls.append((world_size, rank, sharded))
        return key.rank_bytes(shapes, world_size, rank, sharded)

    with monkeypatch.context() as m:
        m.setattr(
            sharding, "measure_holdings", lambda *a: pytest.fail("the run half must not measure")
        )
        seen = wire.roundtrip(child.run(spy))
    assert calls == [(3, r, s) for s in (False, True) for r in range(3)]
    assert seen == [
        key.rank_bytes([(5, 3), (5,)], 3, r, s) for s in (False, True) for r in range(3)
    ]
    measured = test.reference(None)
    assert measured == [
        found["FSDP" if s else "DDP"]
        for s in (False, True)
        for found in sharding.measure_holdings(((5, 3), (5,)), 3)
    ]
    test.judge(seen, measured)  # the reference passes against the measured bytes
    lying = [dict(row, parameters=row["parameters"] + 4) for row in seen]
    with pytest.raises(Fail, match="not what the rank really holds"):
        test.judge(lying, measured)


@pytest.fixture
def one_gpu_gloo(monkeypatch, tmp_path):
    """A world-size-1 gloo group on a machine faked to have one GPU (the accelerator is cuda), and
    the device_type of every mesh fully_shard was given or built by default."""
    import torch
    import torch.distributed as dist
    import torch.distributed.fsdp as fsdp
    from torch.distributed.fsdp._fully_shard import _fsdp_init

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch._C, "_get_accelerator", lambda: torch.device("cuda"))
    # torch 2.15's optimizer step asks the accelerator's stream whether a CUDA graph is being
    # captured: on the faked GPU, none is (the real call would start CUDA)
    not_capturing = SimpleNamespace(is_capturing=lambda: False)
    monkeypatch.setattr(torch.accelerator, "current_stream", lambda *a: not_capturing)
    seen, real = [], fsdp.fully_shard

    def default_mesh(*args, **kwargs):
        seen.append("cuda")  # what FSDP2 builds when given no mesh: the accelerator's
        raise RuntimeError("CUDA error: invalid device ordinal")

    def recording(module, **options):
        if options.get("mesh") is not None:
            seen.append(options["mesh"].device_type)
        return real(module, **options)

    monkeypatch.setattr(_fsdp_init, "_init_default_mesh", default_mesh)
    monkeypatch.setattr(fsdp, "fully_shard", recording)
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    yield seen
    dist.destroy_process_group()


def test_the_mesh_is_built_on_the_runs_device_not_the_accelerator(one_gpu_gloo):
    import torch
    from torch import nn

    model = sharding.shard(nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2)), torch.device("cpu"))
    assert one_gpu_gloo == ["cpu"] * 3  # two layers and the root, all on the gloo run's CPU
    assert all(sharding.local(p).device.type == "cpu" for p in model.parameters())
    found = sharding.HoldingsTask([(3, 2)])(0, 1)
    assert one_gpu_gloo[3:] == ["cpu"] and found["FSDP"]["parameters"] == 4 * 6


def test_reshard_after_forward_false_gathers_once_and_keeps_the_whole_layers_until_backward(run):
    r = run.ranks[0]
    total, mine = r["total_parameters"], r["holds"]["FSDP"]["parameter_count"]
    kept = "FSDP, reshard_after_forward=False"
    gathers = {
        name: [n for c, n in r["sent"][name] if c.endswith("all_gather")] for name in ("FSDP", kept)
    }
    assert len(gathers["FSDP"]) == 4 and len(gathers[kept]) == 2  # forward only: ZeRO-2's traffic
    assert sum(gathers[kept]) == mine
    assert r["after_forward"] == {"FSDP": 4 * mine, kept: 4 * total}  # whole layers held
    assert r["holds"][kept] == r["holds"]["FSDP"]  # between steps both hold 1/N
    assert r["losses"][kept] == pytest.approx(r["losses"]["DDP"], abs=1e-5)
    report = ch.reshard_report(run)
    assert "2 all-gather(s)" in report and "4 all-gather(s)" in report


@pytest.fixture
def cpu_gloo(tmp_path):
    """A world-size-1 gloo group on the CPU."""
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    yield
    dist.destroy_process_group()


def test_fsdp2_trains_on_the_cpu_with_torch_2_6s_cpu_streams(cpu_gloo, monkeypatch):
    """torch 2.6's torch.cpu.Stream has no record_event / wait_event, which FSDP2 calls at every
    all-gather: chapter 08's gloo run failed there on its first forward."""
    import torch
    from torch import nn

    for name in ("record_event", "wait_event"):
        monkeypatch.delattr(torch.cpu.Stream, name, raising=False)
    model = sharding.shard(nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2)), torch.device("cpu"))
    model(torch.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    assert torch.cpu.Stream().record_event() is None  # as 2.13's and 2.15's own no-op
