"""Unit tests of the shared helpers: device choice, seeding, taught errors, doctor, CLI."""
import json
import subprocess
import sys

import pytest
import torch

from course_lib import device as dev
from course_lib import seed_everything
from course_lib.doctor import environment_report, format_report, widgets_status
from course_lib.errors import expect_error


def test_pick_device_follows_availability(monkeypatch):
    monkeypatch.delenv(dev.ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "mps_available", lambda: True)
    assert dev.pick_device() == torch.device("mps")
    monkeypatch.setattr(dev, "mps_available", lambda: False)
    assert dev.pick_device() == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert dev.pick_device() == torch.device("cuda")


def test_environment_variable_forces_the_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(dev.ENV_VAR, "cpu")
    assert dev.pick_device() == torch.device("cpu")
    monkeypatch.setenv(dev.ENV_VAR, "auto")
    assert dev.pick_device() == torch.device("cuda")


@pytest.mark.parametrize("value,message", [("gpu", "not a device name"), ("mps", "MPS is not available")])
def test_bad_forced_device_is_a_clear_error(monkeypatch, value, message):
    monkeypatch.setattr(dev, "mps_available", lambda: False)
    monkeypatch.setenv(dev.ENV_VAR, value)
    with pytest.raises(ValueError, match=message):
        dev.pick_device()


def test_forcing_cuda_without_a_gpu_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv(dev.ENV_VAR, "cuda")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        dev.pick_device()


def test_second_device_is_never_the_cpu():
    assert dev.second_device().type != "cpu"


def test_gpu_only_prints_a_visible_marker(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert dev.gpu_only("a demo") is False
    assert "[GPU only] skipped" in capsys.readouterr().out


def test_seed_everything_repeats():
    seed_everything(3)
    a = torch.randn(3)
    seed_everything(3)
    assert torch.equal(a, torch.randn(3))


def test_expect_error_passes_prints_and_fails_when_nothing_raised(capsys):
    with expect_error(ZeroDivisionError, "division"):
        1 / 0
    assert "ZeroDivisionError: division by zero" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="ran without an error"):
        with expect_error(ZeroDivisionError):
            pass
    with pytest.raises(AssertionError, match="no longer mentions"):
        with expect_error(ZeroDivisionError, "some other text"):
            1 / 0
    with pytest.raises(KeyError):  # a different error is not swallowed
        with expect_error(ZeroDivisionError):
            {}["x"]


def test_doctor_report_has_the_essentials():
    report = environment_report()
    for key in ("torch", "torch build", "cuda available", "cuda devices", "cudnn", "course device", "widgets"):
        assert key in report
    assert report["torch"] == torch.__version__
    assert "ok (ipywidgets 8" in widgets_status()
    assert "torch: " + torch.__version__ in format_report(report)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "course_lib", *args], capture_output=True, text=True, timeout=120)


def test_cli_doctor():
    out = run_cli("doctor")
    assert out.returncode == 0 and "course device" in out.stdout
    assert json.loads(run_cli("doctor", "--json").stdout)["torch"] == torch.__version__


def test_cli_exercises_json_lists_every_exercise():
    out = run_cli("exercises", "--json")
    rows = json.loads(out.stdout)
    assert out.returncode == 0 and rows
    for row in rows:
        assert set(row) >= {"id", "chapter", "kind", "points"}
    assert {"ch01.choose_device", "ch01.gpu_names", "ch01.make_batch"} <= {r["id"] for r in rows}


def test_cli_rejects_unknown_commands():
    out = run_cli("fly")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_expect_warning_needs_the_warning(capsys):
    import warnings
    from course_lib.errors import expect_warning
    with expect_warning(FutureWarning, "deprecated"):
        warnings.warn("this is deprecated", FutureWarning)
    assert "FutureWarning: this is deprecated" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="no warning at all"):
        with expect_warning(FutureWarning):
            pass
