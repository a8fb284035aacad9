"""Unit tests of the shared helpers: device choice, seeding, taught errors, doctor, CLI."""

import json
import os
import subprocess
import sys

import pytest
import torch

from course_lib import device as dev
from course_lib import seed_everything
from course_lib.doctor import (
    environment_report,
    format_report,
    gpu_problem,
    nvidia_smi_gpus,
    widgets_status,
)
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


@pytest.mark.parametrize(
    "value,message", [("gpu", "not a device name"), ("mps", "MPS is not available")]
)
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


def test_amp_dtype_is_bfloat16_unless_the_gpu_lacks_it(monkeypatch):
    """The one autocast dtype choice, which chapters 05 and 06 (and the GPU figures) use."""
    from course_lib import ch05_speedups, ch06_out_of_memory

    assert dev.amp_dtype("cpu") == dev.amp_dtype(torch.device("cpu")) == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert dev.amp_dtype("cuda") == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert dev.amp_dtype("cuda") == torch.float16  # then float16, with a GradScaler
    assert [s[1] for s in ch05_speedups.amp_settings("cuda")] == [None, torch.float16]
    assert ch05_speedups.amp_dtype is ch06_out_of_memory.amp_dtype is dev.amp_dtype


def test_gpu_only_prints_a_visible_marker(monkeypatch, capsys):
    monkeypatch.delenv(dev.ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert dev.gpu_only("a demo") is False
    assert "[GPU only] skipped (no CUDA GPU here): a demo" in capsys.readouterr().out


def simulate_cuda(monkeypatch):
    """torch answers as on a machine with one CUDA GPU (nothing runs on it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_gpu_only_follows_the_course_device_not_the_machine(monkeypatch, capsys):
    simulate_cuda(monkeypatch)
    monkeypatch.setenv(dev.ENV_VAR, "cpu")
    assert dev.gpu_only("a demo") is False
    assert "[GPU only] skipped (COURSE_DEVICE=cpu chose the CPU): a demo" in capsys.readouterr().out
    monkeypatch.delenv(dev.ENV_VAR)
    assert dev.gpu_only("a demo") is True
    assert capsys.readouterr().out == ""


def figures_file(tmp_path, figures):
    path = tmp_path / "figures.json"
    run = {
        "gpu": "Test GPU (fixture)",
        "driver": "580.1",
        "torch": "2.11.0+cu130",
        "date": "2026-01-02",
    }
    path.write_text(json.dumps({"run": run, "figures": figures}))
    return path


def test_gpu_only_shows_the_figures_recorded_on_a_real_gpu(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    lines = ["float32 step 9.9 ms; autocast bfloat16 step 3.3 ms (3.00x faster)"]
    monkeypatch.setenv(
        dev.FIGURES_ENV_VAR, str(figures_file(tmp_path, {"ch05.amp": {"lines": lines}}))
    )
    assert dev.gpu_only("AMP speed", figure="ch05.amp") is False
    out = " ".join(capsys.readouterr().out.split())
    assert "measured on Test GPU (fixture), torch 2.11.0+cu130, 2026-01-02" in out
    assert lines[0] in out
    dev.gpu_only("compile", figure="ch05.compile")  # recorded run, no figure for this cell: say why
    assert "has no figure for this cell" in capsys.readouterr().out


def test_gpu_only_says_when_no_reference_run_is_recorded(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv(dev.FIGURES_ENV_VAR, str(tmp_path / "absent.json"))
    dev.gpu_only("AMP speed", figure="ch05.amp")
    assert "No reference GPU run is recorded yet" in capsys.readouterr().out
    no_gpu = {
        "run": {"gpu": None},
        "figures": {},
    }  # what gpu_check writes on a machine without a GPU
    (tmp_path / "absent.json").write_text(json.dumps(no_gpu))
    dev.gpu_only("AMP speed", figure="ch05.amp")
    assert "No reference GPU run is recorded yet" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown figure key"):
        dev.gpu_only("AMP speed", figure="ch05.amp_speed")


def test_skip_lines_wrap_between_words(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    what = "a matrix product timed without and with torch.cuda.synchronize(), " * 3
    dev.gpu_only(what, figure="ch05.sync_timing")
    out = capsys.readouterr().out
    assert all(len(line) <= dev.SKIP_WIDTH for line in out.splitlines())
    assert " ".join(what.split()) in " ".join(out.split())  # every word whole, in order


def test_seed_everything_repeats():
    seed_everything(3)
    a = torch.randn(3)
    seed_everything(3)
    assert torch.equal(a, torch.randn(3))


def test_expect_error_passes_prints_and_fails_when_nothing_raised(capsys):
    with expect_error(ZeroDivisionError, "division"):
        _ = 1 / 0
    assert "ZeroDivisionError: division by zero" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="ran without an error"):
        with expect_error(ZeroDivisionError):
            pass
    with pytest.raises(AssertionError, match="no longer mentions"):
        with expect_error(ZeroDivisionError, "some other text"):
            _ = 1 / 0
    with pytest.raises(KeyError):  # a different error is not swallowed
        with expect_error(ZeroDivisionError):
            _ = {}["x"]


def test_doctor_report_has_the_essentials():
    report = environment_report()
    for key in (
        "torch",
        "torch build",
        "cuda available",
        "cuda devices",
        "cudnn",
        "course device",
        "widgets",
    ):
        assert key in report
    assert report["torch"] == torch.__version__
    assert "ok (ipywidgets 8" in widgets_status()
    assert "torch: " + torch.__version__ in format_report(report)


def fake_nvidia_smi(monkeypatch, tmp_path, line="NVIDIA GeForce RTX 3090, 550.54.14", code=0):
    """An nvidia-smi on PATH that prints `line` (what the real one prints for our query)."""
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(f"#!/bin/sh\necho '{line}'\nexit {code}\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    return exe


def test_doctor_reads_nvidia_smi(monkeypatch, tmp_path):
    fake_nvidia_smi(monkeypatch, tmp_path)
    assert nvidia_smi_gpus() == [("NVIDIA GeForce RTX 3090", "550.54.14")]
    assert environment_report()["nvidia-smi"] == "NVIDIA GeForce RTX 3090, driver 550.54.14"
    fake_nvidia_smi(monkeypatch, tmp_path, "NVIDIA-SMI has failed", code=9)
    assert nvidia_smi_gpus() == []
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert nvidia_smi_gpus() == [] and gpu_problem() == ""


def test_doctor_sees_a_cpu_only_build_beside_an_nvidia_gpu(monkeypatch, tmp_path):
    fake_nvidia_smi(monkeypatch, tmp_path)
    monkeypatch.setattr(torch.version, "cuda", None)
    said = gpu_problem()
    assert "CPU-only build" in said and "NVIDIA GeForce RTX 3090" in said and "580" in said


def test_doctor_sees_a_driver_too_old_for_the_cuda_build(monkeypatch, tmp_path):
    fake_nvidia_smi(monkeypatch, tmp_path)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    said = gpu_problem()
    assert (
        "driver 550.54.14 is too old" in said
        and "580 or newer" in said
        and "runs on the CPU" in said
    )


def test_doctor_sees_cuda_unavailable_with_a_recent_driver(monkeypatch, tmp_path):
    fake_nvidia_smi(monkeypatch, tmp_path, "NVIDIA H200, 580.95.05")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    assert "torch.cuda.init()" in gpu_problem()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert "CUDA_VISIBLE_DEVICES" in gpu_problem()
    monkeypatch.setattr(
        torch.cuda, "is_available", lambda: True
    )  # torch uses the GPU: nothing to say
    assert gpu_problem() == ""


# `python -m course_lib ARGS...` in a torch that sees no usable GPU, even on a machine with one
WITHOUT_A_USABLE_GPU = (
    "import runpy, sys, torch; torch.cuda.is_available = lambda: False; "
    "sys.argv[0] = 'course_lib'; runpy.run_module('course_lib', run_name='__main__')"
)


def test_cli_doctor_explains_an_unusable_gpu(monkeypatch, tmp_path):
    fake_nvidia_smi(
        monkeypatch, tmp_path
    )  # PATH reaches the subprocess; its torch sees no usable GPU
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_A_USABLE_GPU, "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(out.stdout)
    assert report["nvidia-smi"] == "NVIDIA GeForce RTX 3090, driver 550.54.14"
    assert ("CPU-only build" if torch.version.cuda is None else "550.54.14") in report[
        "gpu problem"
    ]


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "course_lib", *args], capture_output=True, text=True, timeout=120
    )


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
        warnings.warn("this is deprecated", FutureWarning, stacklevel=1)
    assert "FutureWarning: this is deprecated" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="no warning at all"):
        with expect_warning(FutureWarning):
            pass
