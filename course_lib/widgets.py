"""What the chapters show, made once: quizzes and hints, tables, a result revealed only when asked.

- `quiz_widget`, `hint_widget`: a quiz's question and buttons, and its hints (every chapter);
- `html_table` / `table` (HTML) and `text_table` (plain text), `print_wrapped`: every table and
  wrapped paragraph the chapters print;
- `reveal`: a result shown only when the learner asks, or once the quiz it answers is answered;
- `report_table`, `progress_table`: the environment report and the progress view.

ipywidgets and IPython are imported where a widget is made, so importing this module (as every
chapter module does) costs a graded process nothing.

Widgets are made with `widget()`: widgets that look alike share one Layout and one Style model,
and the CSS classes come with the widget, so a quiz is a third of the models (and of the comm
messages a kernel sends, and JupyterLab or nbval reads) that plain ipywidgets would make.
"""

import contextlib
import io
import textwrap
from html import escape

from .i18n import tr
from .i18n.layout import Table
from .text import html as text_html

_SHARED = {}  # (model class, traits) -> the Layout or Style model the widgets like it share


def shared(cls, **traits):
    """One `cls` (a Layout or a Style) with these traits, shared by every widget that asks for it
    (a closed one is replaced). Never change a shared model's traits: make the widget its own."""
    key = (cls, tuple(sorted(traits.items())))
    model = _SHARED.get(key)
    if model is None or model.comm is None:
        model = _SHARED[key] = cls(**traits)
    return model


def widget(cls, *args, layout=None, classes=(), **traits):
    """`cls(*args, **traits)` with a shared Layout (`layout`: its traits) and, unless given, the
    class's default Style shared; `classes`: its CSS classes, sent with the widget itself."""
    import ipywidgets as W

    traits["layout"] = shared(W.Layout, **(layout or {}))
    style = cls.class_traits().get("style")
    if style is not None and "style" not in traits:
        traits["style"] = shared(style.klass)
    if classes:
        traits["_dom_classes"] = tuple(classes)
    return cls(*args, **traits)


def result_html(result):
    import ipywidgets as W

    return widget(W.HTML, result._repr_html_())


# Options are rows of their own: a long option wraps inside its row (never over the next one) and
# keeps its button; single-choice rows look like radio buttons. Scoped to
# .course-quiz/.course-hints.
QUIZ_CSS = """<style>
.course-quiz .course-option { width: 100%; height: auto;
  min-height: var(--jp-widgets-inline-height); line-height: 1.45; align-items: flex-start;
  margin: 3px 0; }
.course-quiz .course-option label.widget-label-basic { display: flex; align-items: flex-start;
  white-space: normal; overflow: visible; height: auto; line-height: 1.45; }
.course-quiz .course-option label.widget-label-basic > span { white-space: normal;
  overflow-wrap: anywhere; }
.course-quiz .course-option input[type=checkbox] { flex: 0 0 auto; align-self: flex-start;
  margin: 3px 8px 0 0; line-height: normal; font-size: inherit; width: 14px; height: 14px; }
.course-quiz .course-single input[type=checkbox] { appearance: none; -webkit-appearance: none;
  border: 1.5px solid #6e7781; border-radius: 50%; background: #ffffff; cursor: pointer; }
.course-quiz .course-single input[type=checkbox]:checked { border-color: #0969da;
  background: radial-gradient(circle, #0969da 0 38%, #ffffff 44%); }
.course-quiz code, .course-hints code { background: #eaeef2; color: #1f2328; padding: 0 3px;
  border-radius: 3px; }
.course-hints .widget-html-content, .course-quiz .widget-html-content { line-height: 1.45; }
</style>"""

EMPTY_ANSWER = {  # what the Check button says when nothing is chosen yet: it speaks of the widget
    "numeric": "Type a number in the box above, then press Check.",
    "multiple": "Tick the options you choose above, then press Check.",
}
CHOOSE_ONE = "Choose an option above, then press Check."
# under a right answer in the widget: the one place an answer is kept is the answer cell below it
ANSWER_CELL = (
    "Now write it in the answer cell below (`answer_{name} = ...`) and run that cell: the Check "
    "button is for practice, the cell is what is saved with the notebook and graded."
)


def answer_cell_note(name: str) -> str:
    """The note under a right answer in the widget: the answer cell is what is graded."""
    return (
        f"<div class='course-answer-cell' style='color:#57606a;margin:2px 0'>"
        f"{text_html(tr(ANSWER_CELL.format(name=name)))}</div>"
    )


