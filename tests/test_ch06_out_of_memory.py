"""Chapter 06: right answers written differently pass, and every measured claim of the notebook holds."""
import pytest
import torch
from torch import nn

from course_lib import ch06_out_of_memory as ch
from course_lib import data, memory
from course_lib.exercises import CORRECT


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
    return {"weights": sum(nbytes(p) for p in model.parameters()),
            "grads": sum(nbytes(p.grad) for p in model.parameters() if p.grad is not None),
            "optimizer_state": sum(nbytes(v) for s in state.values() for v in s.values() if torch.is_tensor(v))}


def accumulate_with_enumerate(model, loader, optimizer, criterion, device, accum_steps):
    model.train()
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        (criterion(model(x), y) / accum_steps).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def largest_with_for(try_batch, limit):
    from course_lib.memory import OUT_OF_MEMORY
    best = 0
    for k in range(64):
        if 2 ** k > limit:
            break
        try:
            try_batch(2 ** k)
        except OUT_OF_MEMORY:
            break
        best = 2 ** k
    return best


@pytest.mark.parametrize("exercise,candidate", [
    (ch.model_state_bytes, state_bytes_from_state_dict),
    (ch.train_with_accumulation, accumulate_with_enumerate),
    (ch.largest_batch, largest_with_for),
])
def test_right_answers_written_differently_pass(exercise, candidate):
    result = check(exercise, candidate)
    assert result.status == CORRECT, result.text()


def test_accumulation_equals_big_batch_for_the_reference():
    loader = ch._acc_loader(6, 8)
    model, trace = ch._run_acc(ch.train_with_accumulation.key().solution, loader, 3)
    assert ch._weights_equal(model, ch.reference_big_batch(loader, 3))
    assert not ch._weights_equal(model, ch.reference_big_batch(loader, 3, factor=3))


# ---------------------------------------------------------------- the notebook's measured claims
def test_estimate_matches_measurement(digits):
    model, _, _ = ch.fresh_setup("cpu")
    est, got = ch.estimate(model, 256), ch.measure("cpu", 256, digits)
    assert est["weights"] == got["weights"] and est["grads"] == got["grads"]
    for k in ("optimizer_state", "activations"):  # Adam's step counters; the labels and the loss scalar
        assert abs(got[k] - est[k]) / est[k] < 0.01


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
    result = ch.amp_compare("cpu", digits, batch_size=1024)  # at small batches the bf16 weight copies weigh more
    fp32, amp = result["float32"], result["autocast"]
    for k in ("weights", "grads", "optimizer_state"):
        assert fp32[k] == amp[k]
    assert amp["activations"] < 0.8 * fp32["activations"]
    assert sum(amp.values()) > 0.6 * sum(fp32.values())  # not "halved"


def test_checkpointing_saves_memory_costs_compute_same_gradients(digits):
    result = ch.checkpoint_compare("cpu", digits, batch_size=64, segments=3, repeats=1)
    plain, ckpt = result.values()
    assert ckpt["saved"] < 0.7 * plain["saved"]
    assert ckpt["calls"] > plain["calls"]
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(plain["grads"], ckpt["grads"]))


def test_html_tables_render(digits):
    assert "activations" in ch.compare(ch.estimate(ch.wide_mlp(), 8), ch.measure("cpu", 8, digits)).data
    assert "ratio" in ch.amp_table(ch.amp_compare("cpu", digits, batch_size=32)).data


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_oom_demo_raises_the_real_error():
    with pytest.raises(torch.OutOfMemoryError):
        ch.gpu_oom_demo("cuda", limit_bytes=2**30)
    assert torch.cuda.memory_allocated() < 2**30
