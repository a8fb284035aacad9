"""English left in a Chinese notebook's outputs: what the learner would read untranslated.

    python -m course_tools.leftovers notebooks/zh/01_device_check.ipynb ...

executes each notebook (a temporary copy, COURSE_LANG=zh, one compute thread) and prints, per cell
id, the lines of its outputs that are English prose: streams, text/plain (where nothing richer is
shown), text/html with its tags stripped, and the descriptions, labels, options and texts of the
widgets the cell shows (their state as nbclient stores it). Exit 1 if any. The same test runs on
every nbval cell of notebooks/zh/ (conftest.py, `nbval_leftovers`), at no extra execution cost.

What counts as English prose is `english_prose`: a run of `RUN` English words in a row, outside
what stays English by design (see there). A widget's short texts (a label, a button, an option)
count from one word on.
"""

import argparse
import html as html_lib
import json
import os
import re
import sys
import tempfile
from functools import cache
from pathlib import Path

from course_lib.i18n.catalogue import NAMES

RUN = 3  # English words in a row that make a line prose
# Chapters whose code cells still print English of their own (none now: every chapter's cells say
# their words through `tr()`): there the texts a cell's code writes (`source_literals`) are not
# leftovers; elsewhere what a cell's code writes in English is found like any other English.
OWN_ENGLISH = ()
# An error's, warning's or exception's name, wherever it starts a message: "RuntimeError: ...",
# "/x/y.py:3: UserWarning: ...", "torch.OutOfMemoryError: ...", "Caught: ValueError: ...".
ERROR_NAME = re.compile(
    r"(?<![\w.])(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit|Exceeded)"
    r"\b(?=:|$|\s*\()"
    r"|^\[[WEIF]\d{4} [\d:.]+ [\w.-]+:\d+\]"  # PyTorch's C++ log: "[W1201 15:55:33.69 x.cpp:245]"
    # and its Python log (torch._logging): "W1204 03:37:00.198000 22958 torch/x/y.py:183]"
    r"|^[WEIF]\d{4} [\d:.]+ \d+ [\w./-]+:\d+\]"
)
TRACEBACK = re.compile(
    r"^\s*Traceback \(most recent call last\)|^-{20,}\s*$|^\s*File \"|^\s*Cell In\[\d+\]"
    r"|^During handling of the above exception|^The above exception was the direct cause"
)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
RULE = re.compile(r"^\s*[-=+|]{5,}[-=+| ]*$")  # a text table's rule line: ----- or |=====|
# PyTorch's own tables, known by their headers: the profiler's key_averages().table(), the
# allocator's memory_summary(), and nvidia-smi's screen.
TORCH_TABLE = re.compile(
    r"Self CPU|CPU total|Self CUDA|CUDA total|# of Calls|memory summary|NVIDIA-SMI|"
    r"Self XPU|Self MPS|CPU Mem|CUDA Mem"
)
# Spans that are code, quoted text or addresses: `x.to(device)`, 'cuda', "float32", https://...
_SPANS = re.compile(
    r"`[^`\n]*`|'[^'\n]*'|\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|「[^」\n]*」|<[^<>\s]+@[^<>\s]+>"
    r"|\b(?:https?|file)://\S+|\b[\w.-]+/[\w./-]+"  # URLs and paths
)
# A quotation that a line break wrapped: 'the docs' words ...\n... more words' (an apostrophe
# inside a word, as in doesn't, is not its end), or the same in “”, ‘’, 「」 or "".
_WRAPPED_QUOTE = re.compile(
    r"(?<!\w)'(?=\w)(?:[^'\n]|\n(?![ \t]*\n)|(?<=\w)'(?=\w)){1,600}?'(?!\w)"
    r"|“[^”]{1,600}?”|‘[^’]{1,600}?’|「[^」]{1,600}?」|\"[^\"]{1,600}?\""
)
_APOSTROPHE = re.compile(r"\w'\w")
# The first line of Python source printed in an output (inspect.getsource, say)
_SOURCE_START = re.compile(r"^(?:@[\w.]+|(?:async\s+)?def\s+\w+\s*\(|class\s+\w+\b)")
_WORD = re.compile(r"^[(\[]?[A-Za-z][a-z]+(?:[-'][A-Za-z]+)*[)\]]?[,.;:!?)]*$")
_HTML_DROP = re.compile(
    r"(?is)<(style|script|pre|code|kbd|samp)\b[^>]*>.*?</\1\s*>|<!--.*?-->"
)  # CSS, scripts, code shown as code
_INLINE = re.compile(r"(?i)</?(?:b|i|em|strong|span|a|small|sup|sub|u|mark|abbr|font)\b[^>]*>")
_TAG = re.compile(r"<[^>]*>")
_NUMBER = re.compile(r"^[(\[]?[-+~]?\d[\d.,:/x%]*(?:[A-Za-z]{1,3}|%)?[)\]]?[,.;:!?)]*$")


