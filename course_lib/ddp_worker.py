"""Chapter 07's real DistributedDataParallel run (and
chapter 08's sharded one): the worker, two launchers.

One process per device, each with a full replica of the model. The worker lives in this
importable module on purpose: ``spawn`` (and ``torchrun``) start fresh Python interpreters
that import the worker by name; a function defined in a notebook cannot be found there.

- ``launch_spawn(config)``: ``torch.multiprocessing`` starts the processes from Python.
- ``python -m course_lib.ddp_worker --out DIR`` under ``torchrun --nproc-per-node 2``:
  torchrun starts them and passes RANK / LOCAL_RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT
  in the environment (``torchrun_command`` builds the line, ``launch_torchrun`` runs it: on
  Linux torchrun's own ``main`` in a process forked from this one, else the line itself).
- ``run_in_group(task)``: a few processes forming a gloo group run ``task`` (the checks of
  chapter 07's exercise run a learner's function under a real process group this way).

Both end every process group with ``destroy_process_group`` even when a rank fails, and both
stop waiting (and kill what they started) after a deadline, so a hung worker cannot hang a
notebook. Each rank writes what it saw to ``rank<r>.pt``; rank 0 alone writes the checkpoint.
What a rank does in the group is its task (``config.task``): "ddp", chapter 07's training, or
"shard", chapter 08's DDP-vs-FSDP comparison (course_lib/sharding.py).
"""

import gc

if __name__ == "__main__":  # a worker torchrun started: see collect_less_often()
    gc.disable()

import argparse
import importlib
import inspect
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from itertools import islice
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from . import data, processes, training
from .collector import collector_paused, warm_up
from .errors import describe_exception
from .i18n import tr
from .seed import seed_everything

ADDRESS = "127.0.0.1"
CHECKPOINT = "checkpoint.pt"
LAUNCH_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "MASTER_PORT",
)  # what torchrun sets, recorded per rank


