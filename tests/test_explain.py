"""The error explainer: real errors raised here, released GPU-only wordings, a corpus of real
messages posted in public issue threads (and its held-out fifth), honest "not known", logs,
warnings, the notebook panel in a real IPython shell, and the command line."""

import dataclasses
import datetime
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import course_lib
from course_lib import ch04_common_errors as ch04
from course_lib import chapters, explainer, notebooks
from course_lib.errors import ExpectationFailed
from course_lib.explainer import ENTRIES, UNKNOWN, explain, explain_text
from support import NOTEBOOKS, ROOT, pin_memory_warns


def raised(fn) -> BaseException:
    try:
        fn()
    except BaseException as err:  # noqa: B902 - we want whatever PyTorch raises
        return err
    raise AssertionError("expected an error")


def all_batches(dataset) -> list:
    """list(DataLoader(dataset, num_workers=1)), its worker shut down before the error leaves: the
    traceback keeps the iterator alive, and its shutdown in a later garbage collection waited
    torch's 5-s status interval inside whichever test ran then."""
    batches = iter(torch.utils.data.DataLoader(dataset, num_workers=1))
    try:
        return list(batches)
    finally:
        batches._shutdown_workers()


def explained_as(err_or_text, entry_id):
    exp = explain(err_or_text)
    assert exp.known and exp.entry.id == entry_id, (entry_id, str(exp), err_or_text)
    return exp


# ----------------------------------------------------------- errors raised for real on this machine
class Dataset4(torch.utils.data.Dataset):
    def __init__(self, item):
        self.item = item

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.item(i)


def _kill_self(i):
    os.kill(os.getpid(), signal.SIGKILL)


def _bad_label(i):
    return F.cross_entropy(torch.zeros(1, 3), torch.tensor([7]))


def _plain_bug(i):
    raise ValueError("bad sample")


@dataclasses.dataclass
class TrainConfig:
    lr: float = 0.1


def _saved(obj) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _backward_twice():
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _inplace_after_save():
    x = torch.ones(2, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    y.sum().backward()


def _leaf_update():
    w = torch.ones(2, requires_grad=True)
    w -= 1


def _loss_under_no_grad():
    with torch.no_grad():
        loss = nn.Linear(2, 1)(torch.ones(1, 2)).sum()
    loss.backward()


def _unscale_fp16():
    model = nn.Linear(2, 1).half()
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(model(torch.ones(1, 2, dtype=torch.half)).float().sum()).backward()
    scaler.unscale_(optimizer)


def _memory_budget():
    from course_lib.memory import MemoryBudget

    with MemoryBudget(16, nn.Linear(64, 64)):
        pass


REAL = [
    # the course's own reproductions (expect_error in chapters 01-06)
    ("device_mismatch", lambda: nn.Linear(4, 3)(torch.randn(2, 4, device="meta"))),  # ch02, ch04
    ("device_mismatch", lambda: nn.Linear(4, 3).to("meta")(torch.randn(2, 4))),
    ("device_mismatch", lambda: torch.cat([torch.zeros(2), torch.zeros(2, device="meta")])),
    (
        "device_mismatch",
        lambda: F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1], device="meta")),
    ),
    (
        "device_mismatch",
        lambda: torch.zeros(2, 5, device="meta") + torch.arange(5),
    ),  # ch04 section 3
    ("linear_shape", lambda: nn.Linear(20, 5)(torch.zeros(4, 5))),  # ch03 errata
    (
        "module_prefix",
        lambda: nn.Linear(2, 2).load_state_dict(nn.DataParallel(nn.Linear(2, 2)).state_dict()),
    ),
    ("weights_only", lambda: torch.load(_saved(nn.Linear(2, 2)))),  # ch04 4b
    ("memory_budget", _memory_budget),  # ch06
    # checkpoints
    (
        "compiled_prefix",
        lambda: nn.Linear(2, 2).load_state_dict(
            {f"_orig_mod.{k}": v for k, v in nn.Linear(2, 2).state_dict().items()}
        ),
    ),
    (
        "compiled_prefix",
        lambda: nn.Linear(2, 2).load_state_dict(
            {f"module._orig_mod.{k}": v for k, v in nn.Linear(2, 2).state_dict().items()}
        ),
    ),
    ("state_dict_mismatch", lambda: nn.Linear(2, 2).load_state_dict(nn.Linear(3, 2).state_dict())),
    ("weights_only", lambda: torch.load(_saved({"w": torch.ones(1), "config": TrainConfig()}))),
    # dtypes and mixed precision
    ("dtype_mismatch", lambda: nn.Linear(2, 2).half()(torch.zeros(1, 2))),
    ("dtype_mismatch", lambda: nn.Linear(2, 2)(torch.zeros(1, 2, dtype=torch.bfloat16))),
    ("dtype_mismatch", lambda: torch.mm(torch.zeros(2, 2, dtype=torch.half), torch.zeros(2, 2))),
    ("dtype_mismatch", lambda: nn.Conv2d(3, 4, 3)(torch.zeros(1, 3, 8, 8, dtype=torch.double))),
    ("dtype_mismatch", lambda: nn.Conv2d(3, 4, 3).half()(torch.zeros(1, 3, 8, 8))),
    ("fp16_gradients_unscale", _unscale_fp16),
    ("labels_dtype", lambda: F.cross_entropy(torch.zeros(2, 3), torch.tensor([0.0, 1.0]))),
    (
        "labels_dtype",
        lambda: F.nll_loss(torch.zeros(2, 3), torch.tensor([0, 1], dtype=torch.int32)),
    ),
    # labels, indices, shapes
    ("index_out_of_range", lambda: F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 5]))),
    ("index_out_of_range", lambda: nn.Embedding(3, 2)(torch.tensor([5]))),
    ("conv_input_rank", lambda: nn.Conv2d(3, 4, 3)(torch.zeros(3, 8))),
    ("conv_input_rank", lambda: nn.Conv1d(3, 4, 3)(torch.zeros(8))),
    ("conv_channels", lambda: nn.Conv2d(3, 4, 3)(torch.zeros(1, 5, 8, 8))),
    (
        "loss_batch_mismatch",
        lambda: F.cross_entropy(torch.zeros(2, 3), torch.zeros(4, dtype=torch.long)),
    ),
    # autograd in the training loop
    ("backward_twice", _backward_twice),
    ("inplace_modified", _inplace_after_save),
    ("leaf_inplace", _leaf_update),
    ("no_grad_fn", _loss_under_no_grad),
    ("no_grad_fn", lambda: torch.ones(2).sum().backward()),
    ("numpy_from_gpu", lambda: torch.ones(2, requires_grad=True).numpy()),
    # memory, processes
    ("cpu_oom", lambda: torch.empty(2**62, dtype=torch.uint8)),
    (
        "dataloader_worker_died",
        lambda: all_batches(Dataset4(_kill_self)),
    ),
    (
        "index_out_of_range",
        lambda: all_batches(Dataset4(_bad_label)),
    ),
    (
        "dataloader_worker_raised",
        lambda: all_batches(Dataset4(_plain_bug)),
    ),
    # distributed setup
    ("no_process_group", lambda: torch.distributed.get_rank()),
    ("no_process_group", lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2))),
    ("distributed_env_missing", lambda: os.environ["LOCAL_RANK"]),
]