def _kind(token: str) -> str:
    """What `token` is in a run of prose: "word" (English), "neutral" (a number, one letter, or a
    name that stays as it is in every language: cpu, cuda, torch, True, ms, ...; it neither counts
    nor ends a run), or "other" (code, an identifier, a symbol, Chinese: it ends a run)."""
    bare = token.strip("()[],.;:!?")
    if _NUMBER.match(token) or bare in NAMES or (len(bare) == 1 and bare.isalpha()):
        return "neutral"
    return "word" if _WORD.match(token) else "other"


def _prose(line: str, run: int) -> bool:
    """Does `line` (code spans, quotes and paths removed) hold `run` English words in a row?"""
    count = 0
    for token in _SPANS.sub(" \0 ", line).split():
        kind = _kind(token)
        count = count + 1 if kind == "word" else count if kind == "neutral" else 0
        if count >= run:
            return True
    return False


@cache
def _known_messages() -> list:
    """The error explainer's patterns of PyTorch's own messages (a warning printed without its
    category, say: "'pin_memory' argument is set as true but no accelerator is found")."""
    from course_lib.explainer import ENTRIES

    return [re.compile(p, re.IGNORECASE) for e in ENTRIES for p in e.patterns]


def _before_error(line: str) -> tuple:
    """(the part of `line` before an error's or warning's name or a message the error explainer
    knows as PyTorch's, whether the line had one): what PyTorch or Python wrote stays as it is."""
    starts = [found.start() for found in [ERROR_NAME.search(line)] if found]
    if _prose(line, RUN):
        starts += [found.start() for p in _known_messages() for found in [p.search(line)] if found]
    if not starts:
        return line, False
    cut = min(starts)
    for span in _SPANS.finditer(line):  # never inside a code span: from the span's start
        if span.start() < cut < span.end():
            cut = span.start()
    return line[:cut], True


def is_python_source(text: str) -> bool:
    """Is `text` Python code (a function's source printed by `inspect.getsource`, say): it parses,
    and holds a statement that is not a bare expression (a printed value is one)? Prose never
    parses."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(str(text)))
    except (SyntaxError, ValueError):
        return False
    return any(not isinstance(node, ast.Expr) for node in tree.body)


def _torch_tables(lines: list) -> set:
    """Indices of the lines that belong to PyTorch's own text tables (a block of non-blank lines
    with a rule line in it, whose text names one of TORCH_TABLE's headers)."""
    kept, block = set(), []
    for index, line in enumerate([*lines, ""]):
        if line.strip():
            block.append(index)
            continue
        text = "\n".join(lines[i] for i in block)
        if any(RULE.match(lines[i]) for i in block) and TORCH_TABLE.search(text):
            kept.update(block)
        block = []
    return kept


def source_literals(source: str) -> list:
    """The string literals of a cell's code (the constant parts of its f-strings too), longest
    first: what the cell's own code prints, the same in both editions by the parity rule."""
    import ast

    code = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in str(source).splitlines()
    )
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = {
        node.value.strip()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    return sorted((text for text in found if len(text) > 1), key=len, reverse=True)


def _without(text: str, kept) -> str:
    """`text` with each text of `kept` blanked out where it stands as whole words ("to", not the
    "to" of "torch"), also where a line break wrapped it; its lines stay where they were."""
    for literal in kept:
        words = literal.split()
        if words and words[0] in text:
            pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)"
            text = re.sub(pattern, lambda m: re.sub(r"\S+", "\0", m.group()), text)
    return text


def _mask(text: str) -> str:
    """`text` with each match of a pattern blanked out, its lines kept where they were."""
    return re.sub(r"\S+", "\0", text)


def _without_wrapped_quotes(text: str) -> str:
    """`text` with its quotations blanked out, those a line break wrapped and those with an
    apostrophe inside ('doesn't ...'), which _SPANS would end early."""
    return _WRAPPED_QUOTE.sub(
        lambda m: (
            _mask(m.group()) if "\n" in m.group() or _APOSTROPHE.search(m.group()) else m.group()
        ),
        text,
    )


def _source_blocks(lines: list) -> set:
    """Indices of the lines that are Python source printed among other output: a block from a
    `def`, `class` or decorator line through its indented lines, if the block parses."""
    kept, index = set(), 0
    while index < len(lines):
        if not _SOURCE_START.match(lines[index]):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and (not lines[end].strip() or lines[end][:1] in " \t"):
            end += 1
        if is_python_source("\n".join(lines[index:end])):
            kept.update(range(index, end))
        index = end
    return kept


