"""Chapter 07: the real DDP run (torchrun, as the notebook launches it; spawn gives the same), its
clean-up, the device each rank picks, the gloo group behind exercise 2, and the traffic model behind
the widget."""

import gc
import multiprocessing
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

from course_lib import ch07_dp_vs_ddp as ch
from course_lib import ddp_worker, notebooks, processes, training
from course_lib.exercises import Fail
from course_lib.memory import weight_bytes

BERT_BASE = "Transformer encoder 12 x 768 (BERT-base-sized), 128 tokens"


# ---------------------------------------------------------------- the real runs
@pytest.fixture(scope="module")
def run():
    return ch.run_ddp(world_size=2, per_device_batch=32, steps=3, epochs=2)


def real_sampler_order(n, rank, epoch, world=2, seed=0):
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, seed=seed)
    sampler.set_epoch(epoch)
    return list(sampler)


def test_two_processes_each_with_its_own_shuffled_shard_per_epoch(run):
    n = len(ddp_worker.train_set())
    assert [r["rank"] for r in run.ranks] == [0, 1]
    assert len({r["pid"] for r in run.ranks}) == 2
    for epoch in range(2):
        orders = [r["orders"][epoch] for r in run.ranks]
        assert orders == [real_sampler_order(n, rank, epoch) for rank in (0, 1)]
        assert not set(orders[0]) & set(orders[1]) and len(set(orders[0]) | set(orders[1])) == n
    assert (
        run.ranks[0]["orders"][0] != run.ranks[0]["orders"][1]
    )  # set_epoch: a new order each epoch
    assert run.ranks[0]["orders"][0] != ch.sampler_indices(n, 0, 2)  # shuffled, not dealt in order
    assert run.ranks[0]["batches"][3] == run.ranks[0]["orders"][1][:32]  # epoch 1's first batch
    assert run.ranks[0]["losses"] != run.ranks[1]["losses"]  # different samples, different losses


def test_backward_all_reduces_to_the_mean_of_the_local_gradients(run):
    assert len(run.ranks[0]["losses"]) == run.config.steps * run.config.epochs == 6
    for step in range(len(run.ranks[0]["losses"])):
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
    assert sorted(p.name for p in run.checkpoint.parent.iterdir()) == [
        "checkpoint.pt",
        "rank0.pt",
        "rank1.pt",
    ]


def test_no_process_is_left_behind(run):
    assert not multiprocessing.active_children()


