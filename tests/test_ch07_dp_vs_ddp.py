"""Chapter 07: the real DDP run (spawn and torchrun), its clean-up, and the traffic model behind the widget."""
import multiprocessing
import time

import pytest
import torch

from course_lib import ch07_dp_vs_ddp as ch
from course_lib import ddp_worker, training
from course_lib.memory import weight_bytes

BERT_BASE = "Transformer encoder 12 x 768 (BERT-base-sized), 128 tokens"


# ---------------------------------------------------------------- the real runs
@pytest.fixture(scope="module")
def run():
    return ch.run_ddp(world_size=2, per_device_batch=32, steps=3)


def test_two_processes_each_with_its_own_shard(run):
    assert [r["rank"] for r in run.ranks] == [0, 1]
    assert len({r["pid"] for r in run.ranks}) == 2
    shards = [r["shard"] for r in run.ranks]
    assert shards == [ch.sampler_indices(len(ddp_worker.train_set()), rank, 2) for rank in (0, 1)]
    assert not set(shards[0]) & set(shards[1])
    assert run.ranks[0]["losses"] != run.ranks[1]["losses"]   # different samples, different losses


def test_backward_all_reduces_to_the_mean_of_the_local_gradients(run):
    for step in range(run.config.steps):
        local = [r["local_grads"][step] for r in run.ranks]
        synced = [r["synced_grads"][step] for r in run.ranks]
        assert ch.max_abs_diff(local[0], local[1]) > 1e-4
        assert ch.max_abs_diff(synced[0], synced[1]) == 0
        assert ch.max_abs_diff(synced[0], ch.mean_of(local)) < 1e-6


def test_ddp_equals_one_process_on_the_full_batch_and_not_on_one_shard(run):
    cmp = ch.compare_with_single_process(run)
    assert cmp["full_batch"] == ch.effective_batch_size(32, 2) == 64
    assert cmp["grads_vs_full_batch"] < 1e-6
    assert cmp["weights_vs_full_batch"] < 1e-6
    assert cmp["weights_between_ranks"] == 0
    assert cmp["weights_vs_per_device_batch"] > 1e-3


def test_rank0_checkpoint_has_no_module_prefix_and_loads_into_a_plain_model(run):
    state = torch.load(run.checkpoint)
    assert not any(k.startswith("module.") for k in state)
    plain = ddp_worker.make_model(run.config)
    plain.load_state_dict(state)
    assert ch.max_abs_diff(plain.state_dict(), run.ranks[1]["weights"]) == 0
    assert sorted(p.name for p in run.checkpoint.parent.iterdir()) == ["checkpoint.pt", "rank0.pt", "rank1.pt"]


def test_no_process_is_left_behind(run):
    assert not multiprocessing.active_children()


def test_a_failing_rank_fails_the_launch_quickly_and_leaves_no_process():
    start = time.perf_counter()
    report = ch.failure_demo(deadline_s=60)
    assert time.perf_counter() - start < 45
    assert "raised ProcessRaisedException" in report and "rank 1 failed on purpose" in report
    assert report.endswith("still running: 0")
    assert not multiprocessing.active_children()


def test_a_run_past_its_deadline_is_killed():
    with pytest.raises(TimeoutError, match="killed"):
        ddp_worker.launch_spawn(deadline_s=0.3)
    assert not multiprocessing.active_children()


def test_torchrun_runs_the_same_training(run):
    by_torchrun = ddp_worker.launch_torchrun(ddp_worker.DDPConfig(world_size=2, per_device_batch=32, steps=3))
    envs = [r["env"] for r in by_torchrun.ranks]
    assert [e["RANK"] for e in envs] == ["0", "1"] and [e["LOCAL_RANK"] for e in envs] == ["0", "1"]
    assert {e["WORLD_SIZE"] for e in envs} == {"2"}
    assert ch.max_abs_diff(by_torchrun.ranks[0]["weights"], run.ranks[0]["weights"]) == 0


def test_torchrun_command_names_the_module_and_the_port():
    config = ddp_worker.DDPConfig(out_dir="/tmp/x", port=29511, backend="gloo")
    line = " ".join(ddp_worker.torchrun_command(config))
    assert line.startswith("torchrun --nnodes=1 --nproc_per_node=2 --master_addr=127.0.0.1 --master_port=29511")
    assert "-m course_lib.ddp_worker --out /tmp/x" in line


