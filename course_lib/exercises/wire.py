"""Observations as plain data: one JSON line per message, parsed strictly (checks, grader).

What a test's run half sees (a returned value, a model's weights, an exception) travels to
its judge half as data that cannot carry code: JSON natives (None, bool, int, str, finite
float, list, dict with string keys) and a few tagged forms, each a JSON object with exactly
one key that starts with "$":

    {"$float": "nan"}                  non-finite floats ("nan", "inf", "-inf")
    {"$tuple": [...]}, {"$set": [...]}  tuples and sets
    {"$dict": [[key, value], ...]}      dicts whose keys are not all plain strings
    {"$bytes": "<base64>"}
    {"$tensor": {"dtype", "shape", "device", "requires_grad", "data": "<base64>" | null}}
    {"$device": "cuda:0"}, {"$dtype": "float32"}
    {"$error": {"type", "message"}}    an exception: its type's name and its text
    {"$object": "TypeName"}            anything else: only its type's name travels

`dumps` never calls code of the objects it is given beyond what reading a plain value
needs (tensor subclasses and other look-alikes become "$object"); `loads` raises nothing
but `WireError`, whatever the input (deep nesting, huge lines, bad UTF-8, lone surrogates,
wrong types). Tensors come back as `TensorValue`, exceptions as `ErrorValue`, other objects
as `ObjectValue`: values, never live objects. No pickle anywhere.
"""

import base64
import json
import math
import re
from dataclasses import dataclass

MAX_BYTES = 8 * 2**20  # one line, encoded
MAX_DEPTH = 48  # nesting of containers
MAX_ITEMS = 500_000  # values in one line, all containers together
MAX_TEXT = 200_000  # characters of one string
MAX_ELEMENTS = 2**21  # elements of one tensor
MAX_DIMS = 8
DTYPES = (
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
DEVICE = re.compile(r"^[a-z][a-z0-9_]{0,15}(:\d{1,3})?$")
TYPE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,120}$")


class WireError(ValueError):
    """A value that cannot be sent, or a line that is not a well-formed observation."""


@dataclass(frozen=True)
class TensorValue:
    """A tensor as data: dtype, shape, device,
    requires_grad, and its values on the CPU (None on meta)."""

    dtype: str
    shape: tuple
    device: str
    requires_grad: bool = False
    values: object = None  # a CPU torch.Tensor, or None (meta tensors hold no values)

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    def numel(self) -> int:
        return math.prod(self.shape)

    def tensor(self):
        """A real tensor with these values (on the CPU), or an empty meta tensor of this shape."""
        import torch

        dtype = getattr(torch, self.dtype)
        if self.values is None:
            return torch.empty(self.shape, dtype=dtype, device="meta")
        return self.values.clone()


@dataclass(frozen=True)
class ErrorValue:
    """An exception as data: its type's name and its message."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True)
class ObjectValue:
    """Something that is not plain data: only its type's name travelled."""

    type: str


class Device(ObjectValue):
    """A torch.device read with loads(build=False): checked, not built (`type` is its name)."""


class DType(ObjectValue):
    """A torch dtype read with loads(build=False): checked, not built (`type` is its name)."""


# What torch.device accepts (tests/test_grading_wire.py holds it to torch): its device types, and
# an index of at most 3 digits without a leading zero.
DEVICE_TYPES = frozenset(
    "cpu cuda hip mkldnn opengl opencl ideep vulkan ve fpga maia xla lazy mps meta hpu mtia xpu "
    "ipu privateuseone".split()
)
DEVICE_INDEX = re.compile(r"^(0|[1-9][0-9]{0,2})$")
ELEMENT_SIZES = {
    "float32": 4,
    "float64": 8,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}


# ---------------------------------------------------------------- encoding (the sender)
class _Budget:
    def __init__(self):
        self.items, self.size = 0, 0

    def spend(self, items: int = 1, size: int = 0) -> None:
        self.items += items
        self.size += size
        if self.items > MAX_ITEMS or self.size > MAX_BYTES:
            raise WireError("the value is too large to send")


def _type_name(value) -> str:
    name = getattr(type(value), "__name__", "object")
    return name if isinstance(name, str) and TYPE_NAME.match(name) else "object"


