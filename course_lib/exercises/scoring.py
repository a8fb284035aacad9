"""The grading rules, in one place: points, partial credit, zeroing, and what is flagged for review.

The engine (a learner's own check) and the grader (the class's gradebook) both score with
these functions, so a learner and a teacher always see the same points. Nothing here is
secret: it ships in the student bundle, and the flags below are hints for the teacher,
not the defence (the grader's isolation is; see docs/grading-threat-model.md).
"""

import re

# Code a function under test, or a notebook, has no business containing: the teacher reviews it.
REVIEW_PATTERNS = {
    "frame walking": (
        r"_getframe|\bf_back\b|\bf_globals\b|\bf_locals\b|\bcurrentframe\b|\binspect\b|tb_frame"
    ),
    "grader internals": (
        r"course_lib\.(?:exercises|key|grading)|\bgc\b\.|\bsys\.modules\b|__import__|importlib"
    ),
    "builtins": r"\bbuiltins\b|__builtins__",
    "dynamic code": (
        r"(?<![\w.])(?:exec|eval|compile)\s*\(|__code__|__globals__|__closure__|cell_contents"
    ),
    "processes and files": (
        r"/proc/|\bos\.(?:write|kill|killpg|_exit|system|fork|setsid|open|dup2?|exec\w*)\b|\bsubprocess\b|\bctypes\b|\bsignal\b|\bpty\b"
    ),
    "network": r"\bsocket\b|\burllib\b|\bhttp\.client\b|\brequests\b",
    "patching": (
        # torch.backends.* are settings a learner is taught to change (cudnn.benchmark, TF32)
        r"\bmock\b|(?:\b|__)setattr(?:__)?\s*\(|\bmonkeypatch\b|\.__class__\s*=|\btorch(?!\.backends\.)(?:\.\w+)+\s*=(?!=)"
    ),
    "tensor subclass": (
        r"\(\s*torch\.Tensor\s*\)\s*:|_make_subclass|_make_wrapper_subclass|__torch_function__|__torch_dispatch__"
    ),
}


# What only a function written to fool a test has reason to contain (a function under test, not a
# notebook, where experiments with the meta device are the lesson): the tests that can only see
# in-process evidence are listed in docs/grading-threat-model.md.
FUNCTION_PATTERNS = {
    "test detection": (
        r"""['"]meta['"]|\btype\s*==\s*['"]meta|_python_dispatch"""
        r"|\b[gs]et_rng_state\b|\bis_grad_enabled\b|\b_growth_tracker\b|\b__self__\b"
    ),
}


def points_for(max_points: float, outcomes) -> float:
    """Partial credit: the share of test weight that passed, times the exercise's points.

    `outcomes` holds (weight, passed) per test; no tests at all earn nothing.
    """
    outcomes = list(outcomes)
    total = sum(weight for weight, _ in outcomes)
    if not outcomes or total <= 0:
        return 0.0
    return round(max_points * sum(weight for weight, ok in outcomes if ok) / total, 3)


def quiz_points(max_points: float, right: bool) -> float:
    """A quiz is right or wrong: all its points or none."""
    return float(max_points) if right else 0.0


def zeroed(verdict: dict, status: str, detail: str, flag: str = "") -> dict:
    """The verdict with no points, a status and a reason (tampering, an incomplete report)."""
    flags = list(verdict.get("flags", [])) + ([flag] if flag else [])
    return dict(verdict, status=status, points=0.0, passed=0, detail=detail, flags=flags)


def review_flags(source: str, function: bool = False) -> list:
    """Names of the review patterns `source` matches, sorted (e.g. ["frame
    walking"]); with `function`, the patterns for a function under test too."""
    patterns = {**REVIEW_PATTERNS, **(FUNCTION_PATTERNS if function else {})}
    return sorted(label for label, pattern in patterns.items() if re.search(pattern, source))


def flag_names(labels) -> list:
    """Review labels as gradebook flags: "review:frame-walking"."""
    return [f"review:{label.replace(' ', '-')}" for label in labels]
