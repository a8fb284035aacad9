"""JupyterLab on loopback and one opened notebook in Chromium: the machinery of the browser suite.

Knows no chapter: what to click in each chapter lives in chapters.py.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# What a learner sees when widgets or plots break (see shared/notes/browser-testing.md).
BROKEN_ON_PAGE = [
    (re.compile(r"Error displaying widget"), "widget render error"),
    (re.compile(r"model not found"), "widget model not found"),
    (re.compile(r"Click to show javascript error"), "widget javascript error"),
    (re.compile(r"Loading widget\.\.\."), "widget never finished loading"),
    (
        re.compile(
            r"\b(?:[HV]?Box|GridBox|Dropdown|Button|HTML(?:Math)?|Label|Output|IntSlider|FloatSlider|"
            r"IntRangeSlider|FloatRangeSlider|IntProgress|FloatProgress|RadioButtons|Checkbox|ToggleButtons?|"
            r"Text|Textarea|FloatText|IntText|Bounded(?:Float|Int)Text|Select|SelectMultiple|"
            r"SelectionSlider|Tab|Accordion|Stack|Image|Play)"
            r"\((?:children=|value=|options=|description=|layout=|outputs=|index=|min=|max=|\))"
        ),
        "a widget's plain-text repr instead of the widget (widget extension missing?)",
    ),
    (re.compile(r"IProgress not found"), "tqdm could not draw its widget progress bar"),
]
FIGURE_AS_TEXT = re.compile(r"<Figure size \d+x\d+ with \d+ Axes>")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SPACES = re.compile("[\u00a0\u2007\u202f]")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

LAB_SETTINGS = {
    # The news pop-up covers part of the page.
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    # The default windowing mode does not render cells below the fold.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # The copies are throwaway, but nothing needs writing back either.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/extensionmanager-extension/plugin": {"enabled": False},
}


def find_chromium():
    """COURSE_CHROMIUM, else Debian's chromium-headless-shell (Chromium's old headless mode, a
    binary of its own with no browser UI behind the page: chapter 03 opened and run in 12.8
    CPU-s, against 15.4 in the full browser's headless mode), else Debian's chromium; or None."""
    candidates = [
        os.environ.get("COURSE_CHROMIUM"),
        "/usr/bin/chromium-headless-shell",
        shutil.which("chromium-headless-shell"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def short(text: str, limit: int = 1500) -> str:
    text = ANSI.sub("", text or "").strip()
    return (
        text
        if len(text) <= limit
        else text[:limit] + f"\n... ({len(text) - limit} more characters)"
    )


class LabServer:
    """The course's own JupyterLab: loopback, a free port, no token, throwaway folders."""

    def __init__(self, workdir: Path, notebooks_dir: Path):
        self.workdir = workdir
        self.root = workdir / "root"
        shutil.copytree(
            notebooks_dir, self.root, ignore=shutil.ignore_patterns(".ipynb_checkpoints")
        )
        self.log_path = workdir / "jupyterlab.log"
        self.port = None
        self.process = None

    def forget_progress(self) -> None:
        """A chapter opens as for a learner who never answered it: the two editions share quiz
        ids, and a quiz answered on one page would change what the other shows (reveal())."""
        (self.workdir / "progress.json").unlink(missing_ok=True)

    def _env(self) -> dict:
        env = dict(os.environ)
        env.pop(
            "MPLBACKEND", None
        )  # a caller's MPLBACKEND=Agg would stop inline plots in the kernel
        env.pop("JUPYTER_TOKEN", None)
        env["COURSE_PROGRESS_FILE"] = str(self.workdir / "progress.json")
        for var, folder in [
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTER_DATA_DIR", "data"),
            ("IPYTHONDIR", "ipython"),
        ]:
            env[var] = str(self.workdir / folder)
        return env

    def _write_settings(self) -> Path:
        settings = self.workdir / "settings"
        for name, values in LAB_SETTINGS.items():
            path = settings / f"{name}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        return settings

    def start(self, timeout: float = 90):
        self.port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--port-retries=0",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={self.root}",
            f"--LabApp.user_settings_dir={self._write_settings()}",
            f"--LabApp.workspaces_dir={self.workdir / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self._env(),
            cwd=self.root,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with code {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                self.api("GET", "/api/status")
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(
            f"JupyterLab did not answer on port {self.port} within {timeout:.0f} "
            f"s:\n{self.log_tail()}"
        )

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def api(self, method: str, path: str, timeout: float = 30):
        request = urllib.request.Request(self.url(path), method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self, notebook_path=None):
        """Stop the kernels (of one notebook, or all) through the server, so none is left behind."""
        for session in self.api("GET", "/api/sessions"):
            if notebook_path is None or session.get("path") == notebook_path:
                self.api("DELETE", f"/api/sessions/{session['id']}")
        if notebook_path is None:
            for kernel in self.api("GET", "/api/kernels"):
                self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def stop(self):
        if self.process is None:
            return
        try:
            if self.process.poll() is None:
                try:
                    self.shut_down_kernels()
                except OSError:
                    pass
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(self.process.pid, signal.SIGKILL)
                    self.process.wait(10)
        finally:
            self._log.close()
            self.process = None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


# ------------------------------------------------------------------ JavaScript run in the page
JS_READY = """(path) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const s = w && w.sessionContext;
  const k = s && s.session && s.session.kernel;
  return !!(w && w.context && w.context.path === path && w.content && s.isReady && k
            && k.connectionStatus === 'connected' && k.status === 'idle');
}"""

# Records every error the kernel reports, cells and
# widget callbacks alike (those go to the log console).
JS_LISTEN = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  window.__course = {errors: []};
  w.sessionContext.session.kernel.iopubMessage.connect((_, msg) => {
    if (msg.header.msg_type === 'error') {
      window.__course.errors.push({ename: msg.content.ename, evalue: msg.content.evalue,
        traceback: (msg.content.traceback || []).join('\\n'),
        parent: (msg.parent_header && msg.parent_header.msg_type) || ''});
    }
  });
}"""

# Opens a notebook in the JupyterLab already loaded in the tab (the command is not awaited: an
# awaited JupyterLab command has no timeout); JS_READY then waits for its kernel.
JS_OPEN = """(path) => { window.jupyterapp.commands.execute('docmanager:open', {path}); }"""

# Closes the documents of the main area (all but `keep`), unsaved changes dropped: the copies are
# throwaway. An emptied main area shows a Launcher, closed with the rest when the next one opens.
JS_CLOSE_OTHERS = """(keep) => {
  for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) {
    if (w.context && w.context.path === keep) continue;
    if (w.context) w.context.model.dirty = false;
    w.close();
  }
}"""

JS_RUN_ALL = """() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }"""

JS_RUN_STATE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const code = w.content.widgets.filter(c => c.model.type === 'code');
  return {kernel: w.sessionContext.session.kernel.status,
          started: code.some(c => c.model.executionCount !== null ||
                                  c.model.executionState === 'running'),
          running: code.filter(c => c.model.executionState === 'running').length,
          counts: code.map(c => c.model.executionCount)};
}"""

