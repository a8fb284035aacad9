"""course_lib.memory: the byte counts are the tensors' real sizes, the activation meter sees what
autograd saves and forgets it when autograd does, and the memory budget is a clearly named
stand-in."""

import pytest
import torch
from torch import nn

from course_lib import memory


def small_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 5))


def adam_step(model, batch=8):
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(batch, 10)).sum().backward()
    optimizer.step()
    return optimizer


def test_state_bytes_are_the_tensors_sizes():
    model = small_model()
    n = sum(p.numel() for p in model.parameters())
    assert memory.state_bytes(model) == {"weights": 4 * n, "grads": 0, "optimizer_state": 0}
    optimizer = adam_step(model)
    state = memory.state_bytes(model, optimizer)
    assert state["grads"] == 4 * n
    steps = [s["step"] for s in optimizer.state.values()]
    assert state["optimizer_state"] == 2 * 4 * n + sum(memory.tensor_bytes(s) for s in steps)


def test_state_bytes_respect_the_dtype_and_skip_non_tensors():
    model = small_model().to(torch.bfloat16)
    n = sum(p.numel() for p in model.parameters())
    assert memory.weight_bytes(model) == 2 * n
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.state[model[0].weight]["note"] = "not a tensor"
    assert memory.optimizer_state_bytes(optimizer) == 0


def test_meter_counts_saved_activations_once_and_not_the_parameters():
    model = small_model()
    x = torch.randn(32, 10)
    with memory.ActivationMeter(model) as meter:
        out = model(x)
    # the input (kept by the first Linear) and the ReLU
    # output (kept by the ReLU and the second Linear)
    assert meter.peak == 4 * 32 * (10 + 20)
    out.sum().backward()
    assert meter.live == 0 and meter.peak == 4 * 32 * (10 + 20)


def test_meter_sees_nothing_under_no_grad_and_keeps_gradients_unchanged():
    model, x = small_model(), torch.randn(4, 10)
    with torch.no_grad():
        assert memory.saved_bytes(lambda: model(x), model)[1] == 0
    model(x).sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with memory.ActivationMeter(model):
        out = model(x).sum()
    out.backward()
    assert all(torch.equal(a, p.grad) for a, p in zip(want, model.parameters()))


def test_meter_sees_graphs_kept_alive():
    model = small_model()
    with memory.ActivationMeter(model) as meter:
        kept = [model(torch.randn(16, 10)).sum() for _ in range(3)]
        assert meter.live == 3 * 4 * 16 * 30
        del kept
        assert meter.live == 0


def test_training_step_memory_reports_every_component():
    model = small_model()
    optimizer = torch.optim.Adam(model.parameters())
    got = memory.training_step_memory(
        model, optimizer, nn.CrossEntropyLoss(), torch.randn(8, 10), torch.randint(0, 5, (8,))
    )
    assert set(got) == set(memory.COMPONENTS) and all(v > 0 for v in got.values())


def test_budget_raises_a_course_error_not_a_cuda_one():
    model = small_model()
    optimizer = adam_step(model)
    with pytest.raises(memory.MemoryBudgetExceeded, match="memory budget exceeded") as info:
        with memory.MemoryBudget(memory.weight_bytes(model) * 3.5, model, optimizer):
            model(torch.randn(512, 10)).sum().backward()
    assert not isinstance(info.value, memory.OutOfMemoryError)
    assert "not a CUDA error" in str(info.value)


def test_budget_passes_when_it_fits_and_removes_its_hooks():
    model = small_model()
    optimizer = adam_step(model)
    budget = memory.MemoryBudget(10 * 2**20, model, optimizer)
    with budget:
        optimizer.zero_grad()
        model(torch.randn(8, 10)).sum().backward()
        optimizer.step()
    assert 0 < budget.peak < 10 * 2**20
    tiny = memory.MemoryBudget(1, model, optimizer)
    with pytest.raises(memory.MemoryBudgetExceeded):
        tiny.__enter__()
    model(torch.randn(8, 10)).sum().backward()  # the budget above is gone: no hook may raise now
    optimizer.step()


def test_fits_call_catches_only_out_of_memory():
    def card(n):
        if n == 3:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
        if n > 4:
            raise memory.OutOfMemoryError("CUDA out of memory")

    assert memory.fits_call(card, 2) and not memory.fits_call(card, 8)
    with pytest.raises(RuntimeError, match="shapes"):
        memory.fits_call(card, 3)
    assert torch.OutOfMemoryError in memory.OUT_OF_MEMORY


def test_format_bytes():
    assert memory.format_bytes(512) == "512 B"
    assert memory.format_bytes(1536) == "1.50 KiB"
    assert memory.format_bytes(3 * 2**30) == "3.00 GiB"


def test_plot_stacked_returns_a_figure():
    fig = memory.plot_stacked(
        {"a": {"weights": 2**20, "activations": 2**21}, "b": {"weights": 2**20}}
    )
    assert len(fig.axes) == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_small_gpu_gives_a_real_oom_and_lifts_the_cap():
    with pytest.raises(torch.OutOfMemoryError):
        with memory.small_gpu(2**28):
            torch.empty(2**29, dtype=torch.uint8, device="cuda")
    x = torch.empty(2**29, dtype=torch.uint8, device="cuda")
    assert memory.cuda_memory()["allocated"] >= 2**29
    del x


# ------------------------------------------------------------ small_gpu on a simulated CUDA machine
class _Properties:
    total_memory = 80 * 2**30
    name = "simulated GPU"


@pytest.fixture
def simulated_cuda(monkeypatch):
    """A CPU-only torch made to look like one CUDA GPU. Only the lowest layer is faked: torch's
    own argument checks (torch.cuda._utils._get_device_index) run. Returns the recorded allocator
    calls."""
    calls, fraction = [], {0: 0.25}  # the learner had capped this process at 25% earlier

    def set_fraction(value, index):
        calls.append(("set", value, index))
        fraction[index] = value

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: _Properties())
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append(("empty_cache",)))
    monkeypatch.setattr(torch.cuda.memory, "_lazy_init", lambda: None)
    monkeypatch.setattr(torch._C, "_cuda_setMemoryFraction", set_fraction, raising=False)
    monkeypatch.setattr(
        torch._C, "_cuda_getMemoryFraction", lambda index: fraction[index], raising=False
    )
    return calls


@pytest.mark.parametrize("device", [None, "cuda", torch.device("cuda"), torch.device("cuda:0"), 0])
def test_small_gpu_passes_an_index_and_puts_the_learners_fraction_back(simulated_cuda, device):
    with memory.small_gpu(2**30, device):
        assert simulated_cuda == [("set", 2**30 / _Properties.total_memory, 0)]
    assert simulated_cuda[1:] == [("set", 0.25, 0), ("empty_cache",)]


def test_small_gpu_undoes_the_cap_when_the_block_raises(simulated_cuda):
    with pytest.raises(memory.OutOfMemoryError):
        with memory.small_gpu(2**30, torch.device("cuda")):
            raise memory.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert simulated_cuda[-2:] == [("set", 0.25, 0), ("empty_cache",)]


def test_cuda_index_refuses_other_devices():
    with pytest.raises(ValueError, match="expected a CUDA device"):
        memory.cuda_index("cpu")
