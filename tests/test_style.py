"""The style is the tool's: `ruff check` and `ruff format --check` pass on the whole repository,
the notebooks' code cells included (configuration: pyproject.toml's [tool.ruff])."""

import subprocess
import sys

import pytest

from support import NOTEBOOKS, ROOT


def ruff(*args: str) -> subprocess.CompletedProcess:
    """Run this environment's ruff (the test extra installs it) at the repository root."""
    try:
        import ruff as _  # noqa: F401
    except ImportError:
        pytest.fail("ruff is missing: it comes with the test extra (pip install -e '.[test]')")
    command = [sys.executable, "-m", "ruff", *args, "--no-cache"]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_reads_the_notebooks_too():
    listed = ruff("check", "--show-files").stdout
    notebooks = [p.relative_to(ROOT).as_posix() for p in NOTEBOOKS]
    assert notebooks and all(nb in listed for nb in notebooks), listed[-2000:]


def test_ruff_check_finds_nothing():
    result = ruff("check", "--output-format", "concise")
    assert result.returncode == 0, "ruff check:\n" + (result.stdout + result.stderr)[-6000:]


def test_ruff_format_would_change_nothing():
    result = ruff("format", "--check", "--diff")
    assert result.returncode == 0, (
        "ruff format --check (run `ruff format .` to apply):\n"
        + (result.stdout + result.stderr)[-6000:]
    )
