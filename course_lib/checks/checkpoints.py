"""Chapter 04's checks: add_positions, strip_module_prefix and load_for_inference, and the
checkpoint fixtures they share with the chapter (a checkpoint from a GPU this machine lacks).
"""

import tempfile
import zipfile
from pathlib import Path

import torch
from torch import nn

from ..exercises.spec import Fail
from ..exercises.wire import TensorValue, roundtrip
from .base import Check, attempt, check, expected, is_error, same_values, type_name
from .rig import DeviceLog, made_elsewhere


def missing_gpu() -> str:
    """A CUDA device name this machine does not have:
    cuda:0 on a CPU-only one, cuda:N with N GPUs."""
    return f"cuda:{torch.cuda.device_count() if torch.cuda.is_available() else 0}"


def save_for_missing_gpu(state_dict: dict, path, location: str = "") -> Path:
    """Save `state_dict` as if it had been saved on the
    GPU `location` (default: one this machine lacks).

    torch.save records each storage's device as a string inside the file's data.pkl; we
    save on the CPU and rewrite that string, which is all that differs (chapter 04).
    """
    location = location or missing_gpu()
    path = Path(path)
    tmp = path.with_suffix(".cpu-tmp")
    torch.save({k: v.detach().cpu() for k, v in state_dict.items()}, tmp)
    old = b"X\x03\x00\x00\x00cpu"
    new = b"X" + len(location).to_bytes(4, "little") + location.encode()
    with zipfile.ZipFile(tmp) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("/data.pkl"):
                assert old in data, "unexpected checkpoint layout"
                data = data.replace(old, new)
            dst.writestr(info, data)
    tmp.unlink()
    return path


def wrapped_state_dict(model: nn.Module) -> dict:
    """The state_dict a DataParallel/DDP-wrapped model saves: every key starts with 'module.'."""
    return {f"module.{k}": v for k, v in model.state_dict().items()}


class TinyNet(nn.Module):
    """A small classifier with dropout (so eval mode
    matters) for the checkpoint demos (chapter 04)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.body(x))


# ---------------------------------------------------------------- add_positions
@check
class Positions(Check):
    """add_positions on a `shape` tensor of zeros on `device`: the result, by value, and whether
    the positions were made on `device` (not on the CPU, then copied), as make_batch's check."""

    shape: tuple
    device: str

    def run(self, candidate):
        x = torch.zeros(self.shape, device=self.device)
        with DeviceLog() as log:
            got, error = attempt(lambda: candidate(x), candidate)
        return {"got": got, "error": error, "ops": log.ops[:200]}

    def judge(self, seen, ref):
        shape, device, got = tuple(self.shape), self.device, seen["got"]
        if seen["error"] is not None:
            error = seen["error"]
            if not is_error(error, "RuntimeError"):
                raise Fail(f"Your code raised {error['text']}")
            raise Fail(
                f"On a {device} input your function failed: {error['message'].splitlines()[0]}",
                hint="torch.arange makes its tensor on the CPU unless you say device=x.device.",
            )
        if not isinstance(got, TensorValue) or got.shape != shape:
            raise Fail(
                "The result must have the input's shape.",
                expected=shape,
                got=got.shape if isinstance(got, TensorValue) else type_name(got),
                hint="Positions run along the LAST dimension: x.shape[-1].",
            )
        if got.device != str(torch.device(device)):
            raise Fail(
                "The result is not on the input's device.",
                expected=str(torch.device(device)),
                got=got.device,
            )
        detour = made_elsewhere(seen.get("ops", ()), torch.device(device))
        if detour:
            raise Fail(
                "The positions were made on another device and then copied to x's device.",
                expected=f"one operation that creates it on {device}",
                got=f"{detour[0]} made it on the CPU first",
                hint=(
                    "Make the positions where x lives: `torch.arange(..., device=x.device)` "
                    "creates them there, with no CPU copy and no transfer."
                ),
            )
        if device == "cpu":
            want = torch.arange(shape[-1], dtype=torch.float32).expand(shape)
            if got.values.dtype != want.dtype or not torch.equal(got.values, want):
                raise Fail(
                    "The values are wrong for an input of zeros.",
                    expected=want.tolist(),
                    got=got.values.tolist(),
                    hint="Add 0, 1, 2, ... along the last dimension.",
                )


# ---------------------------------------------------------------- strip_module_prefix
WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel/DDP, torch.compile