@pytest.mark.parametrize(
    "entry_id,make_error", REAL, ids=[f"{i}-{r[0]}" for i, r in enumerate(REAL)]
)
def test_real_error_is_explained(entry_id, make_error, monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    err = raised(make_error)
    exp = explained_as(err, entry_id)
    assert exp.entry.meaning and exp.entry.causes and exp.entry.fix
    # the same error pasted as Python prints it, inside a traceback, explains the same way
    text = (
        'Traceback (most recent call last):\n  File "train.py", line 1, in <module>\n    step()\n'
        + "".join(__import__("traceback").format_exception_only(type(err), err))
    )
    assert explain_text(text).entry.id == entry_id


def test_without_a_gpu_the_course_reproductions_of_chapters_01_and_04_are_explained(tmp_path):
    if not torch.cuda.is_available():
        # chapter 01: a CPU build says it has no CUDA; the CUDA build pip installs on Linux, on a
        # machine without a GPU, says it found no NVIDIA driver (the range runs' torch 2.6, 2.15)
        built = "no_usable_gpu" if torch.version.cuda else "torch_without_cuda"
        explained_as(raised(lambda: torch.zeros(2, device="cuda:0")), built)
        path = ch04.save_for_missing_gpu(
            ch04.TinyNet().state_dict(), tmp_path / "c.pt"
        )  # chapter 04, 4a
        explained_as(raised(lambda: torch.load(path)), "checkpoint_missing_gpu")


def test_deprecated_amp_and_pin_memory_warnings_are_explained():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.amp.autocast()
        torch.cuda.amp.GradScaler()
        list(torch.utils.data.DataLoader(range(2), pin_memory=True))
    texts = {str(w.message) for w in caught}
    amp = [t for t in texts if "torch.cuda.amp" in t and "deprecated" in t]
    assert len(amp) == 2
    for text in amp:
        explained_as(f"FutureWarning: {text}", "cuda_amp_deprecated")
    if not torch.cuda.is_available() and pin_memory_warns():  # torch 2.6 says nothing there
        pinned = [t for t in texts if "pin_memory" in t]
        assert (
            pinned
            and explain(f"/x/dataloader.py:683: UserWarning: {pinned[0]}").entry.id
            == "pin_memory_without_accelerator"
        )


def test_cuda_in_a_forked_child_is_explained(monkeypatch):
    # torch's own _lazy_init raises it; we only make this process look like a forked child
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)
    monkeypatch.setattr(torch.cuda, "_initialized", False)
    err = raised(torch.cuda.init)
    assert "forked subprocess" in str(err)
    explained_as(err, "cuda_in_forked_process")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_distributed_setup_errors_are_explained(monkeypatch):
    import torch.distributed as dist

    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    exp = explained_as(raised(lambda: dist.init_process_group("gloo")), "distributed_env_missing")
    assert exp.notes == ("Missing: `RANK`.",)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert explained_as(
        raised(lambda: dist.init_process_group("gloo")), "distributed_env_missing"
    ).notes == ("Missing: `MASTER_ADDR`.",)
    if not dist.is_nccl_available():
        explained_as(
            raised(
                lambda: dist.init_process_group(
                    "nccl", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1
                )
            ),
            "nccl_not_built",
        )
    port = _free_port()
    store = dist.TCPStore("127.0.0.1", port, 1, True)
    explained_as(
        raised(
            lambda: dist.init_process_group(
                "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1
            )
        ),
        "port_in_use",
    )
    del store
    exp = explained_as(
        raised(
            lambda: dist.init_process_group(
                "gloo",
                init_method=f"tcp://127.0.0.1:{_free_port()}",
                rank=0,
                world_size=2,
                timeout=datetime.timedelta(seconds=1),
            )
        ),
        "rendezvous_timeout",
    )
    assert exp.notes == ("1 of 2 processes joined.",)


def test_readings_take_names_and_numbers_from_the_message():
    exp = explain(raised(lambda: nn.Linear(20, 5)(torch.zeros(4, 5))))
    assert exp.notes == (
        "The input has 5 features per sample; the layer expects 20 (and gives 5).",
    )
    exp = explain(raised(lambda: torch.load(_saved({"config": TrainConfig()}))))
    assert "TrainConfig" in exp.notes[0]
    exp = explain(raised(lambda: nn.Linear(2, 2).load_state_dict(nn.Linear(3, 2).state_dict())))
    assert exp.notes[0] == "`weight` is [2, 3] in the file and [2, 2] in your model."
    exp = explain(raised(lambda: nn.Conv2d(3, 4, 3)(torch.zeros(1, 5, 8, 8))))
    assert exp.notes == ("The layer wants 3 channels; the input has 5.",)
    exp = explain(raised(_inplace_after_save))
    assert exp.notes == ("The changed tensor was made by `Sigmoid`.",)


