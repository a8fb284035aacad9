"""Chapter 05: right answers written differently pass, the simulated GPU behaves, the checks leave
the clocks alone, and the demos do what the notebook says (no timing is asserted)."""
import math
import pickle
import time

import pytest
import torch
from torch import nn

from course_lib import ch05_speedups as ch
from course_lib import data, measure
from course_lib.errors import expect_warning
from course_lib.exercises import CORRECT, INCORRECT, NOT_ATTEMPTED

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def check(exercise, candidate):
    return exercise.check(candidate, include_hidden=True, record=False)


@pytest.fixture(scope="module")
def train_set():
    return data.digits_split(test_fraction=0.2, seed=0)[0]


# ---------------------------------------------------------------- the augmented dataset
def test_augmented_digits_are_real_varying_digits(train_set):
    aug = ch.AugmentedDigits(train_set)
    assert len(aug) == len(train_set)
    x1, y1 = aug[3]
    x2, y2 = aug[3]
    assert x1.shape == (64,) and x1.dtype == torch.float32 and int(y1) == int(train_set[3][1]) == int(y2)
    assert not torch.equal(x1, x2), "each read must be a fresh random augmentation"
    assert x1.min() >= -1e-6 and x1.max() <= 1 + 1e-6
    # close to the original digit: a small rotation/shift keeps most of the ink where it was
    assert torch.nn.functional.cosine_similarity(x1, train_set[3][0], dim=0) > 0.6


def test_augmented_digits_pickle_for_spawned_workers(train_set):
    clone = pickle.loads(pickle.dumps(ch.AugmentedDigits(train_set)))
    assert clone[0][0].shape == (64,)


def test_spawned_worker_can_load_the_dataset(train_set):
    """What macOS and Windows do: the class must be importable from course_lib."""
    small = torch.utils.data.Subset(ch.AugmentedDigits(train_set), range(8))
    loader = torch.utils.data.DataLoader(small, batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert [tuple(x.shape) for x, _ in loader] == [(4, 64), (4, 64)]


# ---------------------------------------------------------------- demos
def test_starving_experiment_times_every_step(train_set):
    results = ch.starving_experiment(train_set, "cpu", batch_size=256)
    n_batches = math.ceil(len(train_set) / 256)
    assert [r.label for r in results] == ["digits in memory", "augmented on the fly"]
    assert all(len(r.wait_ms) == len(r.compute_ms) == n_batches for r in results)
    assert all(t >= 0 for r in results for t in r.wait_ms + r.compute_ms)


def test_workers_experiment_has_each_setting_and_epoch(train_set):
    small = torch.utils.data.Subset(ch.AugmentedDigits(train_set), range(128))
    results = ch.workers_experiment(small, "cpu", settings=((0, False), (2, True)), epochs=2)
    assert list(results) == ["num_workers=0", "num_workers=2, persistent"]
    assert all(len(v) == 2 and all(t > 0 for t in v) for v in results.values())
    assert len(ch.plot_epochs(results).axes[0].patches) == 4


def test_train_step_trains():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    before = model.weight.detach().clone()
    step = ch.train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), "cpu")
    step(torch.randn(5, 4), torch.randint(0, 3, (5,)))
    assert not torch.equal(before, model.weight)


@no_cuda
def test_gpu_only_parts_say_so_on_the_cpu(capsys):
    ch.nvidia_smi()
    assert "[GPU only]" in capsys.readouterr().out


@no_cuda
def test_pin_memory_without_a_gpu_warns_and_does_not_pin(train_set):
    if ch.accelerator_present():
        pytest.skip("an accelerator is present")
    with expect_warning(UserWarning, "pin_memory"):
        batch = ch.pinned_batch(train_set)
    assert not batch.is_pinned()


@cuda_only
def test_gpu_measurements_run():
    results = ch.copy_benchmark(torch.device("cuda"), megabytes=8, repeats=2)
    assert {"pageable", "pinned"} <= set(results)
    ch.async_demo(torch.device("cuda"), n=512)


def test_old_spellings_warn_and_are_cuda_only():
    with expect_warning(FutureWarning, "deprecated"):
        old = torch.cuda.amp.autocast()
    with expect_warning(FutureWarning, "deprecated"):
        torch.cuda.amp.GradScaler()
    if not torch.cuda.is_available():
        with old:
            assert nn.Linear(4, 4)(torch.randn(2, 4)).dtype == torch.float32


def test_autocast_dtypes_on_cpu_bf16():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    rows = dict(ch.autocast_dtypes(model, torch.randn(4, 8), torch.tensor([0, 1, 2, 0]), nn.CrossEntropyLoss(),
                                   "cpu", torch.bfloat16))
    assert rows["layer 0 (Linear) output"] == torch.bfloat16
    assert rows["layer 2 (Linear) output"] == torch.bfloat16
    assert rows["loss (computed inside autocast)"] == torch.float32
    assert rows["weights (parameters)"] == rows["gradients (.grad)"] == torch.float32
    assert "bfloat16" in ch.show_rows(list(rows.items()))


def test_float_formats_and_round_trip():
    assert "torch.bfloat16" in ch.float_formats() and "65504" not in ch.float_formats()  # printed as 6.55e+04
    text = ch.round_trip(values=(1e-8, 70000.0)).splitlines()
    assert "float16: 0 " in text[0] and "bfloat16: 1.00" in text[0]
    assert "float16: inf" in text[1]


