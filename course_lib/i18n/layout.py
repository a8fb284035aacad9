"""Laying out text that may be Chinese: display width, padding and wrapping (terminal output).

A Chinese character takes two columns of a terminal or a monospace cell, and Chinese text has no
spaces to break lines at: `wrap` breaks between any two Chinese characters, and never inside an
English word, a number or code.
"""

import re
import unicodedata

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


__all__ = ["width", "rjust", "ljust", "wrap"]
