"""Chapter 02 helpers: the real step behind the widget, the widget itself, the diagnostics.

The second device is `second_device()`: meta here, the GPU on a GPU machine, so the same
tests check the taught error texts on both.
"""

import inspect
import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib import ch02_same_device_rule as ch
from course_lib import notebooks
from course_lib.checks import batches
from course_lib.device import devices_of, second_device
from course_lib.errors import expect_error
from course_lib.exercises import INCORRECT, Fail

OTHER = str(second_device())
PLACEMENTS = ch.all_placements(OTHER)
label = lambda p: "-".join("cpu" if p[k] == "cpu" else "other" for k in ch.PARTS)


def test_there_are_sixteen_distinct_placements():
    assert len(PLACEMENTS) == 16
    assert len({tuple(p.values()) for p in PLACEMENTS}) == 16
    assert all(set(p) == set(ch.PARTS) and set(p.values()) <= {"cpu", OTHER} for p in PLACEMENTS)


@pytest.mark.parametrize("placement", PLACEMENTS, ids=[label(p) for p in PLACEMENTS])
def test_only_all_same_placements_run(placement):
    outcome = ch.run_step(placement)
    assert outcome.ran == ch.runs_expected(placement) == (len(set(placement.values())) == 1), (
        outcome.detail
    )
    if outcome.ran:
        assert "backward reached the model" in outcome.detail
    else:  # PyTorch's own text, with the substrings the notebook asserts on
        assert outcome.detail.startswith("RuntimeError: ")
        assert "device" in outcome.detail.lower() and "cpu" in outcome.detail.lower()


def test_a_step_on_the_cpu_reports_a_real_loss():
    outcome = ch.run_step(dict.fromkeys(ch.PARTS, "cpu"))
    assert outcome.ran and "loss = " in outcome.detail and "on cpu" in outcome.detail


def test_a_step_on_meta_says_there_is_no_number():
    assert "hold shapes, not numbers" in ch.run_step(dict.fromkeys(ch.PARTS, "meta")).detail


def test_make_step_parts_puts_each_part_where_asked():
    placement = {"model": OTHER, "inputs": "cpu", "labels": OTHER, "loss": "cpu"}
    model, x, y, loss_fn = ch.make_step_parts(placement)
    assert model.weight.device.type == torch.device(OTHER).type
    assert x.device.type == "cpu" and y.device.type == torch.device(OTHER).type
    assert loss_fn.scale.device.type == "cpu" and isinstance(loss_fn.scale, nn.Parameter)


# --- the taught errors: each forgotten part, each loss, both directions
def _linear(model_dev, x_dev):
    nn.Linear(4, 3).to(model_dev)(torch.randn(8, 4, device=x_dev))


def _cross_entropy(logits_dev, labels_dev):
    F.cross_entropy(torch.randn(8, 3, device=logits_dev), torch.randint(0, 3, (8,)).to(labels_dev))


def _mse(pred_dev, target_dev):
    nn.MSELoss()(torch.randn(8, 3, device=pred_dev), torch.randn(8, 3).to(target_dev))


def _scaled_loss(loss_dev, logits_dev):
    ch.ScaledCrossEntropy(3).to(loss_dev)(
        torch.randn(8, 3, device=logits_dev), torch.zeros(8, dtype=torch.long, device=logits_dev)
    )


@pytest.mark.parametrize(
    "op", [_linear, _cross_entropy, _mse, _scaled_loss], ids=lambda f: f.__name__.strip("_")
)
@pytest.mark.parametrize(
    "first,second", [("cpu", OTHER), (OTHER, "cpu")], ids=["cpu-other", "other-cpu"]
)
def test_mixed_devices_raise_with_the_notebooks_substrings(op, first, second):
    with expect_error(RuntimeError, "device", "cpu"):
        op(first, second)


def test_a_standard_loss_with_class_weights_must_be_moved():
    loss = nn.CrossEntropyLoss(weight=torch.ones(3))
    logits, labels = torch.randn(8, 3, device=OTHER), torch.zeros(8, dtype=torch.long, device=OTHER)
    with expect_error(RuntimeError, "device", "cpu"):
        loss(logits, labels)
    assert loss.to(OTHER)(logits, labels).device.type != "cpu"