def free_port() -> int:
    """A TCP port nobody listens on right now, for the rendezvous of one run (chapter 07)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ADDRESS, 0))
        return s.getsockname()[1]


def pick_backend(processes_per_node: int) -> str:
    """nccl when this machine has one CUDA GPU for each of its processes, else gloo (chapter 07).

    Count the processes of THIS machine (torchrun's LOCAL_WORLD_SIZE), not WORLD_SIZE: on 2
    machines with 4 GPUs each, WORLD_SIZE is 8 but each machine needs only its 4 GPUs.
    """
    enough_gpus = torch.cuda.is_available() and torch.cuda.device_count() >= processes_per_node
    return "nccl" if enough_gpus and dist.is_nccl_available() else "gloo"


@dataclass
class DDPConfig:
    """What one DDP run does (chapter 07). Small on purpose: a few steps of the digits MLP."""

    out_dir: str = ""
    world_size: int = 2
    per_device_batch: int = 32
    steps: int = 3  # optimizer steps per epoch (a few batches of each epoch)
    epochs: int = 2
    lr: float = 0.5
    hidden: int = 64
    seed: int = 0
    backend: str = ""  # "" = pick_backend(world_size): every process on this machine
    port: int = 0  # 0 = a free port
    timeout_s: float = 60.0  # collectives give up after this (a rank died or hangs)
    fail_rank: int = -1  # >= 0: that rank raises after joining the group (cleanup demo)
    task: str = "ddp"  # what each rank does in the group: a key of TASKS

    def resolved(self) -> "DDPConfig":
        """A copy with the backend, port and output folder filled in."""
        return DDPConfig(
            **{
                **asdict(self),
                "backend": self.backend or pick_backend(self.world_size),
                "port": self.port or free_port(),
                "out_dir": self.out_dir or tempfile.mkdtemp(prefix="ddp-run-"),
            }
        )


def local_device(local_rank: int, backend: str) -> torch.device:
    """This process's device: with nccl GPU `local_rank`
    of this machine, made current; else the CPU.

    LOCAL_RANK numbers the processes of one machine (0 to its GPU count - 1); RANK numbers all
    processes of all machines. On the second of two 8-GPU machines RANK runs from 8 to 15:
    `cuda:RANK` would name a GPU that does not exist there (chapter 07).
    """
    if backend != "nccl":
        return torch.device("cpu")
    torch.cuda.set_device(local_rank)  # this process's default GPU (NCCL and new tensors use it)
    return torch.device("cuda", local_rank)


def make_model(config: DDPConfig) -> nn.Module:
    """The same freshly initialised digits MLP in
    every process (no dropout: runs are comparable)."""
    seed_everything(config.seed)
    return training.digits_mlp(hidden=config.hidden, dropout=0.0)


def train_set():
    """The digits training split every rank (and the one-process reference) reads (chapter 07)."""
    return data.digits_split()[0]


def grads_of(model: nn.Module) -> list:
    """Copies of every parameter's gradient, on the CPU (chapter 07)."""
    return [p.grad.detach().cpu().clone() for p in model.parameters()]


def local_gradients(ddp_model: DDP, x, y) -> list:
    """This rank's own gradients, computed inside ``no_sync()`` so nothing is communicated."""
    ddp_model.zero_grad(set_to_none=True)
    with ddp_model.no_sync():
        nn.functional.cross_entropy(ddp_model(x), y).backward()
    grads = grads_of(ddp_model.module)
    ddp_model.zero_grad(set_to_none=True)
    return grads


class RankLog:
    """What one rank saw, for the notebook: its orders, batches, losses, gradients (chapter 07)."""

    def __init__(self, rank: int, device: torch.device, config: DDPConfig):
        self.batch, self.in_epoch = config.per_device_batch, 0
        self.record = {
            "rank": rank,
            "pid": os.getpid(),
            "device": str(device),
            "backend": config.backend,
            "env": {k: os.environ.get(k) for k in LAUNCH_VARIABLES},
            "orders": [],
            "batches": [],
            "losses": [],
            "local_grads": [],
            "synced_grads": [],
        }

    def new_epoch(self, sampler) -> None:
        """Note the order of indices the sampler gives this rank in this epoch."""
        self.record["orders"].append(list(sampler))
        self.in_epoch = 0

    def before_step(self, ddp_model: DDP, x, y) -> None:
        """Note the batch's indices and this rank's own gradients (no communication)."""
        order, b = self.record["orders"][-1], self.batch
        self.record["batches"].append(order[self.in_epoch * b : (self.in_epoch + 1) * b])
        self.record["local_grads"].append(local_gradients(ddp_model, x, y))
        self.in_epoch += 1

    def after_step(self, loss: float, model: nn.Module) -> None:
        """Note the step's loss and the gradients backward left (averaged over the ranks)."""
        self.record["losses"].append(loss)
        self.record["synced_grads"].append(grads_of(model))

    def finish(self, model: nn.Module) -> dict:
        """Note the final weights; the whole record, for rank<r>.pt."""
        self.record["weights"] = {
            k: v.detach().cpu().clone() for k, v in model.state_dict().items()
        }
        return self.record


def train_rank(rank: int, device: torch.device, config: DDPConfig) -> dict:
    """What one process does once the group exists: its shard, its replica, synchronised steps."""
    dataset = train_set()
    sampler = DistributedSampler(
        dataset, num_replicas=config.world_size, rank=rank, seed=config.seed
    )
    loader = DataLoader(dataset, batch_size=config.per_device_batch, sampler=sampler)
    model = make_model(config).to(device)
    ddp_model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=config.lr)
    step = training.stepper(ddp_model, optimizer)  # backward() also all-reduces the gradients
    log = RankLog(rank, device, config)
    for epoch in range(config.epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same one on every rank
        log.new_epoch(sampler)
        for x, y in islice(loader, config.steps):
            x, y = x.to(device), y.to(device)
            log.before_step(ddp_model, x, y)
            log.after_step(step(x, y).item(), model)
    if rank == 0:  # one writer; .module: keys without the 'module.' prefix (chapter 04)
        torch.save(ddp_model.module.state_dict(), Path(config.out_dir) / CHECKPOINT)
    dist.barrier()  # nobody goes on (e.g. to load the checkpoint) before rank 0 has written it
    return log.finish(model)


# what a rank does once the group exists: "module:function",
# imported in the worker (chapters 07, 08)
TASKS = {"ddp": "course_lib.ddp_worker:train_rank", "shard": "course_lib.sharding:compare_rank"}


def task_function(name: str):
    """The function TASKS names for `name`, imported (chapters 07, 08)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; the tasks are {sorted(TASKS)}")
    module, _, function = TASKS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def run_rank(rank: int, local_rank: int, config: DDPConfig, init_method: str) -> None:
    """Pick this machine's device, join the group, run
    the task, write rank<r>.pt; always leave the group."""
    task = task_function(config.task)
    device = local_device(local_rank, config.backend)  # before joining: nccl uses the current GPU
    dist.init_process_group(
        config.backend,
        init_method=init_method,
        rank=rank,
        world_size=config.world_size,
        timeout=timedelta(seconds=config.timeout_s),
    )
    try:
        if rank == config.fail_rank:
            raise RuntimeError(f"rank {rank} failed on purpose (config.fail_rank)")
        record = task(rank, device, config)
        torch.save(record, Path(config.out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def spawn_worker(rank: int, config: DDPConfig) -> None:
    """The function torch.multiprocessing.spawn calls in
    each new process (one machine: local rank = rank)."""
    torch.set_num_threads(1)
    run_rank(rank, rank, config, init_method=f"tcp://{ADDRESS}:{config.port}")


@dataclass
class LaunchResult:
    """What a launch left behind: one record per rank, the folder, and how long it took."""

    config: DDPConfig
    ranks: list
    seconds: float
    how: str

    @property
    def checkpoint(self) -> Path:
        return Path(self.config.out_dir) / CHECKPOINT


def _read_ranks(config: DDPConfig) -> list:
    return [torch.load(Path(config.out_dir) / f"rank{r}.pt") for r in range(config.world_size)]


def launch_spawn(config: DDPConfig = None, deadline_s: float = 90.0) -> LaunchResult:
    """Start one process per rank with torch.multiprocessing (spawn) and wait, at most `deadline_s`.

    A rank that raises makes this raise (torch's ProcessRaisedException, after the other ranks
    are terminated); a run past the deadline is killed and raises TimeoutError (chapter 07).
    """
    import torch.multiprocessing as mp

    config = (config or DDPConfig()).resolved()
    start = time.perf_counter()
    context = mp.start_processes(
        spawn_worker, args=(config,), nprocs=config.world_size, join=False, start_method="spawn"
    )
    try:
        while not context.join(timeout=0.2):
            if time.perf_counter() - start > deadline_s:
                raise TimeoutError(
                    f"the DDP workers did not finish within {deadline_s:g} s; killed them"
                )
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
                process.join()
    return LaunchResult(
        config, _read_ranks(config), time.perf_counter() - start, "torch.multiprocessing.spawn"
    )


# ---------------------------------------------------------------- a task under a real process group
def group_start_method() -> str:
    """fork on Linux (a task defined in a notebook runs
    as is, in a fraction of a second), else spawn."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def _group_child(rank: int, world_size: int, port: int, timeout_s: float, task, channel) -> None:
    """One process of run_in_group: join a gloo group, run task(rank, world_size), report, leave."""
    torch.set_num_threads(1)
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://{ADDRESS}:{port}",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout_s),
        )
        # every rank connected before any runs the task: a rank that finishes at once and leaves
        # would break a peer still connecting, whose error would then replace its own
        dist.barrier()
        try:
            channel.send(("ok", task(rank, world_size)))
        finally:
            dist.destroy_process_group()
    except Exception as err:  # the parent turns it into feedback
        channel.send(("error", describe_exception(err)))
    finally:
        channel.close()