def hint_widget(exercise):
    """A 'Show a hint (k of n)' button and every hint revealed so far (all chapters' `.hint()`).

    Showing it reveals nothing (Run All spends no hint); the state lives on the exercise, so
    re-running the cell shows the hints already revealed, and every view of it stays in step."""
    import ipywidgets as W

    if not exercise.hints:
        return widget(W.VBox, [widget(W.HTML, tr("No hints for this one."))])

    def state() -> dict:
        n, total = len(exercise.hints_shown()), len(exercise.hints)
        return {
            "value": "".join(
                f"<div style='margin:2px 0'>{text_html(line)}</div>"
                for line in exercise.hints_shown()
            ),
            "disabled": n >= total,
            "description": tr(
                f"Show a hint ({n + 1} of {total})" if n < total else f"All {total} hints shown"
            ),
        }

    now = state()
    shown = widget(W.HTML, now["value"])
    button = widget(
        W.Button,
        description=now["description"],
        disabled=now["disabled"],
        layout={"width": "auto", "align_self": "flex-start"},
    )

    def refresh():
        new = state()
        shown.value = new["value"]
        with button.hold_sync():
            button.disabled, button.description = new["disabled"], new["description"]

    button.on_click(lambda _: exercise.reveal_hint())
    exercise._hint_views[:] = exercise._hint_views[-9:] + [refresh]
    return widget(W.VBox, [button, shown], classes=["course-hints"])


def _option_rows(quiz):
    """One checkbox per option, its text as HTML (code as code); single choice keeps one ticked."""
    import ipywidgets as W

    single = quiz.kind in ("single", "error")
    rows = [
        widget(
            W.Checkbox,
            description=f"{k}) {text_html(tr(v))}",
            description_allow_html=True,
            indent=False,
            layout={"width": "auto"},
            classes=["course-option", "course-single" if single else "course-multiple"],
        )
        for k, v in quiz.options.items()
    ]

    def keep_one(change):
        if single and change["new"]:
            for other in rows:
                if other is not change["owner"]:
                    other.value = False

    for row in rows:
        row.observe(keep_one, names="value")
    return rows


def quiz_widget(quiz):
    """The question, one row per option (or a number box), Check and Hint buttons, the verdict."""
    import ipywidgets as W

    if quiz.kind == "numeric":
        chooser = widget(W.Text, description=tr("Answer:"), placeholder=tr("a number"))
        read = lambda: chooser.value
        watched = [chooser]
    else:
        watched = _option_rows(quiz)
        chooser = widget(W.VBox, watched, layout={"width": "100%"})
        chosen = lambda: [k for k, row in zip(quiz.options, watched) if row.value]
        read = (lambda: (chosen() or [None])[0]) if quiz.kind in ("single", "error") else chosen
    button = widget(W.Button, description=tr("Check"), button_style="primary")
    verdict = widget(W.HTML)

    def on_click(_):
        result = quiz.check(read(), empty=EMPTY_ANSWER.get(quiz.kind, CHOOSE_ONE), hint_below=True)
        verdict.value = result._repr_html_() + (
            answer_cell_note(quiz.name) if result.correct else ""
        )

    def clear_verdict(_):  # a verdict belongs to the answer it judged
        verdict.value = ""

    button.on_click(on_click)
    for watching in watched:
        watching.observe(clear_verdict, names="value")
    parts = [
        widget(
            W.HTML,
            QUIZ_CSS + f"<b>{text_html(tr(quiz.title))}</b><div>{text_html(tr(quiz.prompt))}</div>",
        )
    ]
    if quiz.code:
        parts.append(
            widget(
                W.HTML,
                "<pre "
                f"style='background:#f6f8fa;color:#1f2328;padding:6px'>{escape(quiz.code)}</pre>",
            )
        )
    hints = [hint_widget(quiz)] if quiz.hints else []
    box = widget(
        W.VBox,
        parts + [chooser, widget(W.HBox, [button]), verdict] + hints,
        layout={"border": "1px solid #d0d7de", "padding": "6px"},
        classes=["course-quiz"],
    )

    def answer(value):
        """Set the widget as a learner would (tests,
        demos): letters, a list of letters, or a number."""
        if quiz.kind == "numeric":
            chooser.value = "" if value is None else str(value)
            return
        letters = set(quiz.normalize(value)) if value not in (None, "", []) else set()
        for letter, row in zip(quiz.options, watched):
            row.value = letter in letters

    box.answer, box.check_button, box.verdict = answer, button, verdict
    return box


# ---------------------------------------------------------------- tables and paragraphs
class Html(str):
    """Text that is HTML already: `html_table` puts
    it in a cell as it is (other cells are escaped)."""


def code(text) -> Html:
    """`text` as inline code, for a table cell."""
    return Html(f"<code>{escape(str(text))}</code>")


def _cell(value) -> str:
    return value if isinstance(value, Html) else escape(str(value))