# ------------------------------------------------------ released wordings (GPU-only or older torch)
RELEASED = [
    # torch 2.13 on a GPU (aten/src/ATen/core/adaption.cpp:
    # "but got ", ", different from other tensors on ")
    (
        "device_mismatch",
        (
            "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, "
            "different from other tensors on cuda:0 (when checking argument in method "
            "wrapper_CUDA_addmm)"
        ),
    ),
    (
        "device_mismatch",
        "RuntimeError: Expected all tensors to be on the same device, but got index is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA__index_select)",
    ),
    # torch 2.0-2.3 (aten/src/ATen/TensorIterator.cpp), quoted by article A
    (
        "device_mismatch",
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two "
            "devices, cuda:0 and cpu! (when checking argument for argument mat1 in method "
            "wrapper_addmm)"
        ),
    ),
    # aten/src/ATen/native/Convolution.cpp (check_input_same_type_as_parameters)
    (
        "device_mismatch",
        "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) "
        "should be the same or input should be a MKLDNN tensor and weight is a dense tensor",
    ),
    (
        "device_mismatch",
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) "
        "should be the same",
    ),
    # aten/src/ATen/native/cudnn/RNN.cpp
    (
        "device_mismatch",
        "RuntimeError: Input and parameter tensors are not at the same device, found input tensor "
        "at cpu and parameter tensor at cuda:0",
    ),
    # aten/src/ATen/native/TensorAdvancedIndexing.cpp
    # (index_put / index with CUDA indices on a CPU tensor)
    (
        "device_mismatch",
        "RuntimeError: indices should be either on cpu or on the same device as the indexed "
        "tensor (cpu)",
    ),
    # torch 1.x (aten/src/ATen/native/cuda/..., "Expected object of device type")
    (
        "device_mismatch",
        "RuntimeError: Expected object of device type cuda but got device type cpu for argument #1 "
        "'self' in call to _th_addmm",
    ),
    # torch/_prims_common/__init__.py (check_same_device), as the meta device prints it here
    ("device_mismatch", "RuntimeError: Tensor on device cuda:0 is not on the expected device cpu!"),
    # aten/src/ATen/core/Generator.h (check_generator)
    (
        "generator_device",
        "RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'",
    ),
    # torch/_tensor.py / python_variable_methods.cpp
    (
        "numpy_from_gpu",
        "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
        "tensor to host memory first.",
    ),
    # torch/serialization.py (_validate_device), on a GPU machine with fewer GPUs
    (
        "checkpoint_missing_gpu",
        "RuntimeError: Attempting to deserialize object on CUDA device 1 but "
        "torch.cuda.device_count() is 1. Please use torch.load with map_location to map "
        "your storages to an existing device.",
    ),
    # aten/src/ATen/cuda/detail/CUDAHooks.cpp and c10/cuda/CUDAFunctions.cpp
    (
        "no_usable_gpu",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
        "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
    ),
    ("no_usable_gpu", "RuntimeError: No CUDA GPUs are available"),
    (
        "driver_too_old",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please "
        "update your GPU driver",
    ),
    # cudaGetErrorString(cudaErrorNoKernelImageForDevice)
    # and torch/cuda/__init__.py (_check_capability)
    (
        "no_kernel_image",
        (
            "RuntimeError: CUDA error: no kernel image is available for execution on the "
            "device\nCUDA kernel errors might be asynchronously reported at some other API call, "
            "so the stacktrace below might be incorrect.\nFor debugging consider passing "
            "CUDA_LAUNCH_BLOCKING=1"
        ),
    ),
    (
        "no_kernel_image",
        "UserWarning: \nNVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
        "the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities "
        "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
    ),
    # c10/cuda/CUDACachingAllocator.cpp (torch 2.2+),
    # then torch 2.1 (typo "capacty"), then torch 1.x/2.0
    (
        "cuda_oom",
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.16 GiB. GPU 0 has a "
            "total capacity of 79.10 GiB of which 1.63 GiB is free. Including non-PyTorch memory, "
            "this process has 77.42 GiB memory in use. Of the allocated memory 68.16 GiB is "
            "allocated by PyTorch, and 3.49 GiB is reserved by PyTorch but unallocated. If "
            "reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        ),
    ),
    (
        "cuda_oom",
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 "
            "has a total capacty of 23.69 GiB of which 7.11 GiB is free. Process 2006998 has "
            "256.00 MiB memory in use. Of the allocated memory 16.01 GiB is allocated by PyTorch, "
            "and 7.47 MiB is reserved by PyTorch but unallocated."
        ),
    ),
    (
        "cuda_oom",
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total "
            "capacity; 130.35 MiB already allocated; 47.06 MiB free; 188.00 MiB reserved in total "
            "by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb "
            "to avoid fragmentation."
        ),
    ),
    ("cuda_oom", "RuntimeError: CUDA error: out of memory"),
    # c10/cuda/CUDAException.cpp + CUDAMiscFunctions.cpp (get_cuda_check_suffix), torch 2.1+
    (
        "device_side_assert",
        "RuntimeError: CUDA error: device-side assert triggered\nCUDA kernel errors might be "
        "asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\nCompile with "
        "`TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ),
    (
        "device_side_assert",
        "/opt/conda/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
        "block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.",
    ),
    ("async_cuda_error", "RuntimeError: CUDA error: an illegal memory access was encountered"),
    # torch/cuda/__init__.py (_lazy_init)
    (
        "cuda_in_forked_process",
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
        "multiprocessing, you must use the 'spawn' start method",
    ),
    # torch/csrc/DataLoader.cpp (SIGCHLD handler), torch/utils/data/dataloader.py
    (
        "dataloader_worker_died",
        "RuntimeError: DataLoader worker (pid 4021) is killed by signal: Killed. ",
    ),
    (
        "dataloader_worker_died",
        "RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error. It is "
        "possible that dataloader's workers are out of shared memory.",
    ),
    # torch/amp/autocast_mode.py, torch/cuda/amp/grad_scaler.py (torch 2.4+)
    (
        "cuda_amp_deprecated",
        "/x/train.py:12: FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. "
        "Please use `torch.amp.GradScaler('cuda', args...)` instead.",
    ),
    # aten/src/ATen/native/cuda/Blas.cpp / older autocast misuse (torch 1.x wording)
    ("dtype_mismatch", "RuntimeError: expected scalar type Half but found Float"),
    (
        "dtype_mismatch",
        "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) "
        "should be the same",
    ),
    ("labels_dtype", "RuntimeError: expected scalar type Long but found Float"),
    # torch/distributed/distributed_c10d.py and ProcessGroupNCCL.cpp (torch 2.2+)
    (
        "nccl_failure",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), "
        "NCCL version 2.19.3",
    ),
    (
        "nccl_failure",
        (
            "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600351 milliseconds before timing out."
        ),
    ),
    # torch/csrc/distributed/c10d/reducer.cpp (torch 2.13, warnings and the static_graph form)
    (
        "ddp_find_unused_not_needed",
        "UserWarning: find_unused_parameters=True was specified in DDP constructor, but "
        "did not find any unused parameters in the forward pass. This flag results in an "
        "extra traversal of the autograd graph every iteration,  which can adversely "
        "affect performance.",
    ),
    (
        "ddp_unused_parameters",
        "RuntimeError: Expected to have finished reduction in the prior iteration before "
        "starting a new one. This error indicates that your training graph has changed in "
        "this iteration, e.g., one parameter is used in first iteration, but then got unused "
        "in the second iteration. this is not compatible with static_graph set to True.",
    ),
    # torch/nn/parallel/_functions.py (Gather.forward)
    (
        "data_parallel_gather_scalars",
        "/x/torch/nn/parallel/_functions.py:68: UserWarning: Was asked to gather "
        "along dimension 0, but all input tensors were scalars; will instead unsqueeze "
        "and return a vector.",
    ),
    # third_party/gloo/gloo/transport/tcp/pair.cc
    (
        "gloo_failure",
        (
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed "
            "by peer [10.0.0.2]:30001"
        ),
    ),
    (
        "gloo_failure",
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
        "pair.cc:144] no error",
    ),
]


