"""Fixtures of the browser suite: Chromium, one JupyterLab
server and one browser tab per session (per xdist worker), one opened chapter at a time.

Deselect the suite with `-m "not browser"`. Without Chromium or playwright the suite is skipped
with the install command, except in CI (CI=true), where that is a failure.
"""

import os
import re
from pathlib import Path

import pytest

from support import NOTEBOOKS, ROOT

from .lab import CHROMIUM_ARGS, BrowserTab, ChapterFailure, LabServer, NotebookPage, find_chromium

ARTIFACTS = ROOT / "test-artifacts" / "browser"
INSTALL = (
    "to run it: `apt-get install chromium-headless-shell` (Debian; or chromium, or set "
    "COURSE_CHROMIUM to a Chromium/Chrome binary) and `pip install -e '.[test]'` (brings "
    "playwright); "
    "`playwright install` is not needed"
)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "browser: opens the chapters in JupyterLab in headless Chromium "
        '(deselect with -m "not browser")',
    )


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_browser(reason: str):
    if in_ci():
        pytest.fail(f"CI must run the browser suite, but {reason}; .ci/run installs it")
    pytest.skip(f"browser suite skipped: {reason}; {INSTALL}")


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium driven by the Python playwright
    package (its own browser download is not used)."""
    executable = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing_browser("the Python package playwright is not installed")
    if executable is None:
        missing_browser(
            "Chromium was not found (/usr/bin/chromium-headless-shell or /usr/bin/chromium)"
        )
    driver = sync_playwright().start()
    try:
        browser = driver.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()
    finally:
        driver.stop()


@pytest.fixture(scope="session")
def tab(chromium):
    """The tab the chapters open in, one after another (JupyterLab loads once: lab.BrowserTab)."""
    tab = BrowserTab(chromium)
    try:
        yield tab
    finally:
        tab.discard()


@pytest.fixture(scope="session")
def artifacts():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def clear_screenshots(artifacts, name: str) -> None:
    """A chapter's screenshots of an earlier run (each worker clears only the chapters it opens)."""
    for old in [p for g in (name, f"{name}--*") for p in artifacts.glob(f"{g}.[pj][np]g")]:
        old.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def lab(chromium, tmp_path_factory):
    """The course's JupyterLab on 127.0.0.1, a free port,
    no token, on throwaway copies of the notebooks."""
    server = LabServer(tmp_path_factory.mktemp("jupyterlab"), ROOT / "notebooks")
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module", params=NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def chapter_page(request, lab, tab, artifacts):
    """One chapter opened, all cells run, widgets
    rendered; a screenshot at the end (and at each failure)."""
    from .chapters import CHAPTERS, BrowserSpec

    spec = CHAPTERS.get(request.param.stem, BrowserSpec())
    yield from opened_chapter(lab, tab, request.param.name, artifacts, spec)


def opened_chapter(lab, tab, name: str, shots, spec, lang: str = "en"):
    """Open notebook `name` (under the lab's root) as a learner who never answered it, run all
    its cells and settle its widgets; yield the page, screenshot it after the tests, close it.
    The page as Run All left it is photographed only when a check fails (the checks of the
    after-run page come first, so their FAILED- screenshot shows it): a full-notebook capture
    costs seconds of CPU."""
    clear_screenshots(shots, Path(name).stem)
    lab.forget_progress()
    page = NotebookPage(lab, tab, lab.root / name, shots)
    page.lang = lang  # the language chapters.py's steps are said in (speech.py)
    try:
        page.open()
        page.run_all(spec.run_timeout)
        page.settle_widgets()
        page.kernel_tree = page.kernel_widget_tree(
            [o["widget"] for c in page.code_cells() for o in c["outputs"] if o["widget"]]
        )
        yield page
        page.screenshot("after-interactions")
    finally:
        page.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """An unexpected failure (not one of ours, which
    already carry it) still gets a screenshot path."""
    outcome = yield
    report = outcome.get_result()
    page = getattr(item, "funcargs", {}).get("chapter_page")
    if report.failed and page is not None:
        page.failed = True  # the next chapter opens in a fresh tab
    if (
        report.failed
        and page is not None
        and call.excinfo is not None
        and not call.excinfo.errisinstance(ChapterFailure)
    ):
        shot = page.screenshot("FAILED-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", item.originalname))
        report.sections.append(("browser", f"chapter {page.name}; screenshot: {shot}"))