def strip_hint(want, got) -> str:
    """The hint that fits what the learner's keys show (first fitting row wins)."""
    rows = (
        (
            any("submodule." in w and w not in got for w in want),
            (
                "Only a prefix at the START of a key is a wrapper's: `submodule.weight` is a real "
                "name."
            ),
        ),
        (
            any(k.startswith(WRAPPER_PREFIXES) for k in got),
            (
                "Some keys still start with a wrapper prefix: remove every leading `module.` and "
                "`_orig_mod.`, however many there are."
            ),
        ),
        (
            True,
            "Cut a prefix only from keys that start with it, and keep the rest of the key whole.",
        ),
    )
    return next(hint for fits, hint in rows if fits)


@check
class Strip(Check):
    """strip_module_prefix: the keys `keys` must come back as `want` (the judge's), holding the very
    tensors they were given, and the caller's dict untouched. Identity is seen with `is`."""

    keys: list
    want: list = expected()

    def run(self, candidate):
        values = [torch.full((1,), float(i)) for i in range(len(self.keys))]
        state = dict(zip(self.keys, values))
        got = candidate(state)
        origin = lambda v: next((i for i, t in enumerate(values) if v is t), None)
        return {
            "after_keys": list(state),
            "after_same": [state.get(k) is v for k, v in zip(self.keys, values)],
            "is_dict": isinstance(got, dict),
            "type": type(got).__name__,
            "keys": list(got) if isinstance(got, dict) else None,
            "origins": [origin(v) for v in got.values()] if isinstance(got, dict) else None,
        }

    def judge(self, seen, ref):
        keys, want = list(self.keys), list(self.want)
        if seen["after_keys"] != keys or not all(seen["after_same"]):
            raise Fail(
                "Your function changed the state_dict it was given.",
                hint="Build and return a new dict; the caller may still need the original.",
            )
        if seen["is_dict"] is not True:
            raise Fail("Return a dict.", expected="dict", got=seen["type"])
        got = list(seen["keys"])
        if got != want:
            raise Fail(
                f"Wrong keys for {keys}.", expected=want, got=got, hint=strip_hint(want, got)
            )
        if list(seen["origins"]) != list(range(len(keys))):
            raise Fail("The values must be the same tensors, under the new keys.")


# ---------------------------------------------------------------- load_for_inference
def trained_tiny_net() -> TinyNet:
    torch.manual_seed(0)
    return TinyNet()


@check
class Loading(Check):
    """load_for_inference on a checkpoint, maybe wrapped, maybe from a missing GPU: the model that
    came back, by value (its weights, its mode, its devices), against the checkpoint the judge
    knows."""

    wrapped: bool
    on_missing_gpu: bool

    def run(self, candidate):
        with torch.random.fork_rng():
            trained = trained_tiny_net()
            state = wrapped_state_dict(trained) if self.wrapped else trained.state_dict()
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "checkpoint.pt"
                if self.on_missing_gpu:
                    save_for_missing_gpu(state, path)
                else:
                    torch.save(state, path)
                fresh = TinyNet()
                got, error = attempt(
                    lambda: candidate(str(path), fresh, torch.device("cpu")), candidate
                )
        if error is not None or not isinstance(got, nn.Module):
            return {"error": error, "type": type(got).__name__}
        return {
            "error": None,
            "type": "Module",
            "state": dict(got.state_dict()),
            "training": got.training,
            "devices": sorted({str(p.device) for p in got.parameters()}),
        }

    def reference(self, solution):
        with torch.random.fork_rng():
            return roundtrip(dict(trained_tiny_net().state_dict()))

    def judge(self, seen, ref):
        error = seen["error"]
        if error is not None:
            if not is_error(error, "RuntimeError"):
                raise Fail(f"Your code raised {error['text']}")
            text = error["message"]
            hint = (
                "Pass map_location=device to torch.load."
                if "deserialize" in text
                else "The keys start with 'module.': strip it before load_state_dict."
                if "module." in text
                else ""
            )
            raise Fail(
                f"Loading failed: {text.splitlines()[0] if text else error['type']}", hint=hint
            )
        if seen["type"] != "Module":
            raise Fail("Return the model.", expected="the model you were given", got=seen["type"])
        for name, value in ref.items():
            got = seen["state"].get(name)
            if (
                not isinstance(got, TensorValue)
                or got.values is None
                or not same_values(
                    TensorValue(got.dtype, got.shape, "cpu", False, got.values),
                    value,
                    atol=0,
                    rtol=0,
                )
            ):
                raise Fail(
                    f"The weights were not loaded ({name} differs from the checkpoint).",
                    hint="model.load_state_dict(state) copies the checkpoint into the model.",
                )
        if seen["training"] is not False:
            raise Fail(
                "The model is still in training mode: dropout would scramble predictions.",
                hint="Call model.eval() before inference.",
            )
        if seen["devices"] != ["cpu"]:
            raise Fail("The model is not on the requested device.", hint="model.to(device)")
