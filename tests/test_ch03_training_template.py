"""Chapter 03: right answers written differently pass, each known mistake gets one precise message,
and the chapter's demos (zero_grad experiment, DynamicNet) behave as the notebook says."""

import pytest
import torch

from course_lib import ch03_training_template as ch
from course_lib import notebooks, training
from course_lib.checks.rig import make_rig
from course_lib.errors import expect_error
from course_lib.exercises import CORRECT, INCORRECT
from course_lib.i18n import tr


def check(exercise, candidate):
    return exercise.check(candidate, include_hidden=True, record=False)


# -------------------------------------------------------------- train_one_epoch written differently
def set_to_none(model, loader, device, optimizer, criterion):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * x.size(0)
        count += x.size(0)
    return total / count


def model_zero_grad_non_blocking(model, loader, device, optimizer, criterion):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        model.zero_grad()
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(y)
        count += len(y)
    return total / count


def enumerate_and_dataset_length(model, loader, device, optimizer, criterion):
    model.train()
    running = 0.0
    for _step, (inputs, labels) in enumerate(loader):
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
        running += loss.item() * inputs.shape[0]
    return running / len(loader.dataset)


def while_loop_zero_grad_after_step(model, loader, device, optimizer, criterion):
    model.train()
    batches = iter(loader)
    losses, sizes = [], []
    while True:
        try:
            x, y = next(batches)
        except StopIteration:
            break
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        sizes.append(len(x))
    return sum(v * n for v, n in zip(losses, sizes)) / sum(sizes)


def tensor_total_then_item(model, loader, device, optimizer, criterion):
    model.train()
    total = torch.zeros((), device=device)
    count = 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach() * x.size(0)
        count += x.size(0)
    return (total / count).item()


CORRECT_TRAIN = [
    set_to_none,
    model_zero_grad_non_blocking,
    enumerate_and_dataset_length,
    while_loop_zero_grad_after_step,
    tensor_total_then_item,
]


@pytest.mark.parametrize("answer", CORRECT_TRAIN, ids=lambda f: f.__name__)
def test_train_one_epoch_written_differently_is_correct(answer):
    result = check(ch.train_one_epoch, answer)
    assert result.status == CORRECT, result.text()


# ---------------------------------------------------------------- evaluate written differently
def inference_mode_and_float(model, loader, device, criterion):
    model.eval()
    loss_sum, hits, n = 0.0, 0, 0
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            logits = model(x)
            loss_sum += float(criterion(logits, y)) * len(y)
            hits += int((logits.argmax(-1) == y).sum())
            n += len(y)
    return loss_sum / n, hits / n


@torch.no_grad()
def decorated_no_grad_dataset_length(model, loader, device, criterion):
    model.eval()
    loss_sum, hits = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss_sum += criterion(logits, y).item() * x.size(0)
        hits += (logits.argmax(dim=1) == y).sum().item()
    return loss_sum / len(loader.dataset), hits / len(loader.dataset)


def per_batch_accuracy_weighted(model, loader, device, criterion):
    model.eval()
    losses, accuracies, sizes = [], [], []
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            losses.append(criterion(logits, y).item())
            accuracies.append((logits.argmax(dim=1) == y).float().mean().item())
            sizes.append(len(y))
    n = sum(sizes)
    return (
        sum(v * s for v, s in zip(losses, sizes)) / n,
        sum(a * s for a, s in zip(accuracies, sizes)) / n,
    )


CORRECT_EVAL = [
    inference_mode_and_float,
    decorated_no_grad_dataset_length,
    per_batch_accuracy_weighted,
]


@pytest.mark.parametrize("answer", CORRECT_EVAL, ids=lambda f: f.__name__)
def test_evaluate_written_differently_is_correct(answer):
    result = check(ch.evaluate, answer)
    assert result.status == CORRECT, result.text()


# ---------------------------------------------------------------- each mistake: one precise message
WRONG = [(e, w) for e in (ch.train_one_epoch, ch.evaluate) for w in e.key().wrong_answers]


@pytest.mark.parametrize("exercise,wrong", WRONG, ids=[f"{e.name}-{w.label}" for e, w in WRONG])
def test_each_mistake_fails_exactly_one_visible_test(exercise, wrong):
    result = check(exercise, wrong.function)
    visible_failures = [t.name for t in result.tests if not t.passed and not t.hidden]
    assert result.status == INCORRECT
    assert len(visible_failures) == 1, (
        f"{wrong.label}: several tests fail, the feedback is muddled: {visible_failures}"
    )


