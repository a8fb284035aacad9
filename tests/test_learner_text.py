"""What a learner reads says what happened (issue 15, points 2, 3 and 6).

Each test holds one sentence or display the issue found wrong: the text of GPU-only cells on a
CPU, how quizzes are answered, what wrong answers are told, the labels of measured tables, and
the notebook cells where two chapters must agree.

The tests that read a notebook's prose by its English words read the English edition only; each
Chinese cell translates its English cell as it is now (tests/test_zh_edition.py: fingerprints), so
a claim corrected in English forces its translation to be revisited. How a quiz is answered is
checked in both editions, each in its own words.
"""

import re
import sys

import pytest
import torch

from course_lib import ch05_speedups as ch05
from course_lib import ch06_out_of_memory as ch06
from course_lib import ch07_dp_vs_ddp as ch07
from course_lib import data, device, gpu_notes, memory, notebooks
from course_lib.exercises import all_exercises
from course_lib.explainer.knowledge import ENTRIES
from support import EDITIONS, NOTEBOOKS, ROOT

HOW_TO_ANSWER = {  # by the notebook's language (the Chinese: docs/zh/glossary.md, fixed wordings)
    "en": (
        "**How to answer a quiz:** try it in the widget (instant feedback), then write your answer "
        "in the"
    ),
    "zh": (
        "**测验怎么作答**：先在交互组件里试答（即时反馈），再把答案写进它后面的那个单元格并运行。"
    ),
}


def cells(notebook: str) -> list:
    return notebooks.read(notebook[:2])["cells"]


def cell(notebook: str, cell_id: str) -> str:
    return notebooks.cell(notebook[:2], cell_id)


@pytest.fixture(scope="module")
def digits():
    return data.digits_split(test_fraction=0.2, seed=0)[0]


# ---------------------------------------------------------------- GPU-only cells teach on a CPU (6)
def test_every_gpu_figure_has_a_note_that_names_its_source_and_measures_nothing():
    assert set(gpu_notes.NOTES) == set(device.FIGURE_KEYS)
    timing = re.compile(r"\d\s*(?:ms|s|GB/s|%|x faster|times faster)\b")
    for key, (shows, why, where) in gpu_notes.NOTES.items():
        assert shows and why and where, key
        assert not timing.search(shows + why), f"{key}: a GPU note states a measured-looking number"