def _stop(processes: list, grace_s: float) -> None:
    """Wait up to `grace_s` for each process to end, then kill it."""
    for process in processes:
        process.join(timeout=grace_s)
        if process.is_alive():
            process.kill()
            process.join()


def run_in_group(
    task,
    world_size: int = 2,
    deadline_s: float = 0.0,
    timeout_s: float = 10.0,
    start_method: str = "",
) -> list:
    """Run task(rank, world_size) in `world_size` new processes forming a gloo group (chapter 07).

    Returns one (status, value) per rank: ("ok", what task returned) or ("error", the error as
    text); a rank that died without a word gives ("error", its exit code). With fork `task` may
    be any callable; with spawn it must pickle. Past `deadline_s` (default: 20 s forked, 80 s
    spawned, as each spawned process imports torch) every process is killed and TimeoutError
    raised; collectives give up after `timeout_s`.
    """
    start_method = start_method or group_start_method()
    deadline_s = deadline_s or (20.0 if start_method == "fork" else 80.0)
    context = multiprocessing.get_context(start_method)
    port, processes, channels = free_port(), [], []
    for rank in range(world_size):
        receive, send = context.Pipe(duplex=False)
        process = context.Process(
            target=_group_child, args=(rank, world_size, port, timeout_s, task, send), daemon=True
        )
        process.start()
        send.close()
        processes.append(process)
        channels.append(receive)
    deadline, results = time.perf_counter() + deadline_s, []
    try:
        for rank, channel in enumerate(channels):
            if not channel.poll(max(0.0, deadline - time.perf_counter())):
                raise TimeoutError(
                    f"the {world_size} processes did not finish within {deadline_s:g} s; "
                    "killed them"
                )
            try:
                results.append(channel.recv())
            except EOFError:
                processes[rank].join(timeout=2)
                results.append(
                    (
                        "error",
                        f"the process of rank {rank} died (exit code {processes[rank].exitcode})",
                    )
                )
    finally:
        _stop(processes, grace_s=2.0 if len(results) == world_size else 0.0)
    return results