@pytest.mark.parametrize("as_buffer", [True, False], ids=["buffer", "plain-attribute"])
def test_buffers_travel_and_plain_attributes_do_not(as_buffer):
    loss = ch.WeightedCrossEntropy(torch.tensor([1.0, 2.0, 5.0]), as_buffer=as_buffer).to(OTHER)
    assert (loss.class_weights.device.type == "cpu") is not as_buffer
    logits, labels = torch.randn(8, 3, device=OTHER), torch.zeros(8, dtype=torch.long, device=OTHER)
    if as_buffer:
        assert loss(logits, labels).device.type != "cpu"
    else:
        with expect_error(RuntimeError, "device", "cpu"):
            loss(logits, labels)


def test_module_to_is_in_place_and_tensor_to_is_not():
    model, x = nn.Linear(2, 2), torch.randn(2)
    assert model.to(OTHER) is model and next(model.parameters()).device.type != "cpu"
    moved = x.to(OTHER)
    assert moved is not x and x.device.type == "cpu"


# --- diagnostics
def test_devices_of_sees_parameters_and_buffers():
    bn = nn.BatchNorm1d(3).to("meta")
    bn.running_var = torch.ones(3)
    assert devices_of(bn) == ["cpu", "meta"]
    assert devices_of(torch.zeros(1)) == ["cpu"]
    assert devices_of(nn.ReLU()) == []


def test_device_report_gives_a_verdict():
    model = nn.Linear(2, 2)
    ok = ch.device_report(model=model, x=torch.zeros(2))
    assert ok.splitlines() == ["model : cpu", "x     : cpu", "OK: everything is on cpu"]
    bad = ch.device_report(model=model, x=torch.zeros(2, device="meta"), act=nn.ReLU())
    assert "act   : (no tensors)" in bad and bad.endswith(
        "MISMATCH: cpu and meta are both in use; move everything to one device"
    )


# --- the widget: plain functions first, then the thin layer
@pytest.mark.parametrize(
    "predicted,ran,verdict",
    [
        (True, True, "right"),
        (False, True, "wrong"),
        (True, False, "wrong"),
        (False, False, "right"),
    ],
)
def test_prediction_verdict_and_html(predicted, ran, verdict):
    outcome = ch.StepOutcome(ran, "RuntimeError: <b>x</b>" if not ran else "loss = 1.0")
    assert ch.prediction_verdict(predicted, outcome) == (verdict == "right")
    html = ch.outcome_html(dict.fromkeys(ch.PARTS, "cpu"), predicted, outcome)
    other_verdict = "wrong" if verdict == "right" else "right"
    assert verdict in html and other_verdict not in html and ("ran" if ran else "raised") in html
    if not ran:  # PyTorch's text is shown escaped, never as markup
        assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_rooms_groups_the_parts_by_device():
    placement = {"model": "cpu", "inputs": "meta", "labels": "cpu", "loss": "meta"}
    assert ch.rooms(placement) == "warehouse (cpu): model, labels | workshop (meta): inputs, loss"
    assert (
        ch.rooms(dict.fromkeys(ch.PARTS, "cpu")) == "warehouse (cpu): model, inputs, labels, loss"
    )


def test_placements_table_runs_all_sixteen():
    html = ch.placements_table(OTHER)
    assert (
        html.count("<tr>") == 17
        and html.count("<b>ran</b>") == 2
        and html.count("<b>error</b>") == 14
    )


def test_widget_needs_a_prediction_then_runs_the_real_step():
    w = ch.warehouse_and_workshop()
    assert set(w.pickers) == set(ch.PARTS) and w.placement() == dict.fromkeys(ch.PARTS, "cpu")
    w.button.click()
    assert "prediction first" in w.result.value
    w.pickers["labels"].value = OTHER
    w.prediction.value = True
    w.button.click()
    assert (
        "wrong" in w.result.value
        and "raised" in w.result.value
        and "RuntimeError" in w.result.value
    )
    for part in ch.PARTS:
        w.pickers[part].value = OTHER
    w.button.click()
    assert "right" in w.result.value and "backward reached the model" in w.result.value


