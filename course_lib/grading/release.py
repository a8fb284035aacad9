"""The student bundle: `python -m course_lib release OUT_DIR [--lang en|zh|both]` (teachers).

Writes the notebooks (outputs cleared) and course_lib WITHOUT the answer key
(course_lib/key: reference solutions, hidden tests, known-wrong answers) and without the
grader, no bytecode, plus pyproject.toml, the launcher (course.sh, course.py), the reference GPU
figures (docs/gpu/figures.json, when a GPU run is recorded) and a student README, so it installs
the same way. In the bundle `Exercise.key()` is None: checks run the visible tests only
and `.solution()` says the teacher withheld it. Before returning, the bundle is scanned
for anything of the key (`find_leaks`); a leaking bundle is an error, never a warning.

`--lang` chooses the edition handed out: `en` (notebooks/, the default), `zh` (the Chinese
notebooks, notebooks/zh/, as in this checkout, with a Chinese README) or `both`. The bundle's
course_lib is the same for every edition: a Chinese notebook turns Chinese on in its first cell.

`--hosted-from https://github.com/ORG/REPO [--branch main]` (the address the bundle will be
published at) stamps into every released notebook a first markdown cell of "Open in Colab" and
"Open in Kaggle" links and the way in from China (course_lib/hosted.py), and the bootstrap cell as
its first code cell (in a Chinese notebook: before the cell with the language line); the
README gets the links per chapter. Without it the notebooks are released as they are.
"""

import re
import shutil
from pathlib import Path

from .. import hosted, notebooks
from ..i18n import tr
from ..i18n.catalogue import in_language

LEFT_OUT = ("key", "grading", "__pycache__")
TOP_FILES = ("pyproject.toml", "course.sh", "course.py", "environment.yml", "docs/gpu/figures.json")
EDITIONS = {
    "en": ("",),
    "zh": ("zh",),
    "both": ("", "zh"),
}  # --lang -> notebook folders under notebooks/

STUDENT_README = """# PyTorch training on the GPU, hands-on (student copy)

This is your copy of the course. Start it with one command (Python 3.10+ and pip; no GPU needed):

```bash
./course.sh start
```

(Without bash, e.g. on Windows: `python course.py start`.) The first run installs everything
into `.venv/` and opens JupyterLab on the `notebooks/` folder.
Open `01_device_check.ipynb` and run the cells from the top.

## Exercises

Each exercise cell holds a stub that raises `NotImplementedError`: replace that line with your
code, run the cell, then run the check cell below it.

```python
ch.choose_device.check(choose_device)   # Correct / Incorrect (with feedback) / Not attempted
ch.choose_device.hint()                 # a "Show a hint" button: one more hint per click
```

In this copy the reference solutions are withheld by your teacher, and the checks run the
visible tests only; the grader runs more (hidden) tests on what you hand in.

## Handing in

Hand in your notebook file (`.ipynb`). The grader runs it from the top on a CPU, then tests
the functions you defined and reads your quiz answers, so:

- keep each exercise's function name (`def choose_device():`), at the top level of a cell;
- keep each quiz's answer line (`answer_device_label = "b"`) and put your answer there;
- written answers: a variable `text_<name> = "..."`, or a Markdown cell that starts with
  `<!-- answer: name -->`;
- a function may use other functions and values you defined at the top level of the notebook,
  and anything you import; other top-level code (prints, plots, experiments) does not matter
  for the grade.
"""


STUDENT_README_ZH = """# PyTorch GPU 训练实战课（学生版）

这是你的课程副本。一条命令启动（需要 Python 3.10+ 和 pip，不需要 GPU）：

```bash
./course.sh start
```

（没有 bash 时，例如在 Windows 上：`python course.py start`。）第一次运行会把所需的一切装进
`.venv/`，
然后在 `notebooks/` 文件夹上打开 JupyterLab。中文版笔记本在 `notebooks/zh/` 里：打开
`zh/01_device_check.ipynb`，从上到下逐个运行单元格。

默认的包仓库太慢时，可以换成离你更近的镜像：`PIP_INDEX_URL=<镜像地址> ./course.sh start`。

## 练习

每个练习单元格里有一个只会抛出 `NotImplementedError` 的占位函数（stub）：把那一行换成你的代码，
运行这个单元格，再运行它下面的检查单元格。

```python
ch.choose_device.check(choose_device)   # 正确 / 不正确（附反馈）/ 未作答
ch.choose_device.hint()                 # “显示提示”按钮：每按一次多一条提示，之前的提示保留
```

在这份副本里，参考答案由老师保留，检查只运行公开测试；评分程序还会在你交上来的作业上运行更多（隐藏）测试。

## 交作业

交上你的笔记本文件（`.ipynb`）。评分程序在 CPU 上从头运行它，然后测试你定义的函数、
读取你的测验答案，所以：

- 保留每个练习的函数名（`def choose_device():`），写在单元格的顶层；
- 保留每个测验的答案行（`answer_device_label = "b"`），把答案写在那里；
- 文字作答：写成变量 `text_<name> = "..."`，或者写在以 `<!-- answer: name -->` 开头的 Markdown
单元格里；
- 函数可以使用你在笔记本顶层定义的其他函数和值，以及你导入的任何东西；其他顶层代码（打印、画图、
实验）
  不影响成绩。

你的反馈会用中文写给你（评分程序认得中文版笔记本）。
"""


