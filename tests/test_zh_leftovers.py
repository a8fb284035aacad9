"""The leftover-English scanner (course_tools/leftovers.py): what a Chinese notebook's outputs
may and may not show in English, and its hook on the nbval cells of notebooks/zh/."""

import pytest

from course_tools import leftovers
from course_tools.leftovers import (
    cell_prose,
    english_prose,
    html_text,
    notebook_leftovers,
    output_prose,
    widget_prose,
)

ENGLISH = [  # untranslated prose a chapter module printed
    "model on cuda:0, inputs on cpu -> the same-device rule is broken",
    "Training for 3 epochs on cpu (batch size 64)",
    "cuda:0 -> CRASHES at the first .to(device): this machine has no CUDA GPU",
    "cuda -> runs, but leaves the CUDA GPU idle",
    "epoch 1/3: the loss went down from 2.31 to 0.52",
    "Caught the error as expected, now fix it:",
    "  Skipped on this machine: no CUDA GPU here. Recorded on an H200:",
    "模型在 cuda:0 上 but the labels are still on the CPU",  # half translated
]
KEPT = [  # lines that stay English by design
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
    "cuda:0 and cpu!",
    "捕获到错误：RuntimeError: Expected all tensors to be on the same device, but got mat1 on cpu",
    "/usr/lib/python3/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: "
    "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.2 GiB is free.",
    "tensor([[ 0.1234, -1.2000]], device='cuda:0', requires_grad=True)",
    "Linear(in_features=4, out_features=2, bias=True)",
    "torch.float32 torch.bfloat16 cuda:0 cpu mps meta",
    "{'device': 'cuda', 'dtype': 'float32', 'note': 'moved with the model as a whole'}",
    "<torch.utils.data.dataloader.DataLoader object at 0x7f3a2c1d0e50>",
    "NVIDIA GeForce RTX 3090, 24576 MiB, driver 550.54.14",
    "loss 0.5231  acc 0.8125  12.3 ms/step",
    "模型、输入和标签都在 cuda:0 上：三样东西同处一室",
    "见 https://pytorch.org/docs/stable/notes/cuda.html#memory-management and more",
    "保存到 /tmp/course/checkpoints/model_epoch_3.pt",
    "`x.to(device)` 把数据搬到 `model` 所在的设备",
    "第 1/3 轮：loss 2.3100 -> 0.5200（用时 1.2 s）",
]
TRACEBACK = """Traceback (most recent call last):
  File "/tmp/x.py", line 3, in <module>
    model(x)  # this will raise because the input lives on another device
  File "/venv/torch/nn/modules/module.py", line 1775, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices
During handling of this, the original error came from the layer's weight
"""
PROFILER = """-------------------------  ------------  ------------  ------------  ------------
                     Name    Self CPU %      Self CPU   CPU total %     CPU total  # of Calls
-------------------------  ------------  ------------  ------------  ------------
                 aten::mm        45.10%       1.234ms        45.10%       1.234ms           3
     Optimizer.step#SGD.step    10.00%     300.000us        20.00%     600.000us           1
-------------------------  ------------  ------------  ------------  ------------
Self CPU time total: 2.736ms
"""
MEMORY_SUMMARY = """|===========================================================================|
|                  PyTorch CUDA memory summary, device ID: 0                 |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |  12345 KiB |  23456 KiB |  34567 KiB |  22222 KiB |
|       from large pool |  10000 KiB |  20000 KiB |  30000 KiB |  20000 KiB |
|===========================================================================|
"""


@pytest.mark.parametrize("line", ENGLISH)
def test_english_prose_is_found(line):
    assert english_prose(line) == [line.strip()]


@pytest.mark.parametrize("line", KEPT)
def test_what_stays_english_is_not_flagged(line):
    assert english_prose(line) == []


def test_tracebacks_and_torch_tables_are_not_prose():
    assert english_prose(TRACEBACK) == []
    assert english_prose(PROFILER) == []
    assert english_prose(MEMORY_SUMMARY) == []


def test_prose_after_an_error_or_a_table_is_found():
    """An error's message ends at a blank line or Chinese; a table at its block's end."""
    after = "The fix is to move the labels too"
    assert english_prose(TRACEBACK + "\n" + after) == [after]
    assert english_prose(PROFILER + "\n" + after) == [after]
    assert english_prose("RuntimeError: x\n修复办法：\n" + after) == [after]
    own_table = "------  ------\nthe model  moved to cuda\n------  ------"  # not PyTorch's
    assert english_prose(own_table) == ["the model  moved to cuda"]


