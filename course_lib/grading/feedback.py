"""Per-student feedback in Markdown: what passed, what
failed, and why, without hidden-test values (grader).

Visible tests show their message, expected and got values and hint (the student could see
them in the notebook anyway); hidden tests show only their name and passed/failed.
"""

import re

_ICON = {"correct": "✔", "incorrect": "✘", "not attempted": "…"}


def _md(text) -> str:
    """Student text inside Markdown: one paragraph, no raw HTML."""
    return re.sub(
        r"[<>]", lambda m: {"<": "&lt;", ">": "&gt;"}[m.group()], " ".join(str(text).split())
    )


def file_name(submission: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", submission).strip("._") or "submission"


def render(record: dict) -> str:
    """The Markdown feedback for one submission's record (see grader.Submission.record)."""
    lines = [
        f"# Feedback: {_md(record['submission'])}",
        "",
        f"**Total: {record['points']:g} / {record['max_points']:g} points**",
        "",
    ]
    run = record.get("run", {})
    if run.get("summary"):
        lines += [f"Notebook: {_md(run['summary'])}", ""]
    errors = [c for c in run.get("cells", []) if c.get("status") != "ok"]
    if errors:
        lines.append("Cells that did not finish cleanly when your notebook was run from the top:")
        lines += [f"- cell {c['cell']}: {_md(c.get('error', ''))[:300]}" for c in errors[:20]]
        if len(errors) > 20:
            lines.append(f"- ... and {len(errors) - 20} more")
        lines.append("")
    for row in record["exercises"]:
        icon = _ICON.get(row["status"], "!")
        lines.append(
            f"## {icon} {_md(row['title'])} (`{row['exercise']}`): "
            f"{row['points']:g}/{row['max_points']:g} points, {row['status']}"
        )
        if row.get("answer_shown"):
            lines.append(f"Your answer: `{_md(row['answer_shown'])[:200]}`")
        if row.get("detail"):
            lines.append(_md(row["detail"])[:1500])
        for t in row.get("tests", []):
            mark = "passed" if t["passed"] else "FAILED"
            label = f"{_md(t['name'])} (hidden test)" if t["hidden"] else _md(t["name"])
            lines.append(f"- {label}: {mark}")
            if not t["passed"] and t.get("feedback") and not t["hidden"]:
                lines.append(f"  - {_md(t['feedback'])[:1500]}")
        lines.append("")
    texts = record.get("texts") or {}
    if texts:
        lines.append("## Your written answers (read by your teacher)")
        for name, text in sorted(texts.items()):
            lines += [f"### {_md(name)}", "", _md(text)[:3000], ""]
    return "\n".join(lines).rstrip() + "\n"
