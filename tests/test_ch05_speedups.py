"""Chapter 05: right answers written differently pass, the simulated GPU behaves, the checks leave
the clocks alone, and the demos do what the notebook says (no timing is asserted)."""

import math
import pickle
import time
import warnings

import pytest
import torch
from torch import nn

from course_lib import ch05_speedups as ch
from course_lib import data, measure, notebooks, training
from course_lib.checks import timing
from course_lib.errors import expect_warning
from course_lib.exercises import CORRECT, INCORRECT, NOT_ATTEMPTED
from support import pin_memory_warns

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
    assert (
        x1.shape == (64,)
        and x1.dtype == torch.float32
        and int(y1) == int(train_set[3][1]) == int(y2)
    )
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
    loader = torch.utils.data.DataLoader(
        small, batch_size=4, num_workers=1, multiprocessing_context="spawn"
    )
    assert [tuple(x.shape) for x, _ in loader] == [(4, 64), (4, 64)]


# ---------------------------------------------------------------- demos
def test_starving_experiment_times_every_step(train_set):
    results = ch.starving_experiment(train_set, "cpu", batch_size=256)
    n_batches = math.ceil(len(train_set) / 256)
    assert [r.label for r in results] == ["digits in memory", "augmented on the fly"]
    assert all(len(r.wait_ms) == len(r.compute_ms) == n_batches for r in results)
    assert all(t >= 0 for r in results for t in r.wait_ms + r.compute_ms)


class Counted(torch.utils.data.TensorDataset):
    """A TensorDataset that lists the indices it was asked for (each instance its own list)."""

    def __init__(self, *tensors):
        super().__init__(*tensors)
        self.reads = []

    def __getitem__(self, index):
        self.reads.append(index)
        return super().__getitem__(index)


def test_starving_experiment_reads_only_the_first_items():
    counted = Counted(torch.randn(40, 64), torch.randint(0, 10, (40,)))
    results = ch.starving_experiment(counted, "cpu", batch_size=8, items=24)
    assert [len(r.wait_ms) for r in results] == [3, 3]
    assert set(counted.reads) == set(range(24))  # plain, then augmented
    assert len(counted.reads) == 2 * (24 + 8)  # each run after an untimed warm-up batch


def test_workers_experiment_has_each_setting_and_epoch(train_set):
    small = torch.utils.data.Subset(ch.AugmentedDigits(train_set), range(128))
    results = ch.workers_experiment(
        small, "cpu", settings=((0, False), (2, True)), epochs=2, repeats=2
    )
    assert list(results) == ["num_workers=0", "num_workers=2, persistent"]
    # one list per epoch, one time per run
    assert all(len(v) == 2 and all(len(e) == 2 and min(e) > 0 for e in v) for v in results.values())
    assert len(ch.plot_epochs(results).axes[0].patches) == 4


def test_workers_experiment_reads_only_the_first_items():
    counted = Counted(torch.randn(40, 64), torch.randint(0, 10, (40,)))
    results = ch.workers_experiment(
        counted, "cpu", settings=((0, False),), epochs=2, items=24, repeats=1
    )
    assert len(results["num_workers=0"]) == 2
    assert sorted(counted.reads) == sorted(list(range(24)) * 2)


def test_train_step_trains():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    before = model.weight.detach().clone()
    step = training.stepper(
        model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), "cpu"
    )
    step(torch.randn(5, 4), torch.randint(0, 3, (5,)))
    assert not torch.equal(before, model.weight)


@no_cuda
def test_gpu_only_parts_say_so_on_the_cpu(capsys):
    ch.nvidia_smi()
    assert "[GPU only]" in capsys.readouterr().out


