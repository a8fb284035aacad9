"""pytest plugin for gpu_check.sh: run only the tests that need a CUDA GPU (``-p gpu_cuda_tests``).

A test needs a CUDA GPU when the suite marks it ``skipif(not torch.cuda.is_available(),
reason="needs a CUDA GPU")`` (a reason that says exactly that: NEEDS_CUDA) or marks it
``@pytest.mark.cuda``. Nothing else is selected: not a test whose name or skip reason merely
mentions a GPU (those simulate one, and run on every CPU machine), not the GPU check's own
tests (one reruns the whole check), not the grading tests (the grader step checks grading on
the GPU). On a machine without a GPU the selected tests are collected and skipped, which shows
what would run; ``--collect-only`` lists them (gpu_check.sh's dry run).
"""

from pathlib import Path

NEEDS_CUDA = "needs a cuda gpu"  # the skip reason, lower-cased
LEFT_TO_OTHER_STEPS = (
    "test_gpu_check.py",
    "test_grading_*.py",
)  # the check itself; the grader step


def needs_cuda(item) -> bool:
    """Marked cuda, or skipped without CUDA with the reason "needs a CUDA GPU"."""
    if any(True for _ in item.iter_markers("cuda")):
        return True
    return any(
        NEEDS_CUDA in str(mark.kwargs.get("reason", "")).lower()
        for mark in item.iter_markers("skipif")
    )


def left_to_another_step(item) -> bool:
    path = Path(str(getattr(item, "path", getattr(item, "fspath", ""))))
    return any(path.match(pattern) for pattern in LEFT_TO_OTHER_STEPS)


def selected(item) -> bool:
    return needs_cuda(item) and not left_to_another_step(item)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cuda: the test needs a CUDA GPU (gpu_check.sh's cuda-tests step runs it)"
    )


def pytest_collection_modifyitems(config, items):
    dropped = [item for item in items if not selected(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = [item for item in items if selected(item)]


def pytest_report_header(config):
    return "gpu_cuda_tests: only the tests that need a CUDA GPU run"
