"""The Chinese edition (issue 23): notebooks/zh/ is the English course, cell for cell; no drift.

- every English notebook has a Chinese twin of the same name, and no twin lacks its English one;
- a twin has the same cells: count, order, types and ids;
- its code cells are the English code (the first one starts with the language line as well): only
  comments may differ, and they are Chinese (no English comment is left, but for a temporary
  allow-list of chapters still being translated, in `zh_comments_pending.py`);
- each Chinese markdown cell records the fingerprint of the English cell as it is now, holds a
  translation (not the English text) and keeps the English cell's headings (level and number);
- the twins are committed clean, and nbval runs them like the English ones;
- drift fails: changing one English cell (prose or code) in a copy of the checkout makes
  `python -m course_lib.i18n check` name the Chinese cell to update, and `sync` repairs what it can.
These tests read the notebooks themselves; `course_lib.i18n.editions` is tested by the drift tests.
"""

import contextlib
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys

import mistune
import pytest
import zh_comments_pending

from course_lib import i18n
from course_lib.i18n import __main__ as i18n_cli
from course_lib.i18n import editions
from support import NOTEBOOKS, ROOT, ZH_NOTEBOOKS

LANGUAGE_LINE = "import course_lib.zh  # noqa: F401"
CJK = re.compile(r"[\u3400-\u9fff]")
HEADING = re.compile(r"^(#{1,6})\s+(\d+[a-z]?(?:\.\d+)*)?")
names = [p.name for p in NOTEBOOKS]


def cells(path) -> list:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell) -> str:
    return "".join(cell["source"])


def pair(path):
    """(English cells, Chinese cells) of one chapter."""
    zh = ROOT / "notebooks" / "zh" / path.name
    assert zh.exists(), (
        f"notebooks/zh/{path.name} is missing: "
        "run `python -m course_lib.i18n sync`, then translate it"
    )
    return cells(path), cells(zh)


