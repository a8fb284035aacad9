"""The observation wire format (course_lib/exercises/wire.py): values round-trip as data, and
the parser raises WireError, and nothing else, on any hostile line (issue 18, items 2 and 4)."""

import json
import math
import os
import random

import pytest
import torch

from course_lib.exercises import wire
from course_lib.exercises.wire import ErrorValue, ObjectValue, TensorValue, WireError


def test_plain_values_and_tagged_forms_round_trip():
    value = {
        "ints": [0, -7, 2**40],
        "floats": [1.5, float("nan"), float("inf"), -float("inf")],
        "text": "é ✓",
        "tuple": (1, (2, 3)),
        "set": {1, 2},
        "keys": {1: "a", (2, 3): "b", "$x": "c"},
        "none": None,
        "bytes": b"\x00\xff",
        "device": torch.device("cuda:1"),
        "dtype": torch.bfloat16,
        "flag": True,
    }
    back = wire.roundtrip(value)
    assert back["ints"] == value["ints"] and back["text"] == value["text"] and back["flag"] is True
    assert (
        back["floats"][0] == 1.5
        and math.isnan(back["floats"][1])
        and back["floats"][2:] == [math.inf, -math.inf]
    )
    assert back["tuple"] == (1, (2, 3)) and isinstance(back["tuple"][1], tuple)
    assert back["set"] == frozenset({1, 2}) and back["keys"] == {1: "a", (2, 3): "b", "$x": "c"}
    assert back["bytes"] == b"\x00\xff" and back["device"] == torch.device("cuda:1")
    assert back["dtype"] is torch.bfloat16


@pytest.mark.parametrize(
    "tensor",
    [
        torch.randn(3, 4),
        torch.arange(6).reshape(2, 3),
        torch.tensor(True),
        torch.randn(5).to(torch.bfloat16),
        torch.empty(0, 2),
        torch.tensor(2.5),
    ],
)
def test_tensors_travel_by_value(tensor):
    back = wire.roundtrip(tensor)
    assert (
        isinstance(back, TensorValue) and back.shape == tuple(tensor.shape) and back.device == "cpu"
    )
    assert back.dtype == str(tensor.dtype).replace("torch.", "")
    assert torch.equal(back.values, tensor) and torch.equal(back.tensor(), tensor)


def test_meta_tensors_travel_without_values_and_grad_flags_survive():
    back = wire.roundtrip(torch.zeros(2, 3, device="meta", requires_grad=True))
    assert (back.device, back.shape, back.values, back.requires_grad) == (
        "meta",
        (2, 3),
        None,
        True,
    )
    assert back.tensor().device.type == "meta"


def test_look_alikes_become_their_type_name():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    class FakeList:
        @property
        def __class__(self):
            return list

    class Loud(Exception):
        def __str__(self):
            raise RuntimeError("no")

    assert isinstance(wire.roundtrip(torch.zeros(2).as_subclass(Liar)), ObjectValue)
    assert wire.roundtrip(FakeList()) == ObjectValue("FakeList")
    assert wire.roundtrip(lambda: 1) == ObjectValue("function")
    assert wire.roundtrip(Loud("x")) == ErrorValue("Loud", "x")
    assert wire.roundtrip(ValueError("bad")) == ErrorValue("ValueError", "bad")


