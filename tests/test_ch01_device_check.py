"""Chapter 01's own helpers, widgets, quizzes and what its checks tell a learner.

The checkers' basic contract (reference passes, stub not attempted, wrong answers fail) is in
test_exercise_keys; here: what the VISIBLE tests catch (the student bundle has no key), what
the feedback says, and the chapter's quizzes and widgets driven as a learner would.
"""

import inspect

import pytest
import torch

from course_lib import ch01_device_check as ch
from course_lib import notebooks
from course_lib.checks.devices import simulated_machine
from course_lib.doctor import doctor_widget
from course_lib.exercises import CORRECT, INCORRECT

QUERIES = {
    "cuda.is_available": (torch.cuda, "is_available"),
    "cuda.device_count": (torch.cuda, "device_count"),
    "cuda.get_device_name": (torch.cuda, "get_device_name"),
    "mps.is_available": (torch.backends.mps, "is_available"),
    "accelerator.is_available": (torch.accelerator, "is_available"),
    "accelerator.current_accelerator": (torch.accelerator, "current_accelerator"),
    "accelerator.device_count": (torch.accelerator, "device_count"),
}


def _real_queries():
    return {name: getattr(owner, attr) for name, (owner, attr) in QUERIES.items()}


def test_simulated_machine_answers_like_that_machine():
    with simulated_machine(gpus=["A", "B"]):
        assert torch.cuda.is_available() and torch.cuda.device_count() == 2
        assert torch.cuda.get_device_name(1) == "B"
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
    with simulated_machine(mps=True):
        assert not torch.cuda.is_available() and torch.backends.mps.is_available()
        assert torch.accelerator.current_accelerator() == torch.device("mps")


def test_simulated_machine_puts_back_torchs_own_functions():
    before = _real_queries()
    with simulated_machine(gpus=["A"], mps=True):
        assert _real_queries() != before  # really patched while inside
    assert _real_queries() == before
    with pytest.raises(ZeroDivisionError):  # also when the code inside fails
        with simulated_machine(gpus=["A"]):
            _ = 1 / 0
    assert _real_queries() == before


def test_verdicts_of_the_three_device_choices():
    hard, one_liner, best = ch.DEVICE_CHOICES.values()
    assert "CRASHES" in ch.verdict_on("CPU-only laptop", hard)
    assert ch.verdict_on("CPU-only laptop", one_liner).endswith("ok")
    assert "GPU idle" in ch.verdict_on("Mac with Apple GPU", one_liner)
    assert ch.verdict_on("Mac with Apple GPU", best).endswith("ok")
    assert ch.verdict_on("4-GPU server", hard).endswith("ok")


def test_machine_explorer_redraws_when_the_machine_changes():
    box = ch.machine_explorer()
    picker, table = box.children
    picker.value = "4-GPU server"
    assert "CRASHES" not in table.value
    picker.value = "CPU-only laptop"
    assert "CRASHES" in table.value


# --- the visible tests alone (the student bundle)
# catch the chapter's lessons, and say what happened
def _visible(exercise, candidate):
    return exercise.check(candidate, include_hidden=False, record=False)


def test_forgetting_the_mac_gpu_is_caught_without_the_key():
    result = _visible(
        ch.choose_device, lambda: torch.device("cuda" if torch.cuda.is_available() else "cpu")
    )
    assert result.status == INCORRECT
    assert "On a Mac with Apple GPU, your choose_device() returned cpu" in result.text()
    assert "torch.backends.mps.is_available()" in result.text()


def test_hard_coded_cuda_is_caught_with_a_hint_that_fits_each_machine():
    result = _visible(ch.choose_device, lambda: torch.device("cuda:0"))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert "A Mac has no CUDA GPU" in failed["uses the Apple GPU on a Mac"].hint
    assert "never hard-code `cuda`" in failed["falls back to cpu on a CPU-only laptop"].hint


def test_a_gpu_names_that_crashes_without_a_gpu_is_caught_without_the_key():
    result = _visible(ch.gpu_names, lambda: [torch.cuda.get_device_name(0)])
    assert result.status == INCORRECT
    assert "On a CPU-only laptop, gpu_names() crashed: RuntimeError" in result.text()
    assert "returned 1 name(s); the machine has 4 GPU(s)" in result.text()


def test_a_cpu_detour_is_caught_without_the_key():
    result = _visible(ch.make_batch, lambda b, n, d: torch.randn(b, n).to(d))
    assert result.status == INCORRECT and "made it on the CPU first" in result.text()


@pytest.mark.parametrize(
    "exercise", [ch.choose_device, ch.gpu_names, ch.make_batch], ids=lambda e: e.name
)
def test_hints_show_the_shape_of_the_code_not_the_code(exercise):
    source = inspect.getsource(exercise.key().solution).splitlines()[
        1:
    ]  # the body, without the def line
    lines = [line.strip() for line in source if len(line.strip()) > 12]
    for hint in exercise.hints:
        assert not any(line in hint for line in lines), (hint, lines)