JS_KERNEL_ERRORS = """() => window.__course.errors"""

JS_CELLS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const WIDGET = 'application/vnd.jupyter.widget-view+json';
  const IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/svg+xml'];
  const loaded = img => img.complete && img.naturalWidth > 0;
  // A widget view's element is a Lumino widget with class jupyter-widgets or widget-* (RadioButtons
  // has only widget-radio); Output widgets' inner output areas have neither.
  const isView = e => e.classList.contains('lm-Widget') &&
    Array.from(e.classList).some(k => k === 'jupyter-widgets' || k.startsWith('widget-'));
  return w.content.widgets.map((c, i) => {
    c.node.dataset.courseCell = String(i);
    const m = c.model;
    const cell = {index: i, type: m.type, source: m.sharedModel.getSource(), count: null,
                  running: m.executionState === 'running', outputs: [], dom: []};
    if (m.type !== 'code') return cell;
    cell.count = m.executionCount;
    for (let j = 0; j < m.outputs.length; j++) {
      const o = m.outputs.get(j).toJSON();
      const data = o.data || {};
      cell.outputs.push({type: o.output_type, name: o.name || '', ename: o.ename || '',
        evalue: o.evalue || '', traceback: (o.traceback || []).join('\\n'),
        widget: data[WIDGET] ? data[WIDGET].model_id : null, image: IMAGES.some(t => t in data),
        text: String(o.text || data['text/plain'] || '').slice(0, 2000)});
    }
    const area = c.outputArea.node;
    for (const out of area.querySelectorAll('.jp-OutputArea-output')) {
      if (out.closest('.jp-OutputArea') !== area) continue;
      const root = out.querySelector(':scope > .jupyter-widgets');
      const box = (root || out).getBoundingClientRect();
      const imgs = Array.from(out.querySelectorAll('img'));
      const views = root
        ? Array.from(root.querySelectorAll('.lm-Widget')).filter(isView).length + 1 : 0;
      cell.dom.push({widget: !!root, views: views, width: box.width, height: box.height,
        images: imgs.length, loaded: imgs.filter(loaded).length,
        svgs: out.querySelectorAll('.jp-RenderedSVGImage svg, .jp-RenderedSVG svg').length,
        text: out.innerText.slice(0, 4000)});
    }
    return cell;
  });
}"""

# One cell's execution count and whether it runs: what run_cell polls (JS_CELLS reads every
# output of the notebook, layout included, and is read once the cell has run).
JS_CELL_STATE = """(i) => {
  const m = window.jupyterapp.shell.currentWidget.content.widgets[i].model;
  return {count: m.type === 'code' ? m.executionCount : null,
          running: m.executionState === 'running'};
}"""

JS_MARK = """() => window.jupyterapp.shell.currentWidget.content.widgets.forEach((c, i) => {
  if (c.node.dataset.courseCell !== String(i)) c.node.dataset.courseCell = String(i); })"""

JS_DIALOGS = """() => Array.from(document.querySelectorAll('.jp-Dialog'))
  .map(d => d.innerText.slice(0, 500))"""

# Asks the kernel (without touching the learner's namespace or execution count) how many widget
# views hang under each displayed widget, and how many images its Output widgets hold.
KERNEL_TREE = """
import json
import ipywidgets
from ipywidgets.widgets import widget as _widget

