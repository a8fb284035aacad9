"""Answer key for chapter 02 (teacher's copy only)."""
import torch
from torch import nn

from course_lib.ch02_same_device_rule import (_all_on_meta, _buffer_left_behind, _check_batch_untouched,
                                              _check_move, _check_where)
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def move_to(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: move_to(value, device) for key, value in batch.items()}
    if isinstance(batch, list):
        return [move_to(item, device) for item in batch]
    if isinstance(batch, tuple):
        return tuple(move_to(item, device) for item in batch)
    return batch


def where_is(model, *tensors):
    model_devices = sorted({str(t.device) for t in [*model.parameters(), *model.buffers()]})
    tensor_devices = [str(t.device) for t in tensors]
    return {"model": model_devices, "tensors": tensor_devices,
            "same_device": len(set(model_devices) | set(tensor_devices)) == 1}


# ---------------------------------------------------------------- known-wrong move_to answers
def _move_top_level_only(batch, device):
    one = lambda v: v.to(device) if isinstance(v, torch.Tensor) else v
    if isinstance(batch, dict):
        return {k: one(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(one(v) for v in batch)
    return one(batch)


def _move_tuples_become_lists(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _move_tuples_become_lists(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_move_tuples_become_lists(v, device) for v in batch]
    return batch


def _move_crashes_on_non_tensors(batch, device):
    if isinstance(batch, dict):
        return {k: _move_crashes_on_non_tensors(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_move_crashes_on_non_tensors(v, device) for v in batch)
    return batch.to(device)


def _move_drops_non_tensors(batch, device):
    keep = lambda v: isinstance(v, (torch.Tensor, list, tuple, dict))
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _move_drops_non_tensors(v, device) for k, v in batch.items() if keep(v)}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_move_drops_non_tensors(v, device) for v in batch if keep(v))
    return batch


def _move_result_thrown_away(batch, device):
    if isinstance(batch, torch.Tensor):
        batch.to(device)  # the moved copy is discarded
        return batch
    if isinstance(batch, dict):
        return {k: _move_result_thrown_away(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_move_result_thrown_away(v, device) for v in batch)
    return batch


def _move_mutates_the_batch(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, tuple):
        return tuple(_move_mutates_the_batch(v, device) for v in batch)
    if isinstance(batch, (list, dict)):
        for k in (batch if isinstance(batch, dict) else range(len(batch))):
            batch[k] = _move_mutates_the_batch(batch[k], device)
    return batch


# ---------------------------------------------------------------- known-wrong where_is answers
def _where_first_parameter_only(model, *tensors):
    model_devices = [str(next(model.parameters()).device)]
    tensor_devices = [str(t.device) for t in tensors]
    return {"model": model_devices, "tensors": tensor_devices,
            "same_device": len(set(model_devices + tensor_devices)) == 1}


def _where_device_objects(model, *tensors):
    model_devices = sorted({p.device for p in model.parameters()}, key=str)
    tensor_devices = [t.device for t in tensors]
    return {"model": model_devices, "tensors": tensor_devices,
            "same_device": len(set(model_devices) | set(tensor_devices)) == 1}


def _where_same_ignores_tensors(model, *tensors):
    model_devices = sorted({str(t.device) for t in [*model.parameters(), *model.buffers()]})
    return {"model": model_devices, "tensors": [str(t.device) for t in tensors],
            "same_device": len(model_devices) == 1}


def _where_ignores_buffers(model, *tensors):
    model_devices = sorted({str(p.device) for p in model.parameters()})
    tensor_devices = [str(t.device) for t in tensors]
    return {"model": model_devices, "tensors": tensor_devices,
            "same_device": len(set(model_devices) | set(tensor_devices)) == 1}


KEY = {
    "move_to": AnswerKey(
        solution=move_to,
        hidden_tests=[
            Test("empty containers keep their types", _check_move(lambda: ([], (), {}, [()]))),
            Test("device given as a string; lists of tuples of dicts", _check_move(
                lambda: [({"a": torch.ones(1), "flag": True}, 3), ("s", None, 0.5)], "meta")),
            Test("the batch given is not modified", _check_batch_untouched(
                lambda: {"x": torch.randn(2), "pair": [torch.zeros(1), 5]})),
        ],
        wrong_answers=[
            WrongAnswer("moves only the top level", _move_top_level_only, "never visited"),
            WrongAnswer("turns tuples into lists", _move_tuples_become_lists, "tuple"),
            WrongAnswer("calls .to on non-tensors", _move_crashes_on_non_tensors, "crashed on a non-tensor"),
            WrongAnswer("drops non-tensors", _move_drops_non_tensors, "dropped"),
            WrongAnswer("x.to(device) without using the result", _move_result_thrown_away, "returns a NEW tensor"),
            WrongAnswer("moves in place, changing the caller's batch", _move_mutates_the_batch, ""),
        ],
    ),
    "where_is": AnswerKey(
        solution=where_is,
        hidden_tests=[
            Test("a buffer left on the CPU", _check_where(
                _buffer_left_behind, {"model": ["cpu", "meta"], "tensors": ["meta"], "same_device": False})),
            Test("everything on the other device", _check_where(
                _all_on_meta, {"model": ["meta"], "tensors": ["meta", "meta"], "same_device": True})),
            Test("no tensors given", _check_where(
                lambda: (nn.Linear(2, 2), ()), {"model": ["cpu"], "tensors": [], "same_device": True})),
        ],
        wrong_answers=[
            WrongAnswer("asks only the first parameter", _where_first_parameter_only, "split across two devices"),
            WrongAnswer("returns torch.device objects", _where_device_objects, "not torch.device objects"),
            WrongAnswer("same_device ignores the tensors", _where_same_ignores_tensors, "same_device"),
            WrongAnswer("ignores buffers", _where_ignores_buffers, ""),
        ],
    ),
    "failing_placements": AnswerKey(answer=["b", "d", "e"]),
    "forgot_assignment": AnswerKey(answer="b"),
}
