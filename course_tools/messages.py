"""Every message course_lib says, collected in English by running what exists (translators, tests).

    python -m course_tools.messages --missing     what has no Chinese entry yet, each with the
                                                     source line it comes from (exit 1 if any)
    python -m course_tools.messages --all         every collected message
    python -m course_tools.messages --problems    entries whose placeholders differ, and the like
    (--json: the same as a JSON object, message -> where it was seen)

`collect()` runs, in English, what reaches a learner: every exercise's reference solution, the
notebook's blank stub and the key's known-wrong answers through the checks, and their verdicts
rendered as text and HTML; every quiz's widget and an answer for each option; every explainer entry
and the corpus of real messages; `doctor` on the simulated machines of its tests; every skip line
with its GPU notes; the widgets; the grader's feedback files. Every text that reaches `tr()` is
recorded. Texts no run can reach on this machine (a recorded GPU run's figure lines, the grader's
reasons for a crashed or timed-out process) are read from their f-strings in the source instead.
Needs the teacher's copy (the answer key) and the checkout's notebooks.
"""

import argparse
import ast
import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path
from unittest import mock

from course_lib.i18n.catalogue import PLACEHOLDER, in_language, problems, recording, untranslated

ROOT = Path(__file__).resolve().parents[1]
VALUE = " (value)"
# Sources whose f-strings are the messages (what no run here reaches): file -> functions (None:
# all).
STATIC_SOURCES = {
    "benchmarks/gpu_figures.py": (  # the figure lines of a recorded GPU run, and why one is missing
        "device_memory",
        "create_on_device",
        "sync_timing",
        "data_wait",
        "pinned_copy",
        "amp",
        "compile_",
        "nvidia_smi_during_training",
        "benchmark_table",
        "profiler_cuda",
        "item_sync",
        "nonblocking_d2h",
        "sync_debug",
        "estimate_vs_peak",
        "real_oom",
        "empty_cache",
        "amp_memory",
        "memory_snapshot",
        "fragmentation",
        "data_parallel_on_one_gpu",
        "data_parallel",
        "triton_build_tools_missing",
        "NEEDS",
    ),
    "course_lib/measure.py": (  # parts of those figure lines; a timing and its notes
        "speed_ratio",
        "__str__",
        "first_call_note",
        "timing_notes",
        "FIRST_CALL_NOTES",
        "TIMING_NOTES",
    ),
    "course_lib/profiling.py": ("compare_splits", "TIMELINE_PARTS"),
    "course_lib/hosted.py": (
        "PLATFORMS",
        "CHINA_WAY_IN",
        "links_markdown",
        "install",
        "bootstrap",
        "_enable_widgets",
    ),
    "course_lib/ch05_speedups.py": (  # what chapter 05's measurements print (GPU-only ones too)
        "starving_experiment",
        "profile_steps",
        "nvidia_smi",
        "plot_epochs",
        "WORKER_COMPARISONS",
        "workers_notes",
        "START_METHODS",
        "start_method_note",
        "machine_cores",
        "PINNING",
        "pin_memory_demo",
        "is_cuda_or_say_so",
        "copy_benchmark",
        "async_demo",
        "show_timer_vs_time_fn",
        "benchmark_measurements",
        "float_formats",
        "PRECISION_CASES",
        "precision_pitfalls",
        "show_autocast_ops",
        "autocast_groups",
        "autocast_dtypes",
        "amp_settings",
        "compare",
        "show_precision_runs",
        "scaler_demo",
        "compile_call_cost",
        "payback_note",
        "compile_experiment",
        "__init__",  # PrintingNet's line
        "forward",
        "explain_forwards",
        "recompiles_per_depth",
        "control_flow_demo",
        "item_loops",
        "show_item_loops",
        "show_readback_race",
    ),
    "course_lib/widgets.py": ("reveal",),  # its button's default label, its terminal line
    "course_lib/ddp_worker.py": ("main",),  # a torchrun line pasted into a terminal
    "course_lib/grading/outcome.py": (
        "_run_summary",
        "_stopped_summary",
        "finish_notebook",
        "finish_check",
        "decide_statically",
    ),
    "course_lib/grading/scheduler.py": ("_deadlines", "stop"),
    "course_lib/grading/protocol.py": ("exit_text",),
    "course_lib/grading/judge.py": ("function", "quiz"),
    "course_lib/grading/cells.py": (
        "read_cells",
        "run_cell",
        "describe_error",
        "too_large",
        "check_budget",
    ),
    "course_lib/grading/analyze.py": ("analyze",),
    "course_lib/exercises/spec.py": ("NONFINITE_TEXT",),
    "course_lib/grading/intake.py": ("read", "refusal", "mark_failed", "read_all", "assign"),
    "course_lib/grading/child.py": ("define",),  # why a function could not be checked
    "course_lib/grading/parent.py": (  # reasons in feedback; what `grade` prints
        "_failed",
        "_guard_check",
        "_drop",
        "_intake",
        "_isolation_notes",
        "_specs",
        "run",
    ),
    # What the teachers' commands print (python -m course_lib grade/release/collect/...).
    "course_lib/__main__.py": (
        "cmd_release",
        "cmd_assignment",
        "cmd_grade",
        "_released",
        "_grade_exporter",
        "cmd_collect",
        "cmd_gradescope",
        "cmd_explain",
    ),
    "course_lib/classroom/collect.py": (
        "lines",
        "from_home",
        "from_exchange",
        "_place",
        "collect",
        "NOT_A_FILE",
        "PROBLEMS",
        "check",
        "owner_for",
        "_unreadable",
        "_link",
        "open_folder",
        "open_under",
        "_read",
        "_exchange_folders",
    ),
    "course_lib/classroom/exports.py": (
        "lines",
        "read_scores",
        "_duplicate",
        "entries",
        "export",
        "from_args",
        "run",
    ),
    "course_lib/classroom/roster.py": ("_rows", "_student", "__init__", "read"),
    "course_lib/classroom/gradescope.py": ("files", "build"),
    "course_lib/classroom/assignments.py": ("assignment",),
    "course_lib/grading/gradebook.py": ("_load",),
    "course_lib/grading/isolation.py": ("LOST_WITHOUT", "guarantees"),
    "course_lib/grading/limits.py": ("REASONS", "describe"),  # a tree stopped; the mechanism
    "course_lib/grading/release.py": ("edition_notebooks", "release"),
    # what the chapters' widgets, demos and prints say (their notebooks show it; leftovers.py)
    "course_lib/ch01_device_check.py": ("verdict_on", "machine_explorer", "DEVICE_CHOICES"),
    "course_lib/ch06_out_of_memory.py": ("leak_lines",),
    "course_lib/ch02_same_device_rule.py": (
        "_loss_text",
        "run_step",
        "rooms",
        "outcome_html",
        "placements_table",
        "__init__",  # WarehouseAndWorkshop's
        "_on_change",
        "_on_click",
        "placements_reveal",
    ),
    "course_lib/errors.py": ("who_raised", "expect_error", "expect_warning"),
    "course_lib/checks/rig.py": ("report", "trace_devices"),
    "course_lib/ch03_training_template.py": (
        "yours_or_reference",
        "describe_run",
        "plot_zero_grad",
        "forward",
        "graph_follows_python",
        "trainable_report",
    ),
    "course_lib/training.py": ("summary", "fit", "plot_history"),
    "course_lib/ch08_sharding.py": (
        "show_one_process",
        "describe_shards",
        "losses_report",
        "bytes_report",
        "plot_bytes",
        "collectives_report",
        "reshard_report",
        "_counts",
        "zero_table",
        "ZERO_STAGES",
        "PART_NAMES",
    ),
    "course_lib/sharding.py": ("_holdings",),
    "course_lib/device.py": ("forced_device", "cuda_problem"),
}