def test_widget_clears_the_old_verdict_when_a_part_or_the_prediction_changes():
    w = ch.warehouse_and_workshop()
    w.pickers["inputs"].value = OTHER
    w.prediction.value = False
    w.button.click()
    assert "✔ right" in w.result.value and "RuntimeError" in w.result.value
    for part in ch.PARTS:  # now everything in the workshop: the old error must not stay beside it
        w.pickers[part].value = OTHER
    assert "RuntimeError" not in w.result.value and "right" not in w.result.value
    assert "press the button" in w.result.value
    w.button.click()
    assert "✘ wrong" in w.result.value and "backward reached the model" in w.result.value
    w.prediction.value = True
    assert "wrong" not in w.result.value and "backward" not in w.result.value
    w.button.click()
    assert "✔ right" in w.result.value


def test_placements_are_revealed_only_when_asked():
    box = ch.placements_reveal(OTHER)
    button, table = box.children
    assert table.value == ""
    button.click()
    assert (
        table.value.count("<b>ran</b>") == 2
        and table.value.count("<b>error</b>") == 14
        and button.disabled
    )


def test_widget_renders_as_a_widget():
    bundle = ch.warehouse_and_workshop()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


# --- the exercises' checker helpers
def test_compare_moved_names_the_path():
    orig = {"a": (torch.zeros(1), [torch.zeros(1)])}
    with pytest.raises(Fail, match=r"batch\['a'\]\[1\]\[0\] came back on cpu"):
        batches.compare_moved(
            orig, {"a": (torch.zeros(1, device="meta"), [torch.zeros(1)])}, batches.META
        )


def test_tensors_in_walks_nested_batches():
    paths = [p for p, _ in batches._tensors_in(batches.nested_batch())]
    assert paths == [
        "batch['inputs'][0]",
        "batch['inputs'][1][0]",
        "batch['inputs'][1][1]",
        "batch['extra']['lengths']",
    ]


# --- what the VISIBLE tests catch (the student bundle has no key), and what the feedback says
def _visible(exercise, candidate):
    return exercise.check(candidate, include_hidden=False, record=False)


def _moves_in_place(batch, device):
    if isinstance(batch, dict):
        for k in batch:
            batch[k] = _moves_in_place(batch[k], device)
        return batch
    if isinstance(batch, list):
        batch[:] = [_moves_in_place(v, device) for v in batch]
        return batch
    return batch.to(device) if isinstance(batch, torch.Tensor) else batch


def test_a_move_to_that_moves_in_place_is_caught_without_the_key():
    result = _visible(ch.move_to, _moves_in_place)
    assert result.status == INCORRECT
    assert "changed the batch it was given and returned that same object" in result.text()
    assert "batch['labels'] is now on meta" in result.text()


def test_batch_to_device_gets_one_fitting_hint_per_failure():
    result = _visible(ch.move_to, lambda batch, device: batch.to(device))
    failed = [t for t in result.tests if not t.passed]
    assert [t.name for t in failed] == [t.name for t in ch.move_to.tests[1:]]
    hints = [t.hint for t in failed[:3]]
    assert len(set(hints)) == 3, hints  # tuple, dict, nested: each its own
    assert "A tuple is a container" in hints[0] and "A dict is a container" in hints[1]
    assert "any depth" in hints[2]
    assert not any("unchanged" in h for h in hints)  # the non-tensor hint would point the wrong way
    assert result.text().count("Hint:") == len(
        set(t.hint for t in failed)
    )  # none repeated down the list


