"""The shared data and training helpers (chapters 03+): the real digits file, loaders, the reference
loops, fit with its progress bar, and the plots."""

import hashlib
import math

import pytest
import torch
from torch import nn

from course_lib import ch03_training_template as ch3
from course_lib import data, seed_everything, training
from course_lib.exercises import CORRECT


# ---------------------------------------------------------------- the data file
def test_digits_file_is_the_recorded_one_and_small():
    blob = data.DIGITS_FILE.read_bytes()
    assert hashlib.sha256(blob).hexdigest() == data.DIGITS_SHA256, "digits.csv.gz changed"
    assert len(blob) < 1_000_000


def test_digits_file_documents_its_source_and_license():
    readme = (data.DIGITS_FILE.parent / "README.md").read_text()
    assert "CC BY 4.0" in readme and "Alpaydin" in readme and data.DIGITS_SHA256 in readme


def test_load_digits_shapes_ranges_and_classes():
    images, labels = data.load_digits()
    assert images.shape == (1797, data.N_FEATURES) and images.dtype == torch.float32
    assert labels.shape == (1797,) and labels.dtype == torch.int64
    assert images.min() == 0 and images.max() == 1
    counts = torch.bincount(labels, minlength=data.N_CLASSES)
    assert len(counts) == data.N_CLASSES and counts.min() > 150, counts


def test_load_digits_returns_fresh_tensors():
    images, labels = data.load_digits()
    labels[0] = 99
    assert data.load_digits()[1][0] != 99


# ---------------------------------------------------------------- Dataset and split
def test_digits_split_sizes_and_repeatability():
    train, test = data.digits_split(test_fraction=0.2, seed=0)
    assert (len(train), len(test)) == (1438, 359)
    again, _ = data.digits_split(test_fraction=0.2, seed=0)
    other, _ = data.digits_split(test_fraction=0.2, seed=1)
    assert torch.equal(train.images, again.images)
    assert not torch.equal(train.images, other.images)


def test_digits_split_keeps_every_sample_once():
    train, test = data.digits_split()
    images, _ = data.load_digits()
    both = torch.cat([train.images, test.images])
    assert torch.equal(both.sum(0), images.sum(0)) and len(both) == len(images)


def test_digits_split_rejects_bad_fractions():
    with pytest.raises(ValueError):
        data.digits_split(test_fraction=1.5)


def test_dataset_len_and_getitem():
    ds = data.DigitsDataset(torch.zeros(3, 64), torch.tensor([1, 2, 3]))
    x, y = ds[2]
    assert len(ds) == 3 and x.shape == (64,) and int(y) == 3
    with pytest.raises(ValueError):
        data.DigitsDataset(torch.zeros(3, 64), torch.tensor([1, 2]))


# ---------------------------------------------------------------- loaders
@pytest.mark.parametrize(
    "device,pinned", [("cpu", False), ("meta", False), ("cuda", True), ("cuda:1", True)]
)
def test_pin_memory_only_for_cuda(device, pinned):
    assert data.pin_memory_for(device) is pinned


def test_make_loader_follows_the_device_and_yields_cpu_batches():
    train, _ = data.digits_split()
    loader = data.make_loader(train, torch.device("cpu"), batch_size=100)
    x, y = next(iter(loader))
    assert loader.pin_memory is False and x.device.type == "cpu" and x.shape == (100, 64)
    assert len(loader) == math.ceil(len(train) / 100)


def test_shuffled_loader_repeats_with_its_seed():
    train, _ = data.digits_split()
    first = lambda seed: next(iter(data.make_loader(train, "cpu", 32, shuffle=True, seed=seed)))[1]
    assert torch.equal(first(3), first(3)) and not torch.equal(first(3), first(4))