def test_html_is_read_as_the_reader_sees_it():
    markup = (
        "<style>.x { color: red }</style><table><tr><th>code</th><th>on this machine</th></tr>"
        "<tr><td><code>torch.device('cuda:0')</code></td><td>cpu -&gt; runs, but <b>leaves</b>"
        " the GPU idle</td></tr><tr><td>用 <code>cuda</code></td><td>可以</td></tr></table>"
        "<pre>model = nn.Linear(4, 2)  # stays on the CPU for now</pre>"
    )
    assert english_prose(html_text(markup)) == [
        "on this machine",
        "cpu -> runs, but  leaves  the GPU idle",
    ]


def test_outputs_each_kind():
    stream = {
        "output_type": "stream",
        "name": "stdout",
        "text": ["训练完成\n", "Done in 3 s, all good\n"],
    }
    figure = {
        "output_type": "display_data",
        "data": {
            "image/png": "iVBOR...",
            "text/plain": "<Figure size 640x480 with one set of Axes>",
        },
    }
    plain = {"output_type": "execute_result", "data": {"text/plain": "'a quoted string repr'"}}
    error = {
        "output_type": "error",
        "ename": "RuntimeError",
        "evalue": "Expected all tensors to be",
    }
    html = {
        "output_type": "display_data",
        "data": {
            "text/html": "<p>Show the result below</p>",
            "text/plain": "<IPython.core.display.HTML>",
        },
    }
    assert output_prose(stream) == ["Done in 3 s, all good"]
    assert output_prose(figure) == output_prose(plain) == output_prose(error) == []
    assert output_prose(html) == ["Show the result below"]


WIDGETS = {
    "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_pick", "IPY_MODEL_tab"]}},
    "pick": {
        "model_name": "DropdownModel",
        "state": {
            "description": "Machine:",
            "_options_labels": ["单 GPU 工作站", "CPU-only laptop"],
        },
    },
    "tab": {"model_name": "HTMLModel", "state": {"value": "<p>三样东西<b>同处一室</b></p>"}},
    "ok": {"model_name": "ButtonModel", "state": {"description": "检查", "tooltip": "cuda:0"}},
}


def test_widgets_labels_count_from_one_word():
    assert widget_prose("box", WIDGETS) == ["Machine:", "CPU-only laptop"]
    assert widget_prose("ok", WIDGETS) == []
    view = {"application/vnd.jupyter.widget-view+json": {"model_id": "box"}, "text/plain": "VBox()"}
    cell = {
        "cell_type": "code",
        "id": "c07",
        "outputs": [{"output_type": "display_data", "data": view}],
    }
    assert cell_prose(cell, WIDGETS) == ["Machine:", "CPU-only laptop"]
    nb = {
        "cells": [cell],
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": WIDGETS}}},
    }
    assert notebook_leftovers(nb) == {"c07": ["Machine:", "CPU-only laptop"]}


def test_what_the_cells_own_code_prints_stays_english_only_where_it_is_not_translated_yet(
    monkeypatch,
):
    """A notebook's code is the same in both editions: in a chapter whose cells still print English
    of their own (OWN_ENGLISH) their literals are not leftovers, but course_lib's English around
    them still is; in every other chapter a cell's own English print is a leftover (it says its
    words through tr())."""
    assert leftovers.OWN_ENGLISH == ()  # every chapter's cells say their words through tr()
    monkeypatch.setattr(leftovers, "OWN_ENGLISH", ("05_speedups",))
    source = 'other = "meta"\nprint("all on the CPU: loss =", round(loss, 4))\n%time f(x)'
    stream = {"output_type": "stream", "name": "stdout", "text": "all on the CPU: loss = 0.9661\n"}
    cell = {"cell_type": "code", "id": "c05", "source": source, "outputs": [stream]}
    assert cell_prose(cell, notebook="notebooks/zh/05_speedups.ipynb") == []
    assert cell_prose(cell, notebook="02_same_device_rule.ipynb") == [
        "all on the CPU: loss = 0.9661"
    ]
    assert cell_prose(cell) == ["all on the CPU: loss = 0.9661"]
    stream["text"] += "the model is on meta, the labels are too\n"
    assert cell_prose(cell, notebook="05_speedups.ipynb") == [
        "the model is on meta, the labels are too"
    ]
    assert english_prose("moved to the torch device now", kept=["to"]) == [
        "moved to the torch device now"
    ]


