"""Chapter 08's sharded run: DDP and FSDP2 (`fully_shard`) side by side, in the same processes.

torchrun starts chapter 07's worker with ``--task shard`` (``ddp_worker.TASKS``); in every rank
`compare_rank` builds the same model twice, wraps one copy in DDP and shards the other with
`fully_shard` (each Linear layer, then the whole model), trains both with Adam on the same
batches (``training.stepper``, i.e. ``training.train_step``), and records what that rank
holds (parameters, gradients, optimizer state: numbers and bytes), the collectives one step
sends, the losses, and how far the final weights of the two are apart.
"""

import functools
import re
import sys
from itertools import islice

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from . import ddp_worker, profiling, torch_compat, training
from .i18n import tr

PARTS = ("parameters", "gradients", "optimizer_state")  # what a rank holds between steps


def fully_shard(module: nn.Module, **options) -> nn.Module:
    """`torch.distributed.fsdp.fully_shard`, imported on first use: FSDP's import takes about a
    second, which only the processes that shard pay (chapter 08)."""
    from torch.distributed.fsdp import fully_shard as torch_fully_shard

    torch_compat.cpu_streams_for_fsdp()  # a gloo run on the CPU under torch 2.6
    return torch_fully_shard(module, **options)


def run_mesh(device):
    """A 1-D DeviceMesh over every rank on the run's own device (`fully_shard` without a mesh
    builds it on the accelerator, cuda, whatever the group's backend: a gloo run on the CPU with
    more ranks than GPUs then fails) (chapter 08)."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh(torch.device(device).type, (dist.get_world_size(),))


def is_dtensor(t) -> bool:
    """Whether `t` is a DTensor (none can exist before torch.distributed.tensor is imported)."""
    module = sys.modules.get("torch.distributed.tensor")
    return module is not None and isinstance(t, module.DTensor)


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of `t` this rank stores: a DTensor's local shard, any other tensor itself
    (chapter 08)."""
    return t.to_local() if is_dtensor(t) else t


def local_bytes(t: torch.Tensor) -> int:
    """Bytes of `t` stored on this rank (chapter 08)."""
    shard = local(t)
    return shard.numel() * shard.element_size()


def held(model: nn.Module, optimizer) -> dict:
    """Bytes this rank holds per part, and its number of parameter elements (chapter 08)."""
    params = list(model.parameters())
    state = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return {
        "parameters": sum(local_bytes(p) for p in params),
        "gradients": sum(local_bytes(p.grad) for p in params if p.grad is not None),
        "optimizer_state": sum(local_bytes(v) for v in state),
        "parameter_count": sum(local(p).numel() for p in params),
    }


def shard(model: nn.Module, device, **options) -> nn.Module:
    """FSDP2: `fully_shard` each Linear layer (one all-gather
    each), then the whole model, on the run's device (chapter 08)."""
    mesh = run_mesh(device)  # 1-D: every rank holds 1/N
    for layer in model.modules():
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh, **options)
    return fully_shard(model, mesh=mesh, **options)


# the runs of chapter 08: name -> fully_shard's options (DDP
# is the replica); False keeps each layer gathered until backward
SHARDED_RUNS = {"FSDP": {}, "FSDP, reshard_after_forward=False": {"reshard_after_forward": False}}


def after_forward(model: nn.Module) -> list:
    """Bytes of parameters the rank holds right after each forward of `model` (FSDP's own hooks,
    registered earlier, have resharded what they reshard): filled in as the model runs."""
    seen = []
    model.register_forward_hook(
        lambda module, args, out: seen.append(sum(local_bytes(p) for p in module.parameters()))
    )
    return seen


def shard_rows(model: nn.Module) -> list:
    """(parameter name, full shape, this rank's shape) for every parameter (chapter 08)."""
    return [(name, tuple(p.shape), tuple(local(p).shape)) for name, p in model.named_parameters()]


COLLECTIVE = re.compile(r"^(gloo|nccl):")


def collectives(prof) -> list:
    """(collective, numbers in its input) for each collective a profiled step ran (chapter 08)."""
    found = []
    for event in prof.events():
        if COLLECTIVE.match(event.name) and event.input_shapes and event.input_shapes[0]:
            found.append((event.name, int(torch.Size(event.input_shapes[0]).numel())))
    return found


def full_weights(model: nn.Module) -> dict:
    """Every parameter whole, on the CPU: DTensors
    are gathered (a collective: every rank calls it)."""
    return {
        k: (v.full_tensor() if is_dtensor(v) else v).detach().cpu().clone()
        for k, v in model.state_dict().items()
    }


def profiled_step(step, x, y, device) -> tuple:
    """One training step under the profiler: (its loss, the collectives it sent) (chapter 08)."""
    with profiling.profiled(device, record_shapes=True) as prof:
        loss = step(x, y).item()
    return loss, collectives(prof)