@pytest.mark.parametrize(
    "entry_id,text", RELEASED, ids=[f"{i}-{r[0]}" for i, r in enumerate(RELEASED)]
)
def test_released_wording_is_explained(entry_id, text):
    explained_as(text, entry_id)


# ----------------------------------------------- real messages from public issue threads (issue 17)
CORPUS_FILE = ROOT / "tests" / "data" / "explain_corpus.jsonl"
CORPUS = [json.loads(line) for line in CORPUS_FILE.read_text(encoding="utf-8").splitlines()]
BY_ID = {row["id"]: row for row in CORPUS}
CATEGORIES = {
    "device",
    "checkpoint",
    "availability",
    "versions",
    "oom",
    "autograd",
    "dtype_amp",
    "dataloader",
    "distributed",
    "cuda_runtime",
    "shapes",
}
ENTRY = {e.id: e for e in ENTRIES}


def corpus_verdict(row: dict) -> bool:
    """Judge one corpus message: a GPU-training one gets
    its entry and chapter; an unrelated one is not claimed."""
    exp = explain_text(row["message"])
    if row["kind"] == "gpu":
        return exp.known and exp.entry.id == row["entry"] and exp.entry.chapter == row["chapter"]
    return not exp.known


def corpus_figures(rows) -> dict:
    """The two figures of issue 17 for a set of corpus rows, with the failing ids."""
    gpu = [r for r in rows if r["kind"] == "gpu"]
    unrelated = [r for r in rows if r["kind"] == "unrelated"]
    missed = [r["id"] for r in gpu if not corpus_verdict(r)]
    claimed = [r["id"] for r in unrelated if not corpus_verdict(r)]
    return {
        "gpu": len(gpu),
        "right": (len(gpu) - len(missed)) / len(gpu),
        "missed": missed,
        "unrelated": len(unrelated),
        "claimed": len(claimed) / len(unrelated),
        "claimed_ids": claimed,
    }


def test_the_corpus_holds_real_sourced_messages_of_every_category():
    assert len({r["id"] for r in CORPUS}) == len(CORPUS)
    gpu = [r for r in CORPUS if r["kind"] == "gpu"]
    unrelated = [r for r in CORPUS if r["kind"] == "unrelated"]
    assert len(gpu) >= 150 and len(unrelated) >= 40, (len(gpu), len(unrelated))
    assert {r["category"] for r in gpu} == CATEGORIES
    assert all(
        r["category"] == "unrelated" and r["entry"] is None and r["chapter"] is None
        for r in unrelated
    )
    for r in CORPUS:
        assert r["message"].strip() and re.match(r"https?://\S+$", r["source"]), r["id"]
        assert r["source_kind"] in {"issue", "pull request", "page"}, r["id"]
        assert not re.search(
            r"pypi|pythonhosted|npmjs|debian\.org", r["message"] + r["source"], re.I
        ), r["id"]
        if r["kind"] == "gpu":
            assert r["entry"] in ENTRY and ENTRY[r["entry"]].chapter == r["chapter"], r["id"]
    for kind in (gpu, unrelated):  # the held-out fifth, drawn from each kind
        assert abs(sum(r["holdout"] for r in kind) - len(kind) / 5) <= 1


@pytest.mark.parametrize("part", ["whole corpus", "held-out fifth"])
def test_real_messages_get_the_right_entry_and_chapter_and_unrelated_ones_are_not_claimed(part):
    rows = CORPUS if part == "whole corpus" else [r for r in CORPUS if r["holdout"]]
    figures = corpus_figures(rows)
    assert figures["right"] >= 0.95, (
        f"{part}: {figures['right']:.1%} right; missed {figures['missed']}"
    )
    assert figures["claimed"] <= 0.05, (
        f"{part}: {figures['claimed']:.1%} claimed: {figures['claimed_ids']}"
    )


def test_every_entry_the_corpus_needs_is_answered_by_the_command_line(tmp_path):
    """`python -m course_lib explain --json` gives each
    kind of error in the corpus its entry and chapter."""
    first = {}
    for r in CORPUS:
        if r["kind"] == "gpu" and not r["holdout"] and corpus_verdict(r):
            first.setdefault(r["entry"], r)
    assert len(first) == len({r["entry"] for r in CORPUS if r["kind"] == "gpu"})
    files = []
    for entry_id, r in first.items():
        files.append(tmp_path / f"{entry_id}.log")
        files[-1].write_text(r["message"], encoding="utf-8")
    run = _cli("--json", *map(str, files))
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [(row["id"], row["chapter"]) for row in rows] == [
        (e, first[e]["chapter"]) for e in first
    ]
    assert all(row["fix"] and row["cause"] and row["section"] for row in rows)


