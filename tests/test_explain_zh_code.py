"""The explainer's fix code in the reader's language (issue 36 item 6): its `# comments` are
translated through the catalogue, the code and the comments' column stay as they are."""

import html
import json
import re
import subprocess
import sys

import pytest

from course_lib.explainer import (
    ENTRIES,
    FAMILIES,
    Explanation,
    comments,
    explain_text,
    fix_code,
)
from course_lib.i18n.catalogue import CJK, is_prose, untranslated
from course_lib.i18n.layout import width

ALL = list(ENTRIES) + list(FAMILIES)
UNSCALE_TWICE = (
    "RuntimeError: unscale_() has already been called on this optimizer since the last update()."
)


def _split(line: str) -> tuple:
    """(the code before the comment, its display width, the comment) of a line with a `#`."""
    code, _, comment = line.partition("#")
    return code, width(code), comment.strip()


def _commented(fix: str) -> list:
    return [line for line in fix.split("\n") if "#" in line]


def test_every_commented_line_of_every_fix_is_found():
    for entry in ALL:
        assert len(comments(entry.fix)) == len(_commented(entry.fix)), entry.id


def test_every_comment_of_every_entrys_fix_code_has_a_chinese_entry():
    missing = sorted({c for entry in ALL for c in comments(entry.fix) if untranslated(c, "zh")})
    assert missing == [], f"{len(missing)} comments of fix code without a Chinese entry"


@pytest.mark.parametrize("entry", ALL, ids=lambda e: e.id)
def test_the_chinese_fix_code_keeps_the_code_and_the_column(zh, entry):
    shown = fix_code(entry.fix)
    assert len(shown.split("\n")) == len(entry.fix.split("\n"))
    for english, chinese in zip(_commented(entry.fix), _commented(shown)):
        code, column, comment = _split(english)
        assert _split(chinese)[:2] == (code, column), (entry.id, chinese)
        said = _split(chinese)[2]
        assert not is_prose(comment) or CJK.search(said), (entry.id, said)
    bare = [line for line in entry.fix.split("\n") if "#" not in line]
    assert [line for line in shown.split("\n") if "#" not in line] == bare


def test_a_known_entrys_panel_text_and_json_show_chinese_comments(zh):
    exp = explain_text(UNSCALE_TWICE)
    assert exp.entry.id == "unscale_twice"
    chinese = "scaler.unscale_(opt)      # 只调用一次，就在梯度裁剪之前"
    assert f"    {chinese}" in str(exp).split("\n")
    assert html.escape(chinese) in exp._repr_html_()
    assert chinese in exp.to_dict()["fix"].split("\n")
    assert "once, just before clipping" not in str(exp) + exp._repr_html_()
    assert "every step" not in exp.to_dict()["fix"]


def test_the_command_shows_chinese_comments_with_lang_zh(tmp_path):
    (tmp_path / "log.txt").write_text(UNSCALE_TWICE)
    out = subprocess.run(
        [sys.executable, "-m", "course_lib", "explain", str(tmp_path / "log.txt"), "--lang", "zh"]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    fix = json.loads(out.stdout.strip().split("\n")[-1])["fix"]
    assert "scaler.update()           # 每一步都调用" in fix.split("\n")


def test_the_english_rendering_is_unchanged():
    for entry in ALL:
        assert fix_code(entry.fix) == entry.fix, entry.id
    exp = explain_text(UNSCALE_TWICE)
    assert "    scaler.unscale_(opt)      # once, just before clipping" in str(exp).split("\n")
    assert exp.to_dict()["fix"] == exp.entry.fix
    assert f"<pre style='margin:2px 0'>{html.escape(exp.entry.fix)}</pre>" in exp._repr_html_()


def _prose(exp) -> list:
    """The panel's text lines without code: fix code lines keep only their comment, and
    `code spans` are left out."""
    code = set(fix_code(exp.entry.fix).split("\n"))
    lines = [
        line[4:].partition("#")[2] if line[4:] in code else line for line in str(exp).split("\n")
    ]
    return [re.sub(r"`[^`\n]*`", "", line) for line in lines]


def _nested(line: str) -> bool:
    """True if `line` has a bracket inside a bracket, either kind: "（a（b）c）", "（a (b) c）"."""
    depth = 0
    for c in line:
        depth = depth + 1 if c in "(（" else max(0, depth - 1) if c in ")）" else depth
        if depth > 1:
            return True
    return False


def test_the_chinese_panel_has_no_brackets_inside_brackets(zh):
    found = [
        (entry.id, line.strip())
        for entry in ALL
        for line in _prose(Explanation(True, "err", entry))
        if _nested(line)
    ]
    assert found == []
