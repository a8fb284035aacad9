"""What a hosted GPU changes, said live in the cell where it matters (issue 38, item 4).

The GPU is faked: a T4 is compute capability (7, 5), no bfloat16 in hardware, about 15 GB; Kaggle
lends two without peer-to-peer access. The platforms are recognised by their markers.
"""

import types

import pytest
import torch

from course_lib import device, hosted, notebooks
from course_lib.i18n.catalogue import CJK, in_language

T4 = hosted.GpuFacts("Tesla T4", (7, 5), 1, 15_828_320_256, False, False)
T4X2 = hosted.GpuFacts("Tesla T4", (7, 5), 2, 15_828_320_256, False, False)
H100 = hosted.GpuFacts("NVIDIA H100", (9, 0), 1, 85 * 2**30, False, True)
P100 = hosted.GpuFacts("Tesla P100-PCIE-16GB", (6, 0), 1, 16 * 2**30, False, False)
COLAB = hosted.detect(modules={"google.colab": object()}, environ={})
KAGGLE = hosted.detect(modules={}, environ={"KAGGLE_KERNEL_RUN_TYPE": "Interactive"})


def fake_cuda(monkeypatch, capability=(7, 5), count=2, memory=15_828_320_256, peer=False):
    """torch.cuda answers as on Kaggle's two T4s (no CUDA work is done)."""
    cuda = torch.cuda
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "get_arch_list", lambda: ["sm_75", "sm_80", "sm_90"])
    monkeypatch.setattr(cuda, "device_count", lambda: count)
    monkeypatch.setattr(cuda, "get_device_name", lambda d=None: "Tesla T4")
    monkeypatch.setattr(cuda, "get_device_capability", lambda d=None: capability)
    props = types.SimpleNamespace(name="Tesla T4", total_memory=memory)
    monkeypatch.setattr(cuda, "get_device_properties", lambda d=None: props)
    monkeypatch.setattr(cuda, "can_device_access_peer", lambda a, b: peer)
    monkeypatch.setattr(
        cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation
    )
    monkeypatch.delenv(device.ENV_VAR, raising=False)


def test_the_facts_are_read_from_torch_cuda(monkeypatch):
    """Capability, count, memory, P2P and bfloat16 as torch reports them; emulated bf16 is none."""
    fake_cuda(monkeypatch)
    assert hosted.gpu_facts() == T4X2
    monkeypatch.setenv(device.ENV_VAR, "cpu")  # the course device is the CPU: no GPU note
    assert hosted.gpu_facts() is None
    monkeypatch.delenv(device.ENV_VAR)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert hosted.gpu_facts() is None


def test_a_t4_autocasts_in_float16_and_compiles_without_bfloat16():
    (amp,) = hosted.gpu_notes_for("amp", T4)
    assert "Tesla T4 (sm_75) has no bfloat16 in hardware" in amp and "GradScaler" in amp
    (compiled,) = hosted.gpu_notes_for("compile", T4)
    assert "float16" in compiled and "does not support bfloat16 compilation natively" in compiled
    (old,) = hosted.gpu_notes_for("compile", P100)
    assert "Triton needs compute capability 7.0" in old


def test_kaggle_two_t4s_launch_on_nccl_and_say_what_nccl_does_without_p2p():
    launch = hosted.gpu_notes_for("launch", T4X2, KAGGLE)
    assert launch[0].startswith("2 GPUs: the launch below runs its ranks on nccl")
    assert "SHM transport" in launch[1]
    with_p2p = T4X2.__class__(**{**T4X2.__dict__, "peer": True})
    assert len(hosted.gpu_notes_for("launch", with_p2p, KAGGLE)) == 1
    (one,) = hosted.gpu_notes_for("launch", T4, COLAB)
    assert one.startswith("Colab lends 1 GPU here: the ranks run on gloo")


def test_a_hosted_session_says_what_the_oom_chapter_numbers_mean_there():
    gpu, session = hosted.gpu_notes_for("memory", T4, COLAB)
    assert "14.7 GiB" in gpu and "no other user" in gpu
    assert "12 hours at most" in session
    (session,) = hosted.gpu_notes_for("memory", None, KAGGLE)  # a CPU session is limited too
    assert "/kaggle/working" in session


@pytest.mark.parametrize("topic", sorted(hosted.TOPICS))
def test_nothing_is_said_where_nothing_changes(topic):
    """A local machine without such a GPU, or with a GPU that has bfloat16, hears nothing."""
    assert hosted.gpu_notes_for(topic, None, None) == []
    assert hosted.gpu_notes_for(topic, H100, None) == []


def test_the_cells_print_them_live_on_kaggle(monkeypatch, capsys):
    """gpu_note reads the faked GPU and the platform's marker, and prints each note wrapped."""
    fake_cuda(monkeypatch)
    monkeypatch.setenv("KAGGLE_KERNEL_RUN_TYPE", "Interactive")
    hosted.gpu_note("launch")
    said = capsys.readouterr().out
    assert "2 GPUs" in said and "SHM transport" in said
    assert max(map(len, said.splitlines())) <= device.SKIP_WIDTH
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE")
    for name in ("COLAB_RELEASE_TAG", "COLAB_GPU", "KAGGLE_URL_BASE", "DSW_INSTANCE_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
    hosted.gpu_note("launch")
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="unknown topic"):
        hosted.gpu_note("speed")


@pytest.mark.parametrize("topic", sorted(hosted.TOPICS))
def test_every_note_is_said_in_chinese(topic):
    with in_language("zh"):
        said = hosted.gpu_notes_for(topic, T4X2, KAGGLE) + hosted.gpu_notes_for(topic, P100, COLAB)
    assert said and all(CJK.search(line) for line in said)
    for line in said:
        assert "the launch" not in line and "session is" not in line, line


# the cell where each topic matters (both editions: zh code cells equal the English ones)
CELLS = {
    "amp": ("05", "c47"),
    "compile": ("05", "c51"),
    "memory": ("06", "c19"),
    "launch": ("07", "c09"),
}


@pytest.mark.parametrize("topic", sorted(CELLS))
def test_each_note_is_called_where_it_matters(topic):
    chapter, cell_id = CELLS[topic]
    assert f'gpu_note("{topic}")' in notebooks.cell(chapter, cell_id)
    zh = notebooks.FOLDER / "zh" / notebooks.path_of(chapter).name
    assert f'gpu_note("{topic}")' in notebooks.cell(zh, cell_id)


def test_chapter_08s_launch_says_it_too():
    assert 'gpu_note("launch")' in notebooks.cell("08", "c10")