# ---------------------------------------------------------------- running what exists
def _quietly(call, *args, **kwargs):
    """`call(...)` with its printing kept from the terminal; what it printed is returned too."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        value = call(*args, **kwargs)
    return value, out.getvalue()


def stub_function(exercise):
    """The learner's function as the chapter notebook's stub cell defines it, or None."""
    import torch

    for path in sorted((ROOT / "notebooks").glob(f"{exercise.chapter.number}_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if cell["cell_type"] == "code" and re.search(rf"^def {exercise.name}\(", source, re.M):
                namespace = {"torch": torch, "nn": torch.nn}
                exec(source, namespace)
                return namespace[exercise.name]
    return None


def _render(result) -> None:
    result.text()
    result._repr_html_()


def _function_exercise(ex) -> None:
    from course_lib.exercises.spec import judge_outcome

    key = ex.key()
    candidates = [key.solution] + [w.function for w in key.wrong_answers] if key else []
    stub = stub_function(ex)
    for candidate in candidates + ([stub] if stub else []):
        _render(_quietly(ex.check, candidate, record=False)[0])
        _render(_quietly(ex.check, candidate, include_hidden=False, record=False)[0])
    for got in (None, "int"):
        _render(ex.unusable(got))
    test = ex.tests[0]
    for seen in (
        {"timeout": 10.0},
        {"raised": "ValueError: x (line 1 in f: raise ValueError('x'))"},
        {"too_large": True},
        {"seconds": 0.1},
        None,
    ):
        outcome = judge_outcome(test, seen, None, ex.time_limit)
        outcome.public_lines()
    with mock.patch.object(type(ex), "key", lambda self: None):
        ex.solution_source()


def _hints(ex) -> None:
    from course_lib.widgets import hint_widget

    before = ex._hints_shown
    try:
        hint_widget(ex)
        for _ in ex.hints:
            ex.next_hint()
        hint_widget(ex)
    finally:
        ex._hints_shown = before


def _quiz(quiz) -> None:
    from course_lib.widgets import CHOOSE_ONE, EMPTY_ANSWER, answer_cell_note, quiz_widget

    before = quiz._hints_shown
    try:
        quiz_widget(quiz)
        key = quiz.key()
        answers = [key.answer] if key is not None and key.answer is not None else []
        answers += list(quiz.why) + (["zz", "a b"] if quiz.kind != "numeric" else ["not a number"])
        answers += list(quiz.options) or [0]
        for answer in answers:
            _render(quiz.check(answer, record=False))
            quiz._hints_shown = before
        for letter in quiz.options:
            quiz.check(letter, record=False)
        _render(quiz.check(None, record=False, empty=EMPTY_ANSWER.get(quiz.kind, CHOOSE_ONE)))
        _render(quiz.check("", record=False))
        answer_cell_note(quiz.name)
    finally:
        quiz._hints_shown = before


def exercises() -> None:
    """Every exercise: checks of its reference, stub and wrong answers; its hints; quizzes'
    answers."""
    from course_lib.chapters import Chapter
    from course_lib.exercises import Declarations, all_exercises

    for ex in all_exercises():
        if ex.kind == "function":
            _function_exercise(ex)
        else:
            _quiz(ex)
        _hints(ex)
    bare = Declarations(Chapter("99", "messages", "Messages")).function_exercise(
        "nothing", title="Nothing", prompt="", points=1, tests=[]
    )
    bare.next_hint()
    _hints(bare)
    from course_lib.classroom.written import expectation
    from course_lib.exercises.registry import written_questions

    for question in written_questions():  # what the teacher's review page and report show
        expectation(question)


def explainer() -> None:
    """Every entry of the knowledge base rendered, the cheat sheet, and the corpus of real
    messages."""
    from course_lib.explainer import (
        ENTRIES,
        NO_ERROR,
        UNKNOWN,
        Explanation,
        explain_text,
        table_markdown,
        wordings_markdown,
    )

    for entry in ENTRIES:
        notes = tuple(sentence for _, sentence in entry.readings)
        for context in ("", "A warning, not an error: the code went on running. The warning:"):
            exp = Explanation(True, "RuntimeError: an example", entry, notes, context)
            str(exp), exp._repr_html_(), exp.to_dict()
        if entry.wordings:
            wordings_markdown(entry.id)
    for title in (UNKNOWN, NO_ERROR):
        exp = Explanation(False, "ValueError: an example", title=title)
        str(exp), exp._repr_html_(), exp.to_dict()
    table_markdown()
    corpus = ROOT / "tests" / "data" / "explain_corpus.jsonl"
    if corpus.exists():
        for line in corpus.read_text(encoding="utf-8").splitlines():
            exp = explain_text(json.loads(line)["message"])
            str(exp), exp._repr_html_(), exp.to_dict()


def doctor() -> None:
    """doctor's report on this machine and on the simulated machines of its tests
    (tests/test_course_lib.py)."""
    import torch

    from course_lib import doctor as doc

    report = doc.environment_report()
    doc.format_report(report)
    doc.doctor_widget()
    gpus = [("NVIDIA GeForce RTX 3090", "550.54.14")]
    cases = [
        (None, gpus, {}),
        ("13.0", gpus, {}),
        ("13.0", [("NVIDIA H200", "580.95.05")], {}),
        ("13.0", gpus, {"CUDA_VISIBLE_DEVICES": ""}),
    ]
    # whatever this process set (the grader, run in-process by other tests, hides GPUs)
    shown = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    for cuda, found, env in cases:
        with (
            mock.patch.object(torch.version, "cuda", cuda),
            mock.patch.dict(os.environ, {**shown, **env}, clear=True),
            mock.patch.object(torch.cuda, "is_available", lambda: False),
        ):
            said = doc.gpu_problem(found)
            doc.format_report(
                dict(
                    report,
                    **{
                        "gpu problem": said,
                        "nvidia-smi": "; ".join(
                            f"{name}, driver {driver}" for name, driver in found
                        ),
                    },
                )
            )
    for versions in ({"ipywidgets": "not installed"}, {"jupyterlab_widgets": "4.0.0"}):
        found = lambda p, v=versions: v.get(p, "8.1.0" if p == "ipywidgets" else "3.0.0")
        with mock.patch.object(doc, "_version", found):
            doc.format_report(
                dict(report, widgets=doc.widgets_status(), jupyterlab=doc._version("jupyterlab"))
            )
    for forced in ("cpu", "no-such-device", "cuda", "mps"):
        with mock.patch.dict(os.environ, {"COURSE_DEVICE": forced}):
            doc.format_report(doc.environment_report())
    doc.format_report(
        dict(
            report,
            **{
                "cuda devices": [
                    {"index": 0, "name": "NVIDIA H200", "memory_gib": 139.8, "capability": "9.0"}
                ],
                "cudnn": "91002",
            },
        )
    )


def notebook_calls(function: str, keywords_only: bool = False) -> list:
    """The literal arguments of every `function(...)` call in the chapter notebooks' code cells
    (`keywords_only`: only its keyword arguments, each as its literal value or, for an f-string, as
    a template)."""
    calls = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            try:
                tree = ast.parse(
                    "\n".join(
                        line
                        for line in source.splitlines()
                        if not line.lstrip().startswith(("%", "!"))
                    )
                )
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                name = getattr(node, "func", None)
                name = getattr(name, "attr", None) or getattr(name, "id", None)
                if isinstance(node, ast.Call) and name == function and keywords_only:
                    said = {k.arg: template_text(k.value) for k in node.keywords}
                    calls.append(([], {k: v for k, v in said.items() if v is not None}))
                elif isinstance(node, ast.Call) and name == function:
                    try:
                        args = [ast.literal_eval(a) for a in node.args]
                        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                    except ValueError:
                        continue
                    calls.append((args, kwargs))
    return calls


def skip_lines() -> None:
    """Every skip line of the notebooks' GPU-only cells with its GPU note, with and without a
    recorded
    run; the other skip lines course_lib prints."""
    import tempfile

    import torch

    from course_lib import device

    calls = notebook_calls("gpu_only") + notebook_calls("gpu_reference")  # (what, figure)
    calls += [([calls[0][0][0] if calls else "..."], {"figure": key}) for key in device.FIGURE_KEYS]
    with tempfile.TemporaryDirectory() as folder:
        recorded = Path(folder) / "figures.json"
        recorded.write_text(
            json.dumps(
                {
                    "run": {"gpu": "NVIDIA H200", "torch": torch.__version__, "date": "2026-01-01"},
                    "figures": {
                        "ch01.device_memory": {"lines": ["<figure line>"]},
                        "ch05.amp": {"missing": "<why>"},
                    },
                }
            )
        )
        for figures in (str(Path(folder) / "none.json"), str(recorded)):
            for env in ({"COURSE_DEVICE": "cpu"}, {}):
                with (
                    mock.patch.dict(os.environ, dict(env, COURSE_GPU_FIGURES=figures)),
                    mock.patch.object(torch.cuda, "is_available", lambda: False),
                ):
                    for args, kwargs in calls:
                        _quietly(device.gpu_only, *args, **kwargs)
        with (
            mock.patch.object(device, "pick_device", lambda: torch.device("mps")),
            mock.patch.object(device, "forced_device", lambda: None),
        ):
            _quietly(device.gpu_only, calls[0][0][0] if calls else "...")
    device.device_report(model=torch.nn.Linear(1, 1), x=torch.zeros(1, device="meta"))
    device.device_report(model=torch.nn.Linear(1, 1), empty=torch.nn.ReLU())


def widgets() -> None:
    """The progress table in each state of a chapter."""
    from course_lib.exercises import all_exercises
    from course_lib.exercises.progress import chapter_summary
    from course_lib.widgets import progress_table

    rows = chapter_summary(all_exercises())
    for done, attempted in ((0, 0), (0, 1), (1, 0)):
        progress_table(
            [dict(r, done=done if done == 0 else r["total"], attempted=attempted) for r in rows]
        )
    from course_lib.widgets import reveal

    quiz = next(ex for ex in all_exercises() if ex.kind != "function")
    for _, kwargs in notebook_calls("reveal", keywords_only=True):  # the notebooks' buttons
        reveal(print, label=kwargs.get("label", "Show the result"), after=quiz)


def _chapter(number: str):
    """A chapter's module, imported by name as a notebook does (shared code never imports one)."""
    import importlib

    from course_lib.chapters import get

    return importlib.import_module(get(number).module)


