"""Every quiz can be answered, cannot be guessed from its shape, and teaches when answered wrong.

Parametrized over the registry (a new quiz is covered). Issue 9.1 and 12.2:
- each quiz is shown with `ch.<name>.ask()` before its answer cell, or its question and every
  option are written in the notebook before it;
- in single-choice and "error" quizzes the right option is not the longest by more than 10%,
  over the course it is the strictly longest option in at most a third of them (and the strictly
  shortest in at most a third: "never the longest" would be a rule to game too), and no letter
  is right in more than 40% of them (issue 15.4);
- a wrong answer gets more than "Not quite.": a `why` for the option, or a hint; no `why` is
  ever attached to a right option.
Issue 36.8 (quizzes that teach):
- a right option paraphrases the chapter: it shares no run of QUOTED_WORDS words with the
  notebook's markdown (a learner who matches sentences wins without understanding);
- the length rules hold in the Chinese edition too (the learner there reads the catalogue's text);
- the right option is neither the shortest by far (a bare error line beside explained ones) nor
  the only one of its form (the only one opening with a short label and a colon, "DP:", "Never:",
  or the only one without).
"""

import collections
import difflib
import re

import pytest

from course_lib import notebooks
from course_lib.exercises import all_exercises
from course_lib.i18n.catalogue import translate
from course_lib.text import without_marks
from support.notebook_cells import chapter_notebook

QUIZZES = [e for e in all_exercises() if e.kind != "function"]
CHOICE = [q for q in QUIZZES if q.kind in ("single", "error")]
ids = lambda q: q.id

LONGEST_RIGHT = 1.1  # the right option may be at most this much longer than the longest wrong one
EXTREME_SHARE = (
    1 / 3
)  # the right option may be the strictly longest (or shortest) in at most this share
MOST_OFTEN = 0.40  # no letter may be the right one in more of the course's single/error quizzes
SHORTEST_RIGHT = 0.8  # the right option is at least this share of the shortest wrong one
QUOTED_WORDS = 6  # a run of this many words shared with the chapter's markdown is a quotation
QUOTED_CHARACTERS = 16  # the same in the Chinese edition, in characters
LANGUAGES = ("en", "zh")
CODE_SPAN = re.compile(r"`[^`\n]+`")
# A short label and a colon opening an option: "RuntimeError:", "No error:", "DP:", "Never:";
# in Chinese "RuntimeError：", "不报错：", "DP：" (up to 12 characters, no space).
LABEL = {
    "en": re.compile(r"^\s*[^\s:`]+(?: [^\s:`]+){0,2}:\s"),
    "zh": re.compile(r"^\s*[^\s：:`]{1,12}[：:]"),
}


def cells(quiz) -> list:
    return notebooks.cells(chapter_notebook(quiz))


def zh_notebook(quiz):
    """The Chinese edition of the quiz's chapter notebook."""
    path = chapter_notebook(quiz)
    return path.parent / "zh" / path.name


def answer_cell(quiz, notebook_cells) -> int:
    """Index of the cell `ch.<name>.check(answer_<name>)` (or `answer_<name> = ...`)."""
    pattern = re.compile(rf"\.{quiz.name}\.check\(|^answer_{quiz.name}\s*=", re.M)
    found = [
        i
        for i, c in enumerate(notebook_cells)
        if c.cell_type == "code" and pattern.search(c.source)
    ]
    assert found, (
        f"{quiz.id}: no cell `answer_{quiz.name} = ...` / `ch.{quiz.name}.check(...)` in "
        f"{chapter_notebook(quiz).name}"
    )
    return found[0]


def normal(text: str) -> str:
    """Text as read, not as typed: no Markdown marks (`*_\\), one space, lower case."""
    text = re.sub(r"[`*_\\]", "", without_marks(str(text)))
    return " ".join(text.split()).lower()


def right_letters(quiz) -> str:
    if quiz.kind == "error":
        return quiz.right_answer()
    return quiz.normalize(quiz.key().answer)