def outline(markdown: str) -> list:
    """(level, number) of each heading outside fenced code."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and HEADING.match(line):
            level, number = HEADING.match(line).groups()
            found.append((len(level), number or ""))
    return found


# ---------------------------------------------------------------- the two editions pair up
@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_every_english_notebook_has_a_chinese_twin(path):
    assert (ROOT / "notebooks" / "zh" / path.name).exists(), f"notebooks/zh/{path.name} is missing"


def test_every_chinese_notebook_has_its_english_one():
    assert ZH_NOTEBOOKS, "no Chinese notebooks in notebooks/zh/"
    assert {p.name for p in ZH_NOTEBOOKS} <= set(names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_same_cells_in_the_same_order(path):
    en, zh = pair(path)
    assert [(c["id"], c["cell_type"]) for c in zh] == [(c["id"], c["cell_type"]) for c in en]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_code_cells_are_the_english_code_comments_aside(path):
    en, zh = pair(path)
    first = next(i for i, c in enumerate(en) if c["cell_type"] == "code")
    for i, (e, z) in enumerate(zip(en, zh)):
        if e["cell_type"] == "code":
            code = text(z)
            if i == first:
                assert code.startswith(LANGUAGE_LINE + "\n"), (
                    f"{path.name} {z['id']}: no language line first"
                )
                code = code[len(LANGUAGE_LINE) + 1 :]
            assert editions.same_code(code, text(e)), (
                f"notebooks/zh/{path.name} cell {z['id']} differs from the English code "
                "(only its comments may differ)"
            )
            assert z.get("metadata", {}) == e.get("metadata", {}), (
                f"{path.name} {z['id']}: metadata (tags)"
            )


def english_comments(path) -> list:
    """The comments of a Chinese chapter's code cells written in English (Latin words, no CJK),
    the language line and linter pragmas aside."""
    found = []
    for c in cells(ROOT / "notebooks" / "zh" / path.name):
        if c["cell_type"] == "code":
            code = editions.without_language_line(text(c))
            found += [
                f"{c['id']}: {comment}"
                for comment in editions.comments(code)
                if LATIN_WORD.search(comment)
                and not CJK.search(comment)
                and not PRAGMA.match(comment)
            ]
    return found


LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
PRAGMA = re.compile(r"#\s*(noqa|type:|fmt:|pragma|pylint:)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_no_english_comment_is_left_in_chinese_code_cells(path):
    found, pending = english_comments(path), zh_comments_pending.PENDING.get(path.stem, [])
    left = [c for c in found if c not in pending]
    assert not left, (
        f"notebooks/zh/{path.name}: English comments in code cells (translate them; only "
        "comments may differ from the English code):\n" + "\n".join(left)
    )
    gone = [c for c in pending if c not in found]
    assert not gone, (
        f"tests/zh_comments_pending.py lists comments of {path.stem} that are translated now or "
        "gone: delete these lines from it:\n" + "\n".join(gone)
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_only_the_first_code_cell_has_the_language_line(path):
    _, zh = pair(path)
    with_line = [c["id"] for c in zh if c["cell_type"] == "code" and LANGUAGE_LINE in text(c)]
    first = next(c["id"] for c in zh if c["cell_type"] == "code")
    assert with_line == [first]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_every_markdown_cell_translates_the_english_cell_as_it_is_now(path):
    en, zh = pair(path)
    stale = [
        z["id"]
        for e, z in zip(en, zh)
        if e["cell_type"] == "markdown"
        and z.get("metadata", {}).get("translation_of", {}).get("sha")
        != hashlib.sha256(text(e).encode("utf-8")).hexdigest()[:12]
    ]
    assert not stale, f"notebooks/zh/{path.name}: cells {stale} translate an older English text"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_markdown_cells_are_in_chinese_not_english_copies(path):
    en, zh = pair(path)
    copies = [
        z["id"]
        for e, z in zip(en, zh)
        if e["cell_type"] == "markdown"
        and (
            text(z).strip() == text(e).strip()
            or len(CJK.findall(text(z))) <= len(CJK.findall(text(e)))
        )
    ]
    assert not copies, f"notebooks/zh/{path.name}: cells {copies} are not translated"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_headings_keep_their_level_and_number(path):
    en, zh = pair(path)
    moved = [
        (z["id"], outline(text(e)), outline(text(z)))
        for e, z in zip(en, zh)
        if e["cell_type"] == "markdown" and outline(text(e)) != outline(text(z))
    ]
    assert not moved, (
        f"notebooks/zh/{path.name}: (cell, English headings, Chinese headings) {moved}"
    )


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=lambda p: p.name)
def test_chinese_emphasis_renders(path):
    """`**粗体：**后文` stays literal asterisks in CommonMark (and JupyterLab): punctuation inside
    closing `**` needs a space or punctuation after it. Write `**粗体**：后文`."""
    render = mistune.create_markdown()
    broken = []
    for cell in cells(path):
        if cell["cell_type"] == "markdown":
            html = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", render(text(cell)), flags=re.S)
            broken += [f"{cell['id']}: ...{m}..." for m in re.findall(r".{0,12}\*.{0,12}", html)]
    assert not broken, f"{path.name}: emphasis shown as asterisks: {broken}"


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=lambda p: p.name)
def test_chinese_notebook_metadata_says_chinese_and_is_englishs_otherwise(path):
    en = json.loads((ROOT / "notebooks" / path.name).read_text(encoding="utf-8"))["metadata"]
    zh = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    assert zh == {**en, "course": {**en.get("course", {}), "language": "zh"}}
    assert "course" not in en, "the English notebooks get no edition metadata"


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=lambda p: p.name)
def test_chinese_notebook_is_written_as_the_tool_writes_it(path):
    raw = path.read_text(encoding="utf-8")
    assert raw == json.dumps(json.loads(raw), indent=1, ensure_ascii=False) + "\n", (
        f"{path.name}: rewrite it with `python -m course_lib.i18n sync` "
        "(indent 1, UTF-8, final newline)"
    )


def test_the_checkout_is_in_step():
    drifts = editions.check(ROOT)
    assert not drifts, "\n".join(map(str, drifts))


# ---------------------------------------------------------------- nbval runs both editions
def test_nbval_collects_every_notebook_of_both_editions():
    """`./course.sh test` is pytest with the project's testpaths and --nbval-lax: both editions."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "notebooks",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    collected = {line.split("::")[0] for line in proc.stdout.splitlines() if "::Cell " in line}
    expected = {p.relative_to(ROOT).as_posix() for p in NOTEBOOKS + ZH_NOTEBOOKS}
    assert ZH_NOTEBOOKS and expected <= collected, (
        sorted(expected - collected),
        proc.stdout[-2000:],
    )


