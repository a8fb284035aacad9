"""What chapters 01-04 and 08 show a learner comes out in Chinese where nbval cannot see it: the
widgets' labels, options and answers after a click, the figures' text, and what the notebooks' own
cells print (also in the GPU-only cells, and in lines too short for the nbval hook in conftest.py,
which reads every printed line and HTML output of notebooks/zh/). Each check also reads the
English edition and finds English there, so it can fail."""

import ast
import json
from types import SimpleNamespace
from unittest import mock

import pytest
import torch

from course_lib import ch01_device_check as ch01
from course_lib import ch02_same_device_rule as ch02
from course_lib import ch03_training_template as ch03
from course_lib import ch08_sharding as ch08
from course_lib import data, sharding, training
from course_lib.i18n import plots
from course_lib.i18n.catalogue import in_language, is_prose, tr, untranslated
from course_tools.leftovers import OWN_ENGLISH, english_prose, live_widget_prose
from course_tools.messages import template_text
from support import NOTEBOOKS


def both_editions(show):
    """English prose left in what `show()` returns in Chinese, and in English."""
    with in_language("zh"):
        zh = show()
    with in_language("en"):
        en = show()
    return zh, en


def test_machine_explorer():
    def shown():
        widget = ch01.machine_explorer()
        found = []
        for _, machine in widget.children[0].options:
            widget.children[0].value = machine
            found += live_widget_prose(widget)
        return found

    zh, en = both_editions(shown)
    assert zh == []
    assert "Machine:" in en and "on this machine" in en


def test_warehouse_and_workshop_after_every_kind_of_click():
    def shown():
        w = ch02.warehouse_and_workshop("meta")
        found = live_widget_prose(w.box)
        w._on_click()  # no prediction yet
        found += live_widget_prose(w.box)
        for predicted, moved in ((True, None), (False, "labels"), (True, "model")):
            w.prediction.value = predicted
            if moved:
                w.pickers[moved].value = "meta"  # the old verdict goes
                found += live_widget_prose(w.box)
            w._on_click()
            found += live_widget_prose(w.box)
        return found

    zh, en = both_editions(shown)
    assert zh == []
    assert "Run the step for real" in en


def test_the_sixteen_placements_table():
    def shown():
        box = ch02.placements_reveal("meta")
        button = next(c for c in box.children if type(c).__name__ == "Button")
        button.click()
        return live_widget_prose(box)

    zh, en = both_editions(shown)
    assert zh == []
    assert "Run all 16 placements" in en


def figure_texts(fig) -> list:
    """Every text a figure shows: titles, axis labels, tick labels, legends."""
    texts = [fig._suptitle.get_text()] if fig._suptitle else []
    for ax in fig.axes:
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        texts += [t.get_text() for t in ax.get_xticklabels()]
        legend = ax.get_legend()
        texts += [t.get_text() for t in legend.get_texts()] if legend else []
    return [t for t in texts if t]


def figures():
    history = training.History()
    for losses in ((2.0, 1.0, 0.5), (1.5, 0.9, 0.7)):
        history.add(*losses)
    runs = {
        label: ch03.StepLog(loss=[1.0, 0.5], grad_norm=[0.3, 0.4])
        for label in ("with zero_grad", "without zero_grad")
    }
    holds = {run: {part: 2048 for part in sharding.PARTS} for run in ("DDP", "FSDP")}
    result = SimpleNamespace(ranks=[{"holds": holds}, {"holds": holds}])
    digits = [(torch.zeros(64), torch.tensor(3))] * 2
    return [
        training.plot_history(history, title="a small MLP on the UCI digits, trained on cpu"),
        ch03.plot_zero_grad(runs),
        data.show_digits(digits, n=2, title="the first training digits and their labels"),
        ch08.plot_bytes(result),
    ]


@pytest.mark.parametrize("index", range(4))
def test_figures(index):
    """Figure text in Chinese where a CJK font draws it (plot_text); a font is assumed here."""

    def shown():
        fig = figures()[index]
        return [line for text in figure_texts(fig) for line in english_prose(text, run=2)]

    with mock.patch.object(plots, "cjk_font", lambda: "WenQuanYi Zen Hei"):
        zh, en = both_editions(shown)
    assert zh == []
    assert en


# ---------------------------------------------------------------- what the cells print themselves
SAID_THROUGH_TR = [nb for nb in NOTEBOOKS if nb.stem not in OWN_ENGLISH]


def cell_calls(path, function: str) -> list:
    """(cell id, call) of every `function(...)` call in the code cells of the notebook at `path`
    (the English edition: the Chinese one has the same code)."""
    found = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).splitlines()
            tree = ast.parse("\n".join(x for x in lines if not x.lstrip().startswith(("%", "!"))))
            found += [
                (cell["id"], node)
                for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function
            ]
    return found


@pytest.mark.parametrize("path", SAID_THROUGH_TR, ids=lambda p: p.stem)
def test_the_cells_own_prints_say_their_words_through_tr(path):
    """A cell's print() of English words says them through tr() (in a chapter not in OWN_ENGLISH),
    or the Chinese edition prints them in English."""
    english = [
        (cell, text)
        for cell, call in cell_calls(path, "print")
        for text in map(template_text, call.args)
        if text is not None and is_prose(text)
    ]
    assert english == [], "printed in English in both editions; print(tr(...)) them"


@pytest.mark.parametrize("path", SAID_THROUGH_TR, ids=lambda p: p.stem)
def test_what_the_cells_say_through_tr_has_its_chinese(path):
    """Every text a cell passes to tr() has its Chinese entry (for an f-string: a template that
    reads it whole), and comes out in Chinese; in English it stays as it is."""
    texts = [template_text(call.args[0]) for _, call in cell_calls(path, "tr")]
    assert texts and None not in texts
    assert {text: untranslated(text, "zh") for text in texts if untranslated(text, "zh")} == {}
    for text in texts:
        with in_language("zh"):
            said = tr(text)
        with in_language("en"):
            assert tr(text) == text
        assert said != text and english_prose(said, run=2) == [], (text, said)


def test_device_report_names_the_two_devices_in_chinese():
    """Its mismatch verdict (chapters 02 and 04) joins the devices with 和, not an English 'and'."""
    from course_lib.device import device_report

    show = lambda: device_report(model=torch.nn.Linear(2, 2), x=torch.zeros(1, device="meta"))
    zh, en = both_editions(show)
    assert "cpu 和 meta" in zh and " and " not in zh, zh
    assert "cpu and meta" in en


def test_device_report_lists_three_devices_in_each_language(monkeypatch):
    """Three devices (a GPU machine's cpu, cuda:0 and meta) are listed, with 、 in Chinese, none
    joined by an English 'and', and the verdict does not say "both"."""
    from course_lib import device

    monkeypatch.setattr(device, "devices_of", lambda thing: [thing])
    show = lambda: device.device_report(model="cpu", x="cuda:0", y="meta")  # noqa: E731
    zh, en = both_editions(show)
    assert "cpu、cuda:0、meta" in zh and " and " not in zh and "都在用" in zh, zh
    assert "cpu, cuda:0, meta are all in use" in en and "both" not in en, en
