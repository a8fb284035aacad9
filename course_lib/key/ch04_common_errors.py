"""Answer key for chapter 04 (teacher's copy only)."""

import torch

from course_lib.checks.checkpoints import Loading, Positions, Strip
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def add_positions(x):
    return x + torch.arange(x.shape[-1], device=x.device, dtype=x.dtype)


def strip_module_prefix(state_dict):
    stripped = {}
    for key, value in state_dict.items():
        while key.startswith(("module.", "_orig_mod.")):
            key = key.split(".", 1)[1]
        stripped[key] = value
    return stripped


def load_for_inference(path, model, device):
    state = torch.load(path, map_location=device)
    state = {(k[len("module.") :] if k.startswith("module.") else k): v for k, v in state.items()}
    model.load_state_dict(state)
    return model.to(device).eval()


def _positions_on_cpu(x):
    return x + torch.arange(x.shape[-1])


def _positions_copied_over(x):
    return x + torch.arange(x.shape[-1], dtype=x.dtype).to(x.device)


def _positions_wrong_dim(x):
    return x + torch.arange(x.shape[0], device=x.device).unsqueeze(-1)


def _replace_everywhere(state_dict):
    return {k.replace("module.", ""): v for k, v in state_dict.items()}


def _strip_module_only(state_dict):
    return {
        (k[len("module.") :] if k.startswith("module.") else k): v for k, v in state_dict.items()
    }


def _strip_one_prefix_only(state_dict):
    return {
        (k.split(".", 1)[1] if k.startswith(("module.", "_orig_mod.")) else k): v
        for k, v in state_dict.items()
    }


def _cut_every_key(state_dict):
    return {k[7:]: v for k, v in state_dict.items()}


def _strip_in_place(state_dict):
    for k in list(state_dict):
        if k.startswith("module."):
            state_dict[k[7:]] = state_dict.pop(k)
    return state_dict


def _load_without_map_location(path, model, device):
    state = torch.load(path)
    state = {(k[7:] if k.startswith("module.") else k): v for k, v in state.items()}
    model.load_state_dict(state)
    return model.to(device).eval()


def _load_without_stripping(path, model, device):
    model.load_state_dict(torch.load(path, map_location=device))
    return model.to(device).eval()


def _load_but_stay_in_train_mode(path, model, device):
    state = torch.load(path, map_location=device)
    model.load_state_dict({(k[7:] if k.startswith("module.") else k): v for k, v in state.items()})
    return model.to(device)


KEY = {
    "add_positions": AnswerKey(
        solution=add_positions,
        hidden_tests=[
            Test("broadcasts over a 3-D batch", Positions((2, 3, 4), "cpu")),
            Test("3-D input on another device", Positions((2, 3, 4), "meta")),
        ],
        wrong_answers=[
            WrongAnswer("arange on the CPU", _positions_on_cpu, "device=x.device"),
            WrongAnswer(
                "arange on the CPU, then .to(x.device)",
                _positions_copied_over,
                "made on another device and then copied",
            ),
            WrongAnswer(
                "positions along the wrong dimension", _positions_wrong_dim, "LAST dimension"
            ),
        ],
    ),
    "strip_module_prefix": AnswerKey(
        solution=strip_module_prefix,
        hidden_tests=[
            Test(
                "a compiled DDP model loses both prefixes",
                Strip(
                    ["_orig_mod.module.fc.weight", "module._orig_mod.head.bias"],
                    ["fc.weight", "head.bias"],
                ),
            ),
            Test(
                "DDP keys of a nested model",
                Strip(
                    ["module.encoder.0.weight", "module.head.bias"],
                    ["encoder.0.weight", "head.bias"],
                ),
            ),
        ],
        wrong_answers=[
            WrongAnswer("strips one prefix only", _strip_one_prefix_only, "however many there are"),
            WrongAnswer(
                "str.replace everywhere", _replace_everywhere, "`submodule.weight` is a real name"
            ),
            WrongAnswer(
                "strips module. but not _orig_mod.",
                _strip_module_only,
                "still start with a wrapper prefix",
            ),
            WrongAnswer("cuts 7 characters from every key", _cut_every_key, "Wrong keys"),
            WrongAnswer("edits the caller's dict", _strip_in_place, "changed the state_dict"),
        ],
    ),
    "load_for_inference": AnswerKey(
        solution=load_for_inference,
        hidden_tests=[
            Test(
                "DataParallel checkpoint from a missing GPU",
                Loading(wrapped=True, on_missing_gpu=True),
            )
        ],
        wrong_answers=[
            WrongAnswer("no map_location", _load_without_map_location, "map_location"),
            WrongAnswer("keeps the 'module.' prefix", _load_without_stripping, "module."),
            WrongAnswer("forgets model.eval()", _load_but_stay_in_train_mode, "eval"),
        ],
    ),
    "what_is_wrong": AnswerKey(answer=["a", "b", "d"]),
    "dp_checkpoint": AnswerKey(answer="b"),
    "state_dict_device": AnswerKey(answer="c"),
    "input_type": AnswerKey(answer="d"),
    "which_tensor": AnswerKey(answer="a"),
}
