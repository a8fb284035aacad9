"""The two-GPU paths, run only where two GPUs are (gpu_check.sh's two-gpu-* steps).

    python benchmarks/gpu_two.py WORK_DIR --path ddp|dp|fsdp [--backend nccl|gloo] [--dry-run]

- ddp:  chapter 07's DDP worker with 2 ranks over nccl (torch.multiprocessing.spawn and
        torchrun), rank r on cuda:r: each rank's all-reduced gradients equal the other's and the
        mean of the ranks' own, the weights equal one process trained on both ranks' batches.
- dp:   DataParallel over cuda:0 and cuda:1 (chapter 07's `dataparallel_phases`, then
        nn.DataParallel): the batch scattered half to each GPU, the outputs gathered on cuda:0
        equal to one GPU's.
- fsdp: chapter 08's run (task "shard") with 2 ranks over nccl: each rank holds part of the
        parameters, not all, and DDP's and FSDP's weights agree.

Fewer than two GPUs (torch.cuda.device_count()) or no nccl: it says why in one line and exits 77
(gpu_check.sh records the step as skipped, with that line), in a dry run too. It also says whether
the two GPUs reach each other directly (peer-to-peer): without it (Kaggle's two T4s) NCCL moves
the all-reduce through host memory (its SHM transport), slower, with the same results.
``--backend gloo`` runs ddp and fsdp with 2 CPU processes (the test of this script).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from course_lib import ddp_worker  # noqa: E402

SKIPPED = 77  # exit code: this machine cannot run it, and why was said (gpu_check.sh: "skipped")
TOLERANCE = 1e-3  # float32 arithmetic of the same few steps on different devices
PATHS = ("ddp", "dp", "fsdp")
LAUNCHERS = {"spawn": ddp_worker.launch_spawn, "torchrun": ddp_worker.launch_torchrun}
WHAT = {
    "ddp": "chapter 07's DDP worker, 2 ranks",
    "dp": "DataParallel's scatter over 2 GPUs",
    "fsdp": "chapter 08's FSDP run, 2 ranks",
}


def why_not(path: str, backend: str) -> str:
    """Why `path` cannot run here with `backend`, in one line, or ""."""
    if backend == "gloo" and path != "dp":
        return ""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        return (
            f"skipped: {WHAT[path]} needs 2 GPUs and this machine has {count} "
            "(torch.cuda.device_count())"
        )
    if path != "dp" and not dist.is_nccl_available():
        return f"skipped: this torch ({torch.__version__}) was built without nccl"
    return ""


def peer_line() -> str:
    """Whether cuda:0 and cuda:1 reach each other directly, and what NCCL does if not."""
    try:
        peer = torch.cuda.can_device_access_peer(0, 1)
    except (RuntimeError, AssertionError, AttributeError):
        return "peer-to-peer access between cuda:0 and cuda:1: unknown"
    if peer:
        return "peer-to-peer access between cuda:0 and cuda:1: yes (NCCL's P2P transport)"
    return (
        "peer-to-peer access between cuda:0 and cuda:1: no; NCCL goes through host memory "
        "(its SHM transport): slower, the same results"
    )


def config_for(work: Path, how: str, backend: str, task: str) -> ddp_worker.DDPConfig:
    (work / how).mkdir(parents=True, exist_ok=True)
    extra = {"hidden": 256, "lr": 1e-3} if task == "shard" else {}
    return ddp_worker.DDPConfig(
        out_dir=str(work / how),
        world_size=2,
        backend=backend,
        steps=3,
        epochs=1,
        timeout_s=60.0,
        task=task,
        **extra,
    )


def device_problems(result, backend: str) -> list:
    found = []
    for r, rank in enumerate(result.ranks):
        want = f"cuda:{r}" if backend == "nccl" else "cpu"
        if (rank["backend"], rank["device"]) != (backend, want):
            found.append(
                f"rank {r} ran with backend {rank['backend']} on {rank['device']}, not {backend} "
                f"on {want}"
            )
    return found


def ddp_problems(result, backend: str) -> list:
    """What is wrong with a 2-rank DDP launch (empty: all as chapter 07 teaches)."""
    from course_lib import ch07_dp_vs_ddp as ch07

    found = device_problems(result, backend)
    a, b = result.ranks
    for step, (ga, gb) in enumerate(zip(a["synced_grads"], b["synced_grads"])):
        apart = ch07.max_abs_diff(ga, gb)
        mean = ch07.max_abs_diff(ga, ch07.mean_of([a["local_grads"][step], b["local_grads"][step]]))
        if max(apart, mean) > TOLERANCE:
            found.append(
                f"step {step}: synced gradients differ across ranks by {apart:.2e}, from the mean "
                f"of the ranks' own by {mean:.2e}"
            )
    alone = ch07.max_abs_diff(a["weights"], ch07.single_process_run(result)["weights"])
    if alone > TOLERANCE:
        found.append(f"the weights differ from one process on both ranks' batches by {alone:.2e}")
    return found


def fsdp_problems(result, backend: str) -> list:
    """What is wrong with a 2-rank run of chapter 08 (empty: each rank holds a part)."""
    found = device_problems(result, backend)
    for rank in result.ranks:
        count, total = rank["holds"]["FSDP"]["parameter_count"], rank["total_parameters"]
        if not 0 < count < total:
            found.append(f"rank {rank['rank']} holds {count} of {total} parameters under FSDP")
        if rank["weights_gap"] > TOLERANCE:
            found.append(
                f"rank {rank['rank']}: DDP and FSDP weights differ by {rank['weights_gap']:.2e}"
            )
    return found


def launches(work: Path, backend: str, task: str, check, deadline: float) -> int:
    """Both launchers of the worker with 2 ranks; the number of launches that went wrong."""
    bad = 0
    for how, launch in LAUNCHERS.items():
        try:
            result = launch(config_for(work, how, backend, task), deadline_s=deadline)
        except Exception as err:  # noqa: BLE001 - one launcher's failure is reported, the other runs
            print(f"{how}: FAILED: {type(err).__name__}: {' '.join(str(err).split())[:1500]}")
            bad += 1
            continue
        found = check(result, backend)
        print(
            f"{how}: 2 ranks, backend {backend} on "
            + ", ".join(r["device"] for r in result.ranks)
            + f", {result.seconds:.1f} s"
            + ("" if not found else "; WRONG: " + "; ".join(found)),
            flush=True,
        )
        bad += bool(found)
    return bad


def data_parallel() -> int:
    """DataParallel over cuda:0 and cuda:1: its phases by hand, then nn.DataParallel's output."""
    from torch.nn.parallel import scatter

    from course_lib import ch07_dp_vs_ddp as ch07

    x, _ = ddp_worker.train_set()[torch.arange(64)]
    model, x = ddp_worker.make_model(ddp_worker.DDPConfig()).to("cuda:0"), x.to("cuda:0")
    for line in ch07.dataparallel_phases(model, x, 2):
        print(line)
    chunks = scatter(x, [0, 1])
    found = []
    if [(c.device.index, c.shape[0]) for c in chunks] != [(0, 32), (1, 32)]:
        found.append(f"scatter made {[(str(c.device), c.shape[0]) for c in chunks]}")
    with torch.no_grad():
        gap = (torch.nn.DataParallel(model, [0, 1])(x) - model(x)).abs().max().item()
    if gap > 1e-4:
        found.append(f"DataParallel's output differs from one GPU's by {gap:.2e}")
    print("DataParallel: " + ("; ".join(found) if found else f"as on one GPU (gap {gap:.1e})"))
    return bool(found)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--path", required=True, choices=PATHS)
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    parser.add_argument("--deadline", type=float, default=90.0, help="seconds per launch")
    parser.add_argument("--dry-run", action="store_true", help="say what would run; run nothing")
    args = parser.parse_args(argv)
    reason = why_not(args.path, args.backend)
    if reason:
        print(reason)
        return SKIPPED
    if args.dry_run:
        print(
            f"would run {WHAT[args.path]} (backend {args.backend}), at most {args.deadline:.0f} s"
        )
        return 0
    if args.backend == "nccl":
        print(peer_line(), flush=True)
    if args.path == "dp":
        return data_parallel()
    task, check = ("ddp", ddp_problems) if args.path == "ddp" else ("shard", fsdp_problems)
    bad = launches(args.work, args.backend, task, check, args.deadline)
    print(f"{len(LAUNCHERS) - bad} of {len(LAUNCHERS)} launches of {WHAT[args.path]} as taught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
