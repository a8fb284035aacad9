"""The CPU facts the course's text states, run against the installed torch (issue 15.5).

The text says what autocast does per operation, what a DataLoader yields, when `Module.to` makes
new Parameter objects, which tensors may cross devices, what the 16-bit formats keep, which labels
a loss accepts. Each of those sentences is true of one torch release; this file runs them, so a
release that changes one fails CI instead of silently making the text false. Where a cell states a
list (the ops autocast leaves alone on the CPU), the test also reads the list from the cell.
"""

import multiprocessing
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from course_lib import ch05_speedups as ch05
from course_lib import notebooks
from support import pin_memory_warns

BF16, F32 = torch.bfloat16, torch.float32


def cell(notebook: str, cell_id: str) -> str:
    return notebooks.cell(notebook[:2], cell_id)


# ---------------------------------------------------------------- chapter 05: autocast on the CPU
CPU_KEEPS = (
    "exp",
    "log",
    "sum",
    "softmax",
    "layer_norm",
    "batch_norm",
)  # named in ch05's CPU bullet
CPU_FLOAT32 = ("cross_entropy", "mse_loss")
LOW_EVERYWHERE = ("matmul (a @ w)", "linear")


def test_cpu_autocast_lowers_matmuls_keeps_reductions_and_raises_losses_to_float32():
    rows = {
        name: (from_fp32, from_low)
        for name, from_fp32, from_low in ch05.autocast_op_dtypes("cpu", BF16)
    }
    assert {rows[n][0] for n in LOW_EVERYWHERE} == {BF16}, rows
    assert all(rows[n][1] == BF16 for n in CPU_KEEPS + ("mean", "cumsum", "log_softmax", "relu")), (
        rows
    )
    assert all(rows[n] == (F32, F32) for n in CPU_FLOAT32), rows


def test_cpu_autocast_claims_hold_without_the_course_helper():
    x = torch.randn(8, 10).bfloat16()
    with torch.autocast("cpu", dtype=BF16):
        assert (torch.randn(8, 10) @ torch.randn(10, 10)).dtype == BF16
        assert {
            torch.exp(x).dtype,
            torch.sum(x).dtype,
            torch.softmax(x, 1).dtype,
            F.layer_norm(x, (10,)).dtype,
            F.batch_norm(x, None, None, training=True).dtype,
        } == {BF16}
        assert F.cross_entropy(x, torch.tensor([0, 1] * 4)).dtype == F32


def test_the_cpu_bullet_names_the_ops_the_test_runs():
    bullet = next(
        p for p in cell("05_speedups", "c32").split("\n- ") if p.startswith("**on the CPU**")
    )
    assert all(f"`{op}`" in bullet for op in CPU_KEEPS + CPU_FLOAT32), bullet


def test_a_bf16_torch_sum_accumulates_in_float32_and_a_python_running_total_does_not():
    assert torch.full((1000,), 0.01, dtype=BF16).sum().item() == 10
    total = torch.zeros((), dtype=BF16)
    for _ in range(1000):
        total += 0.01
    assert total.item() < 9


def test_what_the_16_bit_formats_keep():
    half = lambda v: torch.tensor(v).half().item()
    assert half(65519.0) == 65504 and half(65520.0) == float("inf")  # inf from 65520 on
    assert half(2.98e-8) == 0 and half(3e-8) > 0 and half(6e-8) > 0  # 0 below about 3e-8
    assert torch.tensor(1e-42).item() != 0 and torch.tensor(1e-42).bfloat16().item() == 0
    assert (
        torch.finfo(BF16).eps == 2**-7 and torch.finfo(torch.float16).eps == 2**-10
    )  # 7 and 10 bits
    assert torch.finfo(BF16).tiny == torch.finfo(F32).tiny  # same normal range


# ---------------------------------------------------------------- chapters 03, 04, 05: DataLoader
def test_a_dataloader_yields_what_the_dataset_holds():
    cpu = TensorDataset(torch.randn(10, 4), torch.zeros(10, dtype=torch.long))
    meta = TensorDataset(
        torch.randn(10, 4, device="meta"), torch.zeros(10, dtype=torch.long, device="meta")
    )
    assert {t.device.type for t in next(iter(DataLoader(cpu, batch_size=4)))} == {"cpu"}
    assert {t.device.type for t in next(iter(DataLoader(meta, batch_size=4)))} == {"meta"}


