"""What a check returns: per-test outcomes, a status, points, and learner-facing text/HTML."""

from dataclasses import dataclass, field

from ..i18n import tr
from ..i18n.catalogue import labelled
from ..text import html as code_html

CORRECT = "correct"
INCORRECT = "incorrect"
NOT_ATTEMPTED = "not attempted"
STATUS_RANK = {NOT_ATTEMPTED: 0, INCORRECT: 1, CORRECT: 2}
_COLORS = {CORRECT: "#1a7f37", INCORRECT: "#cf222e", NOT_ATTEMPTED: "#6e7781"}
_ICONS = {CORRECT: "✔", INCORRECT: "✘", NOT_ATTEMPTED: "…"}
HIDDEN_NOTE = "(a hidden test: its inputs and values are not shown)"


@dataclass
class TestOutcome:
    """One test's verdict; for hidden tests `message` is withheld from the learner."""

    __test__ = False  # not a pytest class
    name: str
    passed: bool
    weight: float = 1.0
    hidden: bool = False
    message: str = ""
    expected: str = ""
    got: str = ""
    hint: str = ""
    not_attempted: bool = False  # the learner's function is still the stub

    def public_lines(self, hints_shown=None):
        """What the learner may read of this test; a
        hint already in `hints_shown` is not repeated."""
        if self.hidden:
            return [] if self.passed else [tr(HIDDEN_NOTE)]
        lines = [tr(self.message)] if self.message else []
        if (
            self.expected
        ):  # each label and its text translated apart: a label never reads as a message
            lines.append(labelled("Expected:", self.expected, value=True))
        if self.got:
            lines.append(labelled("Got:", self.got, value=True))
        if self.hint and (hints_shown is None or self.hint not in hints_shown):
            lines.append(labelled("Hint:", self.hint))
            if hints_shown is not None:
                hints_shown.add(self.hint)
        return lines


@dataclass
class CheckResult:
    """The verdict on one exercise: status, points and the tests behind them."""

    exercise_id: str
    title: str
    status: str
    points: float
    max_points: float
    summary: str = ""
    tests: list = field(default_factory=list)
    hidden_not_run: int = 0

    @property
    def correct(self) -> bool:
        return self.status == CORRECT

    def as_dict(self) -> dict:
        return {
            "exercise": self.exercise_id,
            "status": self.status,
            "points": round(self.points, 3),
            "max_points": self.max_points,
            "summary": self.summary,
            "tests": [
                {
                    "name": t.name,
                    "passed": t.passed,
                    "hidden": t.hidden,
                    "feedback": " ".join(t.public_lines()),
                }
                for t in self.tests
            ],
        }

    def headline(self) -> str:
        return tr(
            f"{self.status.capitalize()}: {self.title} ({self.points:g}/{self.max_points:g} points)"
        )

    def _hidden_line(self) -> str:
        return tr(f"({self.hidden_not_run} hidden test(s) more are run by the grader.)")

    def text(self) -> str:
        lines = [f"{_ICONS[self.status]} {self.headline()}"]
        if self.summary:
            lines.append(f"  {tr(self.summary)}")
        hints_shown = set()
        for t in self.tests:
            mark = "passed" if t.passed else "FAILED"
            lines.append(f"  - {tr(f'{t.name}: {mark}')}")
            lines.extend(f"      {line}" for line in t.public_lines(hints_shown))
        if self.hidden_not_run:
            lines.append(f"  {self._hidden_line()}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        color = _COLORS[self.status]  # the box and headline follow the verdict, never one test
        rows, hints_shown = [], set()
        for t in self.tests:
            mark = "✔" if t.passed else "✘"
            detail = "<br>".join(code_html(line) for line in t.public_lines(hints_shown))
            detail = (
                f"<br><span style='margin-left:1.4em;display:inline-block'>{detail}</span>"
                if detail
                else ""
            )
            mark_color = _COLORS[CORRECT] if t.passed else _COLORS[INCORRECT]
            rows.append(
                f"<li><b style='color:{mark_color}'>{mark}</b> {code_html(tr(t.name))}{detail}</li>"
            )
        hidden = (
            f"<div style='color:#6e7781'>{code_html(self._hidden_line().strip('()（）'))}</div>"
            if self.hidden_not_run
            else ""
        )
        summary = f"<div>{code_html(tr(self.summary))}</div>" if self.summary else ""
        listing = (
            f"<ul style='margin:4px 0;padding-left:1.2em'>{''.join(rows)}</ul>" if rows else ""
        )
        return (
            f"<div class='course-check course-{self.status.replace(' ', '-')}' "
            f"style='border-left:6px solid {color};padding:6px 10px;margin:4px "
            "0;background:#f6f8fa;color:#1f2328'><div "
            f"style='font-weight:bold;color:{color}'>{_ICONS[self.status]} "
            f"{code_html(self.headline())}</div>{summary}{listing}{hidden}</div>"
        )