@no_cuda
def test_pin_memory_without_a_gpu_warns_and_does_not_pin(train_set):
    """torch 2.6 does not warn there (support.PIN_MEMORY_WARNS); later releases do."""
    if ch.accelerator_present():
        pytest.skip("an accelerator is present")
    if not pin_memory_warns():
        assert not ch.pinned_batch(train_set).is_pinned()
        return
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
    rows = dict(
        ch.autocast_dtypes(
            model,
            torch.randn(4, 8),
            torch.tensor([0, 1, 2, 0]),
            nn.CrossEntropyLoss(),
            "cpu",
            torch.bfloat16,
        )
    )
    assert rows["layer 0 (Linear) output"] == torch.bfloat16
    assert rows["layer 2 (Linear) output"] == torch.bfloat16
    assert rows["loss (computed inside autocast)"] == torch.float32
    assert rows["weights (parameters)"] == rows["gradients (.grad)"] == torch.float32
    assert "bfloat16" in ch.text_table(list(rows.items()))


def test_float_formats_and_round_trip():
    assert (
        "torch.bfloat16" in ch.float_formats() and "65504" not in ch.float_formats()
    )  # printed as 6.55e+04
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
    # the verdict printed is the one the two medians give, in the right direction
    ratio = timings[0].median / timings[1].median
    want = f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"
    assert f"-> {want} than float32 (no autocast) on this machine" in text, text


def test_compare_words_follow_the_medians():
    base, fast, slow = (
        measure.Timing(label, [ms]) for label, ms in (("base", 10.0), ("fast", 4.0), ("slow", 25.0))
    )
    text = ch.compare([base, fast, slow]).splitlines()
    assert text[2] == "    -> 2.50x faster than base on this machine"
    assert text[4] == "    -> 2.50x slower than base on this machine"


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


def test_compile_timings_time_the_course_step_eager_then_compiled(monkeypatch):
    """Without compiling (slow): torch.compile gives a
    marked wrapper; every call goes through train_step."""
    from course_lib import training

    compiled, seen = [], []

    def fake_compile(model, **kwargs):
        compiled.append(nn.Sequential(model))
        return compiled[-1]

    def counting_step(model, *args, **kwargs):
        seen.append(model)
        return real_step(model, *args, **kwargs)

    real_step = training.train_step
    monkeypatch.setattr(torch, "compile", fake_compile)
    monkeypatch.setattr(training, "train_step", counting_step)
    timings = ch.compile_timings("cpu", batch=8, width=16, repeats=3)
    assert list(timings) == ["eager", "torch.compile"]
    assert all(
        len(t.ms) == 3 and len(t.warmup_ms) == 1 and t.label == label
        for label, t in timings.items()
    )
    assert len(compiled) == 1 and seen[4:] == compiled * 4 and compiled[0] not in seen[:4]


# --------------------------------------------------------------- amp_train_step written differently
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


def two_warmups_time_time(fn, device, repeats=5):
    import statistics

    for _ in range(2):  # two warm-up calls are fine too
        fn()
    out = []
    for _ in range(repeats):
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)
        start = time.time()
        fn()
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)
        out.append(1000 * (time.time() - start))
    return float(statistics.median(out))


def is_available_guard(fn, device, repeats=5):
    """Synchronizes whenever the machine has CUDA:
    on a GPU machine timing the CPU, that is wrong."""
    import statistics

    fn()
    out = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize(device)
        out.append(1000 * (time.perf_counter() - start))
    return statistics.median(out)


def always_synchronizes(fn, device, repeats=5):
    import statistics

    fn()
    out = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append(1000 * (time.perf_counter() - start))
    return statistics.median(out)


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


@pytest.mark.parametrize(
    "candidate",
    [ns_clock_tensor_median, two_warmups_time_time, from_import_perf_counter()],
    ids=["perf_counter_ns+tensor median", "2 warm-ups, time.time", "from time import"],
)
def test_time_it_right_answers_pass(candidate):
    result = check(ch.time_it, candidate)
    assert result.status == CORRECT, result.text()


