"""Issue 35, item 3: specific entries for the wordings that only a family answered in collections
1-3, or that PyTorch raises with one cause and one fix. Each is raised live here on torch 2.13
(CPU) and answered by its own entry; the wordings of other releases (named in the entry) are
answered too; a plain Python wording needs PyTorch evidence. And the warning panel's family tier.
"""

import json
import tempfile
import types
import warnings

import pytest
import torch
import torch.distributed as dist

from course_lib.explainer import ENTRIES, explain, explain_text, explain_warning
from course_lib.i18n.catalogue import in_language
from support import ROOT

NEW = (
    "meta_no_data mean_integer cat_sizes stack_unequal grad_unused_input "
    "backward_nan unscale_twice scaler_no_inf_checks scaler_not_scaled process_group_twice "
    "nccl_timeout_warning recompile_limit fsdp_uniform_dtype worker_unpicklable"
).split()
BY_ID = {e.id: e for e in ENTRIES}


def raised(fn) -> BaseException:
    try:
        fn()
    except BaseException as err:  # noqa: B902 - whatever PyTorch raises
        return err
    raise AssertionError("expected an error")


class Ragged(torch.utils.data.Dataset):
    """Samples of different lengths: default_collate cannot stack them."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return torch.ones(i + 1)


def _scaler_step(scale=True, twice=False, other=False):
    model, extra = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), 0.1)
    scaler = torch.amp.GradScaler("cpu")
    loss = (extra if other else model)(torch.ones(1, 2)).sum()
    if scale:
        scaler.scale(loss).backward()
    if twice:
        scaler.unscale_(opt)
        scaler.unscale_(opt)
    scaler.step(opt)


def _unused_input():
    x, y = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    torch.autograd.grad(x.sum(), [x, y])


def _nan_backward():
    x = torch.zeros(1, requires_grad=True)
    with warnings.catch_warnings(), torch.autograd.detect_anomaly():
        warnings.simplefilter("ignore")
        (torch.sqrt(x) * 0).sum().backward()


def _init_twice():
    folder = tempfile.mkdtemp()
    dist.init_process_group("gloo", init_method=f"file://{folder}/a", rank=0, world_size=1)
    try:
        dist.init_process_group("gloo", init_method=f"file://{folder}/b", rank=0, world_size=1)
    finally:
        dist.destroy_process_group()


def _recompiled():
    import torch._dynamo

    torch._dynamo.reset()
    f = torch.compile(lambda x, n: x + n, backend="eager", dynamic=False)
    try:
        with torch._dynamo.config.patch(recompile_limit=2, fail_on_recompile_limit_hit=True):
            for n in range(4):
                f(torch.ones(2), n)
    finally:
        torch._dynamo.reset()


def _mixed_dtypes_flattened():
    from torch.distributed.fsdp._flat_param import FlatParamHandle

    params = [torch.nn.Parameter(torch.ones(2, dtype=d)) for d in (torch.bfloat16, torch.float32)]
    handle = types.SimpleNamespace(_use_orig_params=False)  # the check reads only this
    FlatParamHandle._validate_tensors_to_flatten(handle, params)


def _lambda_to_spawned_workers():
    loader = torch.utils.data.DataLoader(
        [1, 2], num_workers=1, collate_fn=lambda b: b, multiprocessing_context="spawn"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        list(loader)


# (entry, how torch 2.13 raises it on the CPU, a note the entry reads from the message or None)
LIVE = [
    ("meta_no_data", lambda: torch.nn.Linear(2, 2, device="meta").to("cpu"), None),
    ("meta_no_data", lambda: torch.zeros(1, device="meta").item(), None),
    ("mean_integer", lambda: torch.ones(2, dtype=torch.int64).mean(), None),
    (
        "cat_sizes",
        lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 4)]),
        "Tensor number 1 in the list has size 4 where 3 was expected.",
    ),
    (
        "stack_unequal",
        lambda: list(torch.utils.data.DataLoader(Ragged(), batch_size=2)),
        "Entry 0 has shape [1], entry 1 has shape [2].",
    ),
    ("grad_unused_input", _unused_input, "The input at index 1 of `inputs` is the one not used."),
    ("backward_nan", _nan_backward, "The operation: `Sqrt` (its backward)."),
    ("unscale_twice", lambda: _scaler_step(twice=True), None),
    ("scaler_no_inf_checks", lambda: _scaler_step(other=True), None),
    ("scaler_not_scaled", lambda: _scaler_step(scale=False), None),
    ("process_group_twice", _init_twice, None),
    ("recompile_limit", _recompiled, None),
    (
        "fsdp_uniform_dtype",
        _mixed_dtypes_flattened,
        "The unit mixes torch.bfloat16 and torch.float32.",
    ),
    ("worker_unpicklable", _lambda_to_spawned_workers, None),
]


@pytest.mark.parametrize("entry_id,fn,note", LIVE, ids=[f"{i}-{e[0]}" for i, e in enumerate(LIVE)])
def test_each_new_entry_answers_the_error_torch_raises_live(entry_id, fn, note):
    exp = explain(raised(fn))
    assert exp.known and exp.entry.id == entry_id and exp.tier == "specific", str(exp)
    assert "General case" not in str(exp)
    if note:
        assert note in exp.notes, exp.notes


def test_the_nccl_warning_of_a_build_without_nccl_is_explained_live():
    if dist.is_nccl_available():
        pytest.skip("this build has NCCL: the warning is not raised")
    from torch.distributed import distributed_c10d

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        distributed_c10d._get_default_timeout("nccl")
    (w,) = [w for w in seen if "nccl" in str(w.message)]
    exp = explain_warning(w.message, w.category, w.filename, w.lineno)
    assert exp.entry.id == "nccl_timeout_warning" and "A warning, not an error" in str(exp)


def test_every_new_entry_is_raised_live_or_by_its_warning():
    assert {e for e, _, _ in LIVE} | {"nccl_timeout_warning"} == set(NEW)
    assert all(e in BY_ID and BY_ID[e].tier == "specific" for e in NEW)


@pytest.mark.parametrize(
    "entry_id,text",
    [(e, text) for e in NEW for _, text in BY_ID[e].wordings],
    ids=lambda v: v[:40] if isinstance(v, str) else v,
)
def test_the_wordings_of_other_releases_are_answered_too(entry_id, text):
    assert explain_text(text).entry.id == entry_id


POSTED = [  # as posted in the threads of tests/data/explain_heldout_3.jsonl (rows named)
    ("meta_no_data", "NotImplementedError: Cannot copy out of meta tensor; no data!"),  # t010
    (
        "recompile_limit",  # t086: a log, no exception
        "W0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551] [2/8] torch._dynamo hit "
        "config.recompile_limit (8)\nW0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551]"
        " [2/8]    function: 'dion2_post_orthogonalize' (/usr/local/lib/python3.12/dist-packages/"
        "dion/dion2.py:621)\nW0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551] [2/8]"
        "    last reason: 2/7: tensor 'X[0]' size mismatch at index 1. expected 640, actual 8.",
    ),
    (
        "fsdp_uniform_dtype",  # t116, FSDP of torch 2.0
        "ValueError: `FlatParameter` requires uniform dtype but got torch.bfloat16 and "
        "torch.float32",
    ),
]


@pytest.mark.parametrize("entry_id,text", POSTED, ids=[e for e, _ in POSTED])
def test_messages_as_posted_get_the_new_entries(entry_id, text):
    assert explain_text(text).entry.id == entry_id


def test_the_recompile_limit_names_the_guard_that_failed_last():
    exp = explain_text(POSTED[1][1])
    assert exp.notes == (
        "The guard that failed last: `tensor 'X[0]' size mismatch at index 1. expected 640, "
        "actual 8.`.",
    )


@pytest.mark.parametrize(
    "text",
    [
        "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'",
        'Traceback (most recent call last):\n  File "/home/u/pool.py", line 9, in <module>\n'
        "    pool.map(lambda x: x, range(3))\n"
        '  File "/usr/lib/python3.11/multiprocessing/reduction.py", line 51, in dumps\n'
        "    cls(buf, protocol).dump(obj)\n"
        "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'",
    ],
    ids=["bare", "multiprocessing-pool"],
)
def test_a_plain_python_pickle_error_needs_pytorch_evidence(text):
    assert not explain_text(text).known


def test_a_pickle_error_under_a_dataloader_frame_is_the_workers():
    text = (
        'Traceback (most recent call last):\n  File "train.py", line 40, in <module>\n'
        "    for x, y in loader:\n"
        '  File "C:\\py\\lib\\site-packages\\torch\\utils\\data\\dataloader.py", line 1040, in '
        "__init__\n    w.start()\n"
        '  File "C:\\py\\lib\\multiprocessing\\reduction.py", line 60, in dump\n'
        "    ForkingPickler(file, protocol).dump(obj)\n"
        "AttributeError: Can't pickle local object 'train.<locals>.<lambda>'"
    )
    assert explain_text(text).entry.id == "worker_unpicklable"


def test_every_new_entry_says_its_texts_in_chinese():
    zh = json.loads((ROOT / "course_lib" / "i18n" / "zh.json").read_text(encoding="utf-8"))
    for e in NEW:
        entry = BY_ID[e]
        texts = [entry.title, entry.meaning, *entry.causes, *(w for w, _ in entry.wordings)]
        texts += [sentence for _, sentence in entry.readings]
        assert not [t for t in texts if t not in zh], e
    with in_language("zh"):
        said = str(explain(raised(lambda: torch.ones(2, dtype=torch.int64).mean())))
    assert "整数" in said


# ---------------------------------------------------------------- the warning panel's family tier
def _anomaly_warning():
    """The warning anomaly mode prints from torch/autograd before its error: no entry knows it."""
    x = torch.zeros(1, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen, torch.autograd.detect_anomaly():
        warnings.simplefilter("always")
        raised(lambda: (torch.sqrt(x) * 0).sum().backward())
    return next(w for w in seen if "Error detected in" in str(w.message))


def test_a_torch_warning_no_entry_knows_gets_its_family_marked_general():
    w = _anomaly_warning()
    exp = explain_warning(w.message, w.category, w.filename, w.lineno)
    assert exp.known and exp.entry.id == "family_autograd" and exp.tier == "family"
    said = str(exp)
    assert "General case" in said and "A warning, not an error" in said
    assert "What to look at first:" in said


def test_an_entry_still_answers_a_warning_before_any_family():
    exp = explain_warning(
        "Attempted to get default timeout for nccl backend, but NCCL support is not compiled",
        UserWarning,
        "/x/torch/distributed/distributed_c10d.py",
        613,
    )
    assert exp.entry.id == "nccl_timeout_warning" and exp.tier == "specific"


@pytest.mark.parametrize(
    "message,filename",
    [
        ("Unable to allocate memory for the device buffer; size mismatch", "/x/numpy/core.py"),
        ("the sky is blue", "/x/torch/nn/modules/module.py"),  # torch, but no family's folder
    ],
)
def test_warnings_without_pytorch_evidence_of_a_family_get_no_panel(message, filename):
    assert not explain_warning(message, UserWarning, filename, 1).known


def test_the_panel_shows_a_family_once_per_family_under_its_warning(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    import course_lib
    from course_lib.explainer import notebook

    shell = InteractiveShell.instance()
    try:
        course_lib.explainer.enable(shell)
        for _ in range(2):
            warnings.showwarning(
                "Error detected in SqrtBackward0.", UserWarning, "/x/torch/autograd/graph.py", 9
            )
        out = capsys.readouterr()
        assert out.out.count("An error of autograd") == 1 and "General case" in out.out
    finally:
        notebook.disable(shell)
        InteractiveShell.clear_instance()