@pytest.fixture(scope="module")
def failed():
    """The failure demo's launch (rank 1 raises), run once for the tests that read it, as macOS and
    Windows launch torchrun: a subprocess (every other launch here forks it, as on Linux)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ddp_worker, "torchrun_start_method", lambda: "subprocess")
        return ch.failing_launch(deadline_s=60)


def test_a_failing_rank_fails_the_launch_quickly_and_leaves_no_process(failed):
    report = ch.failure_report(*failed)
    assert failed[1] < 45
    assert report.startswith("torchrun exited with 1") and "rank 1 failed on purpose" in report
    assert "SIGTERM" in report and report.endswith("still running: 0")
    assert not multiprocessing.active_children()


def test_a_failed_torchrun_is_an_error_with_its_output(failed):
    error = failed[0]
    assert error.returncode != 0 and "rank 1 failed on purpose" in error.output
    assert isinstance(error, RuntimeError) and not ddp_worker.group_alive(error.pgid)


def test_the_failure_demo_is_that_launch_and_its_report(monkeypatch, failed):
    monkeypatch.setattr(ch, "failing_launch", lambda deadline_s: failed)
    assert ch.failure_demo() == ch.failure_report(*failed)


def test_a_run_past_its_deadline_is_killed():
    with pytest.raises(TimeoutError, match="killed"):
        ddp_worker.launch_spawn(deadline_s=0.3)
    assert not multiprocessing.active_children()


def test_a_torchrun_past_its_deadline_is_killed(monkeypatch):
    """...and while torchrun ran, this process warmed up (torch._dynamo; warm_up pauses the
    collector, tests/test_engine.py)."""
    collecting = []
    monkeypatch.setattr(ddp_worker, "warm_up", lambda: collecting.append(True))
    with pytest.raises(TimeoutError, match="killed its process group"):
        ddp_worker.launch_torchrun(ddp_worker.DDPConfig(), deadline_s=0.3)
    assert not multiprocessing.active_children()
    assert collecting == [True]


def test_start_torchrun_returns_while_the_run_goes_on_and_wait_keeps_the_deadline(monkeypatch):
    """Chapter 08 starts the run, takes its one-process step, then waits: start_torchrun returns
    at once, the agent still running; wait() kills the run past its deadline, its log closed."""
    monkeypatch.setattr(ddp_worker, "warm_up", lambda: None)  # as if imported: wait() at once
    run = ddp_worker.start_torchrun(ddp_worker.DDPConfig(), deadline_s=0.3)
    assert run.process.is_alive(), "start_torchrun waited for the run"
    time.sleep(0.4)  # work of this process; the deadline passes meanwhile
    with pytest.raises(TimeoutError, match="killed its process group"):
        run.wait()
    assert not multiprocessing.active_children() and run.log.closed


def test_a_run_waited_for_later_takes_the_time_to_its_last_rank_file(tmp_path):
    """Chapter 08 waits cells after the start: the run's seconds end at its last rank's file."""
    config = ddp_worker.DDPConfig(world_size=2, out_dir=str(tmp_path))
    for rank, written in ((0, 1000.0), (1, 1003.5)):
        (tmp_path / f"rank{rank}.pt").write_bytes(b"")
        os.utime(tmp_path / f"rank{rank}.pt", (written, written))
    assert ddp_worker.ran_for(config, started_at=1000.5) == 3.0


def test_an_interrupted_torchrun_launch_leaves_no_process(monkeypatch):
    started = []

    def interrupted():
        started.append(multiprocessing.active_children()[0].pid)
        raise KeyboardInterrupt  # the learner stopped the cell while torchrun ran

    monkeypatch.setattr(ddp_worker, "warm_up", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ddp_worker.launch_torchrun(ddp_worker.DDPConfig())
    assert not multiprocessing.active_children() and not ddp_worker.group_alive(started[0])


def test_meanwhile_a_kernel_imports_what_the_chapter_shows_next_and_freezes_it(monkeypatch):
    """While torchrun runs: torch._dynamo's warm-up, and in a kernel pyplot and ipywidgets with the
    collector paused; a process that froze its imports (a notebook's) freezes them too."""
    import gc
    import sys
    import types

    seen = []
    monkeypatch.setattr(ddp_worker, "warm_up", lambda: seen.append("torch._dynamo"))
    imports = types.SimpleNamespace(import_module=lambda name: seen.append((name, gc.isenabled())))
    monkeypatch.setattr(ddp_worker, "importlib", imports)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    was_frozen = gc.get_freeze_count()
    ddp_worker.meanwhile()  # a script or a test: the warm-up alone, nothing frozen
    assert seen == ["torch._dynamo"] and gc.get_freeze_count() == was_frozen
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    seen.clear()
    gc.freeze()  # as freeze_imports leaves a kernel
    try:
        made_since = [[] for _ in range(1000)]
        frozen = gc.get_freeze_count()
        ddp_worker.meanwhile()
        assert gc.get_freeze_count() >= frozen + len(made_since), "what it imported is frozen"
    finally:
        if not was_frozen:
            gc.unfreeze()
    assert seen == ["torch._dynamo", ("matplotlib.pyplot", False), ("ipywidgets", False)]


AGENT_FROZE = []  # in the forked agent, right after its own gc.freeze(): the objects its
# collections would still scan (0 when everything it shares was frozen)


class _FreezeSpy:
    """ddp_worker's `gc` in the test: each freeze() also records what is left to collect (the
    freeze count itself can fall below the kernel's: the fork's bootstrap frees a few frozen
    objects before the agent freezes)."""

    def __getattr__(self, name):
        import gc

        return getattr(gc, name)

    def freeze(self):
        import gc

        gc.freeze()
        AGENT_FROZE.append(len(gc.get_objects()))


def _say_frozen(arguments):
    print(f"{AGENT_FROZE[-1] if AGENT_FROZE else 'never'} {arguments}", flush=True)


def test_the_forked_agent_freezes_what_it_shares_and_the_kernel_keeps_its_frozen_imports(
    monkeypatch,
):
    """The forked agent's collections leave the kernel's objects (and their pages) be; the
    kernel's own gc.freeze() (freeze_imports, in every notebook's first cell) survives the launch:
    a thawed kernel rescans ~4*10**5 objects in each later full collection (~0.25 s each)."""
    import gc
    import tempfile

    monkeypatch.setattr("torch.distributed.run.main", _say_frozen)
    monkeypatch.setattr(ddp_worker, "torchrun_start_method", lambda: "fork")
    monkeypatch.setattr(ddp_worker, "gc", _FreezeSpy())
    was_frozen = gc.get_freeze_count()
    gc.freeze()  # as freeze_imports leaves a kernel
    try:
        frozen = gc.get_freeze_count()
        with tempfile.TemporaryFile("w+") as log:
            agent = ddp_worker._start_torchrun(["python", "-m", "torch.distributed.run", "x"], log)
            assert ddp_worker._wait(agent, 20) == 0
            log.seek(0)
            in_agent, arguments = log.read().split(maxsplit=1)
        assert gc.get_freeze_count() == frozen, "the launch thawed the kernel's frozen objects"
        # the agent froze: its collections scan almost nothing of the ~10**5 objects it shares
        assert in_agent != "never" and int(in_agent) < 1000 < frozen, in_agent
        assert arguments.strip() == "['x']"
    finally:
        if not was_frozen:
            gc.unfreeze()


def sleeping_launcher(ready):
    """Stands in for torchrun: a session of its own, and a worker in a session of ITS own."""
    os.setsid()
    subprocess.Popen(["sleep", "60"], start_new_session=True)
    ready.set()
    time.sleep(60)


def test_the_kill_past_the_deadline_reaches_the_workers_own_sessions():
    """torchrun starts each worker with start_new_session: killing torchrun's group alone would
    leave them running."""
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    launcher = context.Process(target=sleeping_launcher, args=(ready,))
    launcher.start()
    assert ready.wait(10)
    (worker,) = processes.children(launcher.pid)
    ddp_worker._kill_group(launcher)
    assert launcher.exitcode == -signal.SIGKILL and not multiprocessing.active_children()
    deadline = time.perf_counter() + 5
    while running(worker) and time.perf_counter() < deadline:
        time.sleep(0.05)  # SIGKILL takes effect a moment later
    assert not running(worker), "the worker outlived its torchrun"


def running(pid: int) -> bool:
    """Whether `pid` is alive (a zombie, dead but not yet reaped by whoever adopted it, is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_notebook_run_is_torchrun_and_spawn_trains_the_same(run):
    assert run.how == "torchrun"
    envs = [r["env"] for r in run.ranks]
    assert [e["RANK"] for e in envs] == ["0", "1"] and [e["LOCAL_RANK"] for e in envs] == ["0", "1"]
    assert {e["WORLD_SIZE"] for e in envs} == {"2"}
    by_spawn = ddp_worker.launch_spawn(
        ddp_worker.DDPConfig(world_size=2, per_device_batch=32, steps=3, epochs=2)
    )
    assert {e["RANK"] for r in by_spawn.ranks for e in [r["env"]]} == {
        None
    }  # spawn sets no RANK variable
    assert ch.max_abs_diff(by_spawn.ranks[0]["weights"], run.ranks[0]["weights"]) == 0


def _print_and_end(write_fd):
    os.dup2(write_fd, 1)
    import sys

    sys.stdout = open(1, "w", closefd=False)  # buffered: nothing reaches the pipe before a flush
    print("rank 0: done", end="")
    ddp_worker.end_process()
    raise AssertionError("end_process returned")


def _forked_says(target) -> tuple:
    """(what a forked child running target(write_fd) wrote to the pipe, its exit code)."""
    read_fd, write_fd = os.pipe()
    child = multiprocessing.get_context("fork").Process(target=target, args=(write_fd,))
    child.start()
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        said = pipe.read()
    child.join(10)
    return said, child.exitcode


def test_a_worker_ends_with_its_output_flushed_and_exit_code_0():
    """end_process (the worker's last line, skipping Python's teardown) loses no output and
    exits 0; the worker also collects garbage less often while it imports."""
    assert _forked_says(_print_and_end) == ("rank 0: done", 0)
    main_block = Path(ddp_worker.__file__).read_text().split('if __name__ == "__main__":')[-1]
    assert main_block.split() == ["collect_less_often()", "main()", "end_process()"]


def _collector_after(write_fd: int) -> None:
    """In a forked child: the collector off, as at a worker's start; then collect_less_often."""
    gc.disable()
    ddp_worker.collect_less_often()
    os.write(
        write_fd, repr((gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count() > 0)).encode()
    )
    os._exit(0)


def test_a_worker_imports_torch_with_the_collector_off_and_then_turns_it_back_on():
    """Run as a worker (python -m), the module turns the collector off before `import torch`;
    collect_less_often, the main block's first line, freezes the imports and turns it back on."""
    source = Path(ddp_worker.__file__).read_text()
    head = source[: source.index("import torch")]
    assert 'if __name__ == "__main__":' in head and "gc.disable()" in head
    assert _forked_says(_collector_after) == (repr((True, 100_000, True)), 0)


def test_torchrun_command_names_the_module_and_the_port():
    config = ddp_worker.DDPConfig(out_dir="/tmp/x", port=29511, backend="gloo")
    line = " ".join(ddp_worker.torchrun_command(config))
    assert line.startswith(
        "torchrun --nnodes 1 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port 29511"
    )
    assert "-m course_lib.ddp_worker --out /tmp/x" in line


def test_worker_arguments_round_trip(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_PORT", "29512")
    config = ddp_worker.DDPConfig(
        out_dir="/tmp/y",
        per_device_batch=8,
        steps=5,
        epochs=3,
        lr=0.1,
        hidden=16,
        seed=3,
        backend="gloo",
        port=29512,
        fail_rank=1,
    )
    assert ddp_worker.parse_config(ddp_worker.worker_arguments(config)) == config


def test_backend_follows_the_gpus():
    want = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= 2 else "gloo"
    assert ddp_worker.pick_backend(2) == want
    assert ddp_worker.pick_backend(10**6) == "gloo"


# -------------------------------------------------------------- RANK vs LOCAL_RANK (simulated CUDA)
class Joined(Exception):
    """Stops the worker once it has joined the group: what it chose is all these tests need."""


@pytest.fixture
def fake_gpus(monkeypatch):
    """A machine with 4 CUDA GPUs as torch.cuda reports it; set_device keeps torch's own argument
    check (_get_device_index) and records the index it would make current."""
    current = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch._C, "_cuda_setDevice", current.append, raising=False)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)
    return current