def source_of(function) -> str:
    """A function's source, for sending it to spawned processes (chapter 07's checks off Linux)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError) as err:
        raise ValueError(
            f"cannot read the source of {getattr(function, '__name__', function)!r}: "
            "define it with def in a notebook cell or a file"
        ) from err


# ---------------------------------------------------------------- torchrun
def worker_arguments(config: DDPConfig) -> list:
    """The command-line options that carry `config` to this module's main() (chapter 07)."""
    return [
        "--out",
        config.out_dir,
        "--steps",
        str(config.steps),
        "--epochs",
        str(config.epochs),
        "--batch",
        str(config.per_device_batch),
        "--lr",
        str(config.lr),
        "--hidden",
        str(config.hidden),
        "--seed",
        str(config.seed),
        "--backend",
        config.backend,
        "--fail-rank",
        str(config.fail_rank),
        "--task",
        config.task,
    ]


def torchrun_command(config: DDPConfig, python: str = "") -> list:
    """The torchrun line for `config`; with `python`, run as ``python -m torch.distributed.run``."""
    launcher = [python, "-m", "torch.distributed.run"] if python else ["torchrun"]
    return (
        launcher
        + [
            "--nnodes",
            "1",
            "--nproc-per-node",
            str(config.world_size),
            "--master-addr",
            ADDRESS,
            "--master-port",
            str(config.port),
            "-m",
            "course_lib.ddp_worker",
        ]
        + worker_arguments(config)
    )


class TorchrunFailed(RuntimeError):
    """torchrun exited with an error: its exit code,
    its output, and its process group id (chapter 07)."""

    def __init__(self, returncode: int, output: str, pgid: int):
        super().__init__(f"torchrun exited with {returncode}:\n{output[-3000:]}")
        self.returncode, self.output, self.pgid = returncode, output, pgid