def summary(ids):
    instances = getattr(_widget, "_instances", None) or ipywidgets.Widget.widgets
    def walk(model_id, seen):
        w = instances.get(model_id)
        if w is None or model_id in seen:
            return [0, 0, int(w is None)]
        seen.add(model_id)
        views, images, missing = int(isinstance(w, ipywidgets.DOMWidget)), 0, 0
        kids = [k.model_id for k in (getattr(w, "children", None) or ())]
        for out in (w.outputs if isinstance(w, ipywidgets.Output) else ()):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                kids.append(data["application/vnd.jupyter.widget-view+json"]["model_id"])
            elif any(t in data for t in ("image/png", "image/jpeg", "image/gif", "image/svg+xml")):
                images += 1
        for kid in kids:
            v, i, m = walk(kid, seen)
            views, images, missing = views + v, images + i, missing + m
        return [views, images, missing]
    return json.dumps({i: walk(i, set()) for i in ids}).encode().hex()
"""

JS_KERNEL_EXPRESSION = """async (expr) => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = k.requestExecute(
    {code: '', silent: true, store_history: false, user_expressions: {r: expr}});
  const timeout = new Promise(
    (_, reject) => setTimeout(() => reject(new Error('no answer in 30 s')), 30000));
  const reply = await Promise.race([future.done, timeout]);
  const r = reply.content.user_expressions.r;
  return r.status === 'ok' ? {ok: r.data['text/plain']} : {error: r.ename + ': ' + r.evalue};
}"""

JS_SOURCE = """(i) => window.jupyterapp.shell.currentWidget.content.widgets[i]
  .model.sharedModel.getSource()"""

# The notebook's scroll area: where it starts on the screen, and how tall its cells are in all.
JS_LAYOUT = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const outer = w.node.querySelector('.jp-WindowedPanel-outer');
  const cells = w.content.widgets;
  if (!outer || !cells.length) return {top: 0, height: document.body.scrollHeight};
  outer.scrollTop = 0;
  const top = outer.getBoundingClientRect().top;
  const bottom = cells[cells.length - 1].node.getBoundingClientRect().bottom;
  return {top: Math.ceil(top), height: Math.ceil(bottom - top + 80)};
}"""

# Two animation frames: the page has painted what the last change laid out (a fixed wait of
# some hundred ms did the same on an idle machine and was too short or too long otherwise).
JS_FRAMES = """() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"""

