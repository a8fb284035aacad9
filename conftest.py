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
import threading
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
    """COURSE_TEST_TIMELINE=FILE: one JSON line per test phase (worker, its pid, start, stop,
    group, CPU seconds of the worker's process tree: tree_cpu), and every SAMPLE_S how many
    threads of each worker's tree are running or runnable (none: the worker waits on a sleep, a
    poll or a socket, and on a quiet machine its core would idle), read by benchmarks/ci_speed.py.
    """

    SAMPLE_S = 0.25

    def __init__(self, path: str):
        self.out, self.lock = open(path, "a", encoding="utf-8"), threading.Lock()  # closed last
        self.write({"event": "start", "time": time.time()})
        self.done, self.distributed = threading.Event(), False
        threading.Thread(target=self.sample, daemon=True).start()

    def sample(self) -> None:
        own = os.getpid()
        while not self.done.wait(self.SAMPLE_S):
            pids = children_of(own) if self.distributed else [own]  # the workers, or this one
            running = {pid: tree_running(pid) - (pid == own) for pid in pids}  # less this thread
            self.write({"event": "sample", "time": time.time(), "running": running})

    def pytest_configure_node(self, node):
        node.workerinput["course_timeline"], self.distributed = True, True

    def write(self, row: dict) -> None:
        with self.lock:
            if not self.out.closed:
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
            "pid": props.get("timeline_pid"),
        })  # fmt: skip

    def pytest_sessionfinish(self):
        self.done.set()
        self.write({"event": "finish", "time": time.time()})
        with self.lock:
            self.out.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """With COURSE_TEST_TIMELINE set, each report carries its group and the worker's CPU time."""
    report = yield
    if item.config.stash.get(TIMING, False):
        report.user_properties = [
            *report.user_properties,
            ("timeline_group", group_of(item)[1]),
            ("timeline_cpu", tree_cpu()),
            ("timeline_pid", os.getpid()),
        ]
    return report


def tree_cpu() -> list:
    """[CPU-s of this process and its reaped children, CPU-s of its live descendants] (Linux's
    /proc; the servers and kernels a test starts count while they run)."""
    t, live, tick = os.times(), 0.0, os.sysconf("SC_CLK_TCK")
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/stat") as f:  # closed here: no ResourceWarning in any test
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        live += sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
    return [t.user + t.system + t.children_user + t.children_system, live]


def tree_running(pid: int) -> int:
    """How many threads of `pid` and its descendants are running or runnable (state R)."""
    count = 0
    for each in [pid, *descendants(pid)]:
        try:
            for task in os.listdir(f"/proc/{each}/task"):
                with open(f"/proc/{each}/task/{task}/stat") as f:
                    count += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except OSError:
            continue
    return count


def descendants(pid: int):
    """The live descendants of `pid`, each once (children first, then theirs)."""
    todo, seen = children_of(pid), set()
    while todo:
        child = todo.pop()
        if child not in seen:
            seen.add(child)
            yield child
            todo += children_of(child)


def children_of(pid: int) -> list:
    """The live child processes of `pid` (of each of its threads); none where /proc has none."""
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


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
    naming the cell and the lines (course_tools/leftovers.py): read from what nbval ran."""
    result = yield
    if type(item).__name__ == "IPyNbCell" and item.path.parent.name == "zh":
        from course_tools.leftovers import nbval_leftovers

        said = nbval_leftovers(item)
        if said:
            item.raise_cell_error(said)
    return result