# ---------------------------------------------------------------- drift fails, and says where
@pytest.fixture
def checkout(tmp_path):
    """A copy of the checkout's translated chapters, both editions: in step to start with."""
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    for zh in ZH_NOTEBOOKS:
        shutil.copy(zh, tmp_path / "notebooks" / "zh" / zh.name)
        shutil.copy(ROOT / "notebooks" / zh.name, tmp_path / "notebooks" / zh.name)
    return tmp_path


def cli(root, *args):
    """`python -m course_lib.i18n --root ROOT ARGS`, in this process: (exit status, output)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = i18n_cli.main(["--root", str(root), *args])
        except SystemExit as exit:  # argparse's usage errors
            status = exit.code
    return status, out.getvalue()


def test_the_command_line_is_the_same_in_a_process_of_its_own(checkout):
    name, cell_id, _ = first_chapter()
    edit_cell(checkout / "notebooks" / name, cell_id, lambda t: t + " Changed.")
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib.i18n", "--root", str(checkout), "check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stdout) == cli(checkout, "check"), proc.stderr


def edit_cell(path, cell_id, change):
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["id"] == cell_id)
    cell["source"] = change(text(cell)).splitlines(keepends=True)
    editions.write(path, nb)


def first_chapter():
    path = ZH_NOTEBOOKS[0] if ZH_NOTEBOOKS else pytest.fail("no Chinese notebooks to drift")
    en = cells(ROOT / "notebooks" / path.name)
    markdown = next(
        c["id"] for c in en if c["cell_type"] == "markdown" and not c["id"] == en[0]["id"]
    )
    code = [c["id"] for c in en if c["cell_type"] == "code"][1]
    return path.name, markdown, code


def test_the_copy_starts_in_step(checkout):
    assert cli(checkout, "check")[0] == 0


def test_an_english_prose_change_names_the_chinese_cell_to_update(checkout):
    name, cell_id, _ = first_chapter()
    edit_cell(checkout / "notebooks" / name, cell_id, lambda t: t + "\n\nOne more sentence.")
    status, out = cli(checkout, "check")
    zh_cell = (
        f"notebooks/zh/{name} cell {cell_id} (markdown): English changed since it was translated"
    )
    assert status == 1 and zh_cell in out, out
    assert f"sync --accept {name[:-6]}:{cell_id}" in out, out
    assert len([line for line in out.splitlines() if "cell" in line]) == 1, (
        out
    )  # that cell, nothing else

    status, out = cli(checkout, "sync", "--accept", f"{name[:2]}:{cell_id}")
    assert "not accepted" not in out and "accepted" in out, (
        out
    )  # the old Chinese text is a translation
    edit_cell(
        checkout / "notebooks" / name, cell_id, lambda t: t.replace("\n\nOne more sentence.", "")
    )
    assert cli(checkout, "check")[0] == 1  # the English came back: the new stamp is stale again
    edit_cell(checkout / "notebooks" / "zh" / name, cell_id, lambda t: t + "\n\n再补一句。")
    assert cli(checkout, "sync", "--accept", f"{name[:-6]}:{cell_id}")[0] == 0
    assert cli(checkout, "check") == (0, "the Chinese edition is in step with the English one\n")


def test_an_english_code_change_names_the_chinese_cell_and_sync_copies_it(checkout):
    name, _, cell_id = first_chapter()
    edit_cell(checkout / "notebooks" / name, cell_id, lambda t: t + "\nprint('one more line')")
    status, out = cli(checkout, "check")
    assert (
        status == 1
        and f"notebooks/zh/{name} cell {cell_id} (code): differs from notebooks/{name}" in out
    ), out
    assert "change code in" in out and "then run `python -m course_lib.i18n sync`" in out, out
    assert cli(checkout, "sync")[0] == 0
    zh = {c["id"]: text(c) for c in cells(checkout / "notebooks" / "zh" / name)}
    assert zh[cell_id].endswith("print('one more line')")
    assert cli(checkout, "check")[0] == 0


def test_a_code_change_made_in_the_chinese_edition_only_is_refused(checkout):
    name, _, cell_id = first_chapter()
    edit_cell(checkout / "notebooks" / "zh" / name, cell_id, lambda t: t + "\nx = 1")
    status, out = cli(checkout, "check")
    assert status == 1 and f"cell {cell_id} (code): differs" in out, out


@pytest.mark.parametrize(
    "chinese, same",
    [
        ("x = f(1)  # 一个注释\n", True),  # a comment translated
        ("# 只有注释的一行\n# 又一行\nx = f(1)\n", True),  # a comment line more, or fewer
        ("x = f(1)\n", True),  # no comment at all
        ("x = f(2)  # a comment\n", False),  # one token differs
        ("x = f (1)  # a comment\n", False),  # the spacing of the code is kept too
        ("x = f(1)  # a comment\ny = '# 不是注释'\n", False),  # a '#' inside a string is code
    ],
)
def test_code_is_compared_without_its_comments(chinese, same):
    assert editions.same_code(chinese, "x = f(1)  # a comment\n") is same


def test_cells_the_tokenizer_cannot_read_are_compared_line_by_line():
    unclosed = "'" * 3 + "\n"  # the tokenizer gives up on it
    english = "!pip list  # what is installed\nprint('#1')  # show\n" + unclosed
    assert editions.same_code("!pip list  # 装了什么\nprint('#1')  # 显示\n" + unclosed, english)
    assert not editions.same_code("!pip freeze  # 装了什么\nprint('#1')\n" + unclosed, english)


def commented_code_cell(root, name):
    """The id of a code cell (not the first) of chapter `name` that has a comment."""
    code = [c for c in cells(root / "notebooks" / name) if c["cell_type"] == "code"][1:]
    return next(c["id"] for c in code if editions.comments(text(c)))


def test_a_translated_comment_is_not_drift_and_sync_keeps_it(checkout):
    name, _, _ = first_chapter()
    cell_id, zh_path = commented_code_cell(checkout, name), checkout / "notebooks" / "zh" / name
    edit_cell(zh_path, cell_id, lambda t: t + "\n# 译者加的一行注释")
    assert cli(checkout, "check")[0] == 0
    assert cli(checkout, "sync")[0] == 0
    zh = {c["id"]: text(c) for c in cells(zh_path)}
    assert zh[cell_id].endswith("# 译者加的一行注释")


def test_an_english_code_change_replaces_translated_comments_and_says_so(checkout):
    name, _, _ = first_chapter()
    cell_id, zh_path = commented_code_cell(checkout, name), checkout / "notebooks" / "zh" / name
    edit_cell(zh_path, cell_id, lambda t: t + "\n# 译者加的一行注释")
    edit_cell(checkout / "notebooks" / name, cell_id, lambda t: t + "\nx = 1  # one more")
    status, out = cli(checkout, "sync")
    assert status == 0 and (
        f"notebooks/zh/{name} cell {cell_id}: the English code changed" in out
        and "translate its comments again" in out
    ), out
    zh = {c["id"]: text(c) for c in cells(zh_path)}
    assert zh[cell_id].endswith("x = 1  # one more") and "译者" not in zh[cell_id]
    assert cli(checkout, "check")[0] == 0


def test_a_new_english_cell_is_added_and_waits_for_its_translation(checkout):
    name, cell_id, _ = first_chapter()
    path = checkout / "notebooks" / name
    nb = json.loads(path.read_text(encoding="utf-8"))
    at = next(i for i, c in enumerate(nb["cells"]) if c["id"] == cell_id)
    nb["cells"].insert(
        at + 1, {"cell_type": "markdown", "id": "new1", "metadata": {}, "source": ["A new idea."]}
    )
    editions.write(path, nb)
    status, out = cli(checkout, "check")
    assert status == 1 and "English cells it lacks: new1" in out, out
    cli(checkout, "sync")
    status, out = cli(checkout, "check")
    assert (
        status == 1 and f"notebooks/zh/{name} cell new1 (markdown): is not translated yet" in out
    ), out
    status, out = cli(checkout, "sync", "--accept", f"{name[:2]}:new1")
    assert "not accepted, it is not translated yet" in out, out  # an English copy is never stamped
    edit_cell(checkout / "notebooks" / "zh" / name, "new1", lambda t: "一个新想法。")
    cli(checkout, "sync", "--accept", f"{name[:2]}:new1")
    assert cli(checkout, "check")[0] == 0


def test_a_missing_twin_is_named_and_sync_creates_it(checkout):
    name = ZH_NOTEBOOKS[0].name
    (checkout / "notebooks" / "zh" / name).unlink()
    status, out = cli(checkout, "check")
    assert status == 1 and f"notebooks/zh/{name}: missing" in out, out
    cli(checkout, "sync", name[:2])
    status, out = cli(checkout, "check")
    assert status == 1 and (checkout / "notebooks" / "zh" / name).exists()
    assert "is not translated yet" in out and "missing" not in out, out


def test_outputs_and_a_lost_heading_number_are_drift(checkout):
    name, cell_id, code_id = first_chapter()
    zh = checkout / "notebooks" / "zh" / name
    nb = json.loads(zh.read_text(encoding="utf-8"))
    code = next(c for c in nb["cells"] if c["id"] == code_id)
    code["execution_count"], code["outputs"] = (
        3,
        [{"output_type": "stream", "name": "stdout", "text": ["x"]}],
    )
    heading = next(
        c
        for c in nb["cells"]
        if c["cell_type"] == "markdown" and re.search(r"^## \d", text(c), re.M)
    )
    heading["source"] = [re.sub(r"^## \d+\.", "##", text(heading), count=1, flags=re.M)]
    editions.write(zh, nb)
    status, out = cli(checkout, "check")
    assert status == 1 and f"cell {code_id} (code): has outputs" in out, out
    assert f"cell {heading['id']} (markdown): its headings" in out, out


def test_accept_names_a_notebook_and_a_markdown_cell(checkout):
    assert cli(checkout, "sync", "--accept", "c04")[0] == 2
    status, out = cli(checkout, "sync", "--accept", "99:c04")
    assert status == 2 and "no English notebook 99" in out, out
    name, _, code_id = first_chapter()
    status, out = cli(checkout, "sync", "--accept", f"{name[:2]}:{code_id}")
    assert status == 2 and f"no markdown cell {code_id}" in out, out


# ---------------------------------------------------------------- the language switch
def test_english_is_the_default_and_the_environment_or_a_call_chooses(monkeypatch):
    monkeypatch.setattr(i18n, "_chosen", None)
    monkeypatch.delenv("COURSE_LANG", raising=False)
    assert i18n.language() == "en"
    monkeypatch.setenv("COURSE_LANG", "zh_CN.UTF-8")
    assert i18n.language() == "zh"
    monkeypatch.setenv("COURSE_LANG", "fr")
    with pytest.warns(UserWarning, match="not a language of the course"):
        assert i18n.language() == "en"
    i18n.use_language("zh")
    assert i18n.language() == "zh"
    with pytest.raises(ValueError, match="choose one of en, zh"):
        i18n.use_language("fr")
    assert i18n.language() == "zh"


def test_the_language_line_turns_chinese_on():
    code = f"{LANGUAGE_LINE}\nfrom course_lib.i18n import language\nprint(language())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "COURSE_LANG": "en"},
    )
    assert out.stdout.strip() == "zh", out.stderr