def group_alive(pgid: int) -> bool:
    """Whether any process of the process group `pgid` is still running (chapter 07)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def torchrun_start_method() -> str:
    """How launch_torchrun starts torchrun's agent: "fork" on Linux, else "subprocess" (chapter 07).

    Forked from this process, the agent is torchrun's own ``main`` given the same line, with
    PyTorch already imported: one fresh interpreter less. The workers it starts are fresh
    interpreters either way (torchrun runs ``python -m course_lib.ddp_worker``), so a CUDA
    context in this process never reaches them; the agent itself touches no GPU.
    """
    return "fork" if sys.platform.startswith("linux") else "subprocess"


def _torchrun_main(arguments: list, log_fd: int) -> None:
    """In the forked process: what it shares with its parent frozen, a session of its own, output
    to `log_fd`, torchrun's main."""
    gc.freeze()  # its collections leave the objects (and pages) it shares with the kernel be
    os.setsid()  # one process group to kill past the deadline, as start_new_session gives
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)
    os.environ["OMP_NUM_THREADS"] = "1"  # the workers inherit it
    from torch.distributed.run import main as torchrun_main

    torchrun_main(arguments)


def _start_torchrun(line: list, log) -> object:
    """Start the torchrun `line` writing to the file `log`: a forked process or a subprocess."""
    if torchrun_start_method() == "fork":
        arguments = line[line.index("torch.distributed.run") + 1 :]
        process = multiprocessing.get_context("fork").Process(
            target=_torchrun_main, args=(arguments, log.fileno()), daemon=False
        )
        process.start()  # no freeze here: unfreeze() would also thaw the kernel's frozen imports
        return process
    return subprocess.Popen(
        line,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _wait(process, deadline_s: float):
    """The exit code of `process`, or None while it still runs after `deadline_s`."""
    if isinstance(process, subprocess.Popen):
        try:
            return process.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            return None
    process.join(deadline_s)
    return process.exitcode


def _kill_group(process) -> None:
    """SIGKILL the process group `process` leads and the sessions of its workers, and reap it.

    torchrun starts each worker in a session of its own: killing torchrun's group alone would
    leave them running (chapter 07)."""
    if hasattr(os, "killpg"):  # POSIX; on Windows the process alone
        for pid in [*processes.children(process.pid), process.pid]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    process.kill()
    _wait(process, 10.0)


NEXT_IN_A_KERNEL = ("matplotlib.pyplot", "ipywidgets")  # chapters 07 and 08 plot and ask next


def meanwhile() -> None:
    """What this process does while torchrun's workers run, where a core is free (chapter 07).

    It imports what it would import later anyway: torch._dynamo (its first optimizer or check),
    if a notebook's first cell has not (explain_errors has; a script or test has not), and in a
    kernel NEXT_IN_A_KERNEL (the chapter's figure and quizzes), the collector paused. A process
    that froze its imports (freeze_imports) freezes these too, so later collections skip them."""
    warm_up()  # torch._dynamo, with the collector paused
    if "ipykernel" in sys.modules:
        with collector_paused():
            for name in NEXT_IN_A_KERNEL:
                importlib.import_module(name)
    if gc.get_freeze_count():
        gc.freeze()


@dataclass
class TorchrunRun:
    """A torchrun run under way (start_torchrun): its config, its agent, its log and when it
    started (`start` for the deadline, `started_at` for the run's time); `wait()` gives its
    LaunchResult (chapters 07, 08)."""

    config: DDPConfig
    process: object
    log: object
    start: float
    deadline_s: float
    started_at: float  # time.time() at the start: the rank files' clock

    def wait(self) -> LaunchResult:
        """Do `meanwhile()`, then wait for torchrun until `deadline_s` after its start; kill its
        whole process group past it (TimeoutError). A failed run raises TorchrunFailed."""
        with self.log:
            try:
                meanwhile()
                left = self.deadline_s - (time.perf_counter() - self.start)
                returncode = _wait(self.process, max(0.0, left))
            except BaseException:  # an interrupted cell (or a failed import) leaves nothing running
                _kill_group(self.process)
                raise
            if returncode is None:
                _kill_group(self.process)
                raise TimeoutError(
                    f"torchrun did not finish within {self.deadline_s:g} s; "
                    "killed its process group"
                )
            self.log.seek(0)
            output = self.log.read()
        if returncode != 0:
            raise TorchrunFailed(returncode, output, self.process.pid)
        seconds = ran_for(self.config, self.started_at)
        return LaunchResult(self.config, _read_ranks(self.config), seconds, "torchrun")


def ran_for(config: DDPConfig, started_at: float) -> float:
    """Seconds from `started_at` (time.time()) to the last rank's results file: the run's own time,
    not the time until wait() was called, which chapter 08 does cells later (chapter 08)."""
    folder = Path(config.out_dir)
    last = max((folder / f"rank{r}.pt").stat().st_mtime for r in range(config.world_size))
    return max(0.0, last - started_at)


def start_torchrun(config: DDPConfig = None, deadline_s: float = 90.0) -> TorchrunRun:
    """Start the worker under torchrun (torchrun_command's line) and return at once: this process
    can go on with other work while the workers start; `.wait()` collects the run (chapter 08)."""
    config = (config or DDPConfig()).resolved()
    start, started_at, log = time.perf_counter(), time.time(), tempfile.TemporaryFile("w+")
    try:
        process = _start_torchrun(torchrun_command(config, sys.executable), log)
    except BaseException:
        log.close()
        raise
    return TorchrunRun(config, process, log, start, deadline_s, started_at)


def launch_torchrun(config: DDPConfig = None, deadline_s: float = 90.0) -> LaunchResult:
    """Run the worker under torchrun (torchrun_command's line) and wait for it (start_torchrun,
    then wait); kill its whole process group past the deadline.

    A failed run raises TorchrunFailed (a RuntimeError) with torchrun's output (chapter 07).
    While torchrun's workers run, this process does `meanwhile()`."""
    return start_torchrun(config, deadline_s).wait()


def parse_config(argv=None) -> DDPConfig:
    """Read a DDPConfig from the command line that worker_arguments wrote (chapter 07)."""
    p = argparse.ArgumentParser(description="Chapter 07's DDP worker; launch it with torchrun.")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="")
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--task", default="ddp", choices=sorted(TASKS))
    a = p.parse_args(argv)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    on_this_machine = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    return DDPConfig(
        out_dir=a.out,
        world_size=world_size,
        per_device_batch=a.batch,
        steps=a.steps,
        epochs=a.epochs,
        lr=a.lr,
        hidden=a.hidden,
        seed=a.seed,
        backend=a.backend or pick_backend(on_this_machine),
        port=int(os.environ.get("MASTER_PORT", "0")),
        fail_rank=a.fail_rank,
        task=a.task,
    )