def test_show_digits_returns_a_figure():
    train, _ = data.digits_split()
    fig = data.show_digits(train, n=5, title="t")
    (ax,) = fig.axes  # one axes: the digits side by side in one image, a label above each
    assert [t.get_text() for t in ax.texts] == [str(int(train[i][1])) for i in range(5)]
    (image,) = ax.images
    strip = torch.as_tensor(image.get_array())
    assert strip.shape == (8, 5 * 9 - 1)
    assert torch.equal(strip[:, 9:17], train[1][0].reshape(8, 8))


# ---------------------------------------------------------------- model and helpers
def test_digits_mlp_shape_and_dropout():
    model = training.digits_mlp(hidden=16)
    assert model(torch.zeros(7, 64)).shape == (7, 10)
    assert any(isinstance(m, nn.Dropout) for m in model.modules())


def test_mean_is_weighted_by_counts():
    mean = training.Mean()
    assert math.isnan(mean.value)
    mean.add(1.0, 3)
    mean.add(3.0, 1)
    assert mean.value == pytest.approx(1.5)


def test_grad_norm_of_known_gradients():
    layer = nn.Linear(2, 1, bias=False)
    assert training.grad_norm(layer) == 0.0
    layer.weight.grad = torch.tensor([[3.0, 4.0]])
    assert training.grad_norm(layer) == pytest.approx(5.0)


# ---------------------------------------------------------------- the reference loops
def test_reference_loops_satisfy_chapter_03s_checks():
    """The shared loops are held to the same contract as the learner's functions."""
    for exercise, fn in (
        (ch3.train_one_epoch, training.train_epoch),
        (ch3.evaluate, training.evaluate),
    ):
        result = exercise.check(fn, include_hidden=True, record=False)
        assert result.status == CORRECT, result.text()


def test_train_epoch_moves_the_data_to_the_models_device():
    """On meta the step runs (so every tensor was moved); only reading the loss value refuses."""
    model = training.digits_mlp().to("meta")
    loader = data.make_loader(
        data.DigitsDataset(torch.rand(8, 64), torch.zeros(8, dtype=torch.long)), "meta", 4
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match="meta"):
        training.train_epoch(model, loader, torch.device("meta"), optimizer, nn.CrossEntropyLoss())
    assert next(model.parameters()).grad is not None, "backward did not run"


def test_one_training_step_serves_the_epoch_loop_and_the_ddp_worker(monkeypatch):
    """The step is written once (training.train_step): the epoch loop calls it, and so does its one
    wrapper, `training.stepper`, which chapter 05, the DDP worker and the FSDP run use."""
    from course_lib import ch05_speedups, ch06_out_of_memory, ddp_worker

    calls = []
    monkeypatch.setattr(
        training, "train_step", lambda *args, **kwargs: calls.append(args[2]) or torch.tensor(1.0)
    )
    layer = nn.Linear(2, 1)
    batches = [(torch.ones(1, 2), torch.zeros(1, 1))] * 3
    assert training.train_epoch(layer, batches, "cpu", None, nn.MSELoss()) == 1.0
    training.stepper(layer, None)(torch.ones(1, 2), torch.zeros(1, dtype=torch.long))
    assert len(calls) == 4 and calls[-1] is nn.functional.cross_entropy
    for module in (ch05_speedups, ch06_out_of_memory, ddp_worker):  # no second copy
        assert not {"train_step", "warm_step"} & set(vars(module)), module.__name__


def test_train_step_clears_steps_and_returns_the_loss():
    layer = nn.Linear(2, 1, bias=False)
    nn.init.ones_(layer.weight)
    layer.weight.grad = torch.full((1, 2), 100.0)  # stale: must be cleared before backward
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    x, y = torch.ones(1, 2), torch.zeros(1, 1)
    loss = training.train_step(layer, optimizer, nn.MSELoss(), x, y)
    assert not loss.requires_grad  # detached: no graph kept alive (chapter 06)
    assert loss.item() == pytest.approx(4.0)  # (1 + 1 - 0) ** 2
    assert torch.allclose(layer.weight, torch.full((1, 2), 1 - 0.1 * 4.0))  # gradient 2 * 2 * x = 4


