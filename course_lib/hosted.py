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
    session: str = ""  # what limits a session (chapter 06's note): memory, disk, hours


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
        "the virtual machine's RAM (about 12 GB on the free tier) and disk are lost when the "
        "runtime is recycled, after 12 hours at most and sooner when idle (Colab's FAQ)",
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
        "about 30 GB of RAM, 20 GB kept in /kaggle/working, 12 hours per session at most and a "
        "weekly GPU quota (about 30 hours; Kaggle's documentation)",
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
        "the free instance's RAM, disk and hours are set by its quota (unverified here)",
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


# ---------------------------------------------------------------- what this GPU changes (05-08)
@dataclass(frozen=True)
class GpuFacts:
    """What the notes below ask of the CUDA GPU: name, capability, count, memory, P2P, bfloat16."""

    name: str
    capability: tuple
    count: int
    memory: int  # bytes of GPU 0
    peer: bool  # GPU 0 can reach GPU 1 directly (peer-to-peer); False with one GPU
    bf16: bool  # bfloat16 in hardware (torch_compat.bf16_in_hardware)


def gpu_facts():
    """The CUDA GPUs' facts when the course device is one, else None (no GPU, one this PyTorch
    has no kernels for, or COURSE_DEVICE chose another device)."""
    from . import device, torch_compat

    if device.pick_device().type != "cuda":
        return None
    import torch

    count = torch.cuda.device_count()
    return GpuFacts(
        name=torch.cuda.get_device_name(0),
        capability=tuple(torch.cuda.get_device_capability(0)),
        count=count,
        memory=torch.cuda.get_device_properties(0).total_memory,
        peer=count >= 2 and bool(torch.cuda.can_device_access_peer(0, 1)),
        bf16=torch_compat.bf16_in_hardware(),
    )


def _sm(gpu) -> str:
    return f"sm_{gpu.capability[0]}{gpu.capability[1]}"


# (topic, applies to (gpu, platform), the note): checked from torch's sources (2.13:
# _inductor/compile_fx.py _check_triton_bf16_support, _inductor/scheduler.py's capability check,
# ddp_worker.pick_backend) and NCCL's documented transports; the platforms' rows say their source.
GPU_NOTES = (
    (
        "amp",
        lambda gpu, platform: gpu is not None and not gpu.bf16,
        "{name} ({sm}) has no bfloat16 in hardware: autocast runs in float16 with a GradScaler "
        "here (ch.amp_dtype picks it); bfloat16 would be emulated, slower than float32.",
    ),
    (
        "compile",
        lambda gpu, platform: gpu is not None and (7, 0) <= gpu.capability < (8, 0),
        "{name} ({sm}): torch.compile generates Triton kernels here for float32 and float16; a "
        "graph with bfloat16 CUDA tensors is not compiled: Inductor warns 'does not support "
        "bfloat16 compilation natively, skipping' and that code runs eagerly.",
    ),
    (
        "compile",
        lambda gpu, platform: gpu is not None and gpu.capability < (7, 0),
        "{name} ({sm}): Triton needs compute capability 7.0 or higher, so torch.compile's "
        "default backend (Inductor) fails here; eager code still runs.",
    ),
    (
        "memory",
        lambda gpu, platform: gpu is not None and platform is not None,
        "{label}: this {name} is yours alone for the session, {gib} GiB as PyTorch counts it (a "
        "T4 shows about 14.7, not the 16 GB on its box): chapter 06's cap and peaks are this "
        "GPU's own, no other user's tensors share it.",
    ),
    (
        "memory",
        lambda gpu, platform: platform is not None and bool(platform.session),
        "{label}: the session is lent and time-limited: {session}. Save what you need to keep.",
    ),
    (
        "launch",
        lambda gpu, platform: gpu is not None and gpu.count >= 2,
        "{count} GPUs: the launch below runs its ranks on nccl, one GPU each "
        "(ddp_worker.pick_backend).",
    ),
    (
        "launch",
        lambda gpu, platform: gpu is not None and gpu.count >= 2 and not gpu.peer,
        "GPU 0 cannot reach GPU 1 directly (torch.cuda.can_device_access_peer is False, as "
        "reported for Kaggle's two T4s): NCCL then moves the data through shared host memory "
        "(its SHM transport) instead of GPU to GPU; the results are the same, each collective "
        "is slower.",
    ),
    (
        "launch",
        lambda gpu, platform: platform is not None and (gpu is None or gpu.count < 2),
        "{label} lends {count} GPU here: the ranks run on gloo on the CPU (nccl needs one GPU "
        "per rank); Kaggle's 'GPU T4 x2' accelerator runs them on nccl.",
    ),
)
TOPICS = {row[0] for row in GPU_NOTES}


def gpu_notes_for(topic: str, gpu=None, platform=None) -> list:
    """The notes of `topic` ('amp', 'compile', 'memory', 'launch') that apply to this GPU and
    platform, in the course's language: [] on a machine without such a GPU or platform."""
    if topic not in TOPICS:
        raise ValueError(f"gpu_note: unknown topic {topic!r}; the topics are {sorted(TOPICS)}")
    values = {
        "label": platform.label if platform else "",
        "session": tr(platform.session) if platform else "",
        "count": gpu.count if gpu else 0,
    }
    if gpu is not None:
        values.update(name=gpu.name, sm=_sm(gpu), gib=f"{gpu.memory / 2**30:.1f}")
    return [
        tr(text.format(**values))
        for name, applies, text in GPU_NOTES
        if name == topic and applies(gpu, platform)
    ]


def gpu_note(topic: str) -> None:
    """Print what this GPU and hosted platform change in the cell about `topic` (chapters 05-08);
    nothing on a machine without such a GPU or platform."""
    from .device import _wrap

    for line in gpu_notes_for(topic, gpu_facts(), detect()):
        print(_wrap(line))
