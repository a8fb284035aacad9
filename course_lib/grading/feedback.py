"""Per-student feedback in Markdown: what passed, what
failed, and why, without hidden-test values (grader).

Visible tests show their message, expected and got values and hint (the student could see
them in the notebook anyway); hidden tests show only their name and passed/failed.
"""

import re

from ..i18n import LANGUAGES, tr
from ..i18n.catalogue import in_language, join, tr_join

_ICON = {"correct": "✔", "incorrect": "✘", "not attempted": "…"}


def _md(text) -> str:
    """Student text inside Markdown: one paragraph, no raw HTML."""
    return re.sub(
        r"[<>]", lambda m: {"<": "&lt;", ">": "&gt;"}[m.group()], " ".join(str(text).split())
    )


def file_name(submission: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", submission).strip("._") or "submission"


def render(record: dict) -> str:
    """The Markdown feedback for one submission's record (see grader.Submission.record), in the
    language of the notebook the student handed in (the record's "language")."""
    lang = record.get("language") if record.get("language") in LANGUAGES else "en"
    with in_language(lang):
        return _render(record)


def _cell_label(cell: dict) -> str:
    return f"cell {cell.get('cell')}:"


def _parts(text) -> str:
    """A run summary or a cell's error, each of its "; "-separated parts translated."""
    return tr_join(str(text).split("; "), "; ")


def _total(record: dict) -> str:
    return f"Total: {record['points']:g} / {record['max_points']:g} points"


def _render(record: dict) -> str:
    lines = [
        f"# {join([tr('Feedback:'), _md(record['submission'])])}",
        "",
        f"**{tr(_total(record))}**",
        "",
    ]
    run = record.get("run", {})
    if run.get("summary"):
        lines += [join([tr("Notebook:"), _md(_parts(run["summary"]))]), ""]
    errors = [c for c in run.get("cells", []) if c.get("status") != "ok"]
    if errors:
        lines.append(
            tr("Cells that did not finish cleanly when your notebook was run from the top:")
        )
        lines += [
            f"- {join([tr(_cell_label(c)), _md(_parts(c.get('error', '')))[:300]])}"
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
            lines.append(join([tr("Your answer:"), f"`{_md(row['answer_shown'])[:200]}`"]))
        if row.get("detail"):
            lines.append(_md(tr(row["detail"]))[:1500])
        for t in row.get("tests", []):
            label = f"{t['name']} (hidden test)" if t["hidden"] else t["name"]
            lines.append(f"- {_md(tr(f'{label}: ' + ('passed' if t['passed'] else 'FAILED')))}")
            if not t["passed"] and t.get("feedback") and not t["hidden"]:
                lines.append(f"  - {_md(t['feedback'])[:1500]}")
        lines.append("")
    texts = record.get("texts") or {}
    if texts:
        lines.append(f"## {tr('Your written answers (read by your teacher)')}")
        for name, text in sorted(texts.items()):
            lines += [f"### {_md(name)}", "", _md(text)[:3000], ""]
    return "\n".join(lines).rstrip() + "\n"