# where PyTorch changed the wording (2.0 to 2.13): one
# corpus message per released form, each must be explained
WORDINGS_ACROSS_RELEASES = [
    ("device_mismatch", "m001", "2.0-2.3: 'but found at least two devices, cuda:0 and cpu!'"),
    (
        "device_mismatch",
        "m002",
        "2.4+: 'but got mat1 is on cpu, different from other tensors on cuda:0'",
    ),
    (
        "cuda_oom",
        "m118",
        "2.0 and older: '(GPU 0; 15.90 GiB total capacity; ... reserved in total by PyTorch)'",
    ),
    ("cuda_oom", "m124", "2.1: 'GPU 0 has a total capacty of' (sic) and max_split_size_mb"),
    ("cuda_oom", "m125", "2.2+: 'Including non-PyTorch memory' and expandable_segments"),
    (
        "weights_only",
        "m074",
        "2.6: 'In PyTorch 2.6, we changed the default ... Please file an issue'",
    ),
    (
        "weights_only",
        "m069",
        "2.6+: 'This file can still be loaded, to do so you have two options'",
    ),
    (
        "torch_load_weights_only_warning",
        "m066",
        "2.4-2.5: FutureWarning 'You are using torch.load with weights_only=False'",
    ),
    ("cuda_amp_deprecated", "m175", "2.4+: 'torch.cuda.amp.autocast(args...) is deprecated'"),
    ("cuda_amp_deprecated", "m172", "2.4+: 'torch.cuda.amp.GradScaler(args...) is deprecated'"),
    ("dtype_mismatch", "m186", "2.0: 'mat1 and mat2 must have the same dtype'"),
    (
        "dtype_mismatch",
        "m184",
        "2.1+: 'mat1 and mat2 must have the same dtype, but got Float and Half'",
    ),
    (
        "dtype_mismatch",
        "m181",
        "CUDA addmm: 'expected mat1 and mat2 to have the same dtype, but got: float != c10::Half'",
    ),
    (
        "ddp_unused_parameters",
        "m250",
        "older: '(1) passing the keyword argument ... (2) making sure'",
    ),
    (
        "ddp_unused_parameters",
        "m249",
        "newer: 'by passing the keyword argument ..., and by making sure'",
    ),
    (
        "ddp_unused_parameters",
        "m252",
        "TORCH_DISTRIBUTED_DEBUG: 'Parameters which did not receive grad for rank'",
    ),
    ("ddp_ready_twice", "m244", "older: 'DDP does not support such use cases yet.'"),
    (
        "ddp_ready_twice",
        "m247",
        "newer: '... try to use _set_static_graph()' and 'marked as ready twice'",
    ),
    ("port_in_use", "m271", "2.3+: 'port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE'"),
    (
        "nccl_failure",
        "m261",
        "2.x: 'NCCL error in: .../ProcessGroupNCCL.cpp:1287, invalid usage, NCCL version'",
    ),
    ("nccl_failure", "m262", "1.x: 'NCCL Error 1: unhandled cuda error'"),
    (
        "torchrun_child_failed",
        "m274",
        "2.0 and older: 'ERROR:torch.distributed.elastic.multiprocessing.api:failed'",
    ),
    (
        "torchrun_child_failed",
        "m275",
        "2.x summary: 'ChildFailedError ... Root Cause (first observed failure)'",
    ),
    (
        "driver_too_old",
        "m109",
        "RuntimeError 'The NVIDIA driver on your system is too old (found version 11060)'",
    ),
    (
        "driver_too_old",
        "m100",
        "UserWarning 'CUDA initialization: The NVIDIA driver on your system is too old'",
    ),
    (
        "driver_too_old",
        "m104",
        "'Unexpected error from cudaGetDeviceCount() ... Error 804: forward compatibility'",
    ),
    (
        "no_usable_gpu",
        "m084",
        "UserWarning 'CUDA initialization: Unexpected error from cudaGetDeviceCount()'",
    ),
    ("numpy_from_gpu", "m028", "older: 'can't convert CUDA tensor to numpy'"),
    ("numpy_from_gpu", "m029", "newer: 'can't convert cuda:0 device type tensor to numpy'"),
]


@pytest.mark.parametrize(
    "entry_id,corpus_id,form",
    WORDINGS_ACROSS_RELEASES,
    ids=[f"{e}-{c}" for e, c, _ in WORDINGS_ACROSS_RELEASES],
)
def test_every_released_form_of_a_changed_message_is_explained(entry_id, corpus_id, form):
    row = BY_ID[corpus_id]
    assert row["entry"] == entry_id and not row["holdout"], form
    assert explain_text(row["message"]).entry.id == entry_id, form


def test_forms_of_one_message_really_differ():
    by_entry = {}
    for entry_id, corpus_id, _ in WORDINGS_ACROSS_RELEASES:
        by_entry.setdefault(entry_id, []).append(BY_ID[corpus_id]["message"])
    assert sum(len(m) > 1 for m in by_entry.values()) >= 10
    for messages in by_entry.values():
        assert len(set(messages)) == len(messages)


def test_readings_of_the_new_entries():
    def notes(corpus_id):
        return explain_text(BY_ID[corpus_id]["message"]).notes

    assert "This driver supports CUDA up to 11.6; this PyTorch needs a newer one." in notes("m109")
    assert any("of 27.20 GiB allowed" in n for n in notes("m131"))
    assert "Ranks 1 and 0 share one GPU." in notes("m236")
    assert any("`decoder.out_bboxes.linear.bias`" in n for n in notes("m252"))
    assert "The input is on cuda:0, the hidden state on cpu." in notes("m035")
    assert "The string given was 'cuda:None'." in notes("m018")


def test_a_checkpoint_wrapped_in_a_dict_is_not_called_a_module_prefix():
    exp = explain_text(BY_ID["m059"]["message"])
    assert exp.entry.id == "state_dict_mismatch"
    assert "The file is a dict around the weights: load its `['state_dict']` entry." in exp.notes
    assert (
        explain_text('Unexpected key(s) in state_dict: "module.fc.weight".').entry.id
        == "module_prefix"
    )


def test_entries_no_chapter_teaches_say_so_and_name_the_closest_section():
    closest = [e for e in ENTRIES if e.closest]
    assert len(closest) >= 8
    for e in closest:
        exp = explainer.Explanation(True, e.signature, e)
        assert "Closest section (not taught as such): notebooks/" in str(exp), e.id
        assert "Closest section (not taught as such):" in exp._repr_html_() and e.fix
        assert exp.to_dict()["taught"] is False
    assert explain_text(RELEASED[0][1]).to_dict()["taught"] is True


def test_oom_numbers_are_read():
    exp = explain(RELEASED[[r[0] for r in RELEASED].index("cuda_oom")][1])
    assert exp.notes[:2] == (
        "It asked for 2.16 GiB more.",
        "The card holds 79.10 GiB; 1.63 GiB was free.",
    )
    assert (
        "3.49 GiB is cached by PyTorch but unused" in exp.notes[-1]
        and "expandable_segments" in exp.notes[-1]
    )
    old = explain(
        "CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total capacity; "
        "130.35 MiB already allocated; 47.06 MiB free; 188.00 MiB reserved in total by "
        "PyTorch)"
    )
    assert (
        "The card holds 7.93 GiB; PyTorch had 130.35 MiB allocated and 47.06 MiB was free."
        in old.notes
    )


def test_device_readings_name_the_argument_and_both_devices():
    exp = explain(RELEASED[0][1])
    assert exp.notes[0].startswith("`mat1` is on cpu; the other tensors are on cuda:0.")
    exp = explain(RELEASED[2][1])
    assert exp.notes == ("The two devices involved: cuda:0 and cpu.",)


# ---------------------------------------------------------------- honest when it does not know
DECOYS = [
    KeyError("cuda"),
    RuntimeError("device busy"),
    ValueError("not enough memory for the cache"),
    ValueError("memory"),
    RuntimeError("CUDA"),
    RuntimeError("gpu"),
    TypeError("expected a device"),
    ZeroDivisionError("division by zero"),
    NotImplementedError(),
    FileNotFoundError("model.pth"),
    KeyError("module.weight"),
    AttributeError("'NoneType' object has no attribute 'grad'"),
    RuntimeError("rank 0 is done"),
    ConnectionRefusedError("Connection refused"),
    ImportError("No module named 'transformers'"),
]
DECOY_TEXTS = [
    (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x', port=443): Connection "
        "refused"
    ),
    "sqlite3.OperationalError: database is locked",
    "OSError: [Errno 28] No space left on device",
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor",
    "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.00 GiB for an array",
    "IndexError: index 5 is out of bounds for axis 0 with size 3",
    "socket.timeout: timed out",
    "cuda",
    "device",
    "memory",
    "out of memory",
    "shape",
    "dtype",
    "NCCL",
    "gloo",
    "rank",
    "state_dict",
    "",
]