# --- quizzes, through the widget a learner uses
def test_device_label_quiz_explains_a_wrong_choice_and_accepts_the_right_one():
    box = ch.device_label.ask()
    box.answer("a")
    box.check_button.click()
    assert "Incorrect" in box.verdict.value and "never asks the" in box.verdict.value
    box.answer("c")
    assert box.verdict.value == ""  # a verdict belongs to the answer it judged
    box.check_button.click()
    assert "Correct" in box.verdict.value


def test_multiple_choice_widget_reads_the_ticked_boxes():
    box = ch.created_on_device.ask()
    box.answer(["a", "c"])
    box.check_button.click()
    assert "Correct" in box.verdict.value


def test_error_quiz_hides_the_real_error_until_the_answer_is_right():
    box = ch.model_vs_input.ask()
    box.answer("b")
    box.check_button.click()
    assert "Incorrect" in box.verdict.value and "silently slow" in box.verdict.value
    assert "the code raised" not in box.verdict.value
    box.answer("d")
    box.check_button.click()
    assert "Correct" in box.verdict.value and "the code raised: RuntimeError" in box.verdict.value


def test_tensor_bytes_quiz_is_asked_in_the_notebook_and_checks_a_number():
    sources = notebooks.code("01")
    ask = next(i for i, s in enumerate(sources) if "ch.tensor_bytes.ask()" in s)
    check = next(i for i, s in enumerate(sources) if "ch.tensor_bytes.check(" in s)
    assert ask < check
    assert ch.tensor_bytes.check(256 * 1024 * 4, record=False).status == CORRECT
    assert ch.tensor_bytes.check(256 * 1024, record=False).status == INCORRECT


def test_doctor_widget_rechecks():
    panel = doctor_widget()
    title, table, button = panel.children
    table.value = ""
    button.click()
    assert "course device" in table.value


def test_trace_devices_shows_the_cpu_detour(capsys):
    log = ch.trace_devices(lambda: torch.randn(2, 3).to("meta"))
    assert [dev for _, dev, _ in log.ops] == ["cpu", "meta"]
    assert "on cpu" in capsys.readouterr().out


def test_a_zero_dim_cpu_tensor_mixes_and_a_one_dim_one_does_not():
    """The exception the notebook teaches next to
    'PyTorch never moves a tensor behind your back'."""
    assert (torch.ones(3, device="meta") * torch.tensor(2.0)).device.type == "meta"
    with pytest.raises(RuntimeError, match="device"):
        torch.ones(3, device="meta") * torch.tensor([2.0])


# --- the notebook
def test_every_exercise_has_a_hint_cell_and_gpu_cells_follow_the_course_device():
    sources = notebooks.code("01")
    for name, exercise in ch.chapter.exercises.items():
        if exercise.kind == "function":
            assert any(f"ch.{name}.hint()" in s for s in sources), f"{name} has no hint cell"
    gpu_cells = [s for s in sources if "gpu_only(" in s]
    assert {s.split('figure="')[1].split('"')[0] for s in gpu_cells} == {
        "ch01.device_memory",
        "ch01.create_on_device",
    }
    for s in gpu_cells:
        assert '"cuda' not in s and "'cuda" not in s, s


# ------------------------------------------------------------- other torch releases, other builds
def run_cell(cell_id: str, capsys) -> str:
    """Chapter 01's cell run as the notebook runs it; what it printed."""
    from course_lib.errors import expect_error
    from course_lib.i18n import tr

    exec(notebooks.cell("01", cell_id), {"torch": torch, "tr": tr, "expect_error": expect_error})
    return capsys.readouterr().out


def test_the_accelerator_cell_runs_on_torch_2_6_where_current_accelerator_raises(
    monkeypatch, capsys
):
    """torch 2.6's current_accelerator() raises where none is available (newer ones: None)."""

    def as_in_2_6(*args, **kwargs):
        raise RuntimeError("Cannot access accelerator device when none is available.")

    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", as_in_2_6)
    assert "current accelerator:   None" in run_cell("c12", capsys)
    assert "torch 2.6" in notebooks.cell("01", "c11")


def test_the_hard_coded_cuda_cell_runs_on_a_cuda_build_without_a_driver(monkeypatch, capsys):
    """The CUDA build pip installs on Linux, on a machine without an NVIDIA GPU, never says cuda."""

    def no_driver(*args, **kwargs):
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have ...")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch, "zeros", no_driver)
    assert "Found no NVIDIA driver" in run_cell("c18", capsys)
    assert "Found no NVIDIA driver" in notebooks.cell("01", "c17")
