"""The class report: what a graded class got right and wrong, on one offline page (teacher).

Read from what `grade` wrote (each submission's JSON record in GRADEBOOK_feedback/): per
exercise how many got full points, partial, none or did not attempt it; the failing tests
ranked by how many students failed them, with the feedback they got and the key's known
mistake it matches; per quiz how often each option was chosen and the misconception each
wrong option stands for; the totals' histogram; the students who need a word; each written
answer beside its question, what its chapter expects (written.py) and the teacher's points so
far. Written as
GRADEBOOK.report.html (figures inline, no network) and GRADEBOOK.report.csv (the same counts).
Everything a student wrote is escaped: the page shows it as text, never as markup.
"""

import base64
import html
import io
import json
from collections import Counter
from pathlib import Path

from ..grading import csvsafe, gradebook
from ..i18n import language, tr
from ..i18n.catalogue import in_language
from . import written

BANDS = ("full points", "partial", "no points", "not attempted")
NEEDS_A_WORD = (  # (what the record says, why the teacher should look)
    (
        lambda r: not any(e["status"] != "not attempted" for e in r["exercises"]),
        "nothing attempted",
    ),
    (lambda r: r["status"] not in ("ok", "correct", ""), "not graded cleanly"),
    (lambda r: bool(r.get("flags")), "flagged for review"),
)


class NoRecords(Exception):
    """The gradebook has no feedback records beside it: nothing to report."""


def load(book: Path) -> list:
    """The JSON records `grade` wrote beside `book`, one per submission, by name."""
    folder = gradebook.paths(Path(book))["feedback"]
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    records = [json.loads(p.read_text(encoding="utf-8")) for p in files if not p.is_symlink()]
    if not records:
        raise NoRecords(f"no feedback records in {folder}: grade the class first")
    return sorted(records, key=lambda r: str(r.get("submission", "")))


def anonymized(records: list) -> list:
    """The same records with each name replaced by 'student N' (in name order)."""
    return [dict(r, submission=f"student {i}") for i, r in enumerate(records, 1)]


def band(row: dict) -> str:
    """Which of BANDS one exercise row falls in."""
    if row["status"] == "not attempted":
        return "not attempted"
    if float(row["points"]) >= float(row["max_points"]) > 0:
        return "full points"
    return "partial" if float(row["points"]) > 0 else "no points"


def exercise_bands(records: list) -> dict:
    """{exercise id: Counter of BANDS}."""
    counts = {}
    for record in records:
        for row in record["exercises"]:
            counts.setdefault(row["exercise"], Counter())[band(row)] += 1
    return dict(sorted(counts.items()))


def _exercise(exercise_id: str):
    from ..exercises import registry

    try:
        return registry.get(exercise_id)
    except KeyError:
        return None


def known_mistakes(exercise_id: str) -> list:
    """[(feedback words, label)] of the key's known-wrong answers (empty without the key)."""
    exercise = _exercise(exercise_id)
    key = exercise.key() if exercise is not None else None
    wrong = getattr(key, "wrong_answers", None) or []
    return [(w.feedback_contains, w.label) for w in wrong if w.feedback_contains]


def matching_mistake(exercise_id: str, texts: list) -> str:
    """The label of the known mistake whose feedback words appear in `texts`, or ''."""
    joined = " ".join(str(t) for t in texts)
    found = [label for words, label in known_mistakes(exercise_id) if words in joined]
    return found[0] if found else ""


def failing_tests(records: list) -> list:
    """[{exercise, test, students, feedback: Counter, mistake}], most failed first."""
    rows = {}
    for record in records:
        for ex in record["exercises"]:
            if ex["status"] == "not attempted":
                continue
            for test in ex.get("tests", []):
                if test.get("passed"):
                    continue
                row = rows.setdefault(
                    (ex["exercise"], test["name"]),
                    {
                        "exercise": ex["exercise"],
                        "test": test["name"],
                        "students": 0,
                        "feedback": Counter(),
                        "mistakes": Counter(),
                    },
                )
                row["students"] += 1
                said = " ".join(str(test.get("feedback") or "").split())
                row["feedback"][said[:300]] += 1
                mistake = matching_mistake(ex["exercise"], [said, ex.get("detail", "")])
                if mistake:
                    row["mistakes"][mistake] += 1
    return sorted(rows.values(), key=lambda r: (-r["students"], r["exercise"], r["test"]))


def _choice(answer_shown: str) -> str:
    """The option letters a quiz answer chose, as the record shows it ('"b"' -> 'b')."""
    try:
        value = json.loads(answer_shown)
    except (TypeError, ValueError):
        value = answer_shown
    if isinstance(value, (list, tuple)):
        value = "".join(str(v) for v in value)
    return "".join(str(value).replace(",", " ").split()).lower()[:40]