def test_a_where_is_that_ignores_buffers_is_caught_without_the_key():
    def ignores_buffers(model, *tensors):
        devices = sorted({str(p.device) for p in model.parameters()})
        found = [str(t.device) for t in tensors]
        return {
            "model": devices,
            "tensors": found,
            "same_device": len(set(devices) | set(found)) == 1,
        }

    result = _visible(ch.where_is, ignores_buffers)
    assert result.status == INCORRECT
    assert "but the model's buffer `1.running_var` is on cpu" in result.text()
    assert "model.buffers()" in result.text()


@pytest.mark.parametrize("exercise", [ch.move_to, ch.where_is], ids=lambda e: e.name)
def test_hints_show_the_shape_of_the_code_not_the_code(exercise):
    source = inspect.getsource(exercise.key().solution).splitlines()[1:]
    lines = [line.strip() for line in source if len(line.strip()) > 12]
    for hint in exercise.hints:
        assert not any(line in hint for line in lines), (hint, lines)


# --- the optimizer and the move: the facts the notebook states
def test_module_to_keeps_parameter_objects_on_dense_devices_and_replaces_them_on_meta():
    model = nn.Linear(2, 2)
    weight = model.weight
    model.to(
        torch.float64
    )  # CPU, CUDA and MPS tensors convert in place: the same path as a move to a GPU
    assert model.weight is weight and weight.dtype == torch.float64
    assert torch._has_compatible_shallow_copy_type(
        torch.zeros(1), torch.zeros(1, dtype=torch.float64)
    )
    assert not torch._has_compatible_shallow_copy_type(
        torch.zeros(1), torch.zeros(1, device="meta")
    )
    model.to("meta")
    assert model.weight is not weight and model.weight.device.type == "meta"


@pytest.mark.parametrize("flag,same", [("overwrite", False), ("swap", True)])
def test_the_future_flags_change_what_module_to_does(flag, same):
    setter = getattr(torch.__future__, f"set_{flag}_module_params_on_conversion")
    getter = getattr(torch.__future__, f"get_{flag}_module_params_on_conversion")
    assert getter() is False
    setter(True)
    try:
        model = nn.Linear(2, 2)
        weight = model.weight
        model.to(torch.float64)
        assert (model.weight is weight) is same
    finally:
        setter(False)


def test_adam_state_follows_the_parameters_when_built_or_loaded():
    model = nn.Linear(4, 3).to(OTHER)
    optimizer = torch.optim.Adam(model.parameters())
    assert ch.adam_state_devices(optimizer) == {}
    model(torch.randn(8, 4, device=OTHER)).sum().backward()
    optimizer.step()
    assert ch.adam_state_devices(optimizer) == {
        "step": "cpu",
        "exp_avg": str(model.weight.device),
        "exp_avg_sq": str(model.weight.device),
    }
    early_model = nn.Linear(4, 3)
    early = torch.optim.Adam(early_model.parameters())
    early.load_state_dict(ch.adam_checkpoint())
    early_model.to(OTHER)
    assert ch.adam_state_devices(early)["exp_avg"] == "cpu"  # left in the warehouse


# --- the notebook is written for any machine
def test_notebook_teaching_code_names_no_device():
    cells = notebooks.code("02")
    for needle in ('"cuda', "'cuda", '"meta', "'meta", ".cuda("):
        assert not any(needle in s for s in cells), (
            f"a code cell hard-codes {needle}: use second_device()"
        )
    assert sum("expect_error(RuntimeError" in s for s in cells) >= 6
    assert json.dumps(cells).count("second_device()") >= 1


def test_notebook_reveals_the_sixteen_placements_after_the_quiz_they_answer():
    cells = notebooks.code("02")
    reveal = next(i for i, s in enumerate(cells) if "ch.placements_reveal(" in s)
    quiz_check = next(i for i, s in enumerate(cells) if "ch.failing_placements.check(" in s)
    assert quiz_check < reveal
    assert not any("placements_table(" in s for s in cells)  # never printed by Run All


def test_every_exercise_has_a_hint_cell():
    cells = notebooks.code("02")
    for name, exercise in ch.chapter.exercises.items():
        if exercise.kind == "function":
            assert any(f"ch.{name}.hint()" in s for s in cells), f"{name} has no hint cell"