def test_both_exercises_ship_many_wrong_answers():
    assert len(ch.train_one_epoch.key().wrong_answers) >= 11
    assert len(ch.evaluate.key().wrong_answers) >= 3


def test_an_error_before_the_first_forward_is_reported_not_hidden():
    def crashes(model, loader, device, optimizer, criterion):
        raise ValueError("oops in my loop")

    result = check(ch.train_one_epoch, crashes)
    assert result.status == INCORRECT and "ValueError: oops in my loop" in result.text()


def test_returning_nothing_is_incorrect():
    result = check(ch.train_one_epoch, lambda model, loader, device, optimizer, criterion: None)
    assert result.status == INCORRECT and "float" in result.text()


def test_checks_leave_the_learners_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    check(ch.train_one_epoch, set_to_none)
    assert torch.equal(torch.rand(3), expected), "a check changed the learner's torch random state"


def test_checks_restore_the_learners_thread_setting():
    before = torch.get_num_threads()
    check(ch.evaluate, inference_mode_and_float)
    assert torch.get_num_threads() == before


def test_rig_probes_record_what_happened():
    rig = make_rig(n=70, batch_size=32)
    rig.train(set_to_none)
    assert [c.n for c in rig.trace.losses] == [32, 32, 6]
    assert all(f.training and f.grad_enabled for f in rig.trace.forwards)
    assert [s["backwards"] for s in rig.trace.steps] == [1, 2, 3]
    assert all(b["clean"] for b in rig.trace.backwards)


def test_yours_or_reference_picks_the_learners_function_only_when_correct(capsys):
    assert (
        ch.yours_or_reference(set_to_none, ch.train_one_epoch, training.train_epoch) is set_to_none
    )

    def train_one_epoch(model, loader, device, optimizer, criterion):
        raise NotImplementedError  # the notebook's stub

    assert (
        ch.yours_or_reference(train_one_epoch, ch.train_one_epoch, training.train_epoch)
        is training.train_epoch
    )
    assert "not attempted" in capsys.readouterr().out


# ---------------------------------------------------------------- the zero_grad experiment
@pytest.fixture(scope="module")
def zero_grad_runs():
    from course_lib import data

    train_set, test_set = data.digits_split()
    return ch.zero_grad_experiment(train_set, test_set, torch.device("cpu"), epochs=2)


def test_zero_grad_experiment_records_both_runs_step_by_step(zero_grad_runs):
    clean, dirty = zero_grad_runs["with zero_grad"], zero_grad_runs["without zero_grad"]
    assert len(clean.loss) == len(dirty.loss) == len(clean.grad_norm) > 10
    assert clean.loss[0] == pytest.approx(dirty.loss[0]), "both runs must start from the same model"
    assert 0 <= clean.test_accuracy <= 1 and 0 <= dirty.test_accuracy <= 1


def test_without_zero_grad_the_gradient_grows(zero_grad_runs):
    clean, dirty = zero_grad_runs["with zero_grad"], zero_grad_runs["without zero_grad"]
    assert max(dirty.grad_norm) > 3 * max(clean.grad_norm)


def test_zero_grad_plot_and_description(zero_grad_runs):
    fig = ch.plot_zero_grad(zero_grad_runs)
    assert len(fig.axes) == 3
    fig.canvas.draw()
    loss_with, loss_without, norms = fig.axes
    assert loss_with.get_ylim() == loss_without.get_ylim(), "both loss panels on one scale"
    labels = [t.get_text() for t in norms.get_yticklabels() if t.get_text()]
    assert labels and not any("$" in t for t in labels), "log-axis ticks as plain numbers"
    line = ch.describe_run("without zero_grad", zero_grad_runs["without zero_grad"])
    assert "gradient norm" in line and "test accuracy" in line


# ---------------------------------------------------------------- DynamicNet
def test_corrected_dynamic_net_runs_at_any_depth():
    net = ch.DynamicNet(10, 20, 5)
    for depth in (0, 1, 4):
        assert net(torch.randn(3, 10), depth=depth).shape == (3, 5)