def test_a_skipped_gpu_cell_prints_what_a_gpu_shows_and_why(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv(device.FIGURES_ENV_VAR, str(tmp_path / "none.json"))
    if device.gpu_only("memory around empty_cache()", figure="ch06.empty_cache"):
        pytest.skip("this machine has a CUDA GPU: the cell runs for real")
    out = " ".join(capsys.readouterr().out.split())
    assert "[GPU only] skipped" in out and gpu_notes.SOURCE in out
    assert "doesn't increase the amount of GPU memory available for PyTorch" in out
    assert "No reference GPU run is recorded yet" in out  # and the recorded figures once there are


# ---------------------------------------------------------------- one way to answer a quiz (6)
@pytest.mark.parametrize(
    "path", EDITIONS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix()
)
def test_each_chapters_first_quiz_says_how_to_answer_it(path):
    nb = notebooks.cells(path)
    first = next(i for i, c in enumerate(nb) if c.cell_type == "code" and ".ask()" in c.source)
    before = nb[first - 1].source
    wording = HOW_TO_ANSWER[
        notebooks.read(path)["metadata"].get("course", {}).get("language", "en")
    ]
    assert wording in " ".join(before.split()), (
        f"{path.name}: cell {first - 1} before the first quiz"
    )


def test_a_right_answer_in_the_widget_points_to_the_answer_cell():
    quiz = ch06.empty_cache
    box = quiz.ask()
    box.answer(quiz.key().answer)
    box.check_button.click()
    assert "Correct" in box.verdict.value and f"answer_{quiz.name} = ..." in box.verdict.value
    box.answer("a")
    box.check_button.click()
    assert "answer cell" not in box.verdict.value


# ------------------------------------------------------ numeric quizzes answer like choice ones (6)
NUMERIC = [q for q in all_exercises() if q.kind == "numeric"]


@pytest.mark.parametrize("quiz", NUMERIC, ids=lambda q: q.id)
def test_a_typical_wrong_number_gets_its_reason_and_spends_no_hint(quiz):
    right = quiz.normalize(quiz.key().answer)
    assert quiz.why and right not in quiz.why, (
        f"{quiz.id}: give the quiz why={{wrong number: reason}}"
    )
    wrong, reason = next(iter(quiz.why.items()))
    quiz._hints_shown = 0
    summary = quiz.check(wrong, record=False).summary
    assert reason in summary and quiz._hints_shown == 0, (
        summary
    )  # the hint button still starts at 1


# --------------------------------------------------------- labels that agree with their numbers (6)
def test_the_checkpointing_notes_explain_9_and_15_calls_and_name_the_reliable_column():
    fake = {
        "plain": dict(calls=9, modules=9, seconds=0.012, times_ms=[11.0, 12.0, 13.0]),
        "checkpointed, 3 segments": dict(
            calls=15, modules=9, seconds=0.010, times_ms=[9.0, 10.0, 30.0]
        ),
    }
    notes = ch06.checkpoint_notes(fake)
    assert "9 modules" in notes and "6 more calls, 15 in all" in notes and "exact" in notes
    assert "did not come out slower" in notes  # a reversed timing is explained
    fake["checkpointed, 3 segments"]["seconds"] = 0.02
    assert "did not come out slower" not in ch06.checkpoint_notes(fake)


def test_checkpointing_time_is_a_median_of_turns(digits):
    result = ch06.checkpoint_compare("cpu", digits, batch_size=32, repeats=3)
    for r in result.values():
        assert len(r["times_ms"]) == 3 and r["seconds"] * 1000 == sorted(r["times_ms"])[1]
    plain, ckpt = result.values()
    assert (plain["calls"], ckpt["calls"]) == (9, 15)


def test_the_crossover_names_the_largest_part_and_the_sum_apart(digits):
    text = ch06.crossover(ch06.activation_curve("cpu", digits, batch_sizes=(32, 1024, 2048)))
    assert (
        text.startswith("From batch 1024 on, the activations are the largest")
        and "From batch 2048 on" in text
    )
    assert "not yet more than the other three together" in ch06.seed_question.prompt


def test_the_course_says_when_the_error_is_its_own(capsys):
    from course_lib.errors import expect_error

    with expect_error(memory.MemoryBudgetExceeded, "budget"):
        raise memory.MemoryBudgetExceeded("memory budget exceeded: 8 MiB in use > budget 7 MiB")
    with expect_error(RuntimeError, "device"):
        torch.ones(2, device="meta") + torch.ones(2)
    out = capsys.readouterr().out
    assert "The course raised, as expected" in out and "PyTorch raised, as expected" in out


def test_the_usual_evaluation_loop_peaks_at_about_two_graphs(digits):
    text = ch06.usual_loop_peak("cpu", digits, n_batches=3, batch_size=64)
    assert "= 2.0 x one batch's graph" in text


def test_the_shown_amp_step_uses_only_public_names():
    import inspect

    source = inspect.getsource(ch06.amp_step)
    assert "ch._" not in source and not re.search(r"\b_\w+\(", source), source


# ----------------------------------------------------------- wrong answers told what went wrong (6)
def test_a_loop_without_the_last_groups_step_is_told_so():
    def no_last_step(model, loader, optimizer, criterion, device, accum_steps):
        model.train()
        optimizer.zero_grad()
        for i, (x, y) in enumerate(loader):
            (criterion(model(x.to(device)), y.to(device)) / accum_steps).backward()
            if (i + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()

    failed = [
        t
        for t in ch06.train_with_accumulation.check(no_last_step, record=False).tests
        if not t.passed
    ]
    assert failed and all("never" in t.message and "step" in t.message for t in failed), [
        t.message for t in failed
    ]


def test_leaving_out_adams_step_counters_is_told_so():
    def no_counters(model, optimizer):
        size = lambda t: t.numel() * t.element_size()
        return {
            "weights": sum(size(p) for p in model.parameters()),
            "grads": sum(size(p.grad) for p in model.parameters() if p.grad is not None),
            "optimizer_state": sum(
                size(v) for s in optimizer.state.values() for k, v in s.items() if k != "step"
            ),
        }

    failed = [
        t for t in ch06.model_state_bytes.check(no_counters, record=False).tests if not t.passed
    ]
    assert failed and all("step counters" in t.message for t in failed)


# --------------------------------------------------------------- chapter 05: pinning, start methods
def test_pinning_is_explained_per_accelerator(capsys, digits):
    ch05.pin_memory_demo(digits)
    out = capsys.readouterr().out
    kinds = {k for k, _, _ in ch05.PINNING}
    assert {"cuda", "mps", None} == kinds and "Why:" in out
    mps = next(why for k, _, why in ch05.PINNING if k == "mps")
    assert "not supported on MPS" in mps


def test_pinning_is_a_copy_not_one_fewer():
    for notebook, cell_id in (("05_speedups", "c20c"), ("03_training_template", "c07")):
        text = " ".join(cell(notebook, cell_id).split())
        assert "not one fewer" in text or "does **not** remove a copy" in text, (notebook, cell_id)


def test_the_start_method_text_covers_python_3_14():
    for text in (
        cell("05_speedups", "c20"),
        " ".join(e.causes[1] for e in ENTRIES if e.id == "cuda_in_forked_process"),
    ):
        assert "3.14" in text and "forkserver" in text
    assert {name for name, _, _ in ch05.START_METHODS} == {"fork", "forkserver", "spawn"}


# ---------------------------------------------------------------- chapters that must agree
def test_chapters_02_and_03_agree_on_the_two_conversion_flags():
    for notebook, cell_id in (("02_same_device_rule", "c21c"), ("03_training_template", "c13")):
        text = " ".join(cell(notebook, cell_id).split())
        assert "set_overwrite_module_params_on_conversion(True)" in text, notebook
        assert (
            "set_swap_module_params_on_conversion(True)" in text and "keeps the objects" in text
        ), notebook


def test_no_chapter_calls_the_0_dim_tensor_the_one_exception():
    for path in NOTEBOOKS:
        assert "one exception" not in path.read_text(encoding="utf-8"), path.name
    text = " ".join(cell("01_device_check", "c45a").split())
    assert "0-dim" in text and "indices and masks" in text


def test_a_dataloader_yields_what_the_dataset_returns():
    for notebook, cell_id in (("03_training_template", "c11"), ("04_common_errors", "c07")):
        text = cell(notebook, cell_id)
        assert "always yields CPU tensors" not in text and "what its Dataset returns" in text, (
            notebook
        )


# ---------------------------------------------------------------- chapter 07
def test_the_ring_is_one_algorithm_nccl_may_pick():
    text = " ".join(cell("07_dp_vs_ddp", "c12").split())
    assert "ring, tree, NVLS" in text and "Ring AllReduce" in text
    work = ch07.workload(list(ch07.MODELS)[0])
    phase = next(p for p in ch07.ddp_phases(work, 4, 32) if "all-reduce" in p.name)
    assert "NCCL picks" in phase.text
    assert "counted as a ring all-reduce" in ch07.totals_html(work, 4, 32)


def test_data_parallel_is_quoted_from_its_documentation():
    text = " ".join(cell("07_dp_vs_ddp", "c00c").split())
    doc = " ".join(torch.nn.DataParallel.__doc__.split())
    assert (
        "even if there is only a single node" in doc
        and "even if there is only a single node" in text
    )
    assert "65936" in text


def test_the_step_widget_fits_a_1000_px_window_and_shows_its_labels():
    widget = ch07.step_through()
    assert widget.box.layout.max_width == f"{ch07.MAX_WIDTH_PX}px" and ch07.MAX_WIDTH_PX <= 1000
    assert (
        widget.batch.style.description_width == ch07.LABEL_WIDTH
        and int(ch07.LABEL_WIDTH[:-2]) >= 110
    )


def test_the_torchrun_cells_use_one_config_and_this_python():
    source = {c["id"]: "".join(c["source"]) for c in cells("07_dp_vs_ddp")}
    assert "config = ddp_worker.DDPConfig(" in source["c08b"] and ".resolved()" in source["c08b"]
    assert "sys.executable" in source["c08b"] and "sys.executable" in source["c19"]
    assert "launch_torchrun(config)" in source["c09"] and "launch_spawn" not in source["c09"]
    line = ddp_worker_line()
    assert line[0] == sys.executable and line[1:3] == ["-m", "torch.distributed.run"]


def ddp_worker_line():
    from course_lib import ddp_worker

    return ddp_worker.torchrun_command(ddp_worker.DDPConfig().resolved(), sys.executable)


def test_the_weights_comparison_counts_every_step():
    assert "steps = result.config.steps * result.config.epochs" in cell("07_dp_vs_ddp", "c23")


def test_the_failure_demo_explains_the_sigterm_line():
    assert "via signal SIGTERM" in cell("07_dp_vs_ddp", "c16") and "ChildFailedError" in cell(
        "07_dp_vs_ddp", "c16"
    )
    import inspect

    assert "failure_report(" in inspect.getsource(ch07.failure_demo)  # says what torchrun said
    assert "SIGTERM" in inspect.getsource(ch07.failure_report)