def test_simulated_gpu_is_asynchronous_until_synchronized():
    gpu = timing.SimulatedGPU([10.0], host_ms=0.5, first_ms=100.0)
    gpu.work()
    assert gpu.seconds() == pytest.approx(1000.0005)
    gpu.synchronize()
    assert gpu.seconds() == pytest.approx(1000.1005)
    assert gpu.call_ms(0) == pytest.approx(100.5) and gpu.call_ms(1) == pytest.approx(10.5)
    cpu = timing.SimulatedGPU([10.0], cuda=False)
    with pytest.raises(AssertionError):
        cpu.synchronize()
    gpu_machine = timing.SimulatedGPU([10.0], cuda=False, machine_has_cuda=True)
    gpu_machine.synchronize()  # torch.cuda.synchronize() on a GPU machine: no error
    with pytest.raises(ValueError):
        gpu_machine.synchronize(torch.device("cpu"))  # what torch says for a CPU device
    assert len(cpu.cuda_calls) == 1 and len(gpu_machine.cuda_calls) == 2


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


# --------------------------------------------------- time_it: the CPU lesson is visible (issue 9.3)
def visible(exercise, candidate):
    """What the learner's own check says in the student bundle: visible tests only."""
    return exercise.check(candidate, include_hidden=False, record=False)


@pytest.mark.parametrize(
    "candidate,machine",
    [(always_synchronizes, "no GPU"), (is_available_guard, "GPU machine")],
    ids=["always synchronizes", "is_available guard"],
)
def test_cuda_synchronize_on_a_cpu_device_fails_a_visible_test(candidate, machine):
    result = visible(ch.time_it, candidate)
    assert result.status == INCORRECT, result.text()
    failed = [t for t in result.tests if not t.passed]
    assert all(not t.hidden for t in failed)
    assert any("While timing a CPU device" in t.message and machine in t.message for t in failed), (
        result.text()
    )


def test_cpu_tests_record_every_cuda_call(monkeypatch):
    """The rig counts CUDA calls even when the learner's code swallows the error they raise."""

    def swallows(fn, device, repeats=5):
        import statistics

        fn()
        out = []
        for _ in range(repeats):
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
            start = time.perf_counter()
            fn()
            out.append(1000 * (time.perf_counter() - start))
        return statistics.median(out)

    result = visible(ch.time_it, swallows)
    assert result.status == INCORRECT and "While timing a CPU device" in result.text()


