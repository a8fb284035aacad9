"""Laying out text that may be Chinese: display width, padding and wrapping (terminal output).

A Chinese character takes two columns of a terminal or a monospace cell, and Chinese text has no
spaces to break lines at: `wrap` breaks between any two Chinese characters, and never inside an
English word, a number or code.
"""

import re
import unicodedata
from html import escape

_WIDE = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_TOKEN = re.compile(
    rf"\s+|[{_WIDE}]|[^\s{_WIDE}]+"
)  # spaces, one Chinese character, or a Latin word
_NO_LINE_START = set("，。；：！？、）》」』】,.;:!?)")


def width(text: str) -> int:
    """Columns `text` takes in a monospace font (wide characters count two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def rjust(text: str, columns: int) -> str:
    return " " * max(0, columns - width(text)) + text


def ljust(text: str, columns: int) -> str:
    """`text` padded on the right to `columns` display columns (str.ljust for Chinese too)."""
    return text + " " * max(0, columns - width(text))


def wrap(line: str, columns: int, indent: str = "    ") -> str:
    """`line` broken into lines of at most `columns` columns (a longer word stays whole), between
    words
    or between Chinese characters; continuation lines get the line's own indentation plus
    `indent`."""
    lead = line[: len(line) - len(line.lstrip())]
    tokens = _TOKEN.findall(line[len(lead) :])
    lines, current = [], [lead]
    for token in tokens:
        if token.isspace():
            if "".join(current).strip():
                current.append(" ")
            continue
        if width("".join(current)) + width(token) <= columns or not "".join(current).strip():
            current.append(token)
            continue
        # a closing mark never starts a line: the character before it goes down with it
        carried = []
        if token[0] in _NO_LINE_START and len(current) > 2 and not current[-1].isspace():
            carried = [current.pop()]
        lines.append("".join(current).rstrip())
        current = [lead + indent] + carried + [token]
    lines.append("".join(current).rstrip())
    return "\n".join(lines)


_NUMBER = re.compile(r"^[-+]?(?:\d[\d,.]*|inf|nan)(?:e[-+]?\d+)?(?:\s?(?:%|ms|us|s|x))?$")
_CELL = "padding:1px 10px;text-align:{}"


def is_number(cell: str) -> bool:
    """True for a cell such as "12", "3.5 ms", "59.72%", "1e-08" or "inf" (right-aligned)."""
    return bool(_NUMBER.match(cell.strip()))


def _aligned(cells, widths, right, gap: str) -> str:
    """One row of a text table: each cell padded to its column's display width."""
    last = len(cells) - 1
    return gap.join(
        rjust(c, widths[i]) if i in right else c if i == last else ljust(c, widths[i])
        for i, c in enumerate(cells)
    )


class Table(str):
    """A table that prints as plain text, its columns padded by display width (a terminal), and
    that Jupyter shows as an HTML table: a browser draws a Chinese character in a monospace cell
    about, not exactly, two columns wide, so only HTML lines Chinese columns up there.

    A `str`, so it prints, splits and compares as the text; `title` goes above, `notes` (lines)
    below; columns whose cells are all numbers are right-aligned."""

    def __new__(cls, rows, header=None, title: str = "", notes=(), gap: int = 2):
        header = [str(c) for c in header] if header else []
        body = [[str(c) for c in row] for row in rows]
        every = ([header] if header else []) + body
        columns = max(map(len, every), default=0)
        widths = [
            max((width(r[i]) for r in every if i < len(r)), default=0) for i in range(columns)
        ]
        right = {
            i for i in range(columns) if body and all(i < len(r) and is_number(r[i]) for r in body)
        }
        lines = [title] if title else []
        lines += [_aligned(r, widths, right, " " * gap).rstrip() for r in every]
        text = super().__new__(cls, "\n".join(lines + list(notes)))
        text.header, text.rows, text.title, text.notes, text.right = (
            header, body, title, list(notes), right
        )  # fmt: skip
        return text

    def __reduce__(self):  # pickled (sent between processes) as the plain text
        return str, (str(self),)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain: the text, unquoted
        printer.text(str(self))

    def _repr_html_(self) -> str:
        def row(cells, tag="td"):
            return (
                "<tr>"
                + "".join(
                    f"<{tag} style='{_CELL.format('right' if i in self.right else 'left')}'>"
                    f"{escape(c)}</{tag}>"
                    for i, c in enumerate(cells)
                )
                + "</tr>"
            )

        head = row(self.header, "th") if self.header else ""
        title = f"<p>{escape(self.title)}</p>" if self.title else ""
        notes = "".join(f"<p style='margin:2px 0'>{escape(n)}</p>" for n in self.notes)
        body = "".join(row(r) for r in self.rows)
        return f"{title}<table class='course-text-table'>{head}{body}</table>{notes}"


__all__ = ["Table", "is_number", "width", "rjust", "ljust", "wrap"]