def _text(value: str) -> str:
    text = "".join((value,))  # a plain str even for a str subclass, without calling its methods
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " ..."


def _tensor(value, budget) -> dict:
    import torch

    if type(value) not in (torch.Tensor, torch.nn.Parameter) or value.layout != torch.strided:
        return {"$object": f"{_type_name(value)} (not a plain torch.Tensor)"}
    dtype = str(value.dtype).replace("torch.", "")
    shape = [int(n) for n in value.shape]
    if dtype not in DTYPES or len(shape) > MAX_DIMS or math.prod(shape) > MAX_ELEMENTS:
        return {"$object": f"Tensor ({dtype}, shape {shape}: too large or unsupported)"}
    data = None
    if value.device.type != "meta":
        flat = value.detach().to("cpu").reshape(-1).contiguous()
        raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        budget.spend(1, len(raw) * 4 // 3)
        data = base64.b64encode(raw).decode("ascii")
    return {
        "$tensor": {
            "dtype": dtype,
            "shape": shape,
            "device": str(value.device),
            "requires_grad": bool(value.requires_grad),
            "data": data,
        }
    }


def _encode(value, depth: int, budget: _Budget):
    budget.spend()
    try:
        return _encode_node(value, type(value), depth, budget)
    except WireError:
        raise
    except Exception:  # noqa: BLE001 - an object that resists being read is sent as its type's name
        return {"$object": f"{_type_name(value)} (unreadable)"}


def _encode_node(value, kind, depth, budget):
    """`kind` is type(value), the real type: an object cannot fake it (unlike __class__)."""
    if value is None or kind is bool:
        return value
    if issubclass(kind, bool):
        return bool.__bool__(value)
    if issubclass(kind, int):
        number = int.__int__(value)
        return number if abs(number) < 10**30 else {"$object": "int (too large)"}
    if issubclass(kind, float):
        number = float.__float__(value)
        return number if math.isfinite(number) else {"$float": repr(number)}
    if issubclass(kind, str):
        text = _text(value)
        budget.spend(0, len(text))
        return text
    if kind in (TensorValue, ErrorValue, ObjectValue):
        return _encode_value(value, depth, budget)
    if depth >= MAX_DEPTH:
        return {"$object": "too deeply nested"}
    if issubclass(kind, (list, tuple)):
        items = [
            _encode(v, depth + 1, budget)
            for v in (list.__iter__(value) if issubclass(kind, list) else tuple.__iter__(value))
        ]
        return items if issubclass(kind, list) else {"$tuple": items}
    if issubclass(kind, dict):
        pairs = list(dict.items(value))
        if all(type(k) is str and not k.startswith("$") for k, _ in pairs):
            return {k: _encode(v, depth + 1, budget) for k, v in pairs}
        return {
            "$dict": [
                [_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)] for k, v in pairs
            ]
        }
    if issubclass(kind, (set, frozenset)):
        items = [
            _encode(v, depth + 1, budget)
            for v in (set.__iter__(value) if issubclass(kind, set) else frozenset.__iter__(value))
        ]
        return {"$set": sorted(items, key=lambda v: json.dumps(v, sort_keys=True))}
    if issubclass(kind, (bytes, bytearray)):
        raw = bytes(value) if kind in (bytes, bytearray) else b""
        budget.spend(0, len(raw) * 4 // 3)
        return {"$bytes": base64.b64encode(raw).decode("ascii")}
    if issubclass(kind, BaseException):
        try:
            message = _text(BaseException.__str__(value))
        except Exception:  # noqa: BLE001 - an exception that cannot print itself
            message = "(the message could not be read)"
        return {"$error": {"type": _type_name(value), "message": message[:4000]}}
    return _encode_torch(value, budget)


def _encode_torch(value, budget):
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        if issubclass(type(value), torch.Tensor):
            return _tensor(value, budget)
        if type(value) is torch.device:
            return {"$device": str(value)}
        if type(value) is torch.dtype:
            return {"$dtype": str(value).replace("torch.", "")}
    return {"$object": _type_name(value)}


def _encode_value(value, depth, budget):
    if isinstance(value, ErrorValue):
        return {"$error": {"type": value.type, "message": value.message}}
    if isinstance(value, ObjectValue):
        return {"$object": value.type}
    data = None
    if value.values is not None:
        raw = (
            value.values.reshape(-1).contiguous().view(__import__("torch").uint8).numpy().tobytes()
            if value.numel()
            else b""
        )
        budget.spend(1, len(raw) * 4 // 3)
        data = base64.b64encode(raw).decode("ascii")
    return {
        "$tensor": {
            "dtype": value.dtype,
            "shape": list(value.shape),
            "device": value.device,
            "requires_grad": value.requires_grad,
            "data": data,
        }
    }


def dumps(value) -> str:
    """One line of JSON (no newline) holding `value`
    as data; raises WireError if it is too large."""
    budget = _Budget()
    try:
        text = json.dumps(
            _encode(value, 0, budget), ensure_ascii=True, allow_nan=False, separators=(",", ":")
        )
    except WireError:
        raise
    except (RecursionError, MemoryError) as err:
        raise WireError(f"the value cannot be sent: {type(err).__name__}") from None
    if len(text) > MAX_BYTES:
        raise WireError("the value is too large to send")
    return text


# ---------------------------------------------------------------- decoding (the receiver)
def _no_constants(name):
    raise WireError(f"{name} is not allowed in an observation")


def loads(data, build: bool = True):
    """The value of one line (bytes or str); raises
    WireError, and nothing else, on any bad input.

    With build=False, devices, dtypes and tensors are checked exactly as when built but come as
    stand-ins (`Device`, `DType`, a TensorValue without values): what the grader's parent needs
    to accept or refuse a report line, without importing torch."""
    try:
        if isinstance(data, (bytes, bytearray, memoryview)):
            if len(data) > MAX_BYTES:
                raise WireError("the line is too long")
            data = bytes(data).decode("utf-8")
        elif not isinstance(data, str):
            raise WireError(f"an observation is text, not {type(data).__name__}")
        if len(data) > MAX_BYTES:
            raise WireError("the line is too long")
        raw = json.loads(data, parse_constant=_no_constants)
        return _decode(raw, 0, [0, build])
    except WireError:
        raise
    except (
        ValueError,
        TypeError,
        KeyError,
        RecursionError,
        MemoryError,
        OverflowError,
        UnicodeError,
    ) as err:
        raise WireError(f"not a well-formed observation ({type(err).__name__})") from None
    except Exception as err:  # noqa: BLE001 - the promise: WireError and nothing else
        raise WireError(f"not a well-formed observation ({type(err).__name__})") from None


def _string(value) -> str:
    if len(value) > MAX_TEXT + 4:
        raise WireError("a string is too long")
    return value.encode("utf-8", "replace").decode("utf-8")  # lone surrogates become '?'


def _decode(raw, depth: int, count: list):
    count[0] += 1
    if count[0] > MAX_ITEMS:
        raise WireError("too many values in one line")
    if raw is None or isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        if abs(raw) >= 10**30:
            raise WireError("an integer is too large")
        return raw
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise WireError("a non-finite number outside $float")
        return raw
    if isinstance(raw, str):
        return _string(raw)
    if depth >= MAX_DEPTH:
        raise WireError("nested too deeply")
    if isinstance(raw, list):
        return [_decode(v, depth + 1, count) for v in raw]
    if not isinstance(raw, dict):
        raise WireError(f"unexpected JSON value {type(raw).__name__}")
    tags = [k for k in raw if k.startswith("$")]
    if not tags:
        return {_string(k): _decode(v, depth + 1, count) for k, v in raw.items()}
    if len(raw) != 1:
        raise WireError("a tagged value has exactly one key")
    tag, body = tags[0], raw[tags[0]]
    return _TAGS.get(tag, _unknown_tag)(body, depth, count)


def _unknown_tag(body, depth, count):
    raise WireError("unknown tag")


def _list(body, depth, count) -> list:
    if not isinstance(body, list):
        raise WireError("a tagged container holds a list")
    return [_decode(v, depth + 1, count) for v in body]


def _float(body, depth, count) -> float:
    if body not in ("nan", "inf", "-inf"):
        raise WireError("a $float is nan, inf or -inf")
    return float(body)


def _dict(body, depth, count) -> dict:
    pairs = _list(body, depth, count)
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise WireError("a $dict holds [key, value] pairs")
    out = {}
    for key, value in pairs:
        try:
            out[key] = value
        except TypeError:
            raise WireError("a $dict key is not hashable") from None
    return out


def _set(body, depth, count) -> frozenset:
    try:
        return frozenset(_list(body, depth, count))
    except TypeError:
        raise WireError("a $set item is not hashable") from None


def _bytes(body, depth, count) -> bytes:
    if not isinstance(body, str) or len(body) > MAX_BYTES:
        raise WireError("$bytes holds base64 text")
    return base64.b64decode(body.encode("ascii"), validate=True)


def _name(body, what: str, pattern=TYPE_NAME) -> str:
    if not isinstance(body, str) or not pattern.match(body):
        raise WireError(f"a malformed {what}")
    return body


def _device_name(body) -> str:
    """A device's name as torch.device would accept it, or WireError."""
    name = _name(body, "device", DEVICE)
    kind, _, index = name.partition(":")
    if kind not in DEVICE_TYPES or (index and not DEVICE_INDEX.match(index)):
        raise WireError("a malformed device")
    return name


def _device(body, depth, count):
    name = _device_name(body)
    if not count[1]:
        return Device(name)
    import torch

    return torch.device(name)


def _dtype(body, depth, count):
    if body not in DTYPES:
        raise WireError("an unknown dtype")
    if not count[1]:
        return DType(body)
    import torch

    return getattr(torch, body)


def _error(body, depth, count) -> ErrorValue:
    if (
        not isinstance(body, dict)
        or set(body) != {"type", "message"}
        or not isinstance(body["message"], str)
    ):
        raise WireError("an $error holds its type and message")
    return ErrorValue(_name(body["type"], "type name"), _string(body["message"])[:4000])


def _object(body, depth, count) -> ObjectValue:
    if not isinstance(body, str) or len(body) > 200:
        raise WireError("an $object holds a type name")
    return ObjectValue(_string(body))


def _tensor_value(body, depth, count) -> TensorValue:
    if not isinstance(body, dict) or set(body) != {
        "dtype",
        "shape",
        "device",
        "requires_grad",
        "data",
    }:
        raise WireError("a $tensor holds dtype, shape, device, requires_grad and data")
    dtype, shape, device, grad, data = (
        body[k] for k in ("dtype", "shape", "device", "requires_grad", "data")
    )
    if dtype not in DTYPES or not isinstance(grad, bool):
        raise WireError("a $tensor with an unknown dtype")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_DIMS
        or not all(type(n) is int and 0 <= n <= MAX_ELEMENTS for n in shape)
        or math.prod(shape) > MAX_ELEMENTS
    ):
        raise WireError("a $tensor with a malformed shape")
    _device_name(device)
    count[0] += 1
    if data is None:
        if device.split(":")[0] != "meta":
            raise WireError("only a meta tensor comes without values")
        return TensorValue(dtype, tuple(shape), device, grad, None)
    if not isinstance(data, str):
        raise WireError("a $tensor's data is base64 text")
    raw = base64.b64decode(data.encode("ascii"), validate=True)
    if len(raw) != math.prod(shape) * ELEMENT_SIZES[dtype]:
        raise WireError("a $tensor's data does not fit its shape")
    if not count[1]:
        return TensorValue(dtype, tuple(shape), device, grad, None)
    import torch

    torch_dtype = getattr(torch, dtype)
    values = (
        torch.frombuffer(bytearray(raw), dtype=torch_dtype).reshape(shape).clone()
        if raw
        else torch.empty(shape, dtype=torch_dtype)
    )
    return TensorValue(dtype, tuple(shape), device, grad, values)


_TAGS = {
    "$float": _float,
    "$tuple": lambda b, d, c: tuple(_list(b, d, c)),
    "$dict": _dict,
    "$set": _set,
    "$bytes": _bytes,
    "$tensor": _tensor_value,
    "$device": _device,
    "$dtype": _dtype,
    "$error": _error,
    "$object": _object,
}


def roundtrip(value):
    """`value` as a judge in another process would receive it (the learner's check uses this)."""
    return loads(dumps(value))
