"""Every chapter of the course, declared once: its number, its name and its title.

``Chapter("05", "speedups", "Speedups, measured")`` is the whole declaration: the chapter module
is ``course_lib/ch05_speedups.py``, its answer key ``course_lib/key/ch05_speedups.py``, its
notebook ``notebooks/05_speedups.ipynb``. The exercise registry, the grader, the explainer, the
release and the tests all read these declarations; nothing parses a module or file name for a
number. A chapter module takes its declaration with ``chapter = chapters.of_module(__name__)`` and
declares its exercises through the engine (``declare = exercises.Declarations(chapter)``, then
``declare.function_exercise(...)``, ``declare.quiz(...)``): a chapter is plain data. A chapter
declared with ``apart=True`` declares them in ``course_lib/declared/chNN_topic.py`` instead, which
its chapter module re-exports: the registry (so the judge and the grader) imports that module only.
A chapter's written questions (answered in words, read and graded by the teacher) are declared
on it too, as data: ``chapter.written("name", ...)`` (see WrittenQuestion).
Standard library only, so that anything may import it cheaply.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class WrittenQuestion:
    """A question answered in words: what a good answer makes, for the teacher who grades it.

    The notebook holds its answer cell (a Markdown cell with ``<!-- answer: NAME -->``); nothing
    grades it automatically. `expects` are the 2-4 points a good answer makes, `section` where
    the chapter teaches them (``sections.section(...)``), `points` the maximum the teacher gives.
    Every text is English; the teacher's language comes from the catalogue (``tr``).
    """

    chapter: str  # its chapter's number, "03"
    name: str  # the answer cell's NAME; the gradebook's exercise chNN.written.NAME
    title: str
    question: str
    expects: tuple
    section: str
    points: float = 2.0

    def __post_init__(self):
        if not 2 <= len(self.expects) <= 4:
            raise ValueError(f"{self.id}: 2 to 4 expected points, not {len(self.expects)}")
        if not self.points > 0:
            raise ValueError(f"{self.id}: the maximum must be above 0, not {self.points!r}")

    @property
    def id(self) -> str:
        return f"ch{self.chapter}.written.{self.name}"


class Chapter:
    """One chapter: number, name, title, and (once its module is imported) its exercises."""

    def __init__(self, number: str, name: str, title: str, apart: bool = False):
        if not (len(number) == 2 and number.isdigit()):
            raise ValueError(f"a chapter number has two digits, like '05'; got {number!r}")
        self.number, self.name, self.title = number, name, title
        self.stem = f"{number}_{name}"  # 05_speedups
        self.module = f"course_lib.ch{self.stem}"  # the chapter module
        self.key_module = (
            f"course_lib.key.ch{self.stem}"  # its answer key (not in the student bundle)
        )
        self.notebook = f"{self.stem}.ipynb"  # its notebook, in notebooks/
        # where its exercises and quizzes are declared: the chapter module, or a module of its own
        self.declarations = f"course_lib.declared.ch{self.stem}" if apart else self.module
        self.exercises = {}  # exercise name -> exercise, filled by the chapter module
        self.written_questions = {}  # name -> WrittenQuestion, filled by the chapter module

    def __repr__(self) -> str:
        return f"Chapter({self.number!r}, {self.name!r}, {self.title!r})"

    def add(self, exercise):
        """Record one of this chapter's exercises (exercises.Declarations calls it)."""
        if exercise.name in self.exercises:
            raise ValueError(f"two exercises share the id {exercise.id}")
        self.exercises[exercise.name] = exercise
        return exercise

    def written(self, name, **kwargs) -> WrittenQuestion:
        """Declare a written question of this chapter (see WrittenQuestion)."""
        if name in self.written_questions or name in self.exercises:
            raise ValueError(f"two questions of chapter {self.number} share the name {name!r}")
        kwargs["expects"] = tuple(kwargs.get("expects", ()))
        question = WrittenQuestion(self.number, name, **kwargs)
        self.written_questions[name] = question
        return question


CHAPTERS = (
    Chapter("01", "device_check", "Device check"),
    Chapter("02", "same_device_rule", "The same-device rule"),
    Chapter("03", "training_template", "The training template"),
    Chapter("04", "common_errors", "Common errors"),
    Chapter("05", "speedups", "Speedups, measured", apart=True),
    Chapter("06", "out_of_memory", "Out of memory", apart=True),
    Chapter("07", "dp_vs_ddp", "DataParallel vs DistributedDataParallel", apart=True),
    Chapter("08", "sharding", "Sharding with FSDP"),
)


def get(number) -> Chapter:
    """The chapter numbered `number` ('5', '05' or 5); KeyError naming the chapters there are."""
    key = str(number).strip().zfill(2)
    for chapter in CHAPTERS:
        if chapter.number == key:
            return chapter
    raise KeyError(
        f"the course has no chapter {number!r}; its chapters are "
        f"{', '.join(c.number for c in CHAPTERS)}"
    )


def of_module(module_name: str) -> Chapter:
    """The chapter whose module (or declarations module) is `module_name` (it passes its
    ``__name__``)."""
    for chapter in CHAPTERS:
        if module_name in (chapter.module, chapter.declarations):
            return chapter
    raise KeyError(f"{module_name} is not a chapter module declared in course_lib/chapters.py")


__all__ = ["Chapter", "CHAPTERS", "WrittenQuestion", "get", "of_module"]