# Every image of the page decoded (a broken one counts as done: the checks then report it).
JS_IMAGES_DECODED = """async () => {
  await Promise.all(Array.from(document.images).map(i => i.decode().catch(() => 0)));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""

JS_SCROLL = """(y) => {
  window.jupyterapp.shell.currentWidget.node.querySelector('.jp-WindowedPanel-outer').scrollTop = y;
}"""


# Every option row of every quiz in cell i (the course's rows, or plain ipywidgets radio/checkbox
# labels): where its text really is (a Range over its contents, so text spilling out of a fixed
# height row is measured too) and whether its button is drawn inside its own row.
JS_OPTION_ROWS = """(i) => {
  const cell = document.querySelector(`[data-course-cell="${i}"]`);
  if (!cell) return [];
  const groups = Array.from(cell.querySelectorAll('.course-quiz, .widget-radio-box'));
  const rowsOf = g => Array.from(g.querySelectorAll('.course-option, .widget-radio-box > label'));
  return groups.map(g => rowsOf(g).map(row => {
    const range = document.createRange();
    range.selectNodeContents(row);
    const text = range.getBoundingClientRect();
    const box = row.getBoundingClientRect();
    const input = row.querySelector('input');
    const ib = input ? input.getBoundingClientRect() : null;
    const middle = ib ? (ib.top + ib.bottom) / 2 : -1;  // its button must sit inside its own row
    return {text: row.innerText.trim().slice(0, 80), top: Math.min(text.top, box.top),
            bottom: Math.max(text.bottom, box.bottom),
            button: !!ib && ib.width > 2 && ib.height > 2
              && getComputedStyle(input).visibility !== 'hidden'
              && middle > box.top && middle < box.bottom};
  }));
}"""


class ChapterFailure(AssertionError):
    """A check failed; the message already names the
    chapter, the cell or widget, and the screenshot."""


VIEWPORT = {"width": 1280, "height": 1000}


class BrowserTab:
    """One Chromium tab that keeps JupyterLab loaded from one chapter to the next: loading the app
    costs more CPU than opening a notebook in it. After a chapter with a failure, the next one
    starts in a fresh tab (a new browser context), so that no failure's leftovers carry over."""

    def __init__(self, browser):
        self.browser, self.context, self.page, self.lab_loaded = browser, None, None, False

    def get(self):
        if self.page is None:
            self.context = self.browser.new_context(viewport=VIEWPORT)
            self.page = self.context.new_page()
            self.page.set_default_timeout(30_000)
            self.lab_loaded = False
        return self.page

    def discard(self):
        context, self.context, self.page, self.lab_loaded = self.context, None, None, False
        if context is not None:
            context.close()


