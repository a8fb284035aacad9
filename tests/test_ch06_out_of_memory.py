"""Chapter 06: right answers written differently
pass, and every measured claim of the notebook holds."""

import math
import re

import pytest
import torch

from course_lib import ch06_out_of_memory as ch
from course_lib import data, memory, notebooks
from course_lib.exercises import CORRECT
from course_lib.i18n import catalogue


def check(exercise, candidate):
    return exercise.check(candidate, include_hidden=True, record=False)


@pytest.fixture(scope="module")
def digits():
    return data.digits_split(test_fraction=0.2, seed=0)[0]


# ---------------------------------------------------------------- right answers written differently
def state_bytes_from_state_dict(model, optimizer):
    def nbytes(t):
        return t.nelement() * t.element_size()

    state = optimizer.state_dict()["state"]
    return {
        "weights": sum(nbytes(p) for p in model.parameters()),
        "grads": sum(nbytes(p.grad) for p in model.parameters() if p.grad is not None),
        "optimizer_state": sum(
            nbytes(v) for s in state.values() for v in s.values() if torch.is_tensor(v)
        ),
    }


def accumulate_with_enumerate(model, loader, optimizer, criterion, device, accum_steps):
    model.train()
    n_full = (
        len(loader) // accum_steps * accum_steps
    )  # micro-batches in full groups; the rest is the last group
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        group = accum_steps if i < n_full else len(loader) - n_full
        (criterion(model(x), y) * (1 / group)).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def largest_with_for(try_batch, limit):
    from course_lib.memory import OUT_OF_MEMORY

    best = 0
    for k in range(64):
        if 2**k > limit:
            break
        try:
            try_batch(2**k)
        except OUT_OF_MEMORY:
            break
        best = 2**k
    return best


@pytest.mark.parametrize(
    "exercise,candidate",
    [
        (ch.model_state_bytes, state_bytes_from_state_dict),
        (ch.train_with_accumulation, accumulate_with_enumerate),
        (ch.largest_batch, largest_with_for),
    ],
)
def test_right_answers_written_differently_pass(exercise, candidate):
    result = check(exercise, candidate)
    assert result.status == CORRECT, result.text()


def test_accumulation_equals_big_batch_for_the_reference():
    loader = ch._acc_loader(6, 8)
    model, trace = ch._run_acc(ch.train_with_accumulation.key().solution, loader, 3)
    assert ch._weights_equal(model, ch.reference_big_batch(loader, 3))
    assert not ch._weights_equal(model, ch.reference_big_batch(loader, 3, divide_by=lambda g: 1))


def test_an_unweighted_last_group_is_not_the_big_batch_step():
    """7 micro-batches, accum_steps 3: the last group has 1
    micro-batch; dividing it by 3 makes its step 3x too small."""
    loader = ch._acc_loader(7, 8)
    right = ch.reference_big_batch(loader, 3)
    unweighted = ch.reference_big_batch(loader, 3, divide_by=lambda g: 3)
    assert not ch._weights_equal(right, unweighted)
    full_groups_only = ch._acc_loader(6, 8)  # no leftover: both divisions agree
    assert ch._weights_equal(
        ch.reference_big_batch(full_groups_only, 3),
        ch.reference_big_batch(full_groups_only, 3, divide_by=lambda g: 3),
    )


# ---------------------------------------------------------------- the notebook's measured claims
def test_estimate_matches_measurement(digits):
    model, _, _ = ch.fresh_setup("cpu")
    est, got = ch.estimate(model, 256), ch.measured_step_bytes("cpu", 256, digits)
    assert est["weights"] == got["weights"] and est["grads"] == got["grads"]
    for k in (
        "optimizer_state",
        "activations",
    ):  # Adam's step counters; the labels and the loss scalar
        assert abs(got[k] - est[k]) / est[k] < 0.01


def test_accounting_and_peak_counts_a_mid_training_step(digits, monkeypatch):
    """The CUDA allocator's peak is stood in for; the
    counted bytes are real (and Adam's state exists)."""
    peaks = []
    monkeypatch.setattr(
        memory, "cuda_peak", lambda fn, device=None: peaks.append(fn()) or {"peak": 1}
    )
    result = ch.accounting_and_peak("cpu", digits, batch_size=64, hidden=32)
    counted, weights = result["counted"], 4 * sum(p.numel() for p in ch.wide_mlp(32).parameters())
    assert result["measured"] == {"peak": 1} and len(peaks) == 1 and math.isfinite(peaks[0])
    assert counted["weights"] == counted["grads"] == weights
    assert counted["optimizer_state"] >= 2 * weights  # Adam's two moments, plus its step counters
    assert counted["batch"] == 64 * data.N_FEATURES * 4 + 64 * 8 and counted["activations"] > 0


