"""Chapter 07's real DistributedDataParallel run: the worker, and two ways to launch it.

One process per device, each with a full replica of the model. The worker lives in this
importable module on purpose: ``spawn`` (and ``torchrun``) start fresh Python interpreters
that import the worker by name; a function defined in a notebook cannot be found there.

- ``launch_spawn(config)``: ``torch.multiprocessing`` starts the processes from Python.
- ``python -m course_lib.ddp_worker --out DIR`` under ``torchrun --nproc_per_node=2``:
  torchrun starts them and passes RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT in the
  environment (``torchrun_command`` builds the line, ``launch_torchrun`` runs it).

Both end every process group with ``destroy_process_group`` even when a rank fails, and both
stop waiting (and kill what they started) after a deadline, so a hung worker cannot hang a
notebook. Each rank writes what it saw to ``rank<r>.pt``; rank 0 alone writes the checkpoint.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from . import data, training
from .seed import seed_everything

ADDRESS = "127.0.0.1"
CHECKPOINT = "checkpoint.pt"


def free_port() -> int:
    """A TCP port nobody listens on right now, for the rendezvous of one run (chapter 07)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ADDRESS, 0))
        return s.getsockname()[1]


def pick_backend(world_size: int) -> str:
    """nccl when there is one CUDA GPU per process, else gloo on the CPU (chapter 07)."""
    enough_gpus = torch.cuda.is_available() and torch.cuda.device_count() >= world_size
    return "nccl" if enough_gpus and dist.is_nccl_available() else "gloo"


@dataclass
class DDPConfig:
    """What one DDP run does (chapter 07). Small on purpose: a few steps of the digits MLP."""
    out_dir: str = ""
    world_size: int = 2
    per_device_batch: int = 32
    steps: int = 3
    lr: float = 0.5
    hidden: int = 64
    seed: int = 0
    backend: str = ""          # "" = pick_backend(world_size)
    port: int = 0              # 0 = a free port
    timeout_s: float = 60.0    # collectives give up after this (a rank died or hangs)
    fail_rank: int = -1        # >= 0: that rank raises after joining the group (cleanup demo)

    def resolved(self) -> "DDPConfig":
        """A copy with the backend, port and output folder filled in."""
        return DDPConfig(**{**asdict(self), "backend": self.backend or pick_backend(self.world_size),
                            "port": self.port or free_port(),
                            "out_dir": self.out_dir or tempfile.mkdtemp(prefix="ddp-run-")})


def rank_device(rank: int, backend: str) -> torch.device:
    """nccl: GPU number `rank`; gloo: the CPU (chapter 07)."""
    return torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")


def make_model(config: DDPConfig) -> nn.Module:
    """The same freshly initialised digits MLP in every process (no dropout: runs are comparable)."""
    seed_everything(config.seed)
    return training.digits_mlp(hidden=config.hidden, dropout=0.0)


def train_set():
    """The digits training split every rank (and the one-process reference) reads (chapter 07)."""
    return data.digits_split()[0]


def sgd_step(model, optimizer, x, y) -> float:
    """zero_grad, forward, loss, backward, step: the loop of chapter 03, one batch (chapter 07)."""
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()  # under DDP the gradients are all-reduced (averaged) during this call
    value = loss.item()
    optimizer.step()
    return value


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