def _row(cells, tag: str = "td") -> str:
    return (
        "<tr>"
        + "".join(f"<{tag} style='text-align:left'>{_cell(c)}</{tag}>" for c in cells)
        + "</tr>"
    )


def html_table(header, rows, *, above: str = "", name: str = "table") -> str:
    """An HTML table (class `course-<name>`): the header row (none when `header` is empty), one
    row per item of `rows`, every cell left-aligned; `above`: text shown over it, wrapped between
    words."""
    text = (
        (
            "<pre "
            f"style='white-space:pre-wrap;word-break:normal;overflow-wrap:normal'>{escape(above)}</pre>"
        )
        if above
        else ""
    )
    head = _row(header, "th") if header else ""
    return f"{text}<table class='course-{name}'>{head}{''.join(_row(r) for r in rows)}</table>"


def table(header, rows, **options):
    """`html_table` as a notebook display: the table is the cell's result."""
    from IPython.display import HTML

    return HTML(html_table(header, rows, **options))


def text_table(rows, header=None, gap: int = 2) -> Table:
    """Rows as columns, each as wide as its widest cell: plain text when printed (padded by display
    width), an HTML table when it is a cell's value in Jupyter (`i18n.layout.Table`)."""
    return Table(rows, header, gap=gap)


def print_wrapped(*paragraphs: str, width: int = 96) -> None:
    """Print each paragraph wrapped between words, so that no number is cut in two (Chinese:
    between characters too, each two columns wide)."""
    from .i18n.catalogue import CJK
    from .i18n.layout import wrap

    for text in paragraphs:
        if CJK.search(text):
            print(wrap(text, width, indent=""))
        else:
            print(textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False))


# ---------------------------------------------------------------- a result shown when asked
def reveal(show, *args, label: str = "Show the result", after=None, **kwargs):
    """``show(*args, **kwargs)`` only when the learner
    asks: a button that runs it (chapters 02, 05).

    "Run All" must not put an answer right under the question: with `after` (a quiz) the result is
    shown at once when that quiz has an answer already (right or wrong), else a note asks for one.
    What `show` returns (HTML text) and what it prints appear under the button.
    """
    if after is not None and after.answered():
        return show(*args, **kwargs)
    label = tr(label)
    note = (
        tr(
            f'Answer the quiz "{after.title}" above first; then click the button (or run this '
            "cell again)."
        )
        if after is not None
        else ""
    )
    try:
        import ipywidgets as W
    except ImportError:  # a terminal or a plain script
        print(note or tr(f"({label}: a button in JupyterLab)"))
        return None
    button, area = (
        widget(W.Button, description=label, button_style="primary", layout={"width": "auto"}),
        widget(W.HTML),
    )

    def click(_=None):
        button.disabled = True
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            value = show(*args, **kwargs)
        shown = printed.getvalue()
        area.value = (value if isinstance(value, str) else "") + (
            f"<pre style='white-space:pre-wrap'>{escape(shown)}</pre>" if shown else ""
        )

    button.on_click(click)
    return widget(W.VBox, ([widget(W.HTML, note)] if note else []) + [button, area])


# ---------------------------------------------------------------- the environment report, progress
def report_table(report: dict, format_value=str) -> str:
    """The environment report as a two-column table, the names right-aligned (doctor)."""
    rows = "".join(
        f"<tr><th style='text-align:right'>{escape(tr(k))}</th><td style='text-align:left'>"
        f"{escape(format_value(k, v))}</td></tr>"
        for k, v in report.items()
    )
    return f"<table class='course-report'>{rows}</table>"


STATUS_COLOURS = {"done": "#1a7f37", "in progress": "#9a6700", "not started": "#6e7781"}


def progress_table(rows) -> str:
    """HTML table of per-chapter progress rows from exercises.progress.chapter_summary."""
    body = []
    for r in rows:
        status = (
            "done"
            if r["done"] == r["total"]
            else "in progress"
            if r["done"] or r["attempted"]
            else "not started"
        )
        body.append(
            (
                r["chapter"],
                tr(r["title"]),
                f"{r['done']}/{r['total']}",
                f"{r['points']:g}/{r['max_points']:g}",
                Html(f"<span style='color:{STATUS_COLOURS[status]}'>{escape(tr(status))}</span>"),
            )
        )
    head = [tr(h) for h in ("chapter", "title", "exercises done", "points", "status")]
    return html_table(head, body, name="progress")


__all__ = [
    "widget",
    "shared",
    "quiz_widget",
    "hint_widget",
    "result_html",
    "Html",
    "code",
    "html_table",
    "table",
    "text_table",
    "print_wrapped",
    "reveal",
    "report_table",
    "progress_table",
]