def measurements() -> None:
    """The figures of measure and profiling (chapters 05, 06), drawn from made-up numbers with the
    notebooks' titles, and the notebooks' labels of timings."""
    import torch

    from course_lib import measure, profiling

    ch05_speedups = _chapter("05")

    runs = [measure.LoopTimes("x1", [1.0], [2.0]), measure.LoopTimes("x2", [3.0], [1.0])]
    titles = lambda name: [k["title"] for _, k in notebook_calls(name, True) if "title" in k]
    for title in [None] + titles("plot_breakdowns"):
        measure.plot_breakdowns(runs, **({"title": title} if title else {}))
    measure.plot_stacked({"x1": (1, 2)})
    measure.plot_grouped({"x1": (1, 2)})
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "data", "ts": 0, "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2},
    ]
    for title in [None] + titles("plot_timeline"):
        profiling.plot_timeline(events, **({"title": title} if title else {}))
    timeline = {"ms": [0.0, 1.0], "parts": {p: [1, 2] for p in profiling.TIMELINE_PARTS.values()}}
    for title in [None] + titles("plot_memory_timeline"):
        kwargs = {"title": title} if title else {}
        profiling.plot_memory_timeline(timeline, estimate={"x1": 1}, **kwargs)
    for _, kwargs in notebook_calls("time_fn", keywords_only=True):
        if "label" in kwargs:
            str(measure.Timing(kwargs["label"], [1.0], [2.0]))
    str(ch05_speedups.benchmark_compare("cpu", sizes=(2,), dtypes=(torch.float32,), min_run_time=0))