@pytest.mark.parametrize("quiz", QUIZZES, ids=ids)
def test_quiz_is_shown_or_stated_before_its_answer_cell(quiz):
    notebook_cells = cells(quiz)
    answer = answer_cell(quiz, notebook_cells)
    asked = re.compile(rf"\.{quiz.name}\.ask\(\)")
    if any(c.cell_type == "code" and asked.search(c.source) for c in notebook_cells[: answer + 1]):
        return
    before = normal("\n".join(c.source for c in notebook_cells[: answer + 1]))
    missing = [] if normal(quiz.prompt) in before else [f"the question {quiz.prompt!r}"]
    missing += [f"option {k}) {v!r}" for k, v in quiz.options.items() if normal(v) not in before]
    assert not missing, (
        f"{quiz.id} cannot be answered in {chapter_notebook(quiz).name}: no "
        f"`ch.{quiz.name}.ask()` cell before its answer cell (cell {answer}), and the cells "
        "before it do not state "
    ) + "; ".join(missing)


def option_in(quiz, letter, lang="en") -> str:
    """Option `letter` as written in edition `lang` (Markdown kept)."""
    return quiz.options[letter] if lang == "en" else translate(quiz.options[letter], lang)


def option_text(quiz, letter, lang="en") -> str:
    """Option `letter` as a learner of edition `lang` reads it, Markdown marks removed."""
    return without_marks(option_in(quiz, letter, lang))


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("quiz", CHOICE, ids=ids)
def test_right_option_is_not_given_away_by_its_length(quiz, lang):
    right = right_letters(quiz)
    assert right, f"{quiz.id}: no right option found"
    length = lambda letter: len(option_text(quiz, letter, lang))
    wrong = [length(k) for k in quiz.options if k != right]
    assert length(right) <= LONGEST_RIGHT * max(wrong), (
        f"{quiz.id} ({lang}): the right option {right}) has {length(right)} characters, the "
        f"longest wrong one {max(wrong)}: picking the longest option wins without reading. Write "
        f"the wrong options as detailed as the right one (at most {LONGEST_RIGHT:g} x)."
    )
    assert length(right) >= SHORTEST_RIGHT * min(wrong), (
        f"{quiz.id} ({lang}): the right option {right}) has {length(right)} characters, the "
        f"shortest wrong one {min(wrong)}: a bare line beside explained options stands out. "
        f"Explain the right option as the wrong ones are (at least {SHORTEST_RIGHT:g} x)."
    )


def form(text: str, lang: str = "en") -> str:
    """An option's form: 'label: ...' when a short label and a colon open it, else 'sentence'."""
    return "label: ..." if LABEL[lang].match(text) else "sentence"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("quiz", CHOICE, ids=ids)
def test_right_option_is_not_the_only_one_of_its_form(quiz, lang):
    right = right_letters(quiz)
    forms = {k: form(option_text(quiz, k, lang), lang) for k in quiz.options}
    others = sorted({f for k, f in forms.items() if k != right})
    assert forms[right] in others, (
        f"{quiz.id} ({lang}): the right option {right}) is the only one written as "
        f"{forms[right]!r} (the others: {others}): its shape gives it away. Write the options "
        "alike."
    )


def words(text: str) -> list:
    """The words of `text` as read (normal()), punctuation dropped."""
    return re.findall(r"[\w.'()=/+-]+", normal(text))


def characters(text: str) -> str:
    """Chinese text as read: each code span one mark, no Markdown marks, no spaces."""
    return re.sub(r"[*_\\\s]", "", CODE_SPAN.sub("\0", str(text)))


# How a text is cut for the quotation check, and how long a shared run is a quotation:
# 6 English words, 16 Chinese characters (about as much said).
READING = {
    "en": (words, QUOTED_WORDS, " ", "words"),
    "zh": (characters, QUOTED_CHARACTERS, "", "characters"),
}


def shared_run(a, b):
    """The longest run (of words, or of characters) that `a` and `b` share, in order."""
    match = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match()
    return a[match.a : match.a + match.size]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("quiz", [q for q in QUIZZES if q.kind != "numeric"], ids=ids)
def test_right_options_paraphrase_the_chapter(quiz, lang):
    cut, longest, joiner, unit = READING[lang]
    notebook = chapter_notebook(quiz) if lang == "en" else zh_notebook(quiz)
    markdown = [cut(c.source) for c in notebooks.cells(notebook) if c.cell_type == "markdown"]
    quoted = {
        letter: run
        for letter in right_letters(quiz)
        for run in [
            max((shared_run(cut(option_in(quiz, letter, lang)), m) for m in markdown), key=len)
        ]
        if len(run) >= longest
    }
    assert not quoted, f"{quiz.id} ({lang}): " + "; ".join(
        f"right option {k}) quotes the chapter's markdown ({len(v)} {unit} in a row: "
        f"{joiner.join(v).replace(chr(0), '`...`')!r}): say it in other words, so that "
        "matching a sentence is not enough"
        for k, v in quoted.items()
    )