def _checkout() -> Path:
    import course_lib

    return Path(course_lib.__file__).resolve().parent.parent


HOSTED_README = {
    "en": "\n## On a hosted GPU\n\nNo GPU here? Open a chapter on a free hosted GPU; its first "
    "code cell installs the course there (never PyTorch: the platform's own is used).\n\n"
    "| notebook | Colab | Kaggle |\n|---|---|---|\n",
    "zh": "\n## 在托管的 GPU 上运行\n\n手边没有 GPU？在免费的托管 GPU 上打开一章；"
    "它的第一个代码单元格会在那里安装课程（从不安装 PyTorch：用平台自带的）。\n\n"
    "| 笔记本 | Colab | Kaggle |\n|---|---|---|\n",
}  # the README's hosted section, per language: its heading, its sentence, its table's head


def _as_source(text: str) -> list:
    """A cell's source as nbformat's list of lines."""
    return text.splitlines(keepends=True)


def stamp_hosted(nb: dict, url: str, branch: str, path: str) -> dict:
    """The notebook with its "Open in" links cell first and the bootstrap cell as its first code
    cell (before the cell that holds a Chinese notebook's language line)."""
    cells = nb["cells"]
    first_code = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), len(cells))
    code = {"cell_type": "code", "execution_count": None, "id": "hosted-bootstrap"}
    code.update(metadata={}, outputs=[], source=_as_source(hosted.bootstrap_cell(url, branch)))
    links = {"cell_type": "markdown", "id": "hosted-links", "metadata": {}}
    links["source"] = _as_source(hosted.links_markdown(url, branch, path))
    nb["cells"] = [links, *cells[:first_code], code, *cells[first_code:]]
    return nb


def _clean_notebook(path: Path, hosted_at=None, repo_path: str = "", lang: str = "en") -> str:
    nb = notebooks.read(path)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    if hosted_at:
        with in_language(lang):
            stamp_hosted(nb, *hosted_at, repo_path)
    return notebooks.dumps(nb)


def _folder_lang(folder: str) -> str:
    return folder or "en"


def _repo_path(folder: str, name: str) -> str:
    """The notebook's path in the repository the bundle is published as."""
    return "/".join(["notebooks", *([folder] if folder else []), name])


def hosted_readme(lang: str, folder: str, paths: list, url: str, branch: str) -> str:
    """The README's section of "Open in" links, one row per chapter of the edition `folder`."""
    rows = []
    with in_language(lang):
        for nb in paths:
            links = hosted.open_links(url, branch, _repo_path(folder, nb.name))
            cells = [f"[{tr(f'Open in {label}')}]({link})" for label, link in links.items()]
            rows.append(f"| `{_repo_path(folder, nb.name)}` | " + " | ".join(cells) + " |\n")
        china = hosted.china_way_in(url, _repo_path(folder, "01_device_check.ipynb"))
    return HOSTED_README[lang] + "".join(rows) + "\n" + china + "\n"


def _ignore(directory, names):
    return [
        n for n in names if n in LEFT_OUT or n.endswith((".pyc", ".pyo")) or n.endswith(".egg-info")
    ]


def edition_notebooks(root: Path, lang: str) -> dict:
    """{folder under notebooks/: its chapter notebooks} for the edition `lang` (en, zh or both);
    ValueError for another `lang`, or for a Chinese edition that lacks a chapter."""
    if lang not in EDITIONS:
        raise ValueError(f"unknown edition {lang!r}; choose one of {', '.join(EDITIONS)}")
    english = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    found = {}
    for folder in EDITIONS[lang]:
        paths = sorted((root / "notebooks" / folder).glob("[0-9][0-9]_*.ipynb"))
        missing = sorted({nb.name for nb in english} - {nb.name for nb in paths})
        if folder and missing:
            raise ValueError(
                f"the {folder} edition is incomplete: "
                f"notebooks/{folder}/ lacks {', '.join(missing)}"
            )
        found[folder] = paths
    return found