def english_prose(text, run: int = RUN, kept=()) -> list:
    """The lines of `text` (a cell's output, as plain text) that are untranslated English prose.

    A line is prose when it holds `run` English words in a row (letters only; numbers and names
    that stay as they are in every language, such as cpu, cuda, torch, True, ms, neither count nor
    break the run; code, identifiers, symbols and Chinese break it). Not prose, by
    design, as they stay English in a Chinese notebook:
    - code spans, quoted text, URLs and paths (`x.to(device)`, 'cuda', "float32", /tmp/x.pt);
    - Python's and PyTorch's own messages: the rest of a line from an error's or warning's name on
      ("RuntimeError: Expected all tensors...", "x.py:3: UserWarning: ...") or from a message the
      error explainer knows (its patterns of PyTorch's wording), the lines that follow it up to a
      blank line or one with Chinese (the message's own continuation), and tracebacks;
    - PyTorch's own text tables (profiler key_averages, memory_summary, nvidia-smi), known by their
      rule lines and headers; Python source printed among the output (a `def` or `class` block
      that parses); quotations of English sources, also where a line break wrapped them;
    - numbers, units, dtype and device names, identifiers (CamelCase, snake_case, dotted names);
    - the texts in `kept`: what the cell's own code writes (`source_literals`) in a chapter whose
      cells still print English of their own (`OWN_ENGLISH`), as the code of a Chinese notebook is
      the English notebook's.
    A short text (run=1: a label, a button, an option) that holds Chinese is read with `RUN`: its
    words are names (Mac, Apple), not an untranslated label.
    """
    from course_lib.i18n.catalogue import CJK

    text = ANSI.sub("", "" if text is None else str(text))
    lines = text.splitlines()
    masked = _without_wrapped_quotes(_without(text, kept)).splitlines()
    if run < RUN and any(CJK.search(line) for line in lines):
        run = RUN
    tables, found, in_error, in_traceback = _torch_tables(lines), [], False, False
    tables |= _source_blocks(lines)
    for index, line in enumerate(lines):
        if not line.strip() or CJK.search(line):  # the end of an error's message or traceback
            in_error = in_traceback = False
        if index in tables:
            continue
        if TRACEBACK.match(line):
            in_traceback = True
            continue
        head, error = _before_error(masked[index])
        if error:
            in_error, in_traceback = True, False
        elif in_error or in_traceback:
            continue
        if _prose(head, run):
            found.append(line.strip())
    return found


def html_text(markup: str) -> str:
    """The text a reader sees in HTML: scripts, styles and code blocks out, block tags as line
    breaks (so a table's cells never join into one sentence), entities decoded."""
    markup = _INLINE.sub(" ", _HTML_DROP.sub(" \0 ", str(markup)))
    return html_lib.unescape(_TAG.sub("\n", markup))


def output_prose(output: dict, kept=()) -> list:
    """The English prose lines of one output of a cell (a notebook's JSON output or nbval's);
    `kept`: the cell's own literals (`source_literals`)."""
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        text = "".join(text) if isinstance(text, list) else text
        return [] if is_python_source(text) else english_prose(text, kept=kept)
    if kind not in ("display_data", "execute_result"):
        return []  # an error output: Python's traceback, English by design
    data = output.get("data", {})
    joined = lambda key: "".join(data[key]) if isinstance(data[key], list) else str(data[key])
    if "text/html" in data:
        return english_prose(html_text(joined("text/html")), kept=kept)
    if "text/markdown" in data:
        return english_prose(joined("text/markdown"), kept=kept)
    shown_otherwise = any(k.startswith("image/") or "widget-view" in k for k in data)
    if "text/plain" in data and not shown_otherwise and not is_python_source(joined("text/plain")):
        return english_prose(joined("text/plain"), kept=kept)
    return []


# ---------------------------------------------------------------- widgets
SHORT_FIELDS = ("description", "tooltip", "placeholder")
LIST_FIELDS = ("_options_labels", "_titles", "titles", "tooltips")
TEXT_MODELS = ("HTMLModel", "HTMLMathModel", "LabelModel")
VIEW = "application/vnd.jupyter.widget-view+json"