def main(argv=None) -> None:
    """Entry point under torchrun: RANK (global), LOCAL_RANK (this machine's) and the rendezvous
    come from the environment."""
    torch.set_num_threads(1)
    config = parse_config(argv)
    rank = int(os.environ["RANK"])
    run_rank(rank, int(os.environ["LOCAL_RANK"]), config, init_method="env://")
    if rank == 0:  # a learner who pasted the torchrun line should learn where the results went
        print(
            tr(f"rank 0: done; {CHECKPOINT} and rank<r>.pt (one per rank) are in {config.out_dir}"),
            flush=True,
        )


def collect_less_often() -> None:
    """In a worker, once torch is imported: freeze what the imports made, turn the collector
    (off while `import torch` ran, at this module's top) back on, and run it after every 100,000
    new objects, not every 700 (chapter 07).

    Collections during `import torch` and torch._dynamo's (in DDP's constructor; ~10**5 objects
    each) scan everything imported so far and find next to nothing to free: without those during
    `import torch` a worker's ~1.9 CPU-s drop by ~0.1. Left off for good, the collector would not
    reuse the memory of the imports' garbage cycles either, which costs more than it saves."""
    gc.freeze()
    gc.enable()
    gc.set_threshold(100_000)


def end_process() -> None:
    """End this worker now that main() has returned: its files are written and closed, its group
    destroyed, and Python's teardown of torch's modules (~0.5 CPU-s) would free nothing the
    operating system does not (chapter 07). An error in main() never gets here: Python prints
    it and exits with 1, as torchrun expects."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    collect_less_often()
    main()
    end_process()
