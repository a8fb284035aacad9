"""Learner-facing texts with Markdown backticks: code shown as code in HTML, readable as plain text.

Quizzes, checks and hints (all chapters) write code as `like_this`; `html` turns each such span
into <code> (everything else escaped), `plain` keeps the backticks, which read well in a terminal.
"""

import re
from html import escape

_CODE = re.compile(r"`([^`\n]+)`")
# **emphasis**, as the Chinese texts write what the English puts in capitals ("LAUNCH" -> **启动**);
# never inside a number or a word ("10**9", "a**b")
_BOLD = re.compile(r"(?<![A-Za-z0-9*])\*\*([^*\s](?:[^*\n]{0,38}[^*\s])?)\*\*(?![A-Za-z0-9*])")


def _prose(part: str) -> str:
    return _BOLD.sub(r"<b>\1</b>", escape(part))


def html(text) -> str:
    """Escaped HTML of `text`, with `backtick spans` as <code> and **emphasis** as <b>."""
    parts = _CODE.split(str(text))
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else _prose(p) for i, p in enumerate(parts))


def plain(text) -> str:
    """`text` for a terminal: unchanged (backticks mark the code)."""
    return str(text)


def without_marks(text) -> str:
    """`text` with the backticks dropped, for lengths and comparisons."""
    return _CODE.sub(lambda m: m.group(1), str(text))