@pytest.mark.parametrize("err", DECOYS, ids=[repr(e)[:40] for e in DECOYS])
def test_unrelated_exception_is_not_known(err):
    exp = explain(err)
    assert not exp.known and exp.title == UNKNOWN and exp.entry is None
    assert "not a gpu-training error this course knows" in str(exp).lower()


@pytest.mark.parametrize("text", DECOY_TEXTS)
def test_unrelated_text_is_not_known(text):
    assert not explain_text(text).known


def test_no_pattern_is_a_single_common_word():
    words = {
        "cuda",
        "device",
        "memory",
        "gpu",
        "cpu",
        "grad",
        "shape",
        "dtype",
        "rank",
        "error",
        "nccl",
        "gloo",
        "module",
        "key",
        "tensor",
        "type",
        "timeout",
        "connection",
    }
    for entry in ENTRIES:
        for pattern in entry.patterns:
            for word in words:
                assert not re.search(pattern, f"RuntimeError: {word}", re.I), (
                    entry.id,
                    pattern,
                    word,
                )
                assert not re.search(
                    pattern, f"ValueError: something about the {word} went wrong", re.I
                )


# ---------------------------------------------------------------- logs
def test_a_long_log_explains_its_last_traceback():
    noise = "".join(f"epoch 1 step {i} loss 0.{i:04d} (cuda memory 1.2 GiB)\n" for i in range(5000))
    log = (
        noise
        + (
            'Traceback (most recent call last):\n  File "train.py", line 40, in <module>\n    '
            "loss.backward()\nRuntimeError: element 0 of tensors does not require grad and does "
            "not have a grad_fn\n"
        )
        + "wandb: Waiting for W&B process to finish... (failed 1).\n"
    )
    exp = explain_text(log)
    assert exp.entry.id == "no_grad_fn" and exp.error.startswith("RuntimeError: element 0")


def test_chained_exceptions_the_last_one_counts_and_ansi_colours_are_ignored():
    log = (
        "Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'x'\n\nDuring "
        "handling of the above exception, another exception occurred:\n\nTraceback (most "
        'recent call last):\n  File "a.py"\n\x1b[0;31mRuntimeError\x1b[0m: mat1 and mat2 '
        "shapes cannot be multiplied (64x784 and 128x10)\n"
    )
    exp = explain_text(log)
    assert exp.entry.id == "linear_shape" and "784 features" in exp.notes[0]


def test_ipython_style_traceback():
    log = (
        "---------------------------------------------------------------------------\n"
        "RuntimeError                              Traceback (most recent call last)\n"
        "Cell In[3], line 2\n      1 x = torch.randn(16, 4)\n----> 2 model(x)\n\n"
        "RuntimeError: Tensor on device cpu is not on the expected device meta!\n"
    )
    assert explain_text(log).entry.id == "device_mismatch"


def test_torchrun_log_finds_the_root_cause_behind_child_failed():
    log = (
        '[rank1]: Traceback (most recent call last):\n[rank1]:   File "train.py", line 9, '
        "in <module>\n[rank1]:     local_rank = int(os.environ['LOCAL_RANK'])\n[rank1]: "
        "KeyError: 'LOCAL_RANK'\nE0101 12:00:00 "
        "torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
        '1)\nTraceback (most recent call last):\n  File "/usr/bin/torchrun", line 8, in '
        "<module>\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
        "\n============================================================\ntrain.py FAILED\n"
    )
    exp = explain_text(log)
    assert exp.entry.id == "distributed_env_missing"
    assert "ChildFailedError" in exp.context and exp.error == "KeyError: 'LOCAL_RANK'"
    only_summary = log.split("E0101")[1]
    assert explain_text(only_summary).entry.id == "torchrun_child_failed"


def test_unknown_final_exception_with_a_known_error_earlier_says_so():
    log = (
        "UserWarning: 'pin_memory' argument is set as true but no accelerator is found, then "
        "device pinned memory won't be used.\nTraceback (most recent call last):\n  File "
        "\"x.py\"\nKeyError: 'cuda'\n"
    )
    exp = explain_text(log)
    assert exp.entry.id == "pin_memory_without_accelerator"
    assert "KeyError: 'cuda'" in exp.context and "not one this course knows" in exp.context


def test_dataloader_worker_error_explains_the_original_error():
    err = raised(lambda: all_batches(Dataset4(_plain_bug)))
    exp = explain(err)
    assert exp.entry.id == "dataloader_worker_raised" and "ValueError: bad sample" in exp.context


# ---------------------------------------------------------------- the knowledge base as data
def _headings(number: str) -> set:
    return {
        line.strip()
        for text in notebooks.markdown(number)
        for line in text.splitlines()
        if line.startswith("#")
    }


def test_every_entry_is_complete_and_links_to_a_heading_that_exists():
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)
    assert {c.stem for c in chapters.CHAPTERS} == {p.stem for p in NOTEBOOKS}
    for e in ENTRIES:
        assert e.title and e.signature and e.patterns and e.meaning and e.causes and e.fix, e.id
        assert e.chapter in {c.number for c in chapters.CHAPTERS}, e.id
        assert e.section in _headings(e.chapter), f"{e.id}: no heading {e.section!r}"
        for pattern, sentence in e.readings:
            assert set(re.compile(pattern).groupindex) >= set(re.findall(r"{(\w+)}", sentence)), (
                e.id
            )


_TORCH_FRAME = 'File "/site-packages/torch/cuda/__init__.py", line 372, in _lazy_init'


@pytest.mark.parametrize(
    "notebook,heading,entry_ids",
    [
        ("01_device_check", "### When the driver is older than this PyTorch", ["driver_too_old"]),
        (
            "07_dp_vs_ddp",
            "### When DDP complains about parameters: unused, or ready twice",
            ["ddp_unused_parameters", "ddp_ready_twice"],
        ),
    ],
)
def test_chapters_teach_the_common_new_errors_and_the_explainer_links_there(
    notebook, heading, entry_ids
):
    cell = next(text for text in notebooks.markdown(notebook[:2]) if text.startswith(heading))
    quoted = re.findall(r"`([^`]{25,})`", " ".join(cell.split()))
    # as a learner meets them: inside a traceback of PyTorch's (the driver's texts are CUDA's own,
    # shared by every CUDA program, and need PyTorch's evidence beside them, issue 35)
    found = [explainer.match(q, whole=f"{_TORCH_FRAME}\n{q}") for q in quoted]
    assert {e.id for e in found if e} == set(entry_ids)
    for entry_id in entry_ids:
        assert ENTRY[entry_id].section == heading and not ENTRY[entry_id].closest


