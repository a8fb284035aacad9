"""Shared test setup: progress goes to a throwaway file; one compute thread.

What tests share (the checkout's root, the notebooks, helpers) is in tests/support.
"""

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("COURSE_PROGRESS_FILE", str(Path(tempfile.mkdtemp()) / "progress.json"))
# One compute thread: small models run as fast, and notebooks stay quick on a busy 2-core machine
# (nbval's kernels inherit this).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The tests read the English edition's messages; a Chinese notebook turns Chinese on itself.
os.environ["COURSE_LANG"] = "en"


# ---------------------------------------------------------------- the Chinese edition's tests
@pytest.fixture(autouse=True)
def language_as_before():
    """Each test leaves the language choice as it found it: a use_language() (a fixture's, a
    command's --lang) would otherwise outlive its test and decide a later test's language."""
    from course_lib import i18n

    before = i18n._chosen
    yield
    i18n._chosen = before


@pytest.fixture
def zh():
    """Chinese on; yields what the translations kept as they are (PyTorch's own messages)."""
    from course_lib.i18n import catalogue

    with catalogue.in_language("zh"), catalogue.keeping() as kept:
        yield kept


@pytest.fixture
def with_cjk_font():
    """A CJK font, as the course's machines have one (the figure labels are then Chinese)."""
    from unittest import mock

    from course_lib.i18n import plots

    with mock.patch.object(plots, "cjk_font", lambda: "WenQuanYi Zen Hei"):
        yield


@pytest.fixture(scope="module")
def digits():
    """The course's digits, the training part of its usual split."""
    from course_lib import data

    return data.digits_split(test_fraction=0.2, seed=0)[0]
