"""Answer key for chapter 02 (teacher's copy only)."""

import torch

from course_lib.checks.batches import Moves, Untouched, Where, randn
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
    return {
        "model": model_devices,
        "tensors": tensor_devices,
        "same_device": len(set(model_devices) | set(tensor_devices)) == 1,
    }


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


def _move_calls_to_on_the_batch(batch, device):
    return batch.to(device)


def _move_mutates_the_batch(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, tuple):
        return tuple(_move_mutates_the_batch(v, device) for v in batch)
    if isinstance(batch, (list, dict)):
        for k in batch if isinstance(batch, dict) else range(len(batch)):
            batch[k] = _move_mutates_the_batch(batch[k], device)
    return batch


# ---------------------------------------------------------------- known-wrong where_is answers
def _where_first_parameter_only(model, *tensors):
    model_devices = [str(next(model.parameters()).device)]
    tensor_devices = [str(t.device) for t in tensors]
    return {
        "model": model_devices,
        "tensors": tensor_devices,
        "same_device": len(set(model_devices + tensor_devices)) == 1,
    }


def _where_device_objects(model, *tensors):
    model_devices = sorted({p.device for p in model.parameters()}, key=str)
    tensor_devices = [t.device for t in tensors]
    return {
        "model": model_devices,
        "tensors": tensor_devices,
        "same_device": len(set(model_devices) | set(tensor_devices)) == 1,
    }


def _where_same_ignores_tensors(model, *tensors):
    model_devices = sorted({str(t.device) for t in [*model.parameters(), *model.buffers()]})
    return {
        "model": model_devices,
        "tensors": [str(t.device) for t in tensors],
        "same_device": len(model_devices) == 1,
    }


def _where_ignores_buffers(model, *tensors):
    model_devices = sorted({str(p.device) for p in model.parameters()})
    tensor_devices = [str(t.device) for t in tensors]
    return {
        "model": model_devices,
        "tensors": tensor_devices,
        "same_device": len(set(model_devices) | set(tensor_devices)) == 1,
    }


KEY = {
    "move_to": AnswerKey(
        solution=move_to,
        hidden_tests=[
            Test("empty containers keep their types", Moves(([], (), {}, [()]))),
            Test(
                "device given as a string; lists of tuples of dicts",
                Moves([({"a": torch.ones(1), "flag": True}, 3), ("s", None, 0.5)], "meta"),
            ),
            Test(
                "a dict batch given is not modified",
                Untouched({"x": randn(2), "pair": [torch.zeros(1), 5]}),
            ),
        ],
        wrong_answers=[
            WrongAnswer(
                "batch.to(device) on the whole batch",
                _move_calls_to_on_the_batch,
                "A tuple is a container, not a tensor: call move_to on each of its items",
            ),
            WrongAnswer(
                "moves only the top level", _move_top_level_only, "move_to never looked inside it"
            ),
            WrongAnswer(
                "turns tuples into lists",
                _move_tuples_become_lists,
                "was a tuple; your move_to returned a list",
            ),
            WrongAnswer(
                "calls .to on non-tensors",
                _move_crashes_on_non_tensors,
                "move_to called `.to()` on an int",
            ),
            WrongAnswer("drops non-tensors", _move_drops_non_tensors, "keys were dropped"),
            WrongAnswer(
                "x.to(device) without using the result",
                _move_result_thrown_away,
                "(the very tensor it was given)",
            ),
            WrongAnswer(
                "moves in place, changing the caller's batch",
                _move_mutates_the_batch,
                "Your move_to changed the batch it was given and returned that same object",
            ),
        ],
    ),
    "where_is": AnswerKey(
        solution=where_is,
        hidden_tests=[
            Test(
                "everything on the other device",
                Where(
                    [("Linear", (4, 2), "meta")],
                    [torch.empty(8, 4, device="meta"), torch.empty(8, device="meta")],
                    {"model": ["meta"], "tensors": ["meta", "meta"], "same_device": True},
                ),
            ),
            Test(
                "no tensors given",
                Where(
                    [("Linear", (2, 2), "cpu")],
                    [],
                    {"model": ["cpu"], "tensors": [], "same_device": True},
                ),
            ),
            Test(
                "a model with no parameters",
                Where(
                    [("ReLU", (), "cpu")],
                    [torch.empty(2, device="meta")],
                    {"model": [], "tensors": ["meta"], "same_device": True},
                ),
            ),
        ],
        wrong_answers=[
            WrongAnswer(
                "asks only the first parameter",
                _where_first_parameter_only,
                "but the model's parameter `2.weight` is on meta",
            ),
            WrongAnswer(
                "returns torch.device objects", _where_device_objects, "not torch.device objects"
            ),
            WrongAnswer(
                "same_device ignores the tensors",
                _where_same_ignores_tensors,
                "'same_device' came back True, with the model and tensors on ['cpu', 'meta']",
            ),
            WrongAnswer(
                "ignores buffers",
                _where_ignores_buffers,
                "but the model's buffer `1.running_var` is on cpu",
            ),
        ],
    ),
    "failing_placements": AnswerKey(answer=["b", "d", "e"]),
    "forgot_assignment": AnswerKey(answer="a"),
}
