"""pytest plugin for gpu_check.sh: run only the CUDA-only tests (``-p gpu_cuda_tests``).

A CUDA-only test is one the suite marks ``skipif(not torch.cuda.is_available(), reason=...)``
with a reason that names CUDA or a GPU (e.g. "needs a CUDA GPU"); tests that check the
CPU-only behaviour say so in their reason ("CPU-only") and are left out. Tests whose name
says cuda or gpu run too (they simulate CUDA; on a real GPU they must still pass). On a
machine without a GPU the CUDA-only ones are collected and skipped, which shows what would run.
"""
import re

CUDA_REASON = re.compile(r"cuda|gpu", re.I)
CPU_REASON = re.compile(r"cpu[- ]only", re.I)


def is_cuda_only(item) -> bool:
    """Has a skipif mark whose reason names CUDA or a GPU (not CPU-only behaviour), or a cuda/gpu name."""
    if CUDA_REASON.search(getattr(item, "originalname", item.name)):
        return True
    for mark in item.iter_markers("skipif"):
        reason = str(mark.kwargs.get("reason", ""))
        if CUDA_REASON.search(reason) and not CPU_REASON.search(reason):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    keep = [item for item in items if is_cuda_only(item)]
    dropped = [item for item in items if not is_cuda_only(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def pytest_report_header(config):
    return "gpu_cuda_tests: only tests marked skipif(no CUDA) run"