def quiz_choices(records: list) -> dict:
    """{quiz id: {"options": {letter: (text, why it is off or '')}, "chosen": Counter}}."""
    from ..exercises.spec import Quiz

    quizzes = {}
    for record in records:
        for ex in record["exercises"]:
            quiz = _exercise(ex["exercise"])
            if not isinstance(quiz, Quiz) or ex["status"] == "not attempted":
                continue
            entry = quizzes.setdefault(
                quiz.id,
                {
                    "options": {k: (v, quiz.why.get(k, "")) for k, v in quiz.options.items()},
                    "chosen": Counter(),
                    "right": Counter(),
                },
            )
            choice = _choice(ex.get("answer_shown", "")) or "?"
            entry["chosen"][choice] += 1
            entry["right"][choice] += ex["status"] == "correct"
    return dict(sorted(quizzes.items()))


def needs_a_word(records: list) -> list:
    """[(student, reason)] for each record that NEEDS_A_WORD names."""
    return [(r["submission"], why) for r in records for test, why in NEEDS_A_WORD if test(r)]


def figure(values: list, title: str, xlabel: str) -> str:
    """A histogram of `values` as an inline PNG (a data: URL)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    from ..i18n.plots import plot_text

    fig = Figure(figsize=(5, 2.6), dpi=90)
    ax = fig.subplots()
    ax.hist(values, bins=min(20, max(5, len(set(values)))), color="#4c72b0", edgecolor="white")
    ax.set_title(plot_text(title))
    ax.set_xlabel(plot_text(xlabel))
    ax.set_ylabel(plot_text("students"))
    fig.tight_layout()
    return _png(fig)


def bands_figure(bands: dict) -> str:
    """Each exercise's BANDS as stacked horizontal bars, an inline PNG (a data: URL)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    from ..i18n.plots import plot_text

    names = list(bands)
    fig = Figure(figsize=(6, 0.6 + 0.32 * len(names)), dpi=90)
    ax = fig.subplots()
    left = [0] * len(names)
    for label, color in zip(BANDS, ("#55a868", "#dd8452", "#c44e52", "#bbbbbb")):
        widths = [bands[n][label] for n in names]
        ax.barh(names, widths, left=left, color=color, label=plot_text(label))
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()
    ax.set_xlabel(plot_text("students"))
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return _png(fig)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def summary(records: list) -> dict:
    """Every count the page and the CSV show."""
    return {
        "students": len(records),
        "totals": [float(r["points"]) for r in records],
        "max_points": max((float(r["max_points"]) for r in records), default=0.0),
        "bands": exercise_bands(records),
        "failing": failing_tests(records),
        "quizzes": quiz_choices(records),
        "needs": needs_a_word(records),
        "written": written.by_question(records),
    }


def written_status(review) -> str:
    """An answer's review status: the gradebook row's, or not reviewed yet."""
    return review["status"] if review else written.NOT_REVIEWED


def csv_rows(data: dict) -> list:
    """(section, exercise, item, detail, count) rows of the report's counts."""
    rows = [("class", "", "students", "", data["students"])]
    rows += [
        ("total points", "", f"{p:g}", "", n) for p, n in sorted(Counter(data["totals"]).items())
    ]
    rows += [("exercise", ex, b, "", c[b]) for ex, c in data["bands"].items() for b in BANDS]
    rows += [
        ("failing test", r["exercise"], r["test"], " / ".join(r["mistakes"]), r["students"])
        for r in data["failing"]
    ]
    rows += [
        ("quiz option", quiz, letter, entry["options"].get(letter, ("", ""))[1], n)
        for quiz, entry in data["quizzes"].items()
        for letter, n in sorted(entry["chosen"].items())
    ]
    rows += [("needs a word", "", name, why, 1) for name, why in data["needs"]]
    for question, entry in data["written"].items():
        counts = Counter(written_status(r) for _, _, r in entry["answers"])
        rows += [
            ("written answer", question, status, "", n) for status, n in sorted(counts.items())
        ]
        points = Counter(
            f"{float(r['points']):g}/{float(r['max_points']):g}"
            for _, _, r in entry["answers"]
            if r and r["status"] == "reviewed"
        )
        rows += [("written points", question, p, "", n) for p, n in sorted(points.items())]
    return rows