def test_link_is_the_anchor_jupyterlab_gives_the_heading():
    exp = explain("Weights only load failed. ...")
    assert exp.link == "04_common_errors.ipynb#4b.-weights_only:-save-the-state_dict,-not-the-model"
    assert f"href='{exp.link}'" in exp._repr_html_()


def test_chapter_04_cheat_sheet_is_rendered_from_the_knowledge_base():
    code, markdown = "\n".join(notebooks.code("04")), "\n".join(notebooks.markdown("04"))
    assert "cheat_sheet()" in code
    assert "| what PyTorch says" not in markdown and "|---|---|---|" not in markdown
    table = explainer.table_markdown()
    assert table.count("\n") == len(ENTRIES) + 1
    assert all(f"`{e.signature.replace('|', chr(92) + '|')}`" in table for e in ENTRIES)


def test_no_notebook_keeps_a_hand_written_table_of_errors():
    """Tables of errors (cheat sheets, wordings) are rendered from the knowledge base, not typed."""
    for path in NOTEBOOKS:
        for text in notebooks.markdown(path):
            if "|---|" in text:
                header = text.split("|---|")[0].lower()
                assert not ("error" in header and "fix" in header), (
                    f"{path.name}: render it from the explainer"
                )
                rows = [line for line in text.splitlines() if line.startswith("|")]
                known = [row for row in rows if explainer.match(row) is not None]
                assert not known, (
                    f"{path.name}: a table row quotes an error the explainer knows: {known[0]}"
                )


def test_wordings_tables_come_from_the_entries_they_illustrate():
    shown = [e for e in ENTRIES if e.wordings]
    assert shown, "chapter 02 shows the device-mismatch wordings from the knowledge base"
    for entry in shown:
        assert all(explainer.match(text) is entry for _, text in entry.wordings), entry.id
        table = explainer.wordings_markdown(entry.id)
        assert table.count("\n") == len(entry.wordings) + 1
    code = notebooks.code("02")
    assert any('wordings("device_mismatch")' in source for source in code)