class NotebookPage:
    """One chapter notebook opened in JupyterLab in Chromium, with its own kernel."""

    VIEWPORT = VIEWPORT

    def __init__(self, server: LabServer, tab: BrowserTab, notebook: Path, artifacts: Path):
        self.server, self.tab, self.notebook, self.artifacts = server, tab, notebook, artifacts
        self.name = notebook.stem
        # notebooks/zh/03_x.ipynb opens as zh/03_x.ipynb (the server's root is notebooks/)
        self.relative_path = notebook.relative_to(server.root).as_posix()
        self.page = tab.get()
        self.cells = self.after_run = []
        self.timings = {}
        self.failed = False  # set by fail() and by the suite's report hook (conftest.py)

    # ---------------------------------------------------------------- opening and running
    def open(self, timeout: float = 120):
        """Open the notebook in the tab's JupyterLab (loaded first in a fresh tab, with a fresh
        workspace), wait until its own kernel is connected and idle, close every other document."""
        start = time.monotonic()
        if self.tab.lab_loaded:
            self.page.evaluate(JS_OPEN, self.relative_path)
        else:
            self.page.goto(
                self.server.url(f"/lab/tree/{self.relative_path}?reset"),
                wait_until="domcontentloaded",
            )
        try:
            self.page.wait_for_function(
                JS_READY, arg=self.relative_path, timeout=timeout * 1000, polling=250
            )
        except Exception as err:
            self.fail(
                "open",
                f"the notebook's kernel was not connected and idle within {timeout:.0f} s ({err})",
                self.dialog_text(),
            )
        self.tab.lab_loaded = True
        self.page.evaluate(JS_CLOSE_OTHERS, self.relative_path)
        self.page.evaluate(JS_LISTEN)
        self.timings["open"] = time.monotonic() - start

    def run_all(self, timeout: float):
        """Run > Run All Cells, then wait until the
        kernel is idle and no cell is queued or running."""
        start = time.monotonic()
        self.page.evaluate(JS_RUN_ALL)
        deadline, settled, state = start + timeout, 0, {}
        while time.monotonic() < deadline:
            state = self.page.evaluate(JS_RUN_STATE)
            done = state["kernel"] == "idle" and state["started"] and state["running"] == 0
            settled = settled + 1 if done else 0
            if settled >= 3:
                break
            time.sleep(0.1)
        else:
            ran = sum(c is not None for c in state.get("counts", []))
            self.fail(
                "run all cells",
                f"still running after {timeout:.0f} s: {ran} of "
                f"{len(state.get('counts', []))} code cells done, kernel {state.get('kernel')}",
            )
        self.timings["run all"] = time.monotonic() - start

    def settle_widgets(self, timeout: float = 30):
        """Wait until every widget output has a rendered
        view (or time runs out: the tests then say which)."""
        start = time.monotonic()
        while True:
            self.cells = self.page.evaluate(JS_CELLS)
            pending = [
                c
                for c in self.cells
                if self._unrendered(c) or any("Loading widget..." in d["text"] for d in c["dom"])
            ]
            if not pending or time.monotonic() - start > timeout:
                break
            time.sleep(0.2)
        self.page.evaluate(JS_IMAGES_DECODED)  # images decoded, the layout painted
        self.cells = self.after_run = self.page.evaluate(JS_CELLS)
        self.timings["widgets"] = time.monotonic() - start

    @staticmethod
    def _unrendered(cell) -> bool:
        wanted = sum(1 for o in cell["outputs"] if o["widget"])
        return sum(1 for d in cell["dom"] if d["widget"]) < wanted

    # ---------------------------------------------------------------- reading the page
    def code_cells(self):
        return [c for c in self.cells if c["type"] == "code"]

    def code_cells_after_run(self):
        """The code cells as Run All left them, before any interaction changed the page."""
        return [c for c in self.after_run if c["type"] == "code"]

    def kernel_errors(self):
        return self.page.evaluate(JS_KERNEL_ERRORS)

    def dialog_text(self) -> str:
        try:
            return "\n".join(self.page.evaluate(JS_DIALOGS))
        except Exception:
            return ""

    def kernel_widget_tree(self, model_ids):
        """{model_id: [widget views, images in Output widgets, models the kernel does not know]}."""
        expr = f"(lambda g: (exec({KERNEL_TREE!r}, g), g['summary']({list(model_ids)!r}))[1])({{}})"
        answer = self.page.evaluate(JS_KERNEL_EXPRESSION, expr)
        if "error" in answer:
            raise RuntimeError(f"asking the kernel about its widgets failed: {answer['error']}")
        return json.loads(bytes.fromhex(answer["ok"].strip("'\"")))

    def find_cell(self, needle: str, after: int = -1) -> dict:
        """The first code cell after `after` whose source contains `needle`."""
        self.cells = self.page.evaluate(JS_CELLS)
        for cell in self.code_cells():
            if cell["index"] > after and needle in cell["source"]:
                return cell
        self.fail(
            f"cell `{needle}`",
            "no code cell contains this text (was the notebook changed? update "
            "tests/browser/chapters.py)",
        )

    def cell_locator(self, index: int):
        return self.page.locator(f'[data-course-cell="{index}"]')

    def output_text(self, index: int) -> str:
        self.page.evaluate(JS_MARK)  # cell_locator finds cells by these marks
        text = self.cell_locator(index).locator(".jp-Cell-outputWrapper").inner_text()
        return SPACES.sub(" ", text)  # tqdm and widgets use non-breaking and figure spaces

    def option_rows(self, index: int) -> list:
        """Per quiz in the cell's output: its option rows, each {text, top, bottom, button}."""
        self.page.evaluate(JS_MARK)
        return self.page.evaluate(JS_OPTION_ROWS, index)

    def source(self, index: int) -> str:
        return self.page.evaluate(JS_SOURCE, index)

    # ---------------------------------------------------------------- learner actions
    def type_into_cell(self, index: int, text: str):
        """Click into the cell's editor, select everything,
        and type `text` (as a paste: no auto-indent)."""
        editor = self.cell_locator(index).locator(".jp-InputArea-editor .cm-content")
        editor.click()
        self.page.keyboard.press("ControlOrMeta+a")
        self.page.keyboard.insert_text(text)
        got = self.source(index)
        if got.strip() != text.strip():
            self.fail(
                f"cell {index}",
                "typing into the editor did not give the intended source",
                f"typed:\n{text}\nthe cell now holds:\n{got}",
            )

    def run_cell(self, index: int, timeout: float = 60):
        """Click into the cell and press Shift+Enter, as a learner does; wait until it has run."""
        before = self.page.evaluate(JS_CELL_STATE, index)["count"]
        self.cell_locator(index).locator(".jp-InputArea-editor .cm-content").click()
        self.page.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.page.evaluate(JS_CELL_STATE, index)
            if state["count"] is not None and state["count"] != before and not state["running"]:
                return self._cell(index)
            time.sleep(0.2)
        self.fail(
            f"cell {index}",
            f"did not finish running within {timeout:.0f} s after Shift+Enter",
            self.output_text(index),
        )

    def _cell(self, index: int) -> dict:
        self.cells = self.page.evaluate(JS_CELLS)
        return self.cells[index]

    def wait_for_text(self, index: int, pattern: str, timeout: float = 20) -> str:
        deadline, text = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            text = self.output_text(index)
            if re.search(pattern, text):
                return text
            time.sleep(0.2)
        return None

    # ---------------------------------------------------------------- evidence
    SHOT_LIMIT = 15000  # px; Chromium cannot capture much more in one image

    def screenshot(self, label: str) -> str:
        """The whole notebook as the learner scrolls through it: a viewport as tall as the notebook
        (in parts of SHOT_LIMIT px when it is longer), then back to the normal size. A failure's
        (label FAILED-...) is a PNG, every pixel kept; the others are JPEGs, which Chromium encodes
        in half the CPU time."""
        kind, ext = ("png", "png") if label.startswith("FAILED") else ("jpeg", "jpg")
        path = self.artifacts / f"{self.name}{'--' + label if label else ''}.{ext}"
        paths = [path]
        try:
            layout = self.page.evaluate(JS_LAYOUT)
            height = min(
                max(layout["top"] + layout["height"], self.VIEWPORT["height"]), self.SHOT_LIMIT
            )
            step = height - layout["top"]
            parts = max(1, -(-layout["height"] // step))
            paths += [path.with_name(f"{path.stem}--part{k + 1}.{ext}") for k in range(1, parts)]
            self.page.set_viewport_size({"width": self.VIEWPORT["width"], "height": height})
            for k, part in enumerate(paths):
                self.page.evaluate(JS_SCROLL, k * step)
                self.page.evaluate(JS_FRAMES)
                quality = {"quality": 80} if kind == "jpeg" else {}
                self.page.screenshot(path=str(part), type=kind, timeout=60_000, **quality)
        except Exception as err:  # evidence must never hide the real failure
            return f"{path} (screenshot failed: {str(err).splitlines()[0]})"
        finally:
            try:
                self.page.set_viewport_size(self.VIEWPORT)
            except Exception:
                pass
        return str(path) + (
            f" (+ {len(paths) - 1} more part(s): {paths[-1].name})" if len(paths) > 1 else ""
        )

    def fail(self, where: str, what: str, on_page: str = ""):
        shot = self.screenshot("FAILED-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", where).strip("-")[:60])
        message = f"[{self.name}] {where}: {what}"
        if on_page:
            message += f"\n--- on the page ---\n{short(on_page)}\n---"
        message += f"\nscreenshot: {shot}"
        self.failed = True
        raise ChapterFailure(message)

    def close(self):
        """Close the notebook (the tab stays for the next chapter, unless this one failed) and
        stop its kernel."""
        try:
            if self.failed:
                self.tab.discard()
            else:
                self.page.evaluate(JS_CLOSE_OTHERS, None)
        except Exception:
            self.tab.discard()
        finally:
            self.server.shut_down_kernels(self.relative_path)


def describe(cell: dict) -> str:
    """`cell 16 ch.machine_explorer()`: how failures name a cell."""
    first = next((line for line in cell["source"].splitlines() if line.strip()), "")
    return f"cell {cell['index']} `{first[:80]}`"
