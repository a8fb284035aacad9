"""Hosted notebooks (issue 38, items 1, 2 and 5 on the CPU): each platform recognised from its
markers, its "open" link, the bootstrap cell and `bootstrap()` with pip and the platform faked."""

import ast
import dataclasses
import importlib.util
import subprocess
import sys
import types

import pytest

from course_lib import hosted
from course_lib.i18n import use_language

URL, BRANCH = "https://github.com/acme/gpu-course", "main"
PATH = "notebooks/zh/01_device_check.ipynb"


@pytest.fixture(autouse=True)
def _english_and_own_progress(monkeypatch):
    monkeypatch.delenv("COURSE_PROGRESS_FILE", raising=False)
    yield
    use_language("en")


@pytest.mark.parametrize(
    "modules, environ, expected",
    [
        ({"google.colab": object()}, {}, "colab"),
        ({}, {"COLAB_RELEASE_TAG": "release-colab_2026"}, "colab"),
        ({}, {"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, "kaggle"),
        ({}, {"DSW_INSTANCE_ID": "dsw-123"}, "modelscope"),
        ({}, {"HOME": "/home/me"}, None),
    ],
)
def test_each_platform_is_recognised_by_its_markers(modules, environ, expected):
    found = hosted.detect(modules, environ)
    assert (found.name if found else None) == expected


def test_open_links_are_each_platforms_form_made_from_the_repository():
    links = hosted.open_links(URL + ".git", BRANCH, PATH)
    assert links == {
        "Colab": f"https://colab.research.google.com/github/acme/gpu-course/blob/main/{PATH}",
        "Kaggle": f"https://kaggle.com/kernels/welcome?src={URL}/blob/main/{PATH}",
    }
    line = hosted.links_markdown(URL, BRANCH, PATH)
    assert "[Open in Colab](" in line and "[Open in Kaggle](" in line
    assert "modelscope.cn" in line and f"git clone {URL}" in line


@pytest.mark.parametrize(
    "bad",
    [
        "http://github.com/acme/gpu-course",
        "https://gitlab.com/acme/gpu-course",
        "https://github.com/acme",
        "https://github.com/acme/gpu-course/tree/main",
        "https://github.com/acme/..",
        "github.com/acme/gpu-course",
        "https://github.com/acme/gpu course",
    ],
)
def test_an_address_that_is_not_a_github_repository_is_refused_clearly(bad):
    with pytest.raises(ValueError, match=r"https://github\.com/ORG/REPO"):
        hosted.parse_repository(bad)


def test_locally_bootstrap_does_nothing_and_says_nothing(capsys, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip ran locally"))
    assert hosted.bootstrap(URL, BRANCH, update=True, modules={}, environ={}) == ""
    assert capsys.readouterr().out == ""


def test_on_colab_the_widget_manager_is_turned_on_and_progress_kept(capsys, monkeypatch, tmp_path):
    calls = []
    output = types.SimpleNamespace(enable_custom_widget_manager=lambda: calls.append("on"))
    colab = types.ModuleType("google.colab")
    colab.output = output
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    sys.modules["google"].colab = colab
    colab_row = dataclasses.replace(hosted.PLATFORMS[0], keep_dir=str(tmp_path))
    monkeypatch.setattr(hosted, "PLATFORMS", (colab_row, *hosted.PLATFORMS[1:]))
    assert hosted.bootstrap(URL, BRANCH) == "colab"
    out = capsys.readouterr().out
    assert calls == ["on"]
    assert "Colab: course ready with this platform's packages (torch " in out
    assert "its widget manager on." in out and "已打开它的控件管理器" in out
    assert "torch " in out and "ipywidgets " in out  # the platform's own versions, said
    assert str(tmp_path / "course-progress.json") in out
    assert "Download .ipynb" in out
    assert "课程已就绪" in out  # said in Chinese too: the cell runs before a zh language line


def test_without_network_bootstrap_says_so_and_stops_cleanly(capsys):
    def no_network(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "Could not resolve host: github.com")

    assert hosted.install(URL, BRANCH, run=no_network) is False
    out = capsys.readouterr().out
    assert f"the course could not be installed from {URL} (no network?)" in out
    assert "Traceback" not in out


def test_bootstrap_update_without_network_returns_without_an_exception(capsys, monkeypatch):
    monkeypatch.setattr(
        subprocess, "run", lambda command, **k: subprocess.CompletedProcess(command, 1)
    )
    env = {"DSW_INSTANCE_ID": "dsw-1"}
    assert hosted.bootstrap(URL, BRANCH, update=True, modules={}, environ=env) == ""
    out = capsys.readouterr().out
    assert "no network?" in out and "没有网络" in out and "course ready" not in out


def _run_cell(monkeypatch, importable: bool, returncode: int = 0):
    """Run the bootstrap cell's code with pip and course_lib's presence faked: the pip calls."""
    calls = []
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "course_lib" and not importable else real(name, *a),
    )
    monkeypatch.setattr(
        subprocess,
        "run",
        lambda command, **k: (
            calls.append(command) or subprocess.CompletedProcess(command, returncode)
        ),
    )
    exec(compile(hosted.bootstrap_cell(URL, BRANCH), "<bootstrap cell>", "exec"), {})
    return calls


def test_the_cell_does_nothing_where_course_lib_imports(monkeypatch, capsys):
    for marker in ("COLAB_RELEASE_TAG", "KAGGLE_KERNEL_RUN_TYPE", "DSW_INSTANCE_ID"):
        monkeypatch.delenv(marker, raising=False)
    assert _run_cell(monkeypatch, importable=True) == []
    assert capsys.readouterr().out == ""


def test_the_cell_installs_the_course_alone_from_the_repository_where_it_is_missing(monkeypatch):
    calls = _run_cell(monkeypatch, importable=False)
    assert calls == [hosted.pip_command(URL, BRANCH)]
    assert "--no-deps" in calls[0] and f"git+{URL}@{BRANCH}" in calls[0]
    assert not {"torch", "torchvision", "ipywidgets", "jupyterlab"} & set(calls[0])


def test_the_cell_without_network_stops_with_one_clear_line(monkeypatch):
    with pytest.raises(SystemExit, match=r"no network\?"):
        _run_cell(monkeypatch, importable=False, returncode=1)


def test_the_cell_imports_no_course_lib_before_the_install():
    tree = ast.parse(hosted.BOOTSTRAP_CELL.replace("{url}", URL).replace("{branch}", BRANCH))
    first_course_lib = min(
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("course_lib")
    )
    install = min(
        n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "run"
    )
    assert install < first_course_lib
    assert not [
        n for n in ast.walk(tree) if isinstance(n, ast.Import) and n.names[0].name == "course_lib"
    ]


def test_an_update_reinstalls_the_course_alone(monkeypatch, capsys, tmp_path):
    calls = []
    monkeypatch.setattr(
        subprocess,
        "run",
        lambda command, **k: calls.append(command) or subprocess.CompletedProcess(command, 0),
    )
    env = {"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}
    assert hosted.bootstrap(URL + "/", BRANCH, update=True, modules={}, environ=env) == "kaggle"
    assert calls == [[*hosted.pip_command(URL, BRANCH), "--force-reinstall"]]
    out = capsys.readouterr().out
    assert "Kaggle: course ready" in out and "File > Download notebook" in out
