"""How the suite shares out its work over the CPU cores (pytest-xdist: `course.sh test` adds
`-n auto --dist loadgroup --no-loadscope-reorder`, course.py's PARALLEL; `-n 0` runs it in one
process, and so does a bare `pytest`).

A group's tests run on one worker, one after another, in the order pytest gives them:
- a notebook's nbval cells (they share one kernel);
- a chapter's browser tests (they share one opened notebook; each worker starts its own
  JupyterLab and Chromium once, tests/browser/conftest.py);
- a module's tests that read one module-scoped fixture, per parameter of it (a class graded
  once, a real JupyterHub started once).
Every other test is a unit of its own. Groups are handed out first, longest kinds first
(browser chapters, shared fixtures, notebooks); single tests then fill the gaps.

This file sits at the top of the checkout so that `pytest notebooks/` groups the cells too.
"""

import json
import os
import time

import pytest

SHARED_SCOPES = ("module", "class")
TIMING = pytest.StashKey[bool]()  # this process records the timeline (COURSE_TEST_TIMELINE)
ORDER = ("browser", "shared", "nbval")  # kinds of group, handed out in this order; then the rest


def group_of(item) -> tuple:
    """(kind, name) of the group `item` belongs to, or ("", "") when it stands alone."""
    if type(item).__name__ == "IPyNbCell":  # nbval: one notebook, one kernel
        return "nbval", f"nbval {item.path.parent.name}/{item.path.name}"  # notebooks/ or zh/
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "chapter_page" in params:
        path = params["chapter_page"]
        return "browser", f"browser {path.parent.name}/{path.stem}"
    info = getattr(item, "_fixtureinfo", None)
    shared = [
        name
        for name in item.fixturenames
        if info is not None
        and info.name2fixturedefs.get(name)
        and info.name2fixturedefs[name][-1].scope in SHARED_SCOPES
    ]
    if shared:
        values = "".join(f" {name}={params[name]}" for name in shared if name in params)
        return "shared", f"shared {item.path.name}{values}"
    return "", ""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "xdist_group(name): run on one pytest-xdist worker with the group's other tests"
    )
    if getattr(config, "workerinput", {}).get("course_timeline"):  # an xdist worker
        config.stash[TIMING] = True
    elif os.environ.get("COURSE_TEST_TIMELINE"):  # the controller, or a run without xdist
        config.stash[TIMING] = True  # (the variable is not passed on to pytest runs in tests)
        config.pluginmanager.register(Timeline(os.environ.pop("COURSE_TEST_TIMELINE")))


class Timeline:
    """COURSE_TEST_TIMELINE=FILE: one JSON line per test phase (worker, start, stop, group, CPU
    seconds of the worker and its reaped children), read by benchmarks/ci_speed.py."""

    def __init__(self, path: str):
        self.out = open(path, "a", encoding="utf-8")  # closed at the session's end
        self.write({"event": "start", "time": time.time()})

    def pytest_configure_node(self, node):
        node.workerinput["course_timeline"] = True

    def write(self, row: dict) -> None:
        self.out.write(json.dumps(row) + "\n")
        self.out.flush()

    def pytest_runtest_logreport(self, report):
        node = getattr(report, "node", None)
        props = dict(report.user_properties)
        self.write({
            "worker": node.gateway.id if node is not None else "-",
            "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "start": report.start, "stop": report.stop,
            "group": props.get("timeline_group", ""), "cpu": props.get("timeline_cpu"),
        })  # fmt: skip

    def pytest_sessionfinish(self):
        self.write({"event": "finish", "time": time.time()})
        self.out.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """With COURSE_TEST_TIMELINE set, each report carries its group and the worker's CPU time."""
    report = yield
    if item.config.stash.get(TIMING, False):
        t = os.times()
        report.user_properties = [
            *report.user_properties,
            ("timeline_group", group_of(item)[1]),
            ("timeline_cpu", [t.user + t.system, t.children_user + t.children_system]),
        ]
    return report


def pytest_itemcollected(item):
    """Mark each group as its tests are collected (xdist turns the marks into its scopes)."""
    kind, name = group_of(item)
    if kind:
        item.add_marker(pytest.mark.xdist_group(name))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Groups first, longest kinds first; each group's tests kept together and in their order."""
    first, keys = {}, []
    for index, item in enumerate(items):
        mark = item.get_closest_marker("xdist_group")
        name = mark.args[0] if mark and mark.args else mark.kwargs.get("name") if mark else None
        kind = name.split(" ", 1)[0] if name else ""
        group = name or f"#{index}"
        first.setdefault(group, index)
        rank = ORDER.index(kind) if kind in ORDER else len(ORDER) if name else len(ORDER) + 1
        keys.append((rank, first[group], index))
    order = sorted(range(len(items)), key=keys.__getitem__)
    items[:] = [items[i] for i in order]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A cell of a Chinese notebook (notebooks/zh/) fails when its outputs hold English prose,
    naming the cell and the lines (course_lib/i18n/leftovers.py): read from what nbval ran."""
    result = yield
    if type(item).__name__ == "IPyNbCell" and item.path.parent.name == "zh":
        from course_lib.i18n.leftovers import nbval_leftovers

        said = nbval_leftovers(item)
        if said:
            item.raise_cell_error(said)
    return result
