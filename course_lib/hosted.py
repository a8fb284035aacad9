"""Hosted notebooks (Colab, Kaggle, ModelScope): how each is recognised, opened and bootstrapped.

A learner without a GPU opens a chapter on a hosted platform from a link the release stamps
into every notebook (`python -m course_lib release OUT --hosted-from https://github.com/ORG/REPO`).
The notebook's first code cell, `BOOTSTRAP_CELL`, installs this package there with
`pip install --no-deps` (never torch, torchvision or the platform's Jupyter packages: the course
runs on the platform's own PyTorch and widgets) and then calls `bootstrap()`. On a local install
course_lib is importable already and the cell does nothing.

What each row of `PLATFORMS` says comes from the platforms' documentation and public code, not
from a run on the platform (none was reachable from where this was written):
- Colab: the `colab.research.google.com/github/...` link form, the `google.colab` module and
  the `COLAB_RELEASE_TAG` variable, `google.colab.output.enable_custom_widget_manager()`.
- Kaggle: the `kaggle.com/kernels/welcome?src=` link form (Kaggle's "Open in Kaggle" badge), the
  `KAGGLE_KERNEL_RUN_TYPE` variable, `/kaggle/working` as the folder a session keeps.
- ModelScope (魔搭): its free notebooks are said to run on Alibaba Cloud PAI-DSW, with a free GPU
  quota; neither, nor the modelscope.cn/my/mynotebook address, could be read from ModelScope's
  own pages here: unverified. `DSW_INSTANCE_ID` is the variable PAI's own SDK reads to know it
  is inside DSW (seen in its source); whether ModelScope's free instances set it is unverified.
  There is no open-from-GitHub link: the learner clones the repository (or uploads the
  notebook) from the instance's JupyterLab.
"""

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from .i18n import language, tr
from .i18n.catalogue import in_language

GITHUB = re.compile(r"https://github\.com/([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100})")


@dataclass(frozen=True)
class Platform:
    """One hosted notebook service: how it is recognised and opened, where a session keeps files."""

    name: str
    label: str
    modules: tuple  # any of these in sys.modules: we are there
    env: tuple  # any of these environment variables set: we are there
    open_url: str  # {org} {repo} {branch} {path}; "" when there is no link form
    keep_dir: str  # where files outlive a kernel restart in the session
    download: str  # how the learner downloads the notebook to hand it in
    gpu: str


PLATFORMS = (
    Platform(
        "colab",
        "Colab",
        ("google.colab",),
        ("COLAB_RELEASE_TAG", "COLAB_GPU"),
        "https://colab.research.google.com/github/{org}/{repo}/blob/{branch}/{path}",
        "/content",
        "File > Download > Download .ipynb",
        "one T4 (sm_75, 16 GB; no fast bfloat16) with Runtime > Change runtime type > T4 GPU",
    ),
    Platform(
        "kaggle",
        "Kaggle",
        (),
        ("KAGGLE_KERNEL_RUN_TYPE", "KAGGLE_URL_BASE"),
        "https://kaggle.com/kernels/welcome?src=https://github.com/{org}/{repo}/blob/{branch}/{path}",
        "/kaggle/working",
        "File > Download notebook",
        "GPU T4 x2 (two sm_75 GPUs: chapters 07 and 08 on nccl) or a P100, in Settings > "
        "Accelerator, after phone verification",
    ),
    Platform(
        "modelscope",
        "ModelScope (PAI-DSW)",
        (),
        ("DSW_INSTANCE_ID",),
        "",
        "/mnt/workspace",
        "right-click the notebook in the file browser > Download",
        "a free GPU instance at https://modelscope.cn/my/mynotebook (quota unverified)",
    ),
)

CHINA_WAY_IN = (
    "From China: start a free GPU notebook at https://modelscope.cn/my/mynotebook (ModelScope, "
    "on PAI-DSW), then in its terminal `git clone {url}` and open `{path}`."
)

BOOTSTRAP_CELL = """\
# On a hosted notebook (Colab, Kaggle, ModelScope) install the course, never torch; here: nothing.
import importlib.util
import subprocess
import sys

REPO, BRANCH = "{url}", "{branch}"
if importlib.util.find_spec("course_lib") is None:
    pip = ["pip", "install", "-q", "--no-deps", f"git+{REPO}@{BRANCH}"]
    if subprocess.run([sys.executable, "-m", *pip]).returncode != 0:
        raise SystemExit("course not installed (no network?) / 课程未能安装（没有网络？）")
    importlib.invalidate_caches()
from course_lib import hosted

hosted.bootstrap(REPO, BRANCH)"""


