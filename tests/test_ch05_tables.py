"""Chapter 05's tables: the profiler's fits a notebook's width, and the Chinese ones line up, as
text by display width and in JupyterLab as HTML tables (issue 36, item 9)."""

import re
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
import torch

from course_lib import ch05_speedups as ch
from course_lib import profiling
from course_lib.i18n.catalogue import CJK, in_language
from course_lib.i18n.layout import Table, width

LONG = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def event(key, self_us, total_us, count=4, device_self=0.0, device_total=0.0):
    return SimpleNamespace(
        key=key,
        self_cpu_time_total=self_us,
        cpu_time_total=total_us,
        self_device_time_total=device_self,
        device_time_total=device_total,
        count=count,
    )


class FakeProfile:
    """What top_operators reads of a profile: key_averages()."""

    events = [
        event("aten::mm", 1_234.0, 1_500.0, 12, device_self=900_000.0, device_total=900_000.0),
        event(LONG, 400_000.0, 4_000_000.0, 4),
        event("aten::bmm", 3_000_000.0, 3_000_500.0, 64, device_self=10.0, device_total=10.0),
        event("Optimizer.step#Adam.step" * 3, 20.0, 90.0, 4),
    ]

    def key_averages(self):
        return self.events


def cell_spans(line: str, cells: list) -> list:
    """(first, last) display column of each cell of a text row, found left to right."""
    spans, at = [], 0
    for cell in cells:
        start = line.index(cell, at) if cell else at
        spans.append((width(line[:start]), width(line[: start + len(cell)])))
        at = start + len(cell)
    return spans


def assert_columns_line_up(table: Table) -> None:
    """Every left-aligned column starts, every right-aligned one ends, at one display column."""
    lines = str(table).splitlines()[1 if table.title else 0 :]
    rows = ([table.header] if table.header else []) + table.rows
    spans = [cell_spans(line, row) for line, row in zip(lines, rows)]
    for i in range(len(rows[0])):
        edge = 1 if i in table.right else 0
        found = {s[i][edge] for s, row in zip(spans, rows) if i < len(row) and row[i]}
        assert len(found) == 1, (i, found, lines)


class Cells(HTMLParser):
    """The cells of an HTML table, row by row."""

    def __init__(self):
        super().__init__()
        self.rows, self.open = [], False

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        self.open = tag in ("td", "th")
        if self.open:
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        self.open = self.open and tag not in ("td", "th")

    def handle_data(self, data):
        if self.open:
            self.rows[-1][-1] += data


def html_cells(table) -> list:
    parser = Cells()
    parser.feed(table._repr_html_())
    return parser.rows


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_profiler_table_fits_a_notebook_and_is_sorted_by_self_time(device):
    table = profiling.top_operators(FakeProfile(), device, rows=8)
    lines = str(table).splitlines()
    assert max(len(line) for line in lines) <= 100, max(map(len, lines))
    assert lines[0].startswith("Name") and "Self CPU" in lines[0]
    assert ("Self CUDA" in lines[0]) == (device == "cuda")
    first = [row[0] for row in table.rows]
    assert first[0] == ("aten::mm" if device == "cuda" else "aten::bmm")  # self time, that device
    assert any(name.startswith("enumerate(DataLoader)#") for name in first)
    assert_columns_line_up(table)
    assert html_cells(table)[1:] == table.rows  # JupyterLab shows the same rows as HTML


def test_the_profiler_table_speaks_chinese_and_keeps_pytorchs_names():
    with in_language("zh"):
        table = profiling.top_operators(FakeProfile(), "cpu")
    assert table.header[:2] == ["名称", "自身 CPU"] and "aten::bmm" in str(table)
    assert CJK.search(table.notes[0]) and max(width(line) for line in str(table).split("\n")) <= 100


CHINESE_TABLES = {
    "precision_pitfalls": lambda: ch.precision_pitfalls(),
    "show_autocast_ops": lambda: ch.show_autocast_ops("cpu", torch.bfloat16),
    "float_formats": lambda: ch.float_formats(),
    "autocast_dtypes": lambda: ch.text_table(
        ch.autocast_dtypes(
            torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()),
            torch.randn(4, 8),
            torch.tensor([0, 1, 2, 0]),
            lambda out, y: out.float().sum(),
            "cpu",
            torch.bfloat16,
        )
    ),
}


@pytest.mark.parametrize("name", sorted(CHINESE_TABLES))
def test_chinese_tables_line_up_as_text_and_as_html(name):
    with in_language("zh"):
        table = CHINESE_TABLES[name]()
    assert isinstance(table, Table) and CJK.search(str(table))
    assert_columns_line_up(table)
    cells = html_cells(table)
    assert cells == ([table.header] if table.header else []) + table.rows
    assert len({len(row) for row in cells}) == 1  # one cell per column in every row


def test_a_table_prints_as_its_text_and_pickles_as_plain_text():
    import pickle

    table = Table([["层 0", "1.5"], ["loss", "12"]], ["名称", "ms"], title="t", notes=["n"])
    assert str(table) == "t\n名称   ms\n层 0  1.5\nloss   12\nn"
    assert table.right == {1} and type(pickle.loads(pickle.dumps(table))) is str
    assert re.search(r"<th style='[^']*right'>ms</th>", table._repr_html_())


def test_jupyter_shows_a_table_as_html_and_its_text_unquoted():
    from IPython.core.formatters import DisplayFormatter

    with in_language("zh"):
        table = ch.precision_pitfalls()
    shown, _ = DisplayFormatter().format(table)
    assert shown["text/plain"] == str(table)  # not the repr of a str: no quotes, no \n
    assert shown["text/html"].count("<tr>") == len(table.rows) + 1
