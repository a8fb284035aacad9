"""Fixtures of the hub suite: a real JupyterHub with
its proxy, and nbgitpuller's own code (issue 22).

Deselect it with `-m "not hub"`. Without configurable-http-proxy, jupyterhub or nbgitpuller
the tests are skipped with the install command, except in CI (CI=true), where that is a
failure (.ci/run installs the proxy; `pip install -e '.[test]'` brings the Python packages).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import ROOT

INSTALL = (
    "to run it: `npm install --global configurable-http-proxy@5.2.0` (as .ci/run does; node "
    "20) and `pip install -e '.[test]'` (brings jupyterhub and nbgitpuller)"
)
LINK = re.compile(r"https://HUB/hub/user-redirect/git-pull\?\S+")


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.hub)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        'hub: a real JupyterHub (or nbgitpuller) on localhost (deselect with -m "not hub")',
    )


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str):
    if in_ci():
        pytest.fail(
            f"CI must run the hub suite, but {reason}; .ci/run installs configurable-http-proxy"
        )
    pytest.skip(f"hub suite skipped: {reason}; {INSTALL}")


@pytest.fixture(scope="session")
def gitpuller():
    """nbgitpuller's GitPuller (its own code, as its git-pull handler runs it)."""
    try:
        from nbgitpuller.pull import GitPuller
    except ImportError:
        missing("the Python package nbgitpuller is not installed")
    if shutil.which("git") is None:
        missing("git is not installed")
    return GitPuller


@pytest.fixture(scope="session")
def proxy_command():
    """configurable-http-proxy from the npm registry (COURSE_CHP may name another binary)."""
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        missing("the Python package jupyterhub is not installed")
    command = shutil.which(os.environ.get("COURSE_CHP") or "configurable-http-proxy")
    if command is None:
        missing("configurable-http-proxy was not found")
    version = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=60)
    if version.returncode != 0:
        missing(f"configurable-http-proxy does not run here: {version.stderr.strip()[-300:]}")
    return command


def readme_link() -> str:
    """The nbgitpuller link template the README gives teachers."""
    found = LINK.findall((ROOT / "README.md").read_text())
    assert len(set(found)) == 1, (
        f"the README should give one nbgitpuller link template, found {found}"
    )
    return found[0]


def git(*args, cwd):
    """git in `cwd` with a throwaway identity (never the machine's own configuration)."""
    env = dict(
        os.environ,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Teacher",
        GIT_AUTHOR_EMAIL="teacher@example.invalid",
        GIT_COMMITTER_NAME="Teacher",
        GIT_COMMITTER_EMAIL="teacher@example.invalid",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    ).stdout


def course_repo(folder: Path) -> Path:
    """The teacher's git repository of the student bundle (what the nbgitpuller link names)."""
    from course_lib.grading.release import release

    repo = folder / "pytorch-gpu-course"
    release(repo)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "the course, as released", cwd=repo)
    return repo