def feedback_files() -> None:
    """The grader's feedback file of a record with every kind of row (grading/feedback.py)."""
    from course_lib.exercises import all_exercises
    from course_lib.grading import feedback
    from course_lib.grading.records import STATUSES

    exercises = []
    for ex in all_exercises():
        tests = [
            {"name": t.name, "hidden": False, "passed": False, "feedback": "x"}
            for t in getattr(ex, "tests", [])
        ]
        key = ex.key()
        tests += [
            {"name": t.name, "hidden": True, "passed": False, "feedback": ""}
            for t in (key.hidden_tests if key and ex.kind == "function" else [])
        ]
        exercises += [
            {
                "exercise": ex.id,
                "title": ex.title,
                "status": status,
                "points": 0,
                "max_points": ex.points,
                "detail": "",
                "tests": tests,
                "answer_shown": '"b"',
            }
            for status in STATUSES
        ]
    cells = [{"cell": n, "status": "error", "error": "KeyError: 'x'"} for n in range(22)]
    feedback.render(
        {
            "submission": "alice",
            "points": 1,
            "max_points": 2,
            "exercises": exercises,
            "run": {"summary": "ran all 3 code cells", "cells": cells},
            "texts": {"why": "because"},
        }
    )


def chapters_06_07() -> None:
    """What chapters 06 and 07 show: their tables, figures, sentences and the step-through widget,
    from small real runs on the CPU and, where a GPU or torchrun is needed, from made-up numbers."""
    from types import SimpleNamespace

    import torch

    ch06, ch07 = _chapter("06"), _chapter("07")
    from course_lib import data, ddp_worker, memory, profiling

    digits = data.digits_split(test_fraction=0.2, seed=0)[0]
    # ---- chapter 06: where the memory goes
    est = ch06.estimate(ch06.wide_mlp(), 1024)
    ch06.compare(est, est)
    title = "one Adam training step, batch 1024, on cpu"  # the notebook's, for this machine
    memory.plot_stacked({"estimated": est, "measured": est}, title=title)
    state = {"weights": 4, "grads": 4, "optimizer_state": 8}
    for acts in (1, 6, 30):  # activations smallest, largest, larger than the state together
        curve = {32: dict(state, activations=1), 1024: dict(state, activations=acts)}
        ch06.crossover(curve)
    ch06.plot_curve(curve)
    counted = {"counted": est, "measured": {"before": 1, "peak": 2, "after": 1}}
    with mock.patch.object(ch06, "accounting_and_peak", lambda *a, **k: counted):
        ch06.cuda_vs_accounting("cuda", None)
    parts = {name: [1, 2] for name in profiling.TIMELINE_PARTS.values()}
    ch06.timeline_vs_estimate({"parts": parts}, est)
    # ---- a real out-of-memory error, its message, the snapshot, fragmentation
    tiny = SimpleNamespace(to=lambda device: lambda x: torch.zeros(1, requires_grad=True))
    with (
        mock.patch.object(memory, "small_gpu", lambda *a, **k: contextlib.nullcontext()),
        mock.patch.object(ch06, "wide_mlp", lambda **k: tiny),
    ):
        _quietly(ch06.gpu_oom_demo, "cpu")
    ch06.snapshot_table(ch06.read_snapshot({}), "ch06_oom_snapshot.pickle")
    zero = {key: 0 for key, _ in ch06.ALLOCATOR_COUNTERS}
    ch06.fragmentation_table({"expandable_segments:False": zero, "expandable_segments:True": zero})
    capped = ch06.OOM_EXAMPLE.replace(
        "of which 1.31 GiB is free.", "of which 1.31 GiB is free. 1.00 GiB allowed;"
    ).replace("5.87 GiB is reserved", "5 MiB is reserved")
    sources = (  # the notebook's (cell c19b)
        "printed by this GPU above",
        "an EXAMPLE of what a 24 GB GPU prints, not from this machine",
    )
    for message in (ch06.OOM_EXAMPLE, capped, capped.replace(" 1.00 GiB allowed;", ""), "no"):
        ch06.oom_diagnosis(message)
        for source in sources:
            ch06.read_oom_message(message, source)
    # ---- the fixes
    ch06.fixes_table([(name, "1 MiB", v) for name in ch06.FIXES for v in ("fits", "OUT OF MEMORY")])
    ch06.usual_loop_peak("cpu", digits, n_batches=2, batch_size=16)
    ch06.plot_leak(ch06.leak_experiment("cpu", digits, n_batches=2, batch_size=16))
    nothing = {"allocated": 0, "reserved": 0, "peak": 0}
    with (
        mock.patch.object(memory, "cuda_memory", lambda device=None: nothing),
        mock.patch.object(torch.cuda, "empty_cache", lambda: None),
    ):
        ch06.empty_cache_demo("meta")
    for scale in (0.5, 2):  # autocast saved, autocast cost more
        step = dict(state, activations=8, weight_copies=0)
        amp = {"float32": step, "autocast": dict(state, activations=8 * scale, weight_copies=2)}
        ch06.amp_verdict(amp, 64)
        ch06.amp_table(amp)
    ch06.side_by_side(ch06.freeze_compare("cpu", digits, batch_size=16))
    ch06.amp_peak_table({"float32": 2, "autocast": 1})
    for seconds in (0.01, 0.02):  # checkpointing came out faster (noise), and slower
        run = dict(
            saved=2, calls=9, modules=9, seconds=0.012, times_ms=[12.0], grads=[torch.ones(1)]
        )
        result = {"plain": run, "checkpointed, 3 segments": dict(run, calls=15, seconds=seconds)}
        _quietly(ch06.checkpoint_table, result)
    # ---- chapter 07: DataParallel's phases, the DDP run, the samplers, torchrun's ranks
    with mock.patch.object(ch07, "gpu_only", lambda *a, **k: True):
        for args, kwargs in notebook_calls("multi_gpu_only"):
            _quietly(ch07.multi_gpu_only, 99, *args[1:], **kwargs)
    on = lambda shape, i: SimpleNamespace(shape=shape, device=torch.device("cuda", i))
    replica = SimpleNamespace(parameters=lambda: iter([on((1,), 1)]))
    ch07.phase_lines(
        on((64, 64), 0), [on((32, 64), 0)], [replica], [on((32, 10), 1)], on((64, 10), 0)
    )
    failed = (
        "[rank1]: RuntimeError: rank 1 failed on purpose (config.fail_rank)\nvia signal SIGTERM"
    )
    for output in (failed, ""):

        def launch(*args, output=output, **kwargs):
            raise ddp_worker.TorchrunFailed(1, output, pgid=0)

        with (
            mock.patch.object(ddp_worker, "launch_torchrun", launch),
            mock.patch.object(ddp_worker, "group_alive", lambda pgid: False),
        ):
            ch07.failure_demo()
    rank = {
        "rank": 0,
        "pid": 1,
        "device": "cpu",
        "losses": [2.302],
        "orders": [[3, 1, 4]],
        "local_grads": [[torch.zeros(1)]],
        "synced_grads": [[torch.zeros(1)]],
    }
    run = ddp_worker.LaunchResult(
        ddp_worker.DDPConfig(backend="gloo"), [rank, rank], 1.0, "torchrun"
    )
    ch07.describe_ranks(run)
    ch07.gradient_sync_report(run)
    _quietly(ch07.show_sampler_orders)
    _quietly(ch07.show_torchrun_ranks)
    # ---- the step-through widget, every phase of both strategies
    _quietly(ch07.step_through)
    for name in ch07.MODELS:
        work = ch07.workload(name)
        ch07.plot_traffic(work, 2, 8)
        for n in (2, 4, 10):
            ch07.totals_html(work, n, 32)
            for strategy, phases in ch07.STRATEGIES.items():
                for index in range(len(phases(work, n, 32))):
                    ch07.phase_html(strategy, index, work, n, 32)


