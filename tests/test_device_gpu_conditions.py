"""GPU conditions that fail on real platforms, faked on the CPU (issue 38, item 6): a T4 or a P100
whose bfloat16 is only emulated gets float16 for autocast; a GPU whose compute capability this
PyTorch has no kernels for (a P100 with a current PyTorch) is not picked: the course runs on the
CPU and says why, once, and `doctor` names it as the gpu problem."""

import pytest
import torch

from course_lib import device as dev
from course_lib.doctor import environment_report, gpu_problem
from course_lib.i18n import tr
from course_lib.i18n.catalogue import CJK, in_language, untranslated

CURRENT = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


def emulated_bf16(including_emulation=True):
    """is_bf16_supported of a T4 or a P100: only when emulation counts."""
    return including_emulation


def old_signature():
    """is_bf16_supported before torch 2.6 (no including_emulation argument)."""
    return True


def test_emulated_bfloat16_is_not_chosen_for_autocast(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", emulated_bf16)
    assert dev.amp_dtype("cuda") == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert dev.amp_dtype("cuda") == torch.bfloat16  # an A100 or newer: bfloat16 in hardware


@pytest.mark.parametrize("capability, dtype", [((7, 5), torch.float16), ((8, 0), torch.bfloat16)])
def test_before_torch_2_6_the_capability_decides(monkeypatch, capability, dtype):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", old_signature)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    assert dev.amp_dtype("cuda") == dtype


def fake_gpu(monkeypatch, capability, arches, name="Tesla P100-PCIE-16GB"):
    monkeypatch.delenv(dev.ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: list(arches))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: name)
    monkeypatch.setattr(dev, "mps_available", lambda: False)
    monkeypatch.setattr(dev, "_said", set())


@pytest.mark.parametrize(
    "capability, arches, usable",
    [
        ((6, 0), CURRENT, False),  # Kaggle's P100 with a current PyTorch
        ((7, 5), CURRENT, True),  # a T4
        ((8, 9), ["sm_80", "sm_86"], True),  # a cubin runs on a later minor of its major
        ((9, 0), ["sm_80", "sm_86"], False),  # not on a later major
        ((9, 0), ["sm_80", "compute_80"], True),  # PTX is compiled for later GPUs
        ((7, 0), ["sm_80", "compute_80"], False),  # never for earlier ones
        ((9, 0), ["sm_90a"], True),
        ((10, 0), ["sm_90a"], False),  # an arch-specific cubin runs on its own capability only
    ],
)
def test_a_gpu_without_kernels_in_this_pytorch_is_not_picked(
    monkeypatch, capsys, capability, arches, usable
):
    fake_gpu(monkeypatch, capability, arches)
    assert dev.pick_device() == torch.device("cuda" if usable else "cpu")
    assert dev.gpu_available() == usable and (dev.second_device().type == "cuda") == usable
    said = capsys.readouterr().out
    assert ("no kernels" in said) != usable
    assert (gpu_problem() == "") == usable


def test_the_course_says_why_once_and_doctor_names_the_gpu_problem(monkeypatch, capsys):
    fake_gpu(monkeypatch, (6, 0), CURRENT)
    dev.pick_device(), dev.pick_device()
    said = capsys.readouterr().out
    assert said.count("no kernels") == 1, said
    assert "Tesla P100-PCIE-16GB" in said and "capability 6.0" in said and "sm_60" in said
    report = environment_report()
    assert "no kernels" in report["gpu problem"] and report["course device"] == "cpu"
    assert "no kernels for the CUDA GPU here" in dev.why_not_cuda(torch.device("cpu"))
    monkeypatch.setenv(dev.ENV_VAR, "cuda")
    with pytest.raises(ValueError, match="no kernels for this GPU"):
        dev.pick_device()


def test_the_reasons_are_said_in_chinese(monkeypatch):
    fake_gpu(monkeypatch, (6, 0), CURRENT)
    for text in (
        dev.cuda_problem(),
        dev.why_not_cuda(torch.device("cpu")),
        f"{dev.ENV_VAR}='cuda' but this PyTorch has no kernels for this GPU; use cpu or auto",
    ):
        assert not untranslated(text, "zh"), text
        with in_language("zh"):
            assert CJK.search(tr(text)), tr(text)


def test_doctor_reports_a_cudnn_that_refuses_the_gpu_instead_of_dying(monkeypatch):
    """torch 2.15's cuDNN 9.26 raises for a GPU below capability 7.5 (Kaggle's P100)."""
    fake_gpu(monkeypatch, (6, 0), CURRENT)

    def refuses():
        raise RuntimeError(
            "cuDNN version 92600 is not compatible with devices with SM < 7.5. Please install ..."
        )

    monkeypatch.setattr(torch.backends.cudnn, "version", refuses)
    report = environment_report()
    assert report["cudnn"].startswith("unusable: cuDNN version 92600 is not compatible")
    with in_language("zh"):
        assert environment_report()["cudnn"].startswith("不可用：cuDNN version 92600")