def test_amp_settings_follow_the_device():
    cpu = ch.amp_settings("cpu")
    assert [s[1] for s in cpu] == [None, torch.bfloat16] and not any(s[2] for s in cpu)
    assert ch.amp_settings("meta") == [("float32 (no autocast)", None, False)]


def test_amp_speed_and_compare_small():
    timings = ch.amp_speed("cpu", batch=8, width=16, repeats=2)
    assert [t.label for t in timings] == ["float32 (no autocast)", "autocast bfloat16"]
    text = ch.compare(timings)
    assert "than float32 (no autocast) on this machine" in text
    assert ("faster" in text) or ("slower" in text)


def test_scaler_demo_skips_the_overflowing_step(capsys):
    ch.scaler_demo("cpu")
    out = capsys.readouterr().out
    assert "scale 65536 -> 65536" in out and "scale 65536 -> 32768" in out
    assert "NOT updated (step skipped)" in out


def test_compile_measurement_is_off_unless_asked(capsys):
    assert ch.compile_experiment("cpu", run=False) == {}
    assert "[skipped]" in capsys.readouterr().out


def test_compile_needs_a_compiler_on_the_cpu(monkeypatch, capsys):
    monkeypatch.setattr(ch, "cxx_compiler", lambda: None)
    assert ch.compile_experiment("cpu", run=True) == {}
    assert "C++ compiler" in capsys.readouterr().out


# ---------------------------------------------------------------- amp_train_step written differently
def set_to_none_and_model_zero_grad(model, x, y, optimizer, criterion, scaler, device_type, dtype):
    model.zero_grad(set_to_none=True)
    with torch.autocast(device_type, dtype):
        out = model(x)
        loss = criterion(out, y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return float(loss)


def unscale_and_clip(model, x, y, optimizer, criterion, scaler, device_type, dtype):
    optimizer.zero_grad()
    with torch.amp.autocast(device_type=device_type, dtype=dtype):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e6)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach().item()


@pytest.mark.parametrize("candidate", [set_to_none_and_model_zero_grad, unscale_and_clip])
def test_amp_right_answers_pass(candidate):
    result = check(ch.amp_train_step, candidate)
    assert result.status == CORRECT, result.text()


def test_amp_error_inside_the_learners_code_is_reported():
    def typo(model, x, y, optimizer, criterion, scaler, device_type, dtype):
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.itme()

    result = check(ch.amp_train_step, typo)
    assert result.status == INCORRECT and "AttributeError" in result.text()


def test_amp_stub_is_not_attempted():
    def amp_train_step(model, x, y, optimizer, criterion, scaler, device_type, dtype):
        raise NotImplementedError

    assert check(ch.amp_train_step, amp_train_step).status == NOT_ATTEMPTED


# ---------------------------------------------------------------- time_it written differently
def ns_clock_tensor_median(fn, device, repeats=5):
    def wait():
        if device.type == "cuda":
            torch.cuda.synchronize()
    fn()
    wait()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        wait()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return torch.tensor(times, dtype=torch.float64).median().item()


def is_available_guard(fn, device, repeats=5):
    import statistics
    for _ in range(2):                 # two warm-up calls are fine too
        fn()
    out = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize(device)
        start = time.time()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize(device)
        out.append(1000 * (time.time() - start))
    return float(statistics.median(out))


FROM_IMPORT = """
from time import perf_counter

def time_it(fn, device, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        start = perf_counter()
        fn()
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        times.append((perf_counter() - start) * 1000)
    return sorted(times)[len(times) // 2]
"""


def from_import_perf_counter():
    namespace = {"torch": torch}
    exec(FROM_IMPORT, namespace)
    return namespace["time_it"]


@pytest.mark.parametrize("candidate", [ns_clock_tensor_median, is_available_guard, from_import_perf_counter()],
                         ids=["perf_counter_ns+tensor median", "is_available guard, 2 warm-ups", "from time import"])
def test_time_it_right_answers_pass(candidate):
    result = check(ch.time_it, candidate)
    assert result.status == CORRECT, result.text()


def test_simulated_gpu_is_asynchronous_until_synchronized():
    gpu = ch.SimulatedGPU([10.0], host_ms=0.5, first_ms=100.0)
    gpu.work()
    assert gpu.seconds() == pytest.approx(1000.0005)
    gpu.synchronize()
    assert gpu.seconds() == pytest.approx(1000.1005)
    assert gpu.call_ms(0) == pytest.approx(100.5) and gpu.call_ms(1) == pytest.approx(10.5)
    cpu = ch.SimulatedGPU([10.0], cuda=False)
    with pytest.raises(AssertionError):
        cpu.synchronize()


def test_check_restores_the_clocks_and_cuda():
    before = (time.perf_counter, time.time, torch.cuda.synchronize, torch.cuda.is_available)

    def crashes(fn, device, repeats=5):
        fn()
        raise ValueError("boom")

    result = check(ch.time_it, crashes)
    assert result.status == INCORRECT and "ValueError" in result.text()
    assert (time.perf_counter, time.time, torch.cuda.synchronize, torch.cuda.is_available) == before


def test_measure_time_fn_would_pass_the_checker():
    """The course's own timer follows the rules the exercise teaches."""
    def course_timer(fn, device, repeats=5):
        return measure.time_fn(fn, device, repeats=repeats, warmup=1).median

    assert check(ch.time_it, course_timer).status == CORRECT
