"""The course's one CSV writer: every CSV a teacher may open in a spreadsheet goes through `text`.

The gradebook, its summary and texts (`gradebook.py`), the nbgrader and Canvas exports
(`classroom/exports.py`) and `collected.csv` (`classroom/collect.py`) hold names, answers and
messages that students control. As OWASP's CSV-injection guidance says, a cell a spreadsheet
could run as a formula (one beginning with =, +, -, @, a tab or a carriage return, also after
leading spaces) gets a leading apostrophe, so it is shown as text. Only strings are changed: a
number (a Python int or float, or a string that is a plain decimal number such as "-1.5") stays
a number. The csv module quotes the separator, quotes and line breaks.
`tests/test_csv_injection.py` checks every export and that no other module writes CSV.
"""

import csv
import io
import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutral(text: str) -> str:
    """A cell a spreadsheet shows as text, never runs: a leading =, +, -, @, tab, carriage
    return or line break (also after leading whitespace) gets a leading apostrophe."""
    if NUMBER.fullmatch(text):
        return text
    risky = text.startswith(FORMULA_STARTS) or text.lstrip().startswith(FORMULA_STARTS)
    return "'" + text if risky else text


def clean(value) -> str:
    """One CSV field on a single line (at most 2000 characters), never a spreadsheet formula."""
    if isinstance(value, float):
        text = f"{value:g}"
    else:
        text = value if isinstance(value, str) else str(value)
    return neutral(" ".join(text.split())[:2000])


def cell(value):
    """What `text` writes for one value: a string made neutral, anything else as it is."""
    return neutral(value) if isinstance(value, str) else value


def text(rows) -> str:
    """The CSV text of `rows` (lists of cells), each string cell made neutral."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([cell(c) for c in row])
    return buf.getvalue()