def train_both(runs: dict, optimizers: dict, loader, sampler, device, config) -> tuple:
    """The same batches through every run, the first step
    profiled: (losses per run, collectives per run)."""
    losses, sent = {name: [] for name in runs}, {}
    steps = {name: training.stepper(model, optimizers[name]) for name, model in runs.items()}
    for epoch in range(config.epochs):
        sampler.set_epoch(epoch)
        for x, y in islice(loader, config.steps):
            x, y = x.to(device), y.to(device)
            for name, step in steps.items():
                if name not in sent:
                    loss, sent[name] = profiled_step(step, x, y, device)
                else:
                    loss = step(x, y).item()
                losses[name].append(loss)
    return losses, sent


def compare_rank(rank: int, device: torch.device, config) -> dict:
    """One rank of chapter 08's run: DDP and FSDP on
    the same batches, and what each holds (chapter 08)."""
    dataset = ddp_worker.train_set()
    sampler = DistributedSampler(
        dataset, num_replicas=config.world_size, rank=rank, seed=config.seed
    )
    loader = DataLoader(dataset, batch_size=config.per_device_batch, sampler=sampler)
    replica = ddp_worker.make_model(config).to(device)
    plain = {"DDP": replica} | {
        name: shard(ddp_worker.make_model(config).to(device), device, **options)
        for name, options in SHARDED_RUNS.items()
    }
    gathered = {name: after_forward(plain[name]) for name in SHARDED_RUNS}
    runs = {"DDP": DDP(replica, device_ids=[device.index] if device.type == "cuda" else None)}
    runs |= {name: plain[name] for name in SHARDED_RUNS}
    optimizers = {
        name: torch.optim.Adam(model.parameters(), lr=config.lr) for name, model in runs.items()
    }
    losses, sent = train_both(runs, optimizers, loader, sampler, device, config)
    weights = {name: full_weights(model) for name, model in plain.items()}
    record = {
        "rank": rank,
        "device": str(device),
        "backend": config.backend,
        "world_size": config.world_size,
        "total_parameters": sum(p.numel() for p in replica.parameters()),
        "losses": losses,
        "sent": sent,
        "holds": {name: held(model, optimizers[name]) for name, model in plain.items()},
        "shards": shard_rows(plain["FSDP"]),
        "after_forward": {name: seen[0] for name, seen in gathered.items()},
        "weights_gap": max(
            (weights["DDP"][k] - weights[name][k]).abs().max().item()
            for name in SHARDED_RUNS
            for k in weights["DDP"]
        ),
    }
    dist.barrier()
    return record


# ------------------------------------------------- what N ranks hold, measured (chapter 08's check)
class ShapesModel(nn.Module):
    """Parameters of the given shapes and nothing
    else; calling it gives a loss that uses them all."""

    def __init__(self, shapes, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.params = nn.ParameterList(
            nn.Parameter(torch.randn(shape, generator=gen)) for shape in shapes
        )

    def forward(self, scale: torch.Tensor):
        return sum((p * p).sum() for p in self.params) * scale


class HoldingsTask:
    """One rank of measure_holdings: the same parameters
    under DDP and under fully_shard, one Adam step each."""

    def __init__(self, shapes):
        self.shapes = [tuple(s) for s in shapes]

    def __call__(self, rank: int, world_size: int) -> dict:
        torch.set_num_threads(1)
        mesh = run_mesh("cpu")  # a gloo group on the CPU, however many GPUs the machine has
        plain, sharded = ShapesModel(self.shapes), fully_shard(ShapesModel(self.shapes), mesh=mesh)
        found = {}
        for name, model, run in (("DDP", plain, DDP(plain)), ("FSDP", sharded, sharded)):
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            run(torch.ones(())).backward()
            optimizer.step()
            found[name] = {
                part: value for part, value in held(model, optimizer).items() if part in PARTS
            }
        return found


@functools.lru_cache(maxsize=32)
def _holdings(shapes: tuple, world_size: int) -> tuple:
    results = ddp_worker.run_in_group(HoldingsTask(shapes), world_size=world_size)
    failed = [value for status, value in results if status != "ok"]
    if failed:
        raise RuntimeError(tr(f"the measuring run failed: {failed[0]}"))
    return tuple(value for _, value in results)


def measure_holdings(shapes, world_size: int) -> list:
    """Per rank, what DDP and FSDP hold after one Adam step, measured in `world_size` real gloo
    processes: ``[{"DDP": {part: bytes}, "FSDP": {part: bytes}}, ...]`` (cached per shapes and world
    size) (chapter 08)."""
    return list(_holdings(tuple(tuple(int(d) for d in s) for s in shapes), world_size))


__all__ = [
    "PARTS",
    "SHARDED_RUNS",
    "ShapesModel",
    "collectives",
    "compare_rank",
    "held",
    "local",
    "local_bytes",
    "measure_holdings",
    "run_mesh",
    "shard",
    "shard_rows",
]
