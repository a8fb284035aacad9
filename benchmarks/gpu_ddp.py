"""The nccl path on one GPU: chapter 07's DDP worker in a world-size-1 nccl group (gpu_check.sh).

    python benchmarks/gpu_ddp.py WORK_DIR [--backend nccl|gloo] [--dry-run]

A 1-GPU machine never runs chapter 07's nccl code (the notebook picks gloo for 2 processes on
1 GPU), so this runs it once: `course_lib.ddp_worker` launched as a learner with N GPUs
launches it, with torch.multiprocessing.spawn and with torchrun, world size 1, backend nccl,
rank 0 on cuda:0 (set_device, init_process_group, DDP(device_ids=[0]), a few training steps
whose backward all-reduces through nccl, rank 0's checkpoint, destroy_process_group). Each run
must have used the backend and device asked for, left gradients equal to the rank's own (the
mean over one rank), weights equal to one process trained on the same batches (ch07's
single_process_run, on the CPU), and a checkpoint without 'module.' prefixes.

Without a CUDA GPU (or without nccl in this torch) it prints why and exits 77 (skipped);
``--backend gloo`` runs the same code on the CPU (the test of this script).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from course_lib import ch07_dp_vs_ddp as ch07  # noqa: E402
from course_lib import ddp_worker  # noqa: E402

SKIPPED = 77  # exit code: this machine cannot run it, and why was said (gpu_check.sh: "skipped")
TOLERANCE = (
    1e-3  # cuda vs cpu float32 arithmetic of the same few steps (the summary shows the real gap)
)
LAUNCHERS = {"spawn": ddp_worker.launch_spawn, "torchrun": ddp_worker.launch_torchrun}


def why_not(backend: str) -> str:
    """Why `backend` cannot run here, or ""."""
    if backend != "nccl":
        return ""
    if not torch.cuda.is_available():
        return "skipped: nccl needs a CUDA GPU and torch.cuda.is_available() is False"
    if not dist.is_nccl_available():
        return f"skipped: this torch ({torch.__version__}) was built without nccl"
    return ""


def config_for(work: Path, how: str, backend: str) -> ddp_worker.DDPConfig:
    """World size 1, a few steps of chapter 07's digits MLP, in WORK/how."""
    (work / how).mkdir(parents=True, exist_ok=True)
    return ddp_worker.DDPConfig(
        out_dir=str(work / how), world_size=1, backend=backend, steps=3, epochs=1, timeout_s=60.0
    )


def problems(result: ddp_worker.LaunchResult, backend: str) -> list:
    """What is wrong with one launch's records (empty: all as chapter 07 teaches)."""
    rank = result.ranks[0]
    want_device = "cuda:0" if backend == "nccl" else "cpu"
    found = []
    if (rank["backend"], rank["device"]) != (backend, want_device):
        found.append(
            f"rank 0 ran with backend {rank['backend']} on {rank['device']}, not {backend} on "
            f"{want_device}"
        )
    synced = max(ch07.max_abs_diff(a, b) for a, b in zip(rank["local_grads"], rank["synced_grads"]))
    if synced > TOLERANCE:
        found.append(f"the all-reduced gradients differ from the rank's own by {synced:.2e}")
    alone = ch07.single_process_run(result)
    weights = ch07.max_abs_diff(rank["weights"], alone["weights"])
    if weights > TOLERANCE:
        found.append(f"the weights differ from one process on the same batches by {weights:.2e}")
    keys = list(torch.load(result.checkpoint))
    if any(k.startswith("module.") for k in keys):
        found.append(f"rank 0's checkpoint has 'module.' prefixes: {keys[:2]}")
    return found


def summary(result: ddp_worker.LaunchResult) -> str:
    rank = result.ranks[0]
    alone = ch07.single_process_run(result)
    return (
        f"{result.how}: world size 1, backend {rank['backend']} on {rank['device']}, "
        f"{len(rank['losses'])} steps, losses {' '.join(f'{x:.3f}' for x in rank['losses'])}, "
        f"weights vs one process {ch07.max_abs_diff(rank['weights'], alone['weights']):.1e}, "
        f"{result.seconds:.1f} s"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    parser.add_argument("--deadline", type=float, default=90.0, help="seconds per launch")
    parser.add_argument("--dry-run", action="store_true", help="say what would run; run nothing")
    args = parser.parse_args(argv)
    reason = why_not(args.backend)
    if args.dry_run:
        print(
            reason
            or f"would launch course_lib.ddp_worker with {' and '.join(LAUNCHERS)}: world size 1, "
            f"backend {args.backend}, at most {args.deadline:.0f} s each"
        )
        return 0
    if reason:
        print(reason)
        return SKIPPED
    bad = 0
    for how, launch in LAUNCHERS.items():
        try:
            result = launch(config_for(args.work, how, args.backend), deadline_s=args.deadline)
        except Exception as err:  # noqa: BLE001 - one launcher's failure is reported, the other still runs
            print(
                f"{how}: FAILED: {type(err).__name__}: {' '.join(str(err).split())[:1500]}",
                flush=True,
            )
            bad += 1
            continue
        found = problems(result, args.backend)
        print(summary(result) + ("" if not found else "; WRONG: " + "; ".join(found)), flush=True)
        bad += bool(found)
    print(
        f"{len(LAUNCHERS) - bad} of {len(LAUNCHERS)} launches of chapter 07's DDP worker ran "
        f"as taught with {args.backend} (world size 1)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