def test_short_labels_with_chinese_keep_their_names():
    assert english_prose("带苹果 GPU 的 Mac", run=1) == []
    assert english_prose("Machine:", run=1) == ["Machine:"]


def test_pytorch_messages_the_explainer_knows_stay_english():
    warned = (
        "'pin_memory' argument is set as true but no accelerator is found, then device pinned "
        "memory won't be used."
    )
    assert english_prose("PyTorch 警告：" + warned) == []
    assert english_prose("PyTorch warned: " + warned, kept=["PyTorch warned:"]) == []
    own = "the loader still pins every batch: " + warned
    assert english_prose(own) == [own]  # the course's English before it is still found


def test_printed_python_source_is_code():
    source = (
        'def shard(model):\n    """FSDP2: `fully_shard` each Linear layer (one\n    all-gather '
        'each), then the whole model (chapter 08)."""\n    for layer in model.modules():\n'
        "        fully_shard(layer)\n    return model\n"
    )
    assert output_prose({"output_type": "stream", "name": "stdout", "text": source}) == []
    prose = "Shard each layer first, then the whole model\n"
    assert output_prose({"output_type": "stream", "name": "stdout", "text": prose}) == [
        prose.strip()
    ]


def test_an_error_name_inside_a_code_span_cuts_the_line_before_the_span():
    row = (
        "| `environment variable RANK expected, but not set / KeyError: 'LOCAL_RANK'` | "
        "由 `torchrun` 设置。 |"
    )
    assert english_prose(row) == []
    assert english_prose("see the table `KeyError: 'x'` for what went wrong here") == [
        "see the table `KeyError: 'x'` for what went wrong here"
    ]


def test_a_literal_wrapped_over_two_lines_is_still_the_cells_own():
    said = (
        "[仅限 GPU] 已跳过（这台机器没有 CUDA GPU）：benchmark.Timer over sizes and\n"
        "dtypes, measured on a CUDA GPU\n"
    )
    kept = ["benchmark.Timer over sizes and dtypes, measured on a CUDA GPU"]
    assert english_prose(said, kept=kept) == []
    assert english_prose(said) == said.strip().splitlines()


def test_pytorchs_cpp_log_lines_stay_english():
    line = (
        "[W1201 15:55:33.699113892 CPUAllocator.cpp:245] Memory block of unknown size was "
        "allocated before the profiling started, profiler results will not include it"
    )
    assert english_prose(line) == []


def test_pytorchs_python_log_lines_stay_english():
    """torch 2.15's CUDA build logs this in chapter 05's compile cell on a machine without CUDA."""
    line = (
        "W1204 03:37:00.198000 22958 torch/utils/cpp_extension.py:183] [0/0] No CUDA runtime is "
        "found, using CUDA_HOME='/usr/local'"
    )
    assert english_prose(line) == []
    assert english_prose("No CUDA runtime is found on this machine at all") != []


def test_a_quotation_wrapped_over_lines_stays_english_and_prose_beside_it_does_not():
    quoted = (
        "它会释放缓存分配器手里所有没被占用的缓存显存（'all unoccupied cached memory\n"
        "currently held by the caching allocator so that those can be used in\n"
        "other GPU application'），但不会增加 PyTorch 可用的显存（'doesn't increase the\n"
        "amount of GPU memory available for PyTorch'）。\n"
        "（'doesn't increase the amount of GPU memory available for PyTorch'）。\n"
        "出处：教程 “A guide on good usage of non_blocking and pin_memory() in\n"
        "PyTorch”。\n"
    )
    assert english_prose(quoted) == []
    assert english_prose(quoted + "and this line was never translated\n") == [
        "and this line was never translated"
    ]


def test_python_source_printed_after_other_output_is_code():
    output = (
        "节点 0：rank 0-3\n\n"
        "def local_device(local_rank: int, backend: str) -> torch.device:\n"
        '    """This process\'s device: with nccl GPU `local_rank`\n'
        "    of this machine, made current; else the CPU.\n"
        '    """\n'
        "    torch.cuda.set_device(local_rank)  # this process's default GPU\n"
        "    return torch.device('cpu')\n"
    )
    assert english_prose(output) == []
    broken = output.replace("    return torch.device('cpu')\n", "    return the device we use\n")
    assert english_prose(broken)  # not source once it no longer parses: its prose is found