SOURCES = (
    exercises,
    explainer,
    doctor,
    skip_lines,
    widgets,
    measurements,
    feedback_files,
    chapters_06_07,
)


def collect(sources=SOURCES, progress=None, static: bool = True) -> dict:
    """message -> where it was seen, for every text that reaches `tr()` when `sources` run in
    English,
    plus the f-strings of STATIC_SOURCES (see the module docstring). A value shown to the learner
    (what
    a test expected or got) is marked "(value)" after where: it needs a translation only where it
    holds
    a phrase, not a name or a number."""
    found = {}
    env = {"COURSE_PROGRESS_FILE": "off", "COURSE_DEVICE": os.environ.get("COURSE_DEVICE", "cpu")}
    with mock.patch.dict(os.environ, env), in_language("en"):
        for source in sources:
            if progress:
                progress(source.__name__)
            with recording() as seen:
                source()
            for text, value in seen.items():
                found.setdefault(text, source.__name__ + (VALUE if value else ""))
    for template, where in static_templates() if static else []:
        found.setdefault(template, where)
    return found


# ---------------------------------------------------------------- messages read from the source
def _expression_name(node, taken: set) -> str:
    """A placeholder's name from the expression it stands for: `len(got)` -> got, `t.median` ->
    median."""
    while isinstance(
        node, (ast.Call, ast.Subscript, ast.Attribute, ast.BinOp, ast.IfExp, ast.BoolOp)
    ):
        if isinstance(node, ast.Attribute) and node.attr not in (
            "join",
            "strip",
            "split",
            "lower",
            "upper",
            "capitalize",
            "replace",
            "get",
            "format",
        ):
            break
        node = (
            node.args[0]
            if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Name)
            else node.func
            if isinstance(node, ast.Call)
            else node.value
            if isinstance(node, (ast.Subscript, ast.Attribute))
            else node.left
            if isinstance(node, ast.BinOp)
            else node.body
            if isinstance(node, ast.IfExp)
            else node.values[0]
        )
    name = (
        node.attr
        if isinstance(node, ast.Attribute)
        else node.id
        if isinstance(node, ast.Name)
        else "value"
    )
    name = re.sub(r"[^a-z0-9_]", "", name.lower()).strip("_") or "value"
    name = "value" if name[0].isdigit() or name == "self" else name
    base, n = name, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def _constant(node):
    """The value of `section("06", "empty_cache")` written in an f-string (a fixed text), or
    None."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "section":
        from course_lib.sections import section

        try:
            return section(
                *[ast.literal_eval(a) for a in node.args],
                **{k.arg: ast.literal_eval(k.value) for k in node.keywords},
            )
        except (ValueError, KeyError, TypeError):
            return None
    return None


def template_text(node):
    """An f-string (or a string constant, or a sum of them) as a template: "{name}" for each
    value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        taken, parts = set(), []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif _constant(value.value) is not None and value.format_spec is None:
                parts.append(_constant(value.value))
            else:
                parts.append("{" + _expression_name(value.value, taken) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # a sum of strings and values
        left, right = template_text(node.left), template_text(node.right)
        if left is not None or right is not None:
            taken = set(
                PLACEHOLDER.findall((left or "") + (right or ""))
            )  # an optional part (x if c else ""):
            hole = lambda n: (
                "" if isinstance(n, ast.IfExp) else "{" + _expression_name(n, taken) + "}"
            )  # its own
            return (left if left is not None else hole(node.left)) + (
                right if right is not None else hole(node.right)
            )
    return None


def _parts(node):
    """The string pieces a template is made of (not the expressions in its placeholders)."""
    if isinstance(node, ast.JoinedStr):
        return [v for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right, *_parts(node.left), *_parts(node.right)]
    return []


def source_templates(path: Path, functions=None) -> list:
    """(template, "file:line") of each f-string and sum of strings in `path` (in `functions`
    only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named = lambda n: (
        getattr(n, "name", None) or getattr(getattr(n, "targets", [None])[0], "id", None)
    )
    scopes = (
        [
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign))
            and named(n) in functions
        ]
        if functions
        else [tree]
    )
    out, inner = [], {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, (ast.JoinedStr, ast.BinOp, ast.Constant)) and id(node) not in inner:
                text = template_text(node)
                if (
                    text is not None
                ):  # its own parts are not messages; an f-string inside a value is
                    inner.update(id(n) for n in _parts(node))
                    out.append((text, f"{path.relative_to(ROOT)}:{node.lineno}"))
    return out


def static_templates() -> list:
    """The messages of STATIC_SOURCES that are prose (their f-strings as templates)."""
    from course_lib.i18n.catalogue import is_prose

    out = []
    for name, functions in STATIC_SOURCES.items():
        path = ROOT / name
        if path.exists():  # a message has words, or is built from values (a key or a format is not)
            found = [(t.lstrip(" ;:,"), where) for t, where in source_templates(path, functions)]
            out += [
                (t, where)
                for t, where in found  # a part added to a message starts with its separator
                if is_prose(t, phrase=not PLACEHOLDER.search(t)) and not t.startswith(("--", "#!"))
            ]
    return out


def origin_in_source(text: str, templates: list):
    """The source template `text` was made from, as (template, "file:line"), or None."""
    from course_lib.i18n.catalogue import PLACEHOLDER, _pattern

    for template, where in templates:
        literal = "".join(PLACEHOLDER.split(template)[::2])
        if template == text or (
            len(literal.replace(" ", "")) >= 6
            and PLACEHOLDER.search(template)
            and _pattern(template).fullmatch(text)
        ):
            return template, where
    return None


def all_source_templates() -> list:
    """Every f-string of course_lib (and the figures script), longest first: where a message comes
    from."""
    paths = sorted((ROOT / "course_lib").rglob("*.py")) + [ROOT / "benchmarks" / "gpu_figures.py"]
    rows = [row for path in paths if path.exists() for row in source_templates(path)]
    return sorted(rows, key=lambda r: -len(r[0]))


def missing(found: dict, lang: str = "zh") -> dict:
    """Each untranslated part of the collected messages -> where its message was seen."""
    out = {}
    for text, where in found.items():
        for part in untranslated(text, lang, _part=where.endswith(VALUE)):
            out.setdefault(part, where)
    return out


def _public_text() -> str:
    """All of course_lib's source but the answer key's, and the notebooks: what a student bundle
    holds."""
    package = ROOT / "course_lib"
    paths = [p for p in package.rglob("*.py") if "key" not in p.relative_to(package).parts[:1]]
    paths += sorted((ROOT / "notebooks").rglob("*.ipynb"))
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in paths)


def add(translations: dict, lang: str = "zh") -> dict:
    """Merge `translations` (English -> `lang`) into the catalogue files: into the answer key's own
    catalogue when the English appears only in the key (a hidden test's name: the student bundle
    must not
    name it), else into course_lib/i18n/. Returns {file: entries added}."""
    from course_lib.i18n.catalogue import CATALOGUES, entries

    public = _public_text()
    key_source = "\n".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "course_lib" / "key").glob("*.py")
    )
    shared, own = CATALOGUES[lang]
    added = {shared: {}, own: {}}
    for english, translated in translations.items():
        secret = english in key_source and english not in public
        added[own if secret else shared][english] = translated
    for path, new in added.items():
        if not new:
            continue
        table = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        table.update(new)
        path.write_text(
            json.dumps(table, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
    entries.cache_clear()
    from course_lib.i18n.catalogue import templates

    templates.cache_clear()
    return {str(path.relative_to(ROOT)): len(new) for path, new in added.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.messages", description=__doc__.split("\n")[0]
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--missing", action="store_true", help="messages without a translation (exit 1 if any)"
    )
    what.add_argument("--all", action="store_true", help="every collected message")
    what.add_argument("--problems", action="store_true", help="catalogue entries that are wrong")
    what.add_argument(
        "--add",
        metavar="FILE",
        type=Path,
        help="merge a JSON object of translations (English -> Chinese) into the catalogue",
    )
    parser.add_argument("--lang", default="zh", help="the catalogue to check (default zh)")
    parser.add_argument(
        "--json", action="store_true", help="a JSON object: message -> where it was seen"
    )
    args = parser.parse_args(argv)
    if args.add:
        for path, n in add(json.loads(args.add.read_text(encoding="utf-8")), args.lang).items():
            print(f"{path}: {n} entries added or changed")
        said = problems(args.lang)
        print("\n".join(said) if said else "no problems")
        return 1 if said else 0
    if args.problems:
        said = problems(args.lang)
        print("\n".join(said) if said else "no problems")
        return 1 if said else 0
    found = collect(progress=lambda name: print(f"collecting: {name}", file=sys.stderr))
    shown = missing(found, args.lang) if args.missing else found
    if args.json:
        print(json.dumps(shown, ensure_ascii=False, indent=1, sort_keys=True))
    else:
        templates = all_source_templates() if args.missing else []
        for text, where in sorted(shown.items()):
            origin = origin_in_source(text, templates) if args.missing else None
            print(
                f"{text!r}  [{where}"
                + (f"; from {origin[1]}: {origin[0]!r}" if origin and origin[0] != text else "")
                + "]"
            )
    print(
        f"{len(shown)} message(s)"
        + (f" without a {args.lang} entry" if args.missing else "")
        + f" of {len(found)} collected",
        file=sys.stderr,
    )
    return 1 if args.missing and shown else 0


if __name__ == "__main__":
    sys.exit(main())
