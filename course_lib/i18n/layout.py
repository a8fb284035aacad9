"""Laying out text that may be Chinese: display width, padding and wrapping (terminal output).

A Chinese character takes two columns of a terminal or a monospace cell, and Chinese text has no
spaces to break lines at: `wrap` breaks between any two Chinese characters, and never inside an
English word, a number or code.
"""
import re
import unicodedata

_TOKEN = re.compile(r"\s+|[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]|[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]+")
_NO_LINE_START = set("，。；：！？、）》」』】,.;:!?)")


def width(text: str) -> int:
    """Columns `text` takes in a monospace font (wide characters count two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def rjust(text: str, columns: int) -> str:
    return " " * max(0, columns - width(text)) + text


def wrap(line: str, columns: int, indent: str = "    ") -> str:
    """`line` broken into lines of at most `columns` columns (a longer word stays whole), between words
    or between Chinese characters; continuation lines get the line's own indentation plus `indent`."""
    lead = line[:len(line) - len(line.lstrip())]
    tokens = _TOKEN.findall(line[len(lead):])
    lines, current = [], lead
    for token in tokens:
        if token.isspace():
            if current.strip():
                current += " "
            continue
        fits = width(current) + width(token) <= columns
        if fits or not current.strip() or token[0] in _NO_LINE_START:
            current += token
        else:
            lines.append(current.rstrip())
            current = lead + indent + token
    lines.append(current.rstrip())
    return "\n".join(lines)


__all__ = ["width", "rjust", "wrap"]