def test_local_device_sets_the_gpu_of_this_machine(fake_gpus):
    assert ddp_worker.local_device(3, "nccl") == torch.device("cuda", 3)
    assert ddp_worker.local_device(3, "gloo") == torch.device("cpu")
    assert fake_gpus == [3]


def test_torchrun_worker_on_the_second_machine_uses_local_rank(fake_gpus, monkeypatch, tmp_path):
    """2 machines x 8 processes: global rank 8 is
    the first process of the second machine: cuda:0."""
    for name, value in {
        "RANK": "8",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "16",
        "LOCAL_WORLD_SIZE": "4",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29513",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    joined = {}

    def init_process_group(backend, **kwargs):
        joined.update(backend=backend, **kwargs)
        raise Joined

    monkeypatch.setattr(dist, "init_process_group", init_process_group)
    with pytest.raises(Joined):
        ddp_worker.main(["--out", str(tmp_path)])
    assert fake_gpus == [0], "the worker must make cuda:LOCAL_RANK its current GPU, before joining"
    assert joined["backend"] == "nccl" and joined["rank"] == 8 and joined["world_size"] == 16


def test_backend_counts_the_processes_of_this_machine(fake_gpus):
    assert ddp_worker.pick_backend(4) == "nccl"  # 4 processes here, 4 GPUs: whatever the world size
    assert ddp_worker.pick_backend(5) == "gloo"


def test_torchrun_ranks_table():
    rows = ch.torchrun_ranks(nodes=2, gpus_per_node=4)
    assert [r["RANK"] for r in rows] == list(range(8)) and {r["WORLD_SIZE"] for r in rows} == {8}
    assert [r["LOCAL_RANK"] for r in rows] == [0, 1, 2, 3] * 2
    assert rows[5] == {
        "machine": 1,
        "RANK": 5,
        "LOCAL_RANK": 1,
        "WORLD_SIZE": 8,
        "device": "cuda:1",
    }


# ---------------------------------------------------------------- DistributedSampler orders
def test_without_set_epoch_every_epoch_repeats_one_order():
    stale = ch.sampler_orders(12, 2, epochs=3, set_epoch=False)
    fresh = ch.sampler_orders(12, 2, epochs=3)
    plain = ch.sampler_orders(12, 2, epochs=2, shuffle=False)
    assert stale[0] == stale[1] == stale[2] == fresh[0]
    assert fresh[1] != fresh[0] and fresh[2] != fresh[1]
    assert plain[0][1] == plain[1][1] == [1, 3, 5, 7, 9, 11]  # r, r + N, ... only without shuffling
    assert fresh[0][1] != plain[0][1]
    for ranks in fresh:  # every epoch: the ranks share out all samples, none twice
        assert sorted(ranks[0] + ranks[1]) == list(range(12))


def test_show_sampler_orders_prints_the_three_settings(capsys):
    ch.show_sampler_orders(n_samples=6, world_size=2, epochs=2)
    out = capsys.readouterr().out
    assert all(label in out for label in ch.SAMPLER_SETTINGS) and out.count("epoch 1:") == 3


# ---------------------------------------------------------------- a task in a real gloo group
def sum_ranks(rank, world_size):
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    return {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": t.item()}


def only_rank_0_reduces(rank, world_size):
    if rank == 0:
        dist.all_reduce(torch.ones(1))
    return rank


def sleeps(rank, world_size):
    time.sleep(60)


@pytest.mark.parametrize("world", [2, 3])
def test_run_in_group_runs_the_task_in_a_real_group(world):
    results = ddp_worker.run_in_group(sum_ranks, world)
    assert results == [
        ("ok", {"rank": r, "world": world, "sum": world * (world + 1) / 2}) for r in range(world)
    ]
    assert not multiprocessing.active_children()


def test_run_in_group_reports_a_collective_only_one_rank_called():
    (status0, text0), (status1, value1) = ddp_worker.run_in_group(only_rank_0_reduces, 2)
    assert (status0, status1, value1) == ("error", "ok", 1) and "RuntimeError" in text0


def test_run_in_group_kills_processes_past_the_deadline():
    start = time.perf_counter()
    with pytest.raises(TimeoutError, match="killed"):
        ddp_worker.run_in_group(sleeps, 2, deadline_s=1)
    assert time.perf_counter() - start < 10 and not multiprocessing.active_children()


def spawned_sum_only(model):  # a learner's answer as a spawned process receives it: by its source
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)


def test_average_check_spawns_with_the_source_where_it_cannot_fork(monkeypatch):
    monkeypatch.setattr(ddp_worker, "group_start_method", lambda: "spawn")
    with pytest.raises(Fail, match="SUM of the 2 ranks"):
        ch.check_average(2)(spawned_sum_only)


def test_average_check_calls_the_stub_not_attempted():
    def average_gradients(model):
        raise NotImplementedError

    assert ch.average_gradients.check(average_gradients, record=False).status == "not attempted"


def test_multi_gpu_cells_print_a_visible_marker(capsys):
    if ch.gpus_available() >= 2:
        pytest.skip("this machine has 2+ GPUs")
    assert ch.multi_gpu_only(2, "something") is False
    assert "[GPU only] skipped" in capsys.readouterr().out


# -------------------------------------------------------------- the traffic model behind the widget
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
    ratios = [
        ch.busiest(ch.step_traffic(work, n, 32)["DataParallel"])
        / ch.busiest(ch.step_traffic(work, n, 32)["DistributedDataParallel"])
        for n in (2, 4, 8)
    ]
    assert ratios == sorted(ratios) and ratios[-1] > 3


def test_workload_sizes_come_from_the_real_models():
    assert ch.workload(list(ch.MODELS)[0]).param_bytes == weight_bytes(training.digits_mlp(64))
    for name, (_build, sample_in, sample_out) in ch.MODELS.items():
        model = ch.build_on_meta(name)
        assert all(p.device.type == "meta" for p in model.parameters())
        if (
            "MLP" in name
        ):  # the transformers' meta forward is slow; their shapes are (tokens, width) by design
            with torch.no_grad():
                assert tuple(model(torch.empty(2, *sample_in, device="meta")).shape) == (
                    2,
                    *sample_out,
                )
    assert (
        80e6 < ch.workload(BERT_BASE).param_bytes / 4 < 90e6
    )  # BERT-base's encoder: about 85M parameters


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


# ---------------------------------------------------------------- what the notebook teaches
def markdown_text():
    return "\n".join(notebooks.markdown("07"))


def test_notebook_teaches_the_caveats_of_data_parallel_training():
    text = markdown_text()
    for needed in (
        "sampler.set_epoch(epoch)",
        "`LOCAL_RANK`",
        "torch.cuda.set_device(local_rank)",
        "SyncBatchNorm",
        "global interpreter lock",
        "divides each gradient by the world size",
    ):
        assert needed in text, needed


def test_the_articles_are_named_by_title_not_as_seeds():
    text = markdown_text()
    assert "seed 00" not in text.lower() and "the seed's" not in text.lower()
    assert "*PyTorch GPU 训练实战*" in text and "*PyTorch GPU训练翻车实录*" in text