def test_what_is_too_big_or_too_deep_is_refused_or_cut_when_sent():
    deep = []
    for _ in range(wire.MAX_DEPTH + 10):
        deep = [deep]
    assert "too deeply nested" in json.dumps(json.loads(wire.dumps(deep)))
    with pytest.raises(WireError):
        wire.dumps(["x" * 1000] * (wire.MAX_BYTES // 1000 + 10))
    with pytest.raises(WireError):
        wire.dumps(list(range(wire.MAX_ITEMS + 1)))


HOSTILE = [
    b"",
    b"\n",
    b"\xff\xfe\x00garbage",
    bytes(range(256)),
    os.urandom(4096),
    b"[" * 100_000,
    b'{"a":' * 50_000,
    "[" * 200 + "]" * 200,
    b"x" * (wire.MAX_BYTES + 1),
    b"NaN",
    b"[Infinity]",
    b"1e999999",
    b"123" + b"0" * 40,
    b'"\\ud800"' * 2,
    b'{"$tensor": 1}',
    b'{"$nope": 1}',
    b'{"$tuple": [1], "b": 2}',
    b'{"$float": "1.0"}',
    b'{"$dict": [[[1], 2]]}',
    b'{"$dict": [1]}',
    b'{"$set": [[1]]}',
    b'{"$bytes": "!!!"}',
    b'{"$device": "c u"}',
    b'{"$dtype": "complex128"}',
    b'{"$error": {"type": "A B", "message": "m"}}',
    b'{"$error": {"type": "A"}}',
    b'{"$object": 5}',
    b'{"$tensor": {"dtype": "float32", "shape": [2], "device": "cpu", "requires_grad": false,'
    b' "data": "AAAA"}}',
    (
        b'{"$tensor": {"dtype": "float32", "shape": [-1], "device": "cpu", '
        b'"requires_grad": false, "data": ""}}'
    ),
    (
        b'{"$tensor": {"dtype": "float32", "shape": [4194304, 4194304], "device": '
        b'"cpu", "requires_grad": false, "data": ""}}'
    ),
    (
        b'{"$tensor": {"dtype": "float32", "shape": [2], "device": "cpu", '
        b'"requires_grad": 1, "data": null}}'
    ),
    (
        b'{"$tensor": {"dtype": "float32", "shape": [2], "device": "cpu", '
        b'"requires_grad": false, "data": null}}'
    ),
    (
        b'{"$tensor": {"dtype": "float32", "shape": [2.5], "device": "meta", '
        b'"requires_grad": false, "data": null}}'
    ),
    b"[1, 2",
    b"{'a': 1}",
    b"\x00",
    12,
    None,
    ["list"],
    bytearray(b"[1]") * 3,
]


@pytest.mark.parametrize("line", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_lines_raise_wire_error_and_nothing_else(line):
    with pytest.raises(WireError):
        wire.loads(line)


def test_lone_surrogates_come_back_encodable():
    value = wire.loads(b'{"text": "a\\ud800b", "list": ["\\udfff"]}')
    assert value["text"].encode("utf-8") and value["list"][0].encode("utf-8")
    sent = wire.loads(wire.dumps("x\ud800y"))
    assert sent.encode("utf-8") == b"x?y"


def test_random_garbage_and_mutations_of_valid_lines_never_escape_as_other_errors():
    rng = random.Random(18)
    good = wire.dumps(
        {"seen": [torch.randn(3), (1, "two"), {"$k": 2}], "error": ValueError("x")}
    ).encode()
    for _ in range(3000):
        line = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            line[rng.randrange(len(line))] = rng.randrange(256)
        try:
            wire.loads(bytes(line))
        except WireError:
            pass


@pytest.mark.parametrize("line", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_lines_are_refused_unbuilt_too(line):
    """The grader's parent reads report lines without building tensors (no torch there)."""
    with pytest.raises(WireError):
        wire.loads(line, build=False)


DEVICE_NAMES = [
    "cpu", "cuda", "cuda:1", "cuda:12", "cpu:0", "cpu:01", "cuda:007", "meta", "meta:3", "mps",
    "xpu:2", "hip", "privateuseone:1", "foo", "cuda_", "msnpu", "mlc", "ort", "privateuse1",
    "gpu", "tpu", "cpu:999", "cuda:100",
]  # fmt: skip


def _torch_accepts(name: str) -> bool:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.device("mkldnn") warns
        try:
            torch.device(name)
        except Exception:  # noqa: BLE001
            return False
    return True


@pytest.mark.parametrize("name", DEVICE_NAMES + sorted(wire.DEVICE_TYPES))
def test_a_device_is_accepted_unbuilt_exactly_when_torch_accepts_it(name):
    line = json.dumps({"$device": name}).encode()
    tensor = json.dumps(
        {"$tensor": {"dtype": "float32", "shape": [0], "device": name, "requires_grad": False,
                     "data": ""}}
    ).encode()  # fmt: skip
    for built, unbuilt in ((line, line), (tensor, tensor)):
        outcomes = []
        for build in (True, False):
            try:
                wire.loads(built if build else unbuilt, build=build)
                outcomes.append(True)
            except WireError:
                outcomes.append(False)
        assert outcomes[0] == outcomes[1] == _torch_accepts(name), (name, outcomes)


def test_element_sizes_are_torchs():
    assert set(wire.ELEMENT_SIZES) == set(wire.DTYPES)
    for name, size in wire.ELEMENT_SIZES.items():
        assert torch.empty((), dtype=getattr(torch, name)).element_size() == size


def test_unbuilt_values_are_stand_ins_with_the_same_type_names_and_fields():
    value = {
        "device": torch.device("cuda:1"),
        "dtype": torch.bfloat16,
        "tensor": torch.arange(6, dtype=torch.int16).reshape(2, 3),
        "meta": torch.empty(2, 4, device="meta", requires_grad=True),
        "rest": [(1, "two"), {3}, b"\x00", ValueError("x"), float("nan")],
    }
    line = wire.dumps(value)
    built, unbuilt = wire.loads(line), wire.loads(line, build=False)
    assert unbuilt["device"] == wire.Device("cuda:1") and unbuilt["dtype"] == wire.DType("bfloat16")
    assert type(unbuilt["tensor"]) is TensorValue and unbuilt["tensor"].values is None
    for key in ("tensor", "meta"):
        b, u = built[key], unbuilt[key]
        assert (b.dtype, b.shape, b.device, b.requires_grad) == (
            u.dtype, u.shape, u.device, u.requires_grad
        )  # fmt: skip
    assert repr(built["rest"]) == repr(unbuilt["rest"])


def test_mutated_lines_are_refused_built_and_unbuilt_alike():
    rng = random.Random(20)
    good = wire.dumps(
        {"seen": [torch.randn(3), torch.device("cpu"), torch.float16, (1, "two")], "n": 2}
    ).encode()
    differ = []
    for _ in range(2000):
        line = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            line[rng.randrange(len(line))] = rng.randrange(32, 127)
        results = []
        for build in (True, False):
            try:
                wire.loads(bytes(line), build=build)
                results.append(True)
            except WireError:
                results.append(False)
        if results[0] != results[1]:
            differ.append(bytes(line))
    assert not differ, differ[:3]