def render_csv(data: dict) -> str:
    """The report's counts as CSV, every text made safe for spreadsheets."""
    rows = [["section", "exercise", "item", "detail", "count"]] + [
        [gradebook.clean(v) for v in row] for row in csv_rows(data)
    ]
    return csvsafe.text(rows)


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _table(head: list, rows: list) -> str:
    cells = "".join(f"<th>{_e(tr(h))}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _bands_html(data: dict) -> str:
    rows = [[_e(ex)] + [str(c[b]) for b in BANDS] for ex, c in data["bands"].items()]
    return _table(["exercise", *BANDS], rows)


def _failing_html(data: dict) -> str:
    rows = []
    for r in data["failing"]:
        said = "<br>".join(
            f"{n} &times; {_e(text or tr('(no feedback shown)'))}"
            for text, n in r["feedback"].most_common(3)
        )
        mistake = ", ".join(f"{_e(tr(k))} ({n})" for k, n in r["mistakes"].most_common())
        rows.append([_e(r["exercise"]), _e(tr(r["test"])), str(r["students"]), said, mistake])
    return _table(
        [
            "exercise",
            "test",
            "students who failed it",
            "their feedback",
            "known mistake it matches",
        ],
        rows,
    )


def _quizzes_html(data: dict) -> str:
    parts = []
    for quiz, entry in data["quizzes"].items():
        rows = []
        for letter, n in entry["chosen"].most_common():
            text, why = entry["options"].get(letter, ("", ""))
            verdict = tr("the right option") if entry["right"][letter] else tr(why) if why else ""
            verdict = _e(verdict)
            rows.append([_e(letter), _e(tr(text)) if text else "", str(n), verdict])
        parts.append(
            f"<h3>{_e(quiz)}</h3>"
            + _table(
                ["option", "text", "chosen by", "right, or the misconception it stands for"], rows
            )
        )
    return "".join(parts) or f"<p>{_e(tr('No quiz was answered.'))}</p>"


def _declared_html(asked) -> str:
    """A declared question's texts (current language): the question, expected points, where."""
    said = written.expectation(asked, language())
    points = "".join(f"<li>{_e(p)}</li>" for p in said["expects"])
    return (
        f'<p class="asked">{_e(said["question"])}</p>'
        f'<p><b>{_e(tr("What a good answer says"))}</b></p><ul class="expects">{points}</ul>'
        f'<p class="where">{_e(said["where"])}</p>'
    )


def _answer_points(review) -> str:
    if not review:
        return _e(tr(written.NOT_REVIEWED))
    status = "" if review["status"] == "reviewed" else f" ({tr(review['status'])})"
    return _e(f"{float(review['points']):g} / {float(review['max_points']):g}{status}")


def _written_html(data: dict) -> str:
    parts = []
    for question, entry in data["written"].items():
        asked = entry["asked"]
        title = tr(asked.title) if asked else question
        rows = [
            [_e(name), f'<div class="answer">{_e(text[:1500])}</div>', _answer_points(r)]
            + [_e((r or {}).get("detail", ""))]
            for name, text, r in entry["answers"]
        ]
        parts.append(
            f"<h3>{_e(title)} <code>{_e(question)}</code></h3>"
            + (_declared_html(asked) if asked else "")
            + _table(["student", "answer", "points", "comment"], rows)
        )
    return "".join(parts) or f"<p>{_e(tr('No written answer was handed in.'))}</p>"


PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto;line-height:1.4}}
table{{border-collapse:collapse;margin:.5em 0 1.5em}}td,th{{border:1px solid #ccc;
padding:.25em .5em;vertical-align:top;text-align:left}}th{{background:#f2f2f2}}
.answer{{white-space:pre-wrap}}.expects{{background:#eef5ee;padding:.4em 1.6em}}</style>
</head><body>
<h1>{title}</h1><p>{students}</p>
<h2>{h_totals}</h2><img alt="{h_totals}" src="{totals_png}">
<h2>{h_bands}</h2><img alt="{h_bands}" src="{bands_png}">{bands}
<h2>{h_failing}</h2>{failing}
<h2>{h_quizzes}</h2>{quizzes}
<h2>{h_needs}</h2>{needs}
<h2>{h_written}</h2>{written}
</body></html>
"""


def render_html(data: dict, lang: str = "en") -> str:
    """The report page: standalone HTML, figures inline, every student text escaped."""
    with in_language(lang):
        needs = "".join(f"<li>{_e(n)}: {_e(tr(w))}</li>" for n, w in data["needs"])
        return PAGE.format(
            lang=lang,
            title=_e(tr("Class report")),
            students=_e(tr(f"{data['students']} submission(s) graded")),
            h_totals=_e(tr("Totals")),
            totals_png=figure(data["totals"], "Total points", "points") if data["totals"] else "",
            h_bands=_e(tr("Points per exercise")),
            bands=_bands_html(data),
            bands_png=bands_figure(data["bands"]) if data["bands"] else "",
            h_failing=_e(tr("Failing tests, most failed first")),
            failing=_failing_html(data) if data["failing"] else _e(tr("No test failed.")),
            h_quizzes=_e(tr("Quiz options chosen")),
            quizzes=_quizzes_html(data),
            h_needs=_e(tr("Students who need a word")),
            needs=f"<ul>{needs}</ul>" if needs else _e(tr("Nobody.")),
            h_written=_e(tr("Written answers, graded by the teacher")),
            written=_written_html(data),
        )


def report_paths(book: Path) -> dict:
    """Where the report of `book` goes: GRADEBOOK.report.html and .report.csv beside it."""
    book = Path(book)
    return {
        "html": book.with_name(book.stem + ".report.html"),
        "csv": book.with_name(book.stem + ".report.csv"),
    }


def write(book: Path, anonymous: bool = False, lang: str = "en") -> dict:
    """Write the class report of `book` (see module doc); returns its paths and counts."""
    records = written.with_reviews(load(book), book)
    data = summary(anonymized(records) if anonymous else records)
    out = report_paths(book)
    gradebook.write_atomic(out["html"], render_html(data, lang))
    gradebook.write_atomic(out["csv"], render_csv(data))
    return {"html": str(out["html"]), "csv": str(out["csv"]), "students": data["students"]}