def train_rank(rank: int, config: DDPConfig) -> dict:
    """What one process does once the group exists: shard, replica, a few synchronised steps."""
    device = rank_device(rank, config.backend)
    dataset = train_set()
    sampler = DistributedSampler(dataset, num_replicas=config.world_size, rank=rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=config.per_device_batch, sampler=sampler)
    model = make_model(config).to(device)
    ddp_model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=config.lr)
    record = {"rank": rank, "pid": os.getpid(), "device": str(device), "backend": config.backend,
              "env": {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")},
              "shard": list(sampler), "losses": [], "local_grads": [], "synced_grads": []}
    for step, (x, y) in zip(range(config.steps), loader):
        x, y = x.to(device), y.to(device)
        record["local_grads"].append(local_gradients(ddp_model, x, y))
        record["losses"].append(sgd_step(ddp_model, optimizer, x, y))
        record["synced_grads"].append(grads_of(model))
    record["weights"] = {k: v.detach().cpu().clone() for k, v in ddp_model.module.state_dict().items()}
    if rank == 0:  # one writer; .module: keys without the 'module.' prefix (chapter 04)
        torch.save(ddp_model.module.state_dict(), Path(config.out_dir) / CHECKPOINT)
    dist.barrier()  # nobody goes on (e.g. to load the checkpoint) before rank 0 has written it
    return record


def run_rank(rank: int, config: DDPConfig, init_method: str) -> None:
    """Join the group, train, write rank<r>.pt; always leave the group, even on failure."""
    dist.init_process_group(config.backend, init_method=init_method, rank=rank,
                            world_size=config.world_size, timeout=timedelta(seconds=config.timeout_s))
    try:
        if rank == config.fail_rank:
            raise RuntimeError(f"rank {rank} failed on purpose (config.fail_rank)")
        record = train_rank(rank, config)
        torch.save(record, Path(config.out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def spawn_worker(rank: int, config: DDPConfig) -> None:
    """The function torch.multiprocessing.spawn calls in each new process (rank comes first)."""
    torch.set_num_threads(1)
    run_rank(rank, config, init_method=f"tcp://{ADDRESS}:{config.port}")


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
    context = mp.start_processes(spawn_worker, args=(config,), nprocs=config.world_size,
                                 join=False, start_method="spawn")
    try:
        while not context.join(timeout=0.2):
            if time.perf_counter() - start > deadline_s:
                raise TimeoutError(f"the DDP workers did not finish within {deadline_s:g} s; killed them")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
                process.join()
    return LaunchResult(config, _read_ranks(config), time.perf_counter() - start, "torch.multiprocessing.spawn")


# ---------------------------------------------------------------- torchrun
def worker_arguments(config: DDPConfig) -> list:
    """The command-line options that carry `config` to this module's main() (chapter 07)."""
    return ["--out", config.out_dir, "--steps", str(config.steps), "--batch", str(config.per_device_batch),
            "--lr", str(config.lr), "--hidden", str(config.hidden), "--seed", str(config.seed),
            "--backend", config.backend, "--fail-rank", str(config.fail_rank)]


def torchrun_command(config: DDPConfig, python: str = "") -> list:
    """The torchrun line for `config`; with `python`, run as ``python -m torch.distributed.run``."""
    launcher = [python, "-m", "torch.distributed.run"] if python else ["torchrun"]
    return launcher + ["--nnodes=1", f"--nproc_per_node={config.world_size}", f"--master_addr={ADDRESS}",
                       f"--master_port={config.port}", "-m", "course_lib.ddp_worker"] + worker_arguments(config)


def launch_torchrun(config: DDPConfig = None, deadline_s: float = 90.0) -> LaunchResult:
    """Run the worker under torchrun in a subprocess; kill its whole process group past the deadline."""
    config = (config or DDPConfig()).resolved()
    start = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(torchrun_command(config, sys.executable), env=env, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise TimeoutError(f"torchrun did not finish within {deadline_s:g} s; killed its process group")
    if process.returncode != 0:
        raise RuntimeError(f"torchrun exited with {process.returncode}:\n{output[-3000:]}")
    return LaunchResult(config, _read_ranks(config), time.perf_counter() - start, "torchrun")


def parse_config(argv=None) -> DDPConfig:
    """Read a DDPConfig from the command line that worker_arguments wrote (chapter 07)."""
    p = argparse.ArgumentParser(description="Chapter 07's DDP worker; launch it with torchrun.")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="")
    p.add_argument("--fail-rank", type=int, default=-1)
    a = p.parse_args(argv)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    return DDPConfig(out_dir=a.out, world_size=world_size, per_device_batch=a.batch, steps=a.steps, lr=a.lr,
                     hidden=a.hidden, seed=a.seed, backend=a.backend or pick_backend(world_size),
                     port=int(os.environ.get("MASTER_PORT", "0")), fail_rank=a.fail_rank)


def main(argv=None) -> None:
    """Entry point under torchrun: the rank and the rendezvous come from the environment."""
    torch.set_num_threads(1)
    config = parse_config(argv)
    run_rank(int(os.environ["RANK"]), config, init_method="env://")


if __name__ == "__main__":
    main()
