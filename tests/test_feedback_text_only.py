"""Feedback renders only as text (issue 34, item 7): whatever a student's notebook puts in its
feedback (its file name, a cell's error, the answer shown, a test's message with the values its
code returned, a written answer) carries no link, image or HTML that runs or loads, in the
feedback Markdown (rendered here with mistune, raw HTML and bare-URL autolinks on: the most a
renderer does) and in Gradescope's results.json (declared plain text).
"""

import re

import mistune
import pytest

from course_lib.classroom.autograder import refusal, results
from course_lib.grading import feedback

PAYLOADS = {
    "javascript link": "[click me](javascript:alert(document.cookie))",
    "tracking image": "![](http://tracker.example/pixel.png?who=alice)",
    "reference link": "[click me][x]\n\n[x]: javascript:alert(1)",
    "raw img": "<img src=x onerror=alert(1)>",
    "raw script": "<script>alert(1)</script>",
    "autolink": "<http://tracker.example/auto>",
    "bare url": "see http://tracker.example/bare or www.tracker.example or a@tracker.example",
    "entities": "&#60;script&#62;alert(1)&#60;/script&#62;",
    "fence breakout": "````\n</code></pre><script>alert(1)</script>\n````\n![](http://t.example/x)",
    "code span breakout": "`` ` ``<img src=x onerror=alert(1)>",
    "math": "$\\href{javascript:alert(1)}{click}$",
}
LIVE = re.compile(r"<\s*(a|img|script|iframe|svg|object|embed|link|style)\b", re.I)
RENDER = mistune.create_markdown(escape=False, plugins=["url", "strikethrough", "table"])


def record(payload: str) -> dict:
    """A feedback record with `payload` in every field a student's notebook controls."""
    return {
        "submission": payload,
        "points": 1,
        "max_points": 3,
        "language": "en",
        "run": {
            "summary": payload,
            "cells": [{"cell": 3, "status": "error", "error": f"ValueError: {payload}"}],
        },
        "texts": {"reflection": payload},
        "exercises": [
            {
                "exercise": "ch01.pick_device",
                "title": "Pick the device",
                "status": "incorrect",
                "points": 1,
                "max_points": 3,
                "answer_shown": payload,
                "detail": payload,
                "tests": [
                    {"name": "visible one", "hidden": False, "passed": False, "feedback": payload},
                    {"name": "hidden one", "hidden": True, "passed": False, "feedback": "x"},
                ],
            }
        ],
    }


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS)
def test_student_text_in_the_feedback_markdown_renders_as_text_only(payload):
    markdown = feedback.render(record(payload))
    html = RENDER(markdown)
    assert not LIVE.findall(html), html
    assert "javascript:" not in re.sub(r">[^<]*<", "><", html)  # in no attribute
    assert "&#36;" in markdown or "$" not in payload  # no math delimiter outside code


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS)
def test_a_written_answer_is_shown_whole_in_a_block_it_cannot_close(payload):
    html = RENDER("\n".join(feedback.fenced(payload)))
    assert html.count("<pre>") == 1 and html.rstrip().endswith("</code></pre>"), html
    shown = re.sub(r"^<pre><code[^>]*>|</code></pre>\s*$", "", html)
    shown = shown.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    assert shown.replace("&amp;", "&").rstrip("\n") == payload


def test_the_escaped_text_reads_as_the_students_text():
    """What renders is what the student wrote, character for character (one line)."""
    payload = "got [1, 2] (a*b_c) at a@b.example: http://x.example $5 <tag> & `code`"
    html = RENDER(feedback.text(payload))
    shown = re.sub(r"</?p>", "", html).strip()
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&amp;", "&")):
        shown = shown.replace(entity, char)
    assert shown == payload


def test_gradescope_results_declare_every_output_plain_text():
    rows = [
        {"exercise": "ch01.pick_device", "points": "1", "max_points": "3", "detail": ""},
        {"exercise": "TOTAL", "points": "1", "max_points": "3", "status": "graded"},
    ]
    settings = {"chapter": "01", "title": "Device check", "points": 3}
    for data in (results(rows, record(PAYLOADS["raw script"]), settings), refusal("x", settings)):
        assert data["output_format"] == "text"
        assert data["test_output_format"] == data["test_name_format"] == "text"
        assert data["tests"] and all(t["output_format"] == "text" for t in data["tests"])