def widget_prose(model_id: str, state: dict, seen=None) -> list:
    """The English prose a widget (and the widgets inside it) shows: its description, tooltip,
    options and titles (from one word on), and the text of HTML and Label widgets."""
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return []
    seen.add(model_id)
    model = state[model_id]
    values, name = model.get("state", {}), model.get("model_name", "")
    found = []
    for field in SHORT_FIELDS:
        if isinstance(values.get(field), str):
            found += english_prose(html_text(values[field]), run=1)
    for field in LIST_FIELDS:
        items = values.get(field) or []
        items = items.values() if isinstance(items, dict) else items
        found += [line for item in items for line in english_prose(str(item), run=1)]
    if name in TEXT_MODELS and isinstance(values.get("value"), str):
        found += english_prose(html_text(values["value"]), run=1 if name == "LabelModel" else RUN)
    for output in values.get("outputs") or []:  # an Output widget
        found += output_prose(output)
    for child in values.get("children") or []:
        found += widget_prose(str(child).removeprefix("IPY_MODEL_"), state, seen)
    return found


def live_widget_prose(widget) -> list:
    """`widget_prose` of a widget made in this process (a test builds a chapter's widgets)."""
    state = {}

    def walk(w):
        if w.model_id not in state:
            state[w.model_id] = {"model_name": w._model_name, "state": w.get_state()}
            for child in getattr(w, "children", None) or ():
                walk(child)

    walk(widget)
    return widget_prose(widget.model_id, state)


def notebook_widget_state(nb: dict) -> dict:
    """model id -> model of the widget state nbclient stored in the notebook's metadata."""
    stored = nb.get("metadata", {}).get("widgets", {})
    return stored.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})


def own_literals(source, notebook: str = "") -> list:
    """What a cell's own code writes that stays English: its literals in a chapter of OWN_ENGLISH
    (`notebook`: the notebook's file name or path), else none."""
    source = "".join(source) if isinstance(source, list) else source
    return source_literals(source) if Path(notebook).stem in OWN_ENGLISH else []


def cell_prose(cell: dict, state=None, notebook: str = "") -> list:
    """The English prose lines of a code cell's outputs, its widgets' included; `notebook`: the
    chapter it is from (`own_literals`)."""
    found = []
    kept = own_literals(cell.get("source", ""), notebook)
    for output in cell.get("outputs", []):
        found += output_prose(output, kept)
        view = output.get("data", {}).get(VIEW) if output.get("output_type") != "stream" else None
        if view and state:
            found += widget_prose(view.get("model_id", ""), state)
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------- notebooks
def executed(path: Path, timeout: int = 900) -> dict:
    """The notebook at `path` run top to bottom in Chinese (a temporary copy beside nothing of the
    checkout's own), with its widgets' state kept."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env = {"COURSE_LANG": "zh", "OMP_NUM_THREADS": "1"}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / path.name
            nbformat.write(nb, copy)
            client = NotebookClient(
                nb,
                timeout=timeout,
                kernel_name="python3",
                store_widget_state=True,
                resources={"metadata": {"path": str(path.resolve().parent)}},
            )
            client.execute()
    finally:
        for k, v in before.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return nb


def notebook_leftovers(nb: dict, notebook: str = "") -> dict:
    """cell id -> its English prose lines, for every code cell of an executed notebook that has
    any; `notebook`: its file name (`own_literals`)."""
    state = notebook_widget_state(nb)
    out = {}
    for number, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "code":
            found = cell_prose(cell, state, notebook)
            if found:
                out[cell.get("id") or f"#{number}"] = found
    return out


def report(cell: str, lines: list) -> str:
    """The leftovers of one cell as the CLI and the nbval hook print them."""
    return f"cell {cell}: English left in its output:\n" + "\n".join(
        f"    {line}" for line in lines
    )


def nbval_leftovers(item) -> str:
    """What an nbval cell of a Chinese notebook left in English (its outputs as nbval read them;
    widgets' state does not reach nbval), as `report` says it; "" when nothing."""
    kept = own_literals(item.cell.source, item.path.name)
    outputs = item.test_outputs or []
    found = list(dict.fromkeys(line for out in outputs for line in output_prose(out, kept)))
    return report(item.cell.get("id") or f"#{item.cell_num}", found) if found else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.leftovers", description=__doc__.split("\n")[0]
    )
    parser.add_argument("notebooks", nargs="+", type=Path, help="Chinese notebooks to run")
    parser.add_argument("--timeout", type=int, default=900, help="seconds a cell may take")
    parser.add_argument("--json", action="store_true", help="{notebook: {cell: [lines]}}")
    args = parser.parse_args(argv)
    found = {}
    for path in args.notebooks:
        print(f"running {path} ...", file=sys.stderr)
        found[str(path)] = notebook_leftovers(executed(path, args.timeout), path.name)
    if args.json:
        print(json.dumps(found, ensure_ascii=False, indent=1))
    else:
        for path, cells in found.items():
            print(f"{path}: " + (f"{len(cells)} cell(s) with English" if cells else "no English"))
            for cell, lines in cells.items():
                print(report(cell, lines))
    return 1 if any(found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