def test_explaining_one_message_is_fast():
    """A generous sanity bound; the real figure (under
    1 ms) is measured by benchmarks/explain_speed.py."""
    messages = [t for _, t in RELEASED] + [r["message"] for r in CORPUS] + ["KeyError: 'cuda'"]
    explain(messages[0])
    times = []
    for text in messages * 3:
        start = time.perf_counter()
        explain(text)
        times.append(time.perf_counter() - start)
    times.sort()
    assert times[len(times) // 2] < 0.05, f"median {times[len(times) // 2] * 1000:.1f} ms"


# ------------------------------------------------------ the notebook panel, in a real IPython shell
@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_cell("import torch\nfrom torch import nn\nfrom course_lib.errors import expect_error")
    yield ip
    from course_lib.explainer import notebook

    notebook.disable(ip)
    InteractiveShell.clear_instance()


def _run(shell, code, capsys):
    result = shell.run_cell(code)
    return result, capsys.readouterr().out


def test_panel_appears_under_the_unchanged_traceback(shell, capsys):
    code = "nn.Linear(4, 3)(torch.randn(2, 4, device='meta'))"
    _run(shell, code, capsys)  # PyTorch's first call of an op shows one more frame (pystub check)
    _, plain = _run(shell, code, capsys)
    course_lib.explainer.enable(shell)
    course_lib.explainer.enable(shell)  # idempotent: one panel, not two
    result, out = _run(shell, code, capsys)
    assert isinstance(result.error_in_exec, RuntimeError)
    assert out.startswith(plain), "the traceback must come first, exactly as without the explainer"
    panel = out[len(plain) :]
    assert panel.count("[course explainer] Tensors on two devices") == 1
    assert "Taught in: notebooks/04_common_errors.ipynb" in panel


def test_no_panel_for_unknown_errors_or_for_expect_error(shell, capsys):
    course_lib.explainer.enable(shell)
    _, out = _run(shell, "raise KeyError('cuda')", capsys)
    assert "KeyError" in out and "course explainer" not in out
    _, out = _run(
        shell,
        "with expect_error(RuntimeError, 'device'):\n"
        "    nn.Linear(4, 3)(torch.randn(2, 4, device='meta'))",
        capsys,
    )
    assert "as expected" in out and "course explainer" not in out
    result, out = _run(shell, "with expect_error(RuntimeError, 'device'):\n    pass", capsys)
    assert isinstance(result.error_in_exec, ExpectationFailed)
    assert "ran without an error" in out and "course explainer" not in out
    result, out = _run(
        shell,
        "with expect_error(RuntimeError, 'no such words'):\n"
        "    nn.Linear(4, 3)(torch.randn(2, 4, device='meta'))",
        capsys,
    )
    assert "no longer mentions" in out and "course explainer" not in out


def test_a_known_warning_is_delivered_and_explained_once_per_kind(shell, capsys, recwarn):
    course_lib.explainer.enable(shell)
    _, plain = _run(
        shell, "import warnings\nwarnings.warn('nothing the course knows', UserWarning)", capsys
    )
    result = shell.run_cell("torch.cuda.amp.GradScaler()")
    first = capsys.readouterr().out
    assert result.error_in_exec is None
    delivered = [str(w.message) for w in recwarn]  # the warning still goes where warnings go
    assert any("`torch.cuda.amp.GradScaler(args...)` is deprecated" in m for m in delivered)
    assert first.count("[course explainer] `torch.cuda.amp` is deprecated") == 1
    assert "A warning, not an error" in first and "05_speedups.ipynb" in first
    shell.run_cell("torch.cuda.amp.autocast()")  # the same kind again: delivered, no second panel
    assert any("torch.cuda.amp.autocast(args...)` is deprecated" in str(w.message) for w in recwarn)
    assert "course explainer" not in capsys.readouterr().out
    assert "course explainer" not in plain
    if not torch.cuda.is_available() and pin_memory_warns():  # another kind: its own panel
        shell.run_cell("list(torch.utils.data.DataLoader(range(2), pin_memory=True))")
        assert capsys.readouterr().out.count("[course explainer] `pin_memory=True`") == 1


def test_the_panel_calls_the_original_showwarning_first(shell, capsys, monkeypatch):
    shown = []
    monkeypatch.setattr(warnings, "showwarning", lambda *args: shown.append(args))
    course_lib.explainer.enable(shell)
    warnings.showwarning(
        "`torch.cuda.amp.autocast(args...)` is deprecated.", FutureWarning, "t.py", 3, None, None
    )
    assert shown == [
        ("`torch.cuda.amp.autocast(args...)` is deprecated.", FutureWarning, "t.py", 3, None, None)
    ]
    assert "[course explainer] `torch.cuda.amp` is deprecated" in capsys.readouterr().out
    from course_lib.explainer import notebook

    notebook.disable(shell)
    assert warnings.showwarning is not notebook._panel_after_warning and len(shown) == 1


def test_disable_restores_the_original_showwarning(shell):
    before = warnings.showwarning
    course_lib.explainer.enable(shell)
    course_lib.explainer.enable(shell)
    assert warnings.showwarning is not before
    from course_lib.explainer import notebook

    notebook.disable(shell)
    assert warnings.showwarning is before


def test_explain_warning_reads_the_warning_as_python_prints_it():
    from course_lib.explainer import explain_warning

    exp = explain_warning(
        "This DataLoader will create 12 worker processes in total. Our suggested max number of "
        "worker in current system is 8, which is smaller than what this DataLoader is going to "
        "create.",
        UserWarning,
        "/x/dataloader.py",
        560,
    )
    assert exp.entry.id == "too_many_workers" and exp.notes == (
        "You asked for 12 workers; this machine suggests at most 8.",
    )
    assert exp.error.startswith("/x/dataloader.py:560: UserWarning: This DataLoader")
    assert not explain_warning("the sky is blue", UserWarning).known


def test_explain_without_argument_explains_the_last_error(shell, capsys):
    course_lib.explainer.enable(shell)
    _run(shell, "nn.Linear(20, 5)(torch.zeros(4, 5))", capsys)
    assert course_lib.explain().entry.id == "linear_shape"


def test_enable_outside_ipython_does_nothing():
    import gc

    from IPython.core.interactiveshell import InteractiveShell

    course_lib.freeze_imports.cache_clear()
    assert not InteractiveShell.initialized()
    frozen = gc.get_freeze_count()
    course_lib.explain_errors()  # no shell: no error, nothing registered, nothing frozen
    assert gc.get_freeze_count() == frozen


@pytest.fixture
def unfrozen(monkeypatch):
    import gc

    course_lib.freeze_imports.cache_clear()
    gc.unfreeze()
    yield gc
    gc.unfreeze()
    course_lib.freeze_imports.cache_clear()


def test_explain_errors_in_a_kernel_freezes_the_imports_once(shell, unfrozen):
    shell.run_cell("from course_lib import explain_errors\nexplain_errors()")
    frozen = unfrozen.get_freeze_count()
    assert frozen > 10_000, "the imports' objects (torch's) are frozen"
    shell.run_cell("made_after = [[] for _ in range(1000)]\nexplain_errors()")
    assert unfrozen.get_freeze_count() < frozen + 1000, "a second call freezes nothing made since"


@pytest.mark.parametrize("launches_torchrun", [False, True])
def test_freeze_imports_warms_up_dynamo_unless_torchrun_workers_start_later(launches_torchrun):
    """Chapters 07 and 08 (ddp_worker imported) leave torch._dynamo to the launch's meanwhile()."""
    code = (
        "import sys, torch\n"
        + ("import course_lib.ddp_worker\n" if launches_torchrun else "")
        + "import course_lib\ncourse_lib.freeze_imports()\nprint('torch._dynamo' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert out == [str(not launches_torchrun)]


def test_explain_accepts_exceptions_and_text():
    err = raised(lambda: nn.Linear(20, 5)(torch.zeros(4, 5)))
    assert (
        course_lib.explain(err).entry.id == course_lib.explain(str(err)).entry.id == "linear_shape"
    )
    assert (
        "<code>nn.Linear(in_features, out_features)</code>" in course_lib.explain(err)._repr_html_()
    )


# ---------------------------------------------------------------- the command line
def _cli(*args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "course_lib", "explain", *args],
        input=stdin,
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )


def test_command_line_json_one_object_per_input_in_order(tmp_path):
    (tmp_path / "a.log").write_text(
        'step 1\nTraceback (most recent call last):\n  File "t.py"\n'
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    (tmp_path / "b.log").write_text("ZeroDivisionError: division by zero\n")
    run = _cli(
        "--json",
        str(tmp_path / "a.log"),
        "-",
        str(tmp_path / "b.log"),
        stdin=(
            "Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!"
        ),
    )
    assert run.returncode == 1, run.stderr  # one input holds no known error
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["input"] for r in rows] == [str(tmp_path / "a.log"), "-", str(tmp_path / "b.log")]
    assert [r["known"] for r in rows] == [True, True, False]
    assert rows[0]["chapter"] == "04" and rows[0]["id"] == "device_side_assert" and rows[0]["fix"]
    assert rows[1]["title"] == "Tensors on two devices in one operation" and rows[1]["cause"]
    assert rows[2] | {"input": None} == {
        **rows[2],
        "input": None,
        "chapter": None,
        "cause": None,
        "fix": None,
    }
    text = _cli(stdin="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.")
    assert text.returncode == 0 and "It asked for 20.00 MiB more." in text.stdout
    missing = _cli(str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_panel_follows_the_error_output_in_a_real_jupyter_kernel():
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import torch\nfrom course_lib import explain_errors\nexplain_errors()"
        ),
        nbformat.v4.new_code_cell("torch.nn.Linear(4, 3)(torch.randn(2, 4, device='meta'))"),
        nbformat.v4.new_code_cell("raise KeyError('cuda')"),
        nbformat.v4.new_code_cell("scaler = torch.cuda.amp.GradScaler(enabled=False)"),
    ]
    NotebookClient(
        nb, timeout=180, kernel_name="python3", allow_errors=True, cwd=str(ROOT)
    ).execute()
    known, unknown = nb.cells[1].outputs, nb.cells[2].outputs
    assert [o["output_type"] for o in known] == ["error", "display_data"]
    assert known[0]["ename"] == "RuntimeError" and "expected device" in known[0]["evalue"]
    assert "Course explainer: Tensors on two devices" in known[1]["data"]["text/html"]
    assert [o["output_type"] for o in unknown] == ["error"]
    warned = [
        o for o in nb.cells[3].outputs if o["output_type"] != "stream" or "deprecated" in o["text"]
    ]
    assert [o["output_type"] for o in warned] == [
        "stream",
        "display_data",
    ]  # the warning, then its panel
    assert (
        warned[0]["name"] == "stderr"
        and "Course explainer: <code>torch.cuda.amp</code> is deprecated"
        in warned[1]["data"]["text/html"]
    )


def test_the_inplace_reading_names_the_op_in_torch_2_6s_wording_too():
    """torch 2.6 names the backward node that made the tensor ("SigmoidBackward0")."""
    said = (
        "RuntimeError: one of the variables needed for gradient computation has been modified by "
        "an inplace operation: [torch.FloatTensor [4, 5]], which is output 0 of SigmoidBackward0, "
        "is at version 1; expected version 0 instead."
    )
    assert explain_text(said).notes == ("The changed tensor was made by `Sigmoid`.",)