def test_pin_memory_without_an_accelerator_pins_nothing_and_says_so_from_after_2_6():
    if torch.accelerator.is_available():
        pytest.skip("this machine has an accelerator")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batch = next(iter(DataLoader(torch.randn(8, 2), batch_size=4, pin_memory=True)))
    warned = any("no accelerator" in str(w.message) for w in caught)
    assert not batch.is_pinned() and warned is pin_memory_warns(default=warned)
    for cell_id, said in (
        ("03:c07", "2.6 ignores it without a word"),
        ("05:c22", "2.6 says nothing"),
    ):
        assert said in notebooks.cell(*cell_id.split(":"))


def test_the_start_method_the_text_names_for_this_python():
    linux_default = "fork" if sys.version_info < (3, 14) else "forkserver"
    expected = {"linux": linux_default, "darwin": "spawn", "win32": "spawn"}.get(sys.platform)
    if expected is None:
        pytest.skip(f"the text names no default for {sys.platform}")
    assert multiprocessing.get_start_method(allow_none=False) == expected
    assert expected in ch05.start_method_note()


# -------------------------------------------------------- chapters 02, 03: Module.to and Parameters
@pytest.fixture
def conversion_flags():
    yield lambda overwrite, swap: (
        torch.__future__.set_overwrite_module_params_on_conversion(overwrite),
        torch.__future__.set_swap_module_params_on_conversion(swap),
    )
    torch.__future__.set_overwrite_module_params_on_conversion(False)
    torch.__future__.set_swap_module_params_on_conversion(False)


def same_parameter_after(target) -> bool:
    model = nn.Linear(2, 2)
    weight = model.weight
    model.to(target)
    return model.weight is weight


def test_which_moves_keep_the_parameter_objects(conversion_flags):
    assert same_parameter_after(torch.float64)  # a move that can keep the storage's object
    assert not same_parameter_after("meta")  # meta cannot take over CPU data in place
    conversion_flags(True, False)
    assert not same_parameter_after(torch.float64)  # overwrite: new Parameter objects, every move
    conversion_flags(False, True)
    assert same_parameter_after("meta") and same_parameter_after(
        torch.float64
    )  # swap: the same objects


def test_adams_step_counter_stays_on_the_cpu():
    weight = nn.Parameter(torch.zeros(3, device="meta"))
    optimizer = torch.optim.Adam([weight])
    weight.grad = torch.zeros(3, device="meta")
    optimizer.step()
    state = optimizer.state[weight]
    assert state["step"].device.type == "cpu" and state["step"].dim() == 0
    assert state["exp_avg"].device.type == "meta"


# --------------------------------------------------------------- chapter 01: what may cross devices
def test_only_0_dim_cpu_tensors_and_cpu_indices_cross_devices():
    other = torch.arange(5, device="meta")
    assert (other * torch.tensor(2)).device.type == "meta"
    assert other[torch.tensor([0, 2])].device.type == "meta"
    assert other[torch.tensor([True, False, True, False, True])].device.type == "meta"
    with pytest.raises(RuntimeError, match="device"):
        other * torch.tensor([2])


# ---------------------------------------------------------------- explainer: labels_dtype
def test_which_labels_cross_entropy_accepts():
    logits = torch.randn(4, 3)
    F.cross_entropy(logits, torch.softmax(torch.randn(4, 3), 1))  # float (N, C): probabilities
    F.cross_entropy(logits, torch.tensor([0, 1, 2, 0], dtype=torch.uint8))  # "Long or Byte"
    for labels in (
        torch.tensor([0.0, 1.0, 2.0, 0.0]),
        torch.tensor([0, 1, 2, 0], dtype=torch.int32),
        torch.tensor([0, 1, 1, 0], dtype=torch.bool),
    ):
        with pytest.raises(RuntimeError, match="Long"):
            F.cross_entropy(logits, labels)


# ---------------------------------------------------------------- chapter 07: SyncBatchNorm
def test_sync_batchnorm_refuses_cpu_tensors_in_a_process_group_and_is_plain_batchnorm_outside():
    from course_lib import ch07_dp_vs_ddp as ch07

    assert all(
        "expected input tensor to be on GPU" in line for line in ch07.sync_batchnorm_on_cpu()
    )
    x = torch.randn(8, 4)
    torch.testing.assert_close(nn.SyncBatchNorm(4)(x), nn.BatchNorm1d(4)(x))


def test_data_parallel_still_runs_without_a_deprecation_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        warnings.simplefilter("error", FutureWarning)
        nn.DataParallel(nn.Linear(2, 2))(torch.randn(3, 2))