def test_activations_grow_with_the_batch_and_the_state_does_not(digits):
    curve = ch.activation_curve("cpu", digits, batch_sizes=(64, 256))
    assert curve[256]["activations"] > 3.9 * curve[64]["activations"]
    assert curve[256]["weights"] == curve[64]["weights"]
    assert "From batch" in ch.crossover(ch.activation_curve("cpu", digits, batch_sizes=(64, 2048)))


def test_the_too_big_batch_fails_and_every_fix_fits(digits):
    rows = ch.try_fixes("cpu", digits, batch_size=1024)
    assert rows[0][2] == "OUT OF MEMORY"
    assert all(verdict == "fits" for _, _, verdict in rows[1:]), rows


def test_largest_batch_on_the_budget_card():
    assert ch.largest_batch.key().solution(ch.budget_card(), 2048) == 512


def test_summing_loss_tensors_keeps_graphs_alive(digits):
    runs = ch.leak_experiment("cpu", digits, n_batches=3, batch_size=64)
    tensor, floats, no_grad = runs.values()
    assert tensor[0] > 0 and tensor == sorted(tensor) and tensor[-1] >= 3 * tensor[0] * 0.99
    assert floats == [0, 0, 0] and no_grad == [0, 0, 0]


def test_amp_shrinks_activations_only(digits):
    result = ch.amp_compare("cpu", digits, batch_size=1024)
    fp32, amp = result["float32"], result["autocast"]
    for k in ("weights", "grads", "optimizer_state"):
        assert fp32[k] == amp[k]
    assert amp["activations"] < 0.8 * fp32["activations"]
    assert sum(amp.values()) > 0.6 * sum(fp32.values())  # not "halved"


def test_autocasts_weight_copies_are_counted_apart_from_the_activations(digits):
    small, large = (ch.amp_compare("cpu", digits, batch_size=b)["autocast"] for b in (64, 1024))
    model = ch.wide_mlp()
    copied = sum(
        2 * m.weight.numel() for m in list(model)[2::2]
    )  # bf16 weights of the Linears after the first
    assert (
        small["weight_copies"] == large["weight_copies"] == copied
    )  # the model's size, not the batch's
    assert ch.amp_compare("cpu", digits, batch_size=64)["float32"]["weight_copies"] == 0


def test_checkpointing_saves_memory_costs_compute_same_gradients(digits):
    result = ch.checkpoint_compare("cpu", digits, batch_size=64, segments=3, repeats=1)
    plain, ckpt = result.values()
    assert ckpt["saved"] < 0.7 * plain["saved"]
    assert ckpt["calls"] > plain["calls"]
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(plain["grads"], ckpt["grads"]))


def test_html_tables_render(digits):
    assert (
        "activations"
        in ch.compare(ch.estimate(ch.wide_mlp(), 8), ch.measured_step_bytes("cpu", 8, digits)).data
    )
    assert "ratio" in ch.amp_table(ch.amp_compare("cpu", digits, batch_size=32)).data


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_oom_demo_raises_the_real_error():
    with pytest.raises(torch.OutOfMemoryError):
        ch.gpu_oom_demo("cuda", limit_bytes=2**30)
    assert torch.cuda.memory_allocated() < 2**30


# ------------------------------------------------------------- reading a CUDA out-of-memory message
def test_the_example_message_is_read_part_by_part():
    parts = ch.oom_parts(ch.OOM_EXAMPLE)
    assert parts["Tried to allocate"] == "2.00 GiB" and parts["total capacity"] == "23.57 GiB"
    assert parts["reserved by PyTorch but unallocated"] == "5.87 GiB" and parts["allowed"] is None
    assert "expandable_segments:True" in ch.OOM_EXAMPLE
    table = ch.read_oom_message(ch.OOM_EXAMPLE).data
    assert "fragmentation" in table and "(not in this message)" in table


def test_the_diagnosis_follows_the_messages_own_numbers():
    fragmented = ch.oom_diagnosis(ch.OOM_EXAMPLE)
    assert fragmented.startswith("Fragmentation") and "expandable_segments:True" in fragmented
    assert "empty_cache() cannot help" in fragmented
    capped = (
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.80 "
        "GiB of which 138.21 GiB is free. Including non-PyTorch memory, this process has 1.12 "
        "GiB memory in use. 1.00 GiB allowed; Of the allocated memory 100.25 MiB is allocated "
        "by PyTorch, and 21.75 MiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting ..."
    )
    full = ch.oom_diagnosis(capped)
    assert full.startswith("Not fragmentation") and "of the 1.00 GiB allowed" in full
    assert "not the CUDA allocator's" in ch.oom_diagnosis(
        "mat1 and mat2 shapes cannot be multiplied"
    )
    assert ch.size_in_bytes("1.50 KiB") == 1536 and ch.size_in_bytes("512 bytes") == 512