def test_worker_arguments_round_trip(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_PORT", "29512")
    config = ddp_worker.DDPConfig(out_dir="/tmp/y", per_device_batch=8, steps=5, lr=0.1, hidden=16, seed=3,
                                  backend="gloo", port=29512, fail_rank=1)
    assert ddp_worker.parse_config(ddp_worker.worker_arguments(config)) == config


def test_backend_follows_the_gpus():
    want = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= 2 else "gloo"
    assert ddp_worker.pick_backend(2) == want
    assert ddp_worker.pick_backend(10 ** 6) == "gloo"


def test_multi_gpu_cells_print_a_visible_marker(capsys):
    if ch.gpus_available() >= 2:
        pytest.skip("this machine has 2+ GPUs")
    assert ch.multi_gpu_only(2, "something") is False
    assert "[GPU only] skipped" in capsys.readouterr().out


# ---------------------------------------------------------------- the traffic model behind the widget
@pytest.mark.parametrize("n", range(1, 9))
def test_ring_all_reduce_sends_2_n_minus_1_over_n_model_bytes_per_device(n):
    work = ch.workload(BERT_BASE)
    assert ch.ring_allreduce_bytes(1000, n) == pytest.approx(2 * (n - 1) / n * 1000)
    per_device = ch.traffic(ch.ddp_phases(work, n, 32), n)
    ring = 2 * (n - 1) / n * work.param_bytes
    assert per_device == [(pytest.approx(ring), pytest.approx(ring))] * n


@pytest.mark.parametrize("n", [2, 3, 8])
def test_dataparallel_main_gpu_carries_everything(n):
    work, b = ch.workload(BERT_BASE), 32
    dp = ch.traffic(ch.dp_phases(work, n, b), n)
    chunk_in, chunk_out, p = b * work.input_bytes, b * work.output_bytes, work.param_bytes
    assert dp[0] == ((n - 1) * (chunk_in + p + chunk_out), (n - 1) * (chunk_out + p))
    assert dp[1:] == [(chunk_out + p, chunk_in + p + chunk_out)] * (n - 1)
    assert sum(s for s, _ in dp) == sum(r for _, r in dp)


def test_main_gpu_bottleneck_grows_with_the_number_of_gpus():
    work = ch.workload(BERT_BASE)
    ratios = [ch.busiest(ch.step_traffic(work, n, 32)["DataParallel"]) /
              ch.busiest(ch.step_traffic(work, n, 32)["DistributedDataParallel"]) for n in (2, 4, 8)]
    assert ratios == sorted(ratios) and ratios[-1] > 3


def test_workload_sizes_come_from_the_real_models():
    assert ch.workload(list(ch.MODELS)[0]).param_bytes == weight_bytes(training.digits_mlp(64))
    for name, (build, sample_in, sample_out) in ch.MODELS.items():
        model = ch.build_on_meta(name)
        assert all(p.device.type == "meta" for p in model.parameters())
        if "MLP" in name:  # the transformers' meta forward is slow; their shapes are (tokens, width) by design
            with torch.no_grad():
                assert tuple(model(torch.empty(2, *sample_in, device="meta")).shape) == (2, *sample_out)
    assert 80e6 < ch.workload(BERT_BASE).param_bytes / 4 < 90e6   # BERT-base's encoder: about 85M parameters


def test_phase_diagram_names_every_device_and_copy():
    work = ch.workload(BERT_BASE)
    html = ch.phase_html("DistributedDataParallel", 2, work, 4, 32)
    assert "backward + all-reduce" in html and html.count("cuda:3 &rarr; cuda:0") == 1
    assert "cuda:0 (main)" in ch.phase_html("DataParallel", 1, work, 4, 32)
    assert "no copies between GPUs" in ch.phase_html("DataParallel", 2, work, 4, 32)


def test_stepper_widget_walks_through_the_phases():
    pytest.importorskip("ipywidgets")
    w = ch.step_through(n=3)
    assert "phase 1 of 8: scatter" in w.diagram.value
    w._move(-1)
    assert w.phase.value == 1
    w.strategy.value = "DistributedDataParallel"
    assert w.phase.max == 4 and "phase 1 of 4: load" in w.diagram.value
    for _ in range(5):
        w._move(+1)
    assert w.phase.value == 4 and "phase 4 of 4: step" in w.diagram.value
    w.n.value = 8
    assert "cuda:7" in w.diagram.value and "busiest GPU" in w.totals.value