def test_without_zero_grad_the_gradients_add_up():
    layer = nn.Linear(2, 1)
    batches = [(torch.ones(1, 2), torch.zeros(1, 1))] * 2
    grads = []
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.0)
    training.train_epoch(
        layer,
        batches,
        "cpu",
        optimizer,
        nn.MSELoss(),
        zero_grad=False,
        on_batch=lambda loss, model: grads.append(model.weight.grad.clone()),
    )
    assert torch.allclose(grads[1], 2 * grads[0])


@pytest.fixture(scope="module")
def digits_run():
    seed_everything(0)
    train, test = data.digits_split()
    model = training.digits_mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    history = training.fit(
        model,
        data.make_loader(train, "cpu", 64, shuffle=True),
        data.make_loader(test, "cpu", 256),
        "cpu",
        optimizer,
        nn.CrossEntropyLoss(),
        epochs=3,
        progress=False,
    )
    return model, history


def test_fit_learns_the_digits(digits_run):
    _, history = digits_run
    assert history.epochs == 3
    assert history.train_loss[-1] < history.train_loss[0]
    assert history.test_accuracy[-1] > 0.5, history.summary()
    assert "3 epochs" in history.summary()


def test_evaluate_returns_floats_and_leaves_no_graph(digits_run):
    model, _ = digits_run
    _, test = data.digits_split()
    loss, accuracy = training.evaluate(
        model, data.make_loader(test, "cpu", 100), "cpu", nn.CrossEntropyLoss()
    )
    assert type(loss) is float and type(accuracy) is float and 0 <= accuracy <= 1
    assert not model.training


def test_fit_uses_the_functions_it_is_given():
    calls = []

    def my_train(model, loader, device, optimizer, criterion):
        calls.append(("train", len(loader), len(loader.dataset)))
        return 1.0

    def my_eval(model, loader, device, criterion):
        calls.append(("eval",))
        return 0.5, 0.25

    train, test = data.digits_split()
    history = training.fit(
        nn.Linear(64, 10),
        data.make_loader(train, "cpu", 500),
        data.make_loader(test, "cpu"),
        "cpu",
        None,
        None,
        epochs=2,
        train_fn=my_train,
        eval_fn=my_eval,
        progress=False,
    )
    assert calls == [("train", 3, 1438), ("eval",)] * 2
    assert history.test_accuracy == [0.25, 0.25]


def test_ticking_loader_advances_the_bar_per_batch():
    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    bar = Bar()
    loader = data.make_loader(
        data.DigitsDataset(torch.zeros(10, 64), torch.zeros(10, dtype=torch.long)), "cpu", 4
    )
    ticking = training.TickingLoader(loader, bar)
    assert sum(1 for _ in ticking) == 3 and bar.n == 3
    assert len(ticking) == 3 and ticking.batch_size == 4


def test_plot_history_has_loss_and_accuracy(digits_run):
    _, history = digits_run
    fig = training.plot_history(history, title="t")
    assert [ax.get_title() for ax in fig.axes] == ["loss", "test accuracy"]


def test_manual_seed_is_torchs_and_skips_absent_accelerators(monkeypatch):
    """seed.manual_seed gives torch.manual_seed's stream; it calls torch.manual_seed (which also
    seeds CUDA) exactly where an accelerator is there, and never queues a seed elsewhere."""
    from course_lib import seed

    torch.manual_seed(3)
    expected = torch.randn(4)
    calls = []
    real = torch.manual_seed
    monkeypatch.setattr(torch, "manual_seed", lambda s: calls.append(s) or real(s))
    for present in (False, True):
        monkeypatch.setattr(torch.accelerator, "is_available", lambda present=present: present)
        generator = seed.manual_seed(3)
        assert generator is torch.random.default_generator
        assert torch.equal(torch.randn(4), expected)
    assert calls == [3], "torch.manual_seed only where an accelerator is available"