def test_expect_error_keeps_the_error_for_reading():
    from course_lib.errors import expect_error

    with expect_error(memory.OutOfMemoryError, "out of memory") as caught:
        raise memory.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert "Tried to allocate" in str(caught.error)


# ---------------------------------------------------------------- AMP, frozen layers
def test_the_amp_verdict_reports_what_was_measured(digits):
    small = ch.amp_verdict(ch.amp_compare("cpu", digits, batch_size=64), 64)
    large = ch.amp_verdict(ch.amp_compare("cpu", digits, batch_size=1024), 1024)
    assert (
        "saved" in small.split(" on the activations")[0]
        and "saved" in large.split(" on the activations")[0]
    )
    assert (
        "COST" in small.split("weight copies")[1]
    )  # at batch 64 the bf16 weight copies outweigh the saving
    assert "saved" in large.split("weight copies")[1]
    assert ch._change(0.62) == "saved 38%" and ch._change(1.45) == "COST 45% more"


def test_freezing_drops_gradients_optimizer_state_and_activations(digits):
    full, frozen = ch.freeze_compare("cpu", digits, batch_size=64).values()
    assert frozen["weights"] == full["weights"]
    for k in ("grads", "optimizer_state", "activations"):
        assert frozen[k] < full[k] / 2, k
    assert "ratio" in ch.side_by_side({"a": full, "b": frozen}).data


# ---------------------------------------------------------- GPU-only cells follow the course device
GPU_CELL_MARKS = ("gpu_only(", 'device.type == "cuda"')


def gpu_cells():
    code = notebooks.code("06")
    return code[0], [s for s in code if any(mark in s for mark in GPU_CELL_MARKS)]


def test_every_gpu_only_cell_names_its_recorded_figure():
    from course_lib.device import FIGURE_KEYS

    _, cells = gpu_cells()
    keys = {re.search(r'figure="([^"]+)"', s).group(1) for s in cells if "gpu_only(" in s}
    assert keys == {
        "ch06.estimate_vs_peak",
        "ch06.real_oom",
        "ch06.empty_cache",
        "ch06.amp_memory",
        "ch06.memory_snapshot",
        "ch06.fragmentation",
    }
    assert keys <= set(FIGURE_KEYS)
    assert all('"cuda"' not in s.replace('device.type == "cuda"', "") for s in cells), (
        "use `device`"
    )


def test_gpu_cells_skip_when_the_course_device_is_the_cpu_on_a_cuda_machine(monkeypatch, capsys):
    """COURSE_DEVICE=cpu on a (simulated) CUDA machine: every GPU cell skips, none touches CUDA."""

    class Properties:
        name, total_memory, major, minor, multi_processor_count = (
            "simulated GPU",
            80 * 2**30,
            9,
            0,
            132,
        )

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: Properties())
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    setup, cells = gpu_cells()
    namespace = {"display": lambda *a: None}
    exec(setup, namespace)
    assert namespace["device"] == torch.device("cpu")
    for source in cells:
        exec(source, namespace)
    out = capsys.readouterr().out
    assert out.count("[GPU only] skipped") == 6 and "COURSE_DEVICE=cpu" in out
    assert (
        "EXAMPLE"
        in namespace["ch"].read_oom_message(namespace["message"], namespace["source"]).data
    )


@pytest.mark.parametrize(
    "unified, told, other",
    (
        (True, "PYTORCH_ALLOC_CONF=expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF is still"),
        (False, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "older than 2.10"),
    ),
    ids=("torch2.10+", "torch2.6-2.9"),
)
def test_the_diagnosis_names_the_variable_this_torch_reads(unified, told, other, monkeypatch):
    """torch 2.6 to 2.9 never read PYTORCH_ALLOC_CONF for CUDA: the advice names the old one."""
    setter = "_accelerator_setAllocatorSettings"
    if unified:
        monkeypatch.setattr(torch._C, setter, lambda settings: None, raising=False)
    else:
        monkeypatch.delattr(torch._C, setter, raising=False)
    fragmented = ch.oom_diagnosis(ch.OOM_EXAMPLE)
    assert told in fragmented and other in fragmented
    with catalogue.in_language("zh"):
        said = ch.oom_diagnosis(ch.OOM_EXAMPLE)
    assert told in said and not catalogue.untranslated(fragmented)