def test_the_graph_is_what_ran(capsys):
    net = ch.DynamicNet(10, 20, 5)
    ch.graph_follows_python(net, torch.randn(4, 10), depths=(0, 2))
    out = capsys.readouterr().out
    assert "depth=0" in out and "None (the layer never ran)" in out and "depth=2" in out


def test_seed_dynamic_net_fails_on_its_second_linear2():
    with expect_error(RuntimeError, "shapes cannot be multiplied", "4x5"):
        ch.SeedDynamicNet(10, 20, 5)(torch.randn(4, 10))


@pytest.mark.parametrize("width", [9, 11])
def test_seed_dynamic_net_branch_cannot_change(width):
    with expect_error(RuntimeError, "shapes cannot be multiplied", f"4x{width}"):
        ch.SeedDynamicNet(10, 20, 5)(torch.randn(4, width))


def test_the_error_quiz_really_raises_a_runtime_error():
    assert ch.seed_dynamicnet.observed_error() == "RuntimeError"
    assert ch.seed_dynamicnet.right_answer() == "c"


# ---------------------------------------------------------------- requires_grad, checked by hand
def test_trainable_report_shows_a_frozen_layer(capsys):
    net = ch.DynamicNet(10, 20, 5)
    net.linear1.requires_grad_(False)
    ch.trainable_report(net)
    out = capsys.readouterr().out
    total = sum(p.numel() for p in net.parameters())
    assert "linear1.weight   (20, 10)" in out and out.count("requires_grad=False") == 2
    assert f"trainable: {total - 220} of {total} numbers" in out


def test_a_frozen_layer_gets_no_gradient():
    net = ch.DynamicNet(10, 20, 5)
    net.linear1.requires_grad_(False)
    net(torch.randn(4, 10), depth=1).sum().backward()
    assert net.linear1.weight.grad is None and net.middle.weight.grad is not None


def test_a_tensor_made_in_forward_is_not_a_parameter(capsys):
    layer = ch.ScaleMadeInForward()
    assert layer(torch.randn(2, 4)).shape == (2, 4)
    assert [name for name, _ in layer.named_parameters()] == ["linear.weight", "linear.bias"]
    assert "scale.requires_grad = False" in capsys.readouterr().out


def test_module_to_keeps_its_parameter_objects_by_default():
    """Section 3's claim, on a conversion this machine can make in place (a dtype change)."""
    layer = torch.nn.Linear(2, 2)
    weight = layer.weight
    layer.to(torch.float64)
    assert layer.weight is weight and weight.dtype == torch.float64


# ---------------------------------------------------------------- what the notebook says
def markdown_cells():
    return notebooks.markdown("03")


def test_asynchronous_copies_are_tied_to_non_blocking():
    said = [text for text in markdown_cells() if "asynchronous" in text]
    assert said and all("non_blocking=True" in text for text in said)


def test_the_articles_are_named_by_title_not_as_seeds():
    text = "\n".join(markdown_cells())
    assert "seed 00" not in text.lower() and "the seed's" not in text.lower()
    assert "*PyTorch GPU 训练实战*" in text and "*PyTorch GPU训练翻车实录*" in text


def test_linear2_twice_is_one_linear_map_not_the_same_as_once(capsys):
    """Article B: "linear2 twice without ReLU equals
    linear2 once". The notebook shows what is true."""
    cell = next(c for c in notebooks.code("03") if "one_map" in c)
    exec(cell, {"torch": torch, "nn": torch.nn, "tr": tr})
    out = capsys.readouterr().out
    assert "applied once?      False" in out and "one linear layer?  True" in out


def test_yours_or_reference_reuses_the_last_check_of_the_same_function(monkeypatch):
    """After check(f), yours_or_reference(f) runs no test again; a new function is checked."""
    ch.train_one_epoch.check(set_to_none, record=False)
    runs = []
    real = ch.train_one_epoch.judge
    monkeypatch.setattr(ch.train_one_epoch, "judge", lambda *a: runs.append(1) or real(*a))
    assert ch.yours_or_reference(set_to_none, ch.train_one_epoch, training.train_epoch)
    assert runs == [], "the same function object: the last verdict stands"

    def train_one_epoch(model, loader, device, optimizer, criterion):
        raise NotImplementedError  # redefined in its cell: a new object, checked anew

    assert ch.yours_or_reference(train_one_epoch, ch.train_one_epoch, training.train_epoch) is (
        training.train_epoch
    )
    assert runs, "a new function is checked"
