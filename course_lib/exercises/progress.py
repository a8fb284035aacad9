"""Self-study progress, kept in a small JSON file (COURSE_PROGRESS_FILE overrides where)."""

import json
import os
import time
from pathlib import Path

from .results import STATUS_RANK


def progress_path() -> Path:
    custom = os.environ.get("COURSE_PROGRESS_FILE")
    return Path(custom) if custom else Path.home() / ".pytorch-gpu-course" / "progress.json"


def load() -> dict:
    """Exercise id -> best result so far; an unreadable file counts as empty, never an error."""
    try:
        data = json.loads(progress_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def record(result) -> None:
    """Keep the best status per exercise; written atomically, failures only warn."""
    if os.environ.get("COURSE_PROGRESS_FILE") == "off":
        return
    data = load()
    old = data.get(result.exercise_id)
    if old and STATUS_RANK.get(old.get("status"), 0) > STATUS_RANK[result.status]:
        return
    entry = {
        "status": result.status,
        "points": round(result.points, 3),
        "max_points": result.max_points,
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    if old and old.get("hints"):
        entry["hints"] = old["hints"]
    data[result.exercise_id] = entry
    _write(data)


def record_hints(exercise_id: str, revealed: int) -> None:
    """Note how many hints the learner has revealed for an exercise (the most so far)."""
    if os.environ.get("COURSE_PROGRESS_FILE") == "off":
        return
    data = load()
    entry = data.setdefault(exercise_id, {"status": "not attempted", "points": 0})
    if not isinstance(entry, dict) or entry.get("hints", 0) >= revealed:
        return
    entry["hints"] = revealed
    _write(data)


def _write(data: dict) -> None:
    path = progress_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError as err:
        print(f"(progress not saved: {err})")


def chapter_summary(exercises) -> list:
    """Rows of (chapter, done, attempted, total, points, max_points) for the progress view."""
    data = load()
    rows = {}
    for ex in exercises:
        row = rows.setdefault(
            ex.chapter.number,
            {
                "chapter": ex.chapter.number,
                "title": ex.chapter.title,
                "done": 0,
                "attempted": 0,
                "total": 0,
                "points": 0.0,
                "max_points": 0,
            },
        )
        entry = data.get(ex.id, {})
        row["total"] += 1
        row["max_points"] += ex.points
        row["points"] += entry.get("points", 0) if entry.get("status") == "correct" else 0
        row["done"] += entry.get("status") == "correct"
        row["attempted"] += entry.get("status") == "incorrect"
    return [rows[k] for k in sorted(rows)]