# ---------------------------------------------------- amp_train_step: what autocast did (issue 8.1)
def autocast_for_cuda(model, x, y, optimizer, criterion, scaler, device_type, dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda", dtype=dtype):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@pytest.fixture
def cuda_machine(monkeypatch):
    """What a CUDA build on a GPU machine answers, as far as autocast('cuda') asks: no warning, no
    refusal; torch's own autocast code runs unchanged and switches autocast on for CUDA."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    rng = {}  # torch.random.fork_rng saves and restores each GPU's random state
    monkeypatch.setattr(
        torch.cuda,
        "get_rng_state",
        lambda device="cuda": rng.get(str(device), torch.zeros(8, dtype=torch.uint8)),
    )
    monkeypatch.setattr(
        torch.cuda, "set_rng_state", lambda state, device="cuda": rng.update({str(device): state})
    )


def test_hard_coded_cuda_autocast_is_named_on_a_gpu_machine(cuda_machine):
    """On a GPU, autocast('cuda') warns nothing: the feedback must come from what autocast did."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning now would be an error: there is none
        with torch.autocast("cuda", dtype=torch.bfloat16):
            assert torch.is_autocast_enabled("cuda") and not torch.is_autocast_enabled("cpu")
    result = check(ch.amp_train_step, autocast_for_cuda)
    assert result.status == INCORRECT
    assert (
        "Your autocast was for 'cuda', but the model and the data are on 'cpu'" in result.text()
    ), result.text()


@pytest.mark.filterwarnings("error")
def test_hard_coded_cuda_autocast_is_named_whatever_the_warning_filters():
    result = check(ch.amp_train_step, autocast_for_cuda)
    assert "Your autocast was for 'cuda'" in result.text(), result.text()


def test_forward_outside_autocast_is_told_apart():
    def loss_only(model, x, y, optimizer, criterion, scaler, device_type, dtype):
        optimizer.zero_grad()
        logits = model(x)
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = criterion(logits, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()

    assert "not while the model ran" in check(ch.amp_train_step, loss_only).text()


# ----------------------------------------------- amp_train_step: feedback says what happened (12.1)
def plain_step(model, x, y, optimizer, criterion, scaler, device_type, dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def test_plain_backward_and_step_is_told_what_it_did():
    text = check(ch.amp_train_step, plain_step).text()
    assert (
        "the scaler never saw this step" in text and "`backward()` ran on the unscaled loss" in text
    ), text
    assert "too big" not in text, "the update was not scaled in this code: it was not too big"


def test_scaled_backward_then_optimizer_step_is_told_the_update_was_too_big():
    def scaled_then_direct(model, x, y, optimizer, criterion, scaler, device_type, dtype):
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        optimizer.step()
        return loss.item()

    assert "65536 times too big" in check(ch.amp_train_step, scaled_then_direct).text()


def solution_lines(function) -> list:
    """The reference solution's statements that are specific enough to count as giving it away."""
    import inspect

    lines = [line.split("#")[0].strip() for line in inspect.getsource(function).splitlines()[1:]]
    return [
        line
        for line in lines
        if len(line) >= 15 and not line.startswith(("def ", "import ", "if "))
    ]


@pytest.mark.parametrize("name", ["amp_train_step", "time_it"])
def test_feedback_never_prints_the_solution_line(name):
    exercise = getattr(ch, name)
    key = exercise.key()
    lines = solution_lines(key.solution)
    assert len(lines) >= 4
    for wrong in key.wrong_answers + [WrongAnswerLike(plain_step)] * (name == "amp_train_step"):
        text = check(exercise, wrong.function).text()
        leaked = [line for line in lines if line in text]
        assert not leaked, (wrong.label, leaked)


class WrongAnswerLike:
    label = "plain step"

    def __init__(self, function):
        self.function = function


# --------------------------------------------------- COURSE_DEVICE=cpu on a GPU machine (issue 8.1)
def test_course_device_cpu_on_a_gpu_machine_times_no_cpu_to_cpu_copy(
    cuda_machine, monkeypatch, capsys
):
    from course_lib import device as dev

    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    timed = []
    monkeypatch.setattr(measure, "time_fn", lambda *a, **k: timed.append(k.get("label")))
    monkeypatch.setattr(
        torch.Tensor, "pin_memory", lambda self, *a, **k: timed.append("pinned") or self
    )
    assert dev.pick_device() == torch.device("cpu")
    assert dev.gpu_only("copy time", figure="ch05.pinned_copy") is False  # the notebook's guard
    assert ch.copy_benchmark(dev.pick_device(), megabytes=1) == {}  # and the helper itself
    ch.async_demo(dev.pick_device(), n=8)
    assert timed == []
    out = capsys.readouterr().out
    assert "the course device is cpu, not a CUDA GPU; nothing was timed" in out


def test_notebook_gpu_cells_follow_the_course_device():
    cells = notebooks.code("05")
    guarded = [c for c in cells if c.lstrip().startswith("if gpu_only(")]
    assert len(guarded) == 4  # sync timing, pinned copy, D2H readback, sync debug mode
    for cell in guarded:
        assert 'figure="ch05.' in cell and "device = pick_device()" in cell
    assert not any('"cuda"' in c or "'cuda'" in c for c in cells if "gpu_only" in c)


# ------------------------------------------------------------- predict first, then see (issue 12.3)
def test_results_after_a_quiz_wait_for_an_answer(monkeypatch, tmp_path, capsys):
    from course_lib.exercises import progress

    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(tmp_path / "progress.json"))
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    ch.reveal(shown.append, "demo", after=ch.scale_after_overflow)
    assert shown == [] and not ch.scale_after_overflow.answered()
    ch.scale_after_overflow.check(1000)  # a wrong answer is an answer: the learner committed
    assert progress.load()[ch.scale_after_overflow.id]["status"] == INCORRECT
    ch.reveal(shown.append, "demo", after=ch.scale_after_overflow)
    assert shown == ["demo"]


def test_notebook_reveals_the_scaler_step_only_after_its_quiz():
    cells = notebooks.code("05")
    demo = [i for i, c in enumerate(cells) if "scaler_demo" in c]
    check_cell = [i for i, c in enumerate(cells) if "ch.scale_after_overflow.check(" in c]
    assert len(demo) == 1 and check_cell and demo[0] > check_cell[0]
    assert "ch.reveal(" in cells[demo[0]] and "after=ch.scale_after_overflow" in cells[demo[0]]
    assert any("ch.reveal(" in c and "after=ch.compile_control_flow" in c for c in cells)


# ---------------------------------------------- the lines shown in the notebook are the code (9.15)
def markdown_snippets():
    import re

    text = notebooks.markdown("05")
    return [block for t in text for block in re.findall(r"```python\n(.*?)```", t, re.S)]


@pytest.mark.parametrize(
    "where,function",
    [
        ("x, y = next(batches)", measure.loop_breakdown),
        ("for x, y in loader:", ch.time_epochs),
        ("scaled = scaler.scale(loss)", ch.scaler_demo),
        ("functools.partial(precision_step", ch.amp_speed),
        ("for _ in range(depth):", ch.LoopNet.forward),
    ],
)
def test_code_shown_in_the_notebook_is_the_code_that_runs(where, function):
    import inspect

    source = {line.split("#")[0].strip() for line in inspect.getsource(function).splitlines()}
    blocks = [b for b in markdown_snippets() if where in b]
    assert len(blocks) == 1, where
    for line in blocks[0].splitlines():
        code = line.split("#")[0].strip()
        assert not code or code in source, (
            f"shown in the notebook but not in {function.__qualname__}: {code}"
        )


# ---------------------------------------------------------------- what the new demos show
def test_precision_pitfalls_are_computed_live():
    rows = list(
        ch.precision_rows().values()
    )  # float32, float16, bfloat16 per row, in the table's order
    assert (
        rows[0][1] == 0
        and rows[1][1] == float("inf")
        and rows[2][2] == 1
        and rows[3] == [257, 257, 256]
    )
    assert rows[4][2] < 9  # a running total kept in bfloat16 stalls
    assert rows[5][1] == rows[5][2] == 10  # torch.sum accumulates in float32 inside
    table = ch.precision_pitfalls().splitlines()
    assert len(table) == len(rows) + 1 and all(
        f"(row {i})" in table[i] for i in range(1, len(table))
    )


def test_shuffled_batches_run_on_into_the_next_epoch():
    dataset = torch.utils.data.TensorDataset(torch.arange(10.0), torch.arange(10))
    batches = ch.shuffled_batches(dataset, steps=5, batch_size=4)
    assert [len(y) for _, y in batches] == [4, 4, 2, 4, 4]
    first, second = (torch.cat([y for _, y in part]) for part in (batches[:3], batches[3:]))
    assert sorted(first.tolist()) == list(range(10))  # one whole epoch, then a new shuffle
    assert batches[3][1].tolist() != first[:4].tolist()
    again = ch.shuffled_batches(dataset, steps=5, batch_size=4)
    assert all(torch.equal(a[1], b[1]) for a, b in zip(batches, again))  # the same every time


def test_amp_vs_fp32_trains_both_from_the_same_start(train_set):
    runs = ch.amp_vs_fp32(train_set, train_set, "cpu", steps=12)
    assert [r.label for r in runs] == ["float32 (no autocast)", "autocast bfloat16"]
    fp32, bf16 = runs
    assert len(fp32.losses) == len(bf16.losses) == 12
    assert fp32.losses[0] == pytest.approx(bf16.losses[0], rel=0.02)  # same start, same first batch
    assert fp32.losses != bf16.losses  # bfloat16 really ran
    text = ch.show_precision_runs(runs, every=4)
    assert "largest loss difference from float32" in text and "test accuracy after 12 steps" in text


def test_scaled_runs_report_the_scale_and_skipped_steps(train_set):
    batches = ch.shuffled_batches(train_set, steps=3)
    run = ch.train_in_precision(batches, batches, "cpu", "bf16 + scaler", torch.bfloat16, True)
    assert len(run.scales) == 3 and run.skipped == 0
    assert "scale now 65536" in ch.show_precision_runs(
        [ch.PrecisionRun("fp32", [1.0] * 3), run], every=1
    )


def test_control_flow_on_ints_is_unrolled_and_guarded_not_broken():
    text = ch.explain_forwards()
    assert "LoopNet, depth=3 (a for loop on an int):\n    1 graph(s), 0 graph break(s)" in text
    assert "PrintingNet (print inside forward):\n    2 graph(s), 1 graph break(s)" in text
    assert "ValueBranchNet (if on a tensor's value):\n    2 graph(s), 1 graph break(s)" in text
    lines = ch.recompiles_per_depth(depths=(2, 2, 3, 2)).splitlines()
    assert lines[0].startswith("depth=2: compiled a new graph") and "reused" in lines[1]
    assert lines[2].startswith("depth=3: compiled a new graph") and "(graphs so far: 2)" in lines[2]
    assert "reused" in lines[3]
    ops = [int(line.split("graph of ")[1].split()[0]) for line in lines if "graph of" in line]
    assert ops[1] > ops[0]  # unrolled: one more pass, more ops


def test_compile_call_cost_says_nothing_was_compiled():
    text = ch.compile_call_cost(nn.Linear(3, 3), torch.randn(2, 3))
    assert "wraps your model: True" in text and "same parameters: True" in text
    assert "compiled anything" in text or "compiled nothing" in text
    # counted, not asserted: no graph after the calls, one after the first forward, reused after
    assert "graphs compiled by the two calls: 0" in text
    assert "graphs compiled so far: 1 (the first: 1 ops)" in text
    assert text.splitlines()[4].endswith("graphs compiled so far: 1")
    again = ch.compile_call_cost(nn.Linear(3, 3), torch.randn(2, 3))  # imports done: a wrap only
    assert again.splitlines()[-1].startswith("both calls only wrapped the model")


def test_payback_note_from_the_numbers():
    eager = measure.Timing("eager", [10.0], [12.0])
    assert "pays back after about 1000 steps" in ch.payback_note(
        eager, measure.Timing("c", [8.0], [2012.0])
    )
    assert "never pays back" in ch.payback_note(eager, measure.Timing("c", [11.0], [2012.0]))


def test_workers_notes_compare_the_measured_epochs():
    text = ch.workers_notes(
        {
            "num_workers=0": [100, 90],
            "num_workers=2": [300, 200],
            "num_workers=2, persistent": [310, 80],
        }
    )
    assert "200 ms vs 90 ms: 2.22x slower" in text
    assert "80 ms vs 200 ms: 2.50x faster" in text
    assert "80 ms vs 310 ms: 3.88x faster" in text


def test_two_digits_read_three_times_have_two_labels(train_set):
    subset = ch.reads_of_two_digits(ch.AugmentedDigits(train_set))
    labels = [int(subset[i][1]) for i in range(6)]
    assert (
        labels[:3] == [labels[0]] * 3 and labels[3:] == [labels[3]] * 3 and labels[0] != labels[3]
    )


def test_gpu_reference_names_the_recorded_figure(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(ch, "gpu_only", lambda what, figure=None: seen.append(figure) or False)
    ch.gpu_reference("AMP on a GPU", "ch05.amp")
    ch.nvidia_smi()
    assert seen == ["ch05.amp", "ch05.nvidia_smi"]


def test_compare_explains_a_first_call_faster_than_the_median():
    calm = measure.Timing("eager", [10.0, 10.5, 9.5], [30.0])
    odd = measure.Timing("bf16", [10.0, 10.5, 9.5], [8.0])
    text = ch.compare([calm, odd])
    assert text.count("faster than the median") == 1 and "shared CPU" in text
    assert text.index("bf16: median") < text.index("faster than the median")