def parse_repository(url: str) -> tuple:
    """(org, repo) of `https://github.com/ORG/REPO`; ValueError for any other address."""
    found = GITHUB.fullmatch(url.rstrip("/").removesuffix(".git"))
    if not found or found.group(2) in (".", ".."):
        raise ValueError(
            f"--hosted-from wants a GitHub repository address, https://github.com/ORG/REPO, "
            f"not {url!r}"
        )
    return found.group(1), found.group(2)


def repository_url(url: str) -> str:
    """The canonical https://github.com/ORG/REPO form of a valid repository address."""
    return "https://github.com/{}/{}".format(*parse_repository(url))


def open_links(url: str, branch: str, path: str) -> dict:
    """{platform label: its "open" link} for the notebook at `path` in the repository."""
    org, repo = parse_repository(url)
    return {
        p.label: p.open_url.format(org=org, repo=repo, branch=branch, path=path)
        for p in PLATFORMS
        if p.open_url
    }


def china_way_in(url: str, path: str) -> str:
    """The one sentence that tells a learner in China how to open the notebook at `path`."""
    return tr(CHINA_WAY_IN.format(url=repository_url(url), path=path))


def links_markdown(url: str, branch: str, path: str) -> str:
    """The notebook's first markdown line: "Open in" links, then the way in from China."""
    links = open_links(url, branch, path)
    shown = " · ".join(f"[{tr(f'Open in {label}')}]({link})" for label, link in links.items())
    return f"{shown} · {china_way_in(url, path)}"


def bootstrap_cell(url: str, branch: str) -> str:
    """The bootstrap cell's code for the repository `url` at `branch`."""
    return BOOTSTRAP_CELL.replace("{url}", repository_url(url)).replace("{branch}", branch)


def detect(modules=None, environ=None):
    """The hosted platform this kernel runs on, or None (a local install)."""
    modules = sys.modules if modules is None else modules
    environ = os.environ if environ is None else environ
    for platform in PLATFORMS:
        if any(m in modules for m in platform.modules) or any(v in environ for v in platform.env):
            return platform
    return None


def _say(text: str) -> None:
    """Print a line in the course's language; in English also in Chinese (the cell runs before a
    Chinese notebook's language line)."""
    print(tr(text))
    if language() == "en":
        with in_language("zh"):
            translated = tr(text)
        if translated != text:
            print(translated)


def _enable_widgets(platform) -> bool:
    """Colab renders ipywidgets 8 through its custom widget manager: turn it on; else nothing."""
    if platform.name != "colab":
        return False
    try:
        from google.colab import output

        output.enable_custom_widget_manager()
    except (ImportError, AttributeError):
        return False
    return True


def _keep_progress(platform) -> str:
    """Point the progress file at the folder the session keeps, unless one is chosen already."""
    if "COURSE_PROGRESS_FILE" not in os.environ and os.path.isdir(platform.keep_dir):
        os.environ["COURSE_PROGRESS_FILE"] = os.path.join(platform.keep_dir, "course-progress.json")
    return os.environ.get("COURSE_PROGRESS_FILE", "")


def _versions() -> str:
    """torch and ipywidgets as this kernel has them (the platform's own)."""
    found = []
    for name in ("torch", "ipywidgets"):
        spec = importlib.util.find_spec(name)
        if spec is None:
            found.append(f"{name} missing")
            continue
        from importlib.metadata import PackageNotFoundError, version

        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (version unknown)")
    return ", ".join(found)


def pip_command(url: str, branch: str) -> list:
    """The one install command: the course package only, from the repository (no dependencies)."""
    return [sys.executable, "-m", "pip", "install", "-q", "--no-deps", f"git+{url}@{branch}"]


def install(url: str, branch: str, run=None) -> bool:
    """pip install --no-deps the course again from the repository (its other packages stay as
    they are); False, having said why, without network."""
    run = run or subprocess.run
    try:
        done = run([*pip_command(url, branch), "--force-reinstall"], capture_output=True, text=True)
    except OSError as err:
        _say(f"could not run pip: {err}")
        return False
    if done.returncode != 0:
        _say(f"the course could not be installed from {url} (no network?); run this cell again")
        return False
    return True


def bootstrap(url: str = "", branch: str = "main", update=False, modules=None, environ=None) -> str:
    """Ready a hosted session for the course and say in one line what was done ('' locally);
    `update`: install the course again from the repository first (the teacher's latest)."""
    platform = detect(modules, environ)
    if platform is None:
        return ""
    if update and not install(repository_url(url), branch):
        return ""
    raw_what, progress = _versions(), _keep_progress(platform)
    if _enable_widgets(platform):
        _say(
            f"{platform.label}: course ready with this platform's packages ({raw_what}), "
            f"its widget manager on."
        )
    else:
        _say(f"{platform.label}: course ready with this platform's packages ({raw_what}).")
    if progress:
        _say(f"progress kept in {progress}.")
    _say(f"To hand in, download the notebook: {tr(platform.download)}.")
    return platform.name
