"""Taught errors as executed assertions: the cell
must raise this, with this text (chapters 01-07)."""

import re
import traceback
from contextlib import contextmanager
from types import SimpleNamespace

from .i18n import tr
from .i18n.catalogue import CJK

ANSI_CODES = re.compile(r"\x1b\[[0-9;]*m")


class ExpectationFailed(AssertionError):
    """A taught error did not happen as the cell says
    (the error explainer never explains this one)."""


def who_raised(err: BaseException) -> str:
    """'The course' for the course's own errors (its
    memory budget), else 'PyTorch' (chapters 01-07)."""
    course = type(err).__module__.split(".")[0] == "course_lib"
    return tr("The course") if course else "PyTorch"


@contextmanager
def expect_error(types, *fragments: str):
    """Run the block; it MUST raise one of `types` whose message contains every fragment.

    The error is printed for the learner to read and then swallowed, so the notebook goes
    on. If nothing is raised, or the text changed, the cell fails loudly (and so does CI).
    ``with expect_error(...) as caught:`` keeps the error in ``caught.error`` (chapter 06).
    """
    caught = SimpleNamespace(error=None)
    try:
        yield caught
    except types as err:
        message = ANSI_CODES.sub("", str(err))  # torch bolds some warnings with terminal codes
        missing = [f for f in fragments if f.lower() not in message.lower()]
        if missing:
            raise ExpectationFailed(
                tr(
                    f"{who_raised(err)} raised {type(err).__name__}, but its message no longer "
                    f"mentions {missing}: {message}"
                )
            ) from err
        first_lines = "\n".join(message.splitlines()[:4])
        print(
            tr(f"{who_raised(err)} raised, as expected:") + f"\n{type(err).__name__}: {first_lines}"
        )
        caught.error = err.with_traceback(
            None
        )  # kept to be read; its frames (and tensors) are freed
    else:
        names = (
            types.__name__ if isinstance(types, type) else " or ".join(t.__name__ for t in types)
        )
        raise ExpectationFailed(
            tr(f"expected this cell to raise {names}, but it ran without an error")
        )


@contextmanager
def expect_warning(category, *fragments: str):
    """Run the block; it MUST warn with `category` mentioning every fragment (chapters 05+).

    Used to show a deprecated spelling once, with the warning PyTorch really gives.
    """
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        text = ANSI_CODES.sub("", str(w.message))
        if issubclass(w.category, category) and all(f.lower() in text.lower() for f in fragments):
            said = tr("PyTorch warned, as expected:")
            print(f"{said}\n{w.category.__name__}: {text.splitlines()[0]}")
            return
    seen = "; ".join(f"{w.category.__name__}: {w.message}" for w in caught)
    raise ExpectationFailed(
        tr(
            f"expected a {category.__name__} mentioning {list(fragments)}, got "
            f"{seen or tr('no warning at all')}"
        )
    )


def _is_library(filename: str) -> bool:
    """Frames of torch, the standard library or course_lib are noise to a learner."""
    return any(
        part in filename for part in ("site-packages", "course_lib", "/lib/python", "<frozen")
    )


def describe_exception(err: BaseException, limit: int = 3) -> str:
    """'TypeError: ...' plus the last few frames, for a learner to read: Python's error as it is,
    the frames in the course's language (the message around it keeps the error raw)."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if not _is_library(f.filename)][
        -limit:
    ]
    where = [tr(f"line {f.lineno} in {f.name}: {(f.line or '').strip()}") for f in frames]
    text = f"{type(err).__name__}: {err}".strip()
    if len(text) > 600:
        text = text[:600] + " ..."
    if not where:
        return text
    chinese = any(CJK.search(w) for w in where)
    return f"{text}（{'；'.join(where)}）" if chinese else f"{text} ({'; '.join(where)})"