def release(
    out_dir, force: bool = False, lang: str = "en", hosted_from=None, branch: str = "main"
) -> dict:
    """Write the student bundle of the edition `lang` (en, zh or both) to `out_dir`; refuses a
    non-empty folder unless `force`; `hosted_from` (https://github.com/ORG/REPO): with links and
    the bootstrap cell for hosted notebooks, at `branch`."""
    root, out = _checkout(), Path(out_dir).resolve()
    editions = edition_notebooks(root, lang)
    hosted_at = (hosted.repository_url(hosted_from), branch) if hosted_from else None
    if out.exists() and any(out.iterdir()):
        if not force:
            raise FileExistsError(f"{out} is not empty; pass --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(root / "course_lib", out / "course_lib", ignore=_ignore)
    (out / "notebooks").mkdir()
    for folder, paths in editions.items():
        (out / "notebooks" / folder).mkdir(exist_ok=True)
        for nb in paths:
            text = _clean_notebook(nb, hosted_at, _repo_path(folder, nb.name), _folder_lang(folder))
            (out / "notebooks" / folder / nb.name).write_text(text, encoding="utf-8")
    for folder in {"", *editions}:  # files beside the notebooks (every edition's code may use them)
        for extra in (root / "notebooks" / folder).iterdir():
            if extra.is_file() and extra.suffix != ".ipynb":
                shutil.copy(extra, out / "notebooks" / folder / extra.name)
    for name in TOP_FILES:
        if (root / name).exists():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / name, out / name)
    readmes = {
        "en": {"README.md": STUDENT_README},
        "zh": {"README.md": STUDENT_README_ZH},
        "both": {"README.md": STUDENT_README, "README.zh.md": STUDENT_README_ZH},
    }[lang]
    for (name, text), folder in zip(readmes.items(), editions):
        if hosted_at:
            text += hosted_readme(_folder_lang(folder), folder, editions[folder], *hosted_at)
        (out / name).write_text(text, encoding="utf-8")
    leaks = find_leaks(out)
    if leaks:
        raise RuntimeError("the bundle would reveal the answer key: " + "; ".join(leaks[:5]))
    return {
        "out": str(out),
        "notebooks": sum(len(n) for n in editions.values()),
        "lang": lang,
        "editions": {folder or "en": len(n) for folder, n in editions.items()},
        "files": sum(1 for p in out.rglob("*") if p.is_file()),
    }


def _normal(text: str) -> str:
    return " ".join(text.split())


def secret_lines(root: Path = None) -> list:
    """Lines of the answer key that appear nowhere else in the teacher's checkout: the secrets."""
    root = root or _checkout()
    public = "\n".join(
        _normal(p.read_text(errors="replace"))
        for p in (root / "course_lib").rglob("*.py")
        if "key" not in p.relative_to(root / "course_lib").parts[:1]
        and "grading" not in p.relative_to(root / "course_lib").parts[:1]
    )
    public += "\n".join(
        _normal(p.read_text(errors="replace"))
        for p in sorted((root / "notebooks").glob("*.ipynb"))
        + sorted((root / "notebooks").glob("zh/*.ipynb"))
    )
    secrets = []
    for path in sorted((root / "course_lib" / "key").glob("*.py")):
        for line in path.read_text().splitlines():
            line = _normal(line)
            if (
                len(line) >= 20
                and not line.startswith(("#", "import ", "from ", '"""'))
                and line not in public
            ):
                secrets.append(line)
    return secrets


def find_leaks(bundle: Path, root: Path = None) -> list:
    """What in `bundle` reveals the key: its files, bytecode, or any secret line of its source."""
    bundle = Path(bundle)
    leaks = [
        f"file {p.relative_to(bundle)}"
        for p in bundle.rglob("*")
        if p.suffix in (".pyc", ".pyo")
        or p.name == "__pycache__"
        or re.search(r"(^|/)course_lib/(key|grading)(/|$)", p.relative_to(bundle).as_posix())
    ]
    texts = [
        _normal(p.read_text(errors="replace"))
        for p in bundle.rglob("*")
        if p.is_file()
        and p.suffix in (".py", ".ipynb", ".md", ".txt", ".toml", ".sh", ".json", ".yml")
    ]
    for line in secret_lines(root):
        if any(line in text for text in texts):
            leaks.append(f"key line {line[:80]!r}")
    return leaks
