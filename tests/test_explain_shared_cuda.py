"""Shared CUDA-runtime text needs PyTorch's evidence (issue 35, item 4).

cuBLAS/cuDNN status codes, "CUDA error: out of memory", the driver's and the loader's messages are
printed by every CUDA program. Neither an entry nor a family claims them on their own, whatever
the framework (not a list of the frameworks seen): only beside a word of PyTorch's own (torch.,
a torch/ frame, aten::, c10::, TORCH_*, a torch exception class) or in the exact form PyTorch
raises them in.
"""

import pytest

from course_lib.explainer import explain_text, torch_said

# other CUDA programs, none of them in a list the explainer keeps: the shared text alone
NOT_PYTORCH = [
    "mxnet.base.MXNetError: [10:21:03] src/operator/linalg_impl.h: Check failed: "
    "e == CUBLAS_STATUS_SUCCESS (13 vs. 0) : cuBLAS: CUBLAS_STATUS_EXECUTION_FAILED",
    "OSError: (External) CUDA error(2), out of memory. [Hint: 'cudaErrorMemoryAllocation'.] "
    "(at /paddle/paddle/phi/backends/gpu/cuda/cuda_info.cc:285)",
    "numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in "
    "CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    "whisper.cpp: CUDA error: out of memory\n  current device: 0, in function alloc at "
    "ggml/src/ggml-cuda/ggml-cuda.cu:375",
    "darknet: CUDA Error: no kernel image is available for execution on the device",
    "deviceQuery: cudaGetDeviceCount returned 35 -> CUDA driver version is insufficient "
    "for CUDA runtime version",
    "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
    "E0412 cudnn_ops.cc:41] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
    "Failed to initialize NCCL communicator: ncclUnhandledCudaError: Call to CUDA function failed.",
]

# the same texts as PyTorch prints them, or beside PyTorch's evidence
PYTORCH = [
    ("RuntimeError: CUDA error: out of memory", "cuda_oom"),
    (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/torch/nn/functional.py", line 2573, in linear\n'
        "    return torch._C._nn.linear(input, weight, bias)\n"
        "RuntimeError: cuBLAS: CUBLAS_STATUS_EXECUTION_FAILED",
        "cuda_library_failure",
    ),
    ("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", "cuda_library_failure"),
    (
        "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
        "cuda_library_failure",
    ),
    (
        "cuda runtime error (2) : out of memory at "
        "/pytorch/aten/src/THC/THCCachingAllocator.cpp:510",
        "cuda_oom",
    ),
    ("torch.AcceleratorError: CUDA error: out of memory", "cuda_oom"),
    (  # c10's sentence around the driver's code (collection 1, m105)
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
        "before calling NumCudaDevices() that might have already set an error? Error 804: forward "
        "compatibility was attempted on non supported HW",
        "driver_too_old",
    ),
]


@pytest.mark.parametrize("text", NOT_PYTORCH, ids=[str(i) for i in range(len(NOT_PYTORCH))])
def test_shared_cuda_text_of_another_program_is_not_claimed(text):
    """No entry and no family answers another program's CUDA text, listed framework or not."""
    exp = explain_text(text)
    assert not exp.known, (exp.entry.id, text)


@pytest.mark.parametrize("text,entry", PYTORCH, ids=[e for _, e in PYTORCH])
def test_the_same_text_as_pytorch_raises_it_is_explained(text, entry):
    """PyTorch's form of the shared text, or PyTorch's evidence beside it, is explained."""
    exp = explain_text(text)
    assert exp.known and exp.entry.id == entry, (exp.entry and exp.entry.id, text)


@pytest.mark.parametrize(
    "said",
    [
        "import torch",
        'File "/x/torch/cuda/__init__.py"',
        "aten::mm",
        "c10::Error",
        "PYTORCH_CUDA_ALLOC_CONF",
        "torchrun",
        "torch.OutOfMemoryError",
    ],
)
def test_pytorch_s_own_words_are_evidence(said):
    """Its modules, frames, namespaces, variables and exception classes name PyTorch."""
    assert torch_said(said)


@pytest.mark.parametrize(
    "said", ["cv::OutOfMemoryError", "cupy.cuda.memory.OutOfMemoryError", "Attorney", "CUDA error"]
)
def test_shared_or_foreign_words_are_not_evidence(said):
    """OpenCV's and CuPy's classes, a word inside another word, CUDA's own text are none."""
    assert not torch_said(said)
