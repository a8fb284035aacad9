"""Per-student feedback in Markdown: what passed, what
failed, and why, without hidden-test values (grader).

Visible tests show their message, expected and got values and hint (the student could see
them in the notebook anyway); hidden tests show only their name and passed/failed.

Everything a student's notebook can put in the feedback (its file name, its cells' errors, the
answers shown, the tests' messages with the values its code returned, the written answers) is
rendered as text only, whatever renders the file (an LMS, GitHub, JupyterLab): no link, image,
raw HTML, autolink or math can come from it. One-line texts are escaped (`text`): HTML's and
math's characters as entities; brackets, backticks, emphasis marks, a leading list or heading
marker, and the colon, dot and at sign that bare-URL and e-mail autolinks look for, with a
backslash; a written answer is a fenced code block whose fence is longer than any run of
backticks inside (`fenced`).
tests/test_feedback_text_only.py renders the result with mistune, raw HTML and autolinks on.
"""

import re

from ..exercises import index
from ..i18n import LANGUAGES, tr
from ..i18n.catalogue import in_language, join, tr_join

_ICON = {"correct": "✔", "incorrect": "✘", "not attempted": "…"}
ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "$": "&#36;"}
MARKUP = re.compile(
    r"[&<>$]"  # HTML and math: entities
    r"|[\\`*_\[\]]"  # links, images, code and emphasis: a backslash
    r"|:(?=\S)|@(?=\S)|\.(?=[A-Za-z])"  # what autolinks look for (scheme:, a@b, www.x)
    r"|^[-+=#]"  # a list or heading marker at the start
)


def text(value) -> str:
    """Student-controlled text inside Markdown: one line that renders as the same text only."""
    return MARKUP.sub(
        lambda m: ENTITIES.get(m.group(), "\\" + m.group()), " ".join(str(value).split())
    )


def fenced(value, info: str = "text") -> list:
    """Lines of a fenced code block holding `value` as it is: no line of it can close the fence."""
    body = str(value).replace("\r\n", "\n").replace("\r", "\n")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body.split("\n"), fence]


def _md(value) -> str:
    """The course's own text inside Markdown (a heading with `code`): one line, no raw HTML."""
    return re.sub(
        r"[<>]", lambda m: {"<": "&lt;", ">": "&gt;"}[m.group()], " ".join(str(value).split())
    )


def file_name(submission: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", submission).strip("._") or "submission"


def chapter_of(record: dict) -> str:
    """The chapter number a graded record is for ('03'), from its exercises; '' if none."""
    ids = [e["exercise"] for e in record.get("exercises", [])]
    head = ids[0].split(".", 1)[0] if ids else ""
    return head[2:] if head.startswith("ch") and head[2:].isdigit() else ""


def written_heading(record: dict, name) -> str:
    """A written answer's heading (current language): its declared title and name, else the name.
    The title comes from written.json (exercises/index.py): no chapter module is imported."""
    title = index.written_titles().get((chapter_of(record), str(name)))
    return f"{tr(title)} ({name})" if title else str(name)


def written_answers(record: dict) -> list:
    """[(heading, answer)] of the record's written answers, by name (current language)."""
    texts = record.get("texts") or {}
    return [(written_heading(record, name), str(texts[name])) for name in sorted(texts)]


def render(record: dict) -> str:
    """The Markdown feedback for one submission's record (see grader.Submission.record), in the
    language of the notebook the student handed in (the record's "language")."""
    lang = record.get("language") if record.get("language") in LANGUAGES else "en"
    with in_language(lang):
        return _render(record)


def _cell_label(cell: dict) -> str:
    return f"cell {cell.get('cell')}:"


def _parts(value) -> str:
    """A run summary or a cell's error, each of its "; "-separated parts translated."""
    return tr_join(str(value).split("; "), "; ")


def _total(record: dict) -> str:
    return f"Total: {record['points']:g} / {record['max_points']:g} points"


def _render(record: dict) -> str:
    lines = [
        f"# {join([tr('Feedback:'), text(record['submission'])])}",
        "",
        f"**{tr(_total(record))}**",
        "",
    ]
    run = record.get("run", {})
    if run.get("summary"):
        lines += [join([tr("Notebook:"), text(_parts(run["summary"]))]), ""]
    errors = [c for c in run.get("cells", []) if c.get("status") != "ok"]
    if errors:
        lines.append(
            tr("Cells that did not finish cleanly when your notebook was run from the top:")
        )
        lines += [
            f"- {join([tr(_cell_label(c)), text(_parts(c.get('error', ''))[:300])])}"
            for c in errors[:20]
        ]
        if len(errors) > 20:
            lines.append(f"- {tr(f'... and {len(errors) - 20} more')}")
        lines.append("")
    for row in record["exercises"]:
        icon = _ICON.get(row["status"], "!")
        heading = tr(
            f"{row['title']} (`{row['exercise']}`): "
            f"{row['points']:g}/{row['max_points']:g} points, {row['status']}"
        )
        lines.append(f"## {icon} {_md(heading)}")
        if row.get("answer_shown"):
            lines.append(join([tr("Your answer:"), text(str(row["answer_shown"])[:200])]))
        if row.get("detail"):
            lines.append(text(tr(row["detail"])[:1500]))
        for t in row.get("tests", []):
            label = f"{t['name']} (hidden test)" if t["hidden"] else t["name"]
            lines.append(f"- {text(tr(f'{label}: ' + ('passed' if t['passed'] else 'FAILED')))}")
            if not t["passed"] and t.get("feedback") and not t["hidden"]:
                lines.append(f"  - {text(str(t['feedback'])[:1500])}")
        lines.append("")
    answers = written_answers(record)
    if answers:
        lines.append(f"## {tr('Your written answers (read by your teacher)')}")
        for heading, answer in answers:
            lines += [f"### {text(heading)}", "", *fenced(answer[:3000]), ""]
    return "\n".join(lines).rstrip() + "\n"