def option_lengths(quiz) -> tuple:
    """(the right option's length, the longest and the
    shortest wrong one's), Markdown marks removed."""
    right = right_letters(quiz)
    wrong = [len(without_marks(v)) for k, v in quiz.options.items() if k != right]
    return len(without_marks(quiz.options[right])), max(wrong), min(wrong)


@pytest.mark.parametrize(
    "kinds", [("single",), ("single", "error")], ids=["single", "single+error"]
)
@pytest.mark.parametrize("extreme", ["longest", "shortest"])
def test_the_right_option_is_rarely_the_longest_or_the_shortest(kinds, extreme):
    quizzes = [q for q in CHOICE if q.kind in kinds]
    lengths = {q.id: option_lengths(q) for q in quizzes}
    hits = sorted(
        qid
        for qid, (right, longest, shortest) in lengths.items()
        if (right > longest if extreme == "longest" else right < shortest)
    )
    allowed = int(EXTREME_SHARE * len(quizzes))
    assert len(hits) <= allowed, (
        f"the right option is the strictly {extreme} in {len(hits)} of {len(quizzes)} "
        f"{'/'.join(kinds)} quizzes (at most {allowed} allowed): {', '.join(hits)}. Picking "
        f"the {extreme} option must not win: rewrite a wrong option of some of them to be "
        f"{'longer' if extreme == 'longest' else 'shorter'}."
    )


def test_right_letters_are_spread_over_the_course():
    by_letter = collections.defaultdict(list)
    for quiz in CHOICE:
        by_letter[right_letters(quiz)].append(quiz.id)
    total = sum(len(v) for v in by_letter.values())
    spread = ", ".join(f"{k}: {len(v)}" for k, v in sorted(by_letter.items()))
    too_often = {k: v for k, v in by_letter.items() if len(v) > MOST_OFTEN * total}
    assert not too_often, (
        "".join(
            f"option {k}) is the right one in {len(v)} of {total} single/error quizzes (more than "
            f"{MOST_OFTEN:.0%}): {', '.join(v)}. "
            for k, v in too_often.items()
        )
        + f"Right letters: {spread}."
    )


@pytest.mark.parametrize("quiz", [q for q in QUIZZES if q.kind != "numeric"], ids=ids)
def test_no_why_for_a_right_option(quiz):
    wrongly = sorted(set(right_letters(quiz)) & set(quiz.why))
    assert not wrongly, (
        f"{quiz.id}: why= explains option(s) {wrongly}, which are right; a why is "
        f"shown to a wrong answer that picks the option, so it would confuse a right one"
    )


@pytest.mark.parametrize("quiz", QUIZZES, ids=ids)
def test_a_wrong_answer_learns_something(quiz):
    """Every wrong answer gets a why or a hint, never a bare 'Not quite.'."""
    if quiz.hints:
        return
    right = set(right_letters(quiz)) if quiz.kind != "numeric" else set()
    unexplained = sorted(set(quiz.options) - right - set(quiz.why))
    assert quiz.kind in ("single", "error") and not unexplained, (
        f"{quiz.id}: a wrong answer would read only 'Not quite.': give the quiz hints=[...]"
        + (f" or a why for option(s) {unexplained}" if quiz.kind in ("single", "error") else "")
    )


def quiz_texts(quiz) -> list:
    """Every text a learner of the quiz reads: question, options, whys, hints, explanation."""
    texts = [quiz.prompt, *quiz.options.values(), *quiz.why.values(), *quiz.hints]
    return [str(t) for t in [*texts, quiz.explanation] if t]


@pytest.mark.parametrize("quiz", QUIZZES, ids=ids)
def test_code_in_a_quiz_reaches_the_chinese_edition_unchanged(quiz):
    """A template's placeholder must not translate the error message it holds (ch04 which_tensor
    once showed `cuda:0 (when checking ...) 上的 RuntimeError: ...`)."""
    changed = [
        (text, translate(text, "zh"))
        for text in quiz_texts(quiz)
        if collections.Counter(CODE_SPAN.findall(text))
        - collections.Counter(CODE_SPAN.findall(translate(text, "zh")))
    ]
    assert not changed, f"{quiz.id}: code spans changed in the Chinese edition: " + "; ".join(
        f"{en!r} -> {zh!r}" for en, zh in changed
    )
