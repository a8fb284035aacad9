"""Chapter 01's own helpers and widgets (the checkers are covered by test_exercise_keys)."""
import torch

from course_lib import ch01_device_check as ch
from course_lib.doctor import doctor_widget


def test_simulated_machine_answers_like_that_machine_and_restores():
    with ch.simulated_machine(gpus=["A", "B"]):
        assert torch.cuda.is_available() and torch.cuda.device_count() == 2
        assert torch.cuda.get_device_name(1) == "B"
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
    with ch.simulated_machine(mps=True):
        assert not torch.cuda.is_available() and torch.backends.mps.is_available()
        assert torch.accelerator.current_accelerator() == torch.device("mps")
    assert torch.cuda.device_count() == 0 or torch.cuda.is_available()  # restored to the real answers


def test_verdicts_of_the_three_device_choices():
    hard, seed, best = ch.SEED_CHOICES.values()
    assert "CRASHES" in ch.verdict_on("CPU-only laptop", hard)
    assert ch.verdict_on("CPU-only laptop", seed).endswith("ok")
    assert "GPU idle" in ch.verdict_on("Mac with Apple GPU", seed)
    assert ch.verdict_on("Mac with Apple GPU", best).endswith("ok")
    assert ch.verdict_on("4-GPU server", hard).endswith("ok")


def test_machine_explorer_redraws_when_the_machine_changes():
    box = ch.machine_explorer()
    picker, table = box.children
    picker.value = "4-GPU server"
    assert "CRASHES" not in table.value
    picker.value = "CPU-only laptop"
    assert "CRASHES" in table.value


def test_quiz_widget_gives_the_engines_verdict_on_click():
    box = ch.device_label.ask()
    radio, button, verdict = box.children[-3:]
    radio.value = "a"
    button.click()
    assert "Incorrect" in verdict.value
    radio.value = "b"
    button.click()
    assert "Correct" in verdict.value


def test_multiple_choice_widget_reads_the_ticked_boxes():
    box = ch.created_on_device.ask()
    boxes, button, verdict = box.children[-3:]
    for checkbox, letter in zip(boxes.children, "abcd"):
        checkbox.value = letter in "ac"
    button.click()
    assert "Correct" in verdict.value


def test_error_quiz_widget_shows_the_real_error():
    box = ch.model_vs_input.ask()
    radio, button, verdict = box.children[-3:]
    radio.value = "c"
    button.click()
    assert "Incorrect" in verdict.value and "RuntimeError" in verdict.value


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
