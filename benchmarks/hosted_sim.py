"""A hosted platform simulated on this machine (issue 38, item 5): the bootstrap cell, for real.

    python benchmarks/hosted_sim.py [--platform colab|kaggle|modelscope] [--chapters 01 03]

1. Releases the student bundle with `--hosted-from` and commits it into a scratch git
   repository: what a teacher publishes. Builds the wheel of that bundle (`pip wheel --no-deps`,
   no build isolation): the package the bootstrap installs.
2. Makes a fresh virtual environment that has no course_lib and sees this interpreter's
   packages (torch, ipywidgets, pip, setuptools) as a platform's preinstalled ones.
3. Sets the platform's markers (its environment variables; for Colab a stand-in `google.colab`
   module whose `output.enable_custom_widget_manager` records the call) and runs each chapter's
   released notebook from outside any checkout, every code cell in order as Run All would, through
   the bootstrap cell: its pip reads the scratch repository (`git+file://`, no index, no network).
4. Reports: the cells' errors, what the bootstrap said, whether torch's version and files are
   the same afterwards, and the widgets' model version the platform's front end must render.

Which torch the fresh environment sees is this interpreter's (2.6 and 2.15 are not installed
here: to run the range, point --platform-site at a site-packages holding that torch).
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_lib import hosted  # noqa: E402
from course_lib.grading.release import release  # noqa: E402

PUBLISHED = "https://github.com/course-sim/gpu-course"
MARKERS = {
    "colab": {"COLAB_RELEASE_TAG": "release-colab-sim"},
    "kaggle": {"KAGGLE_KERNEL_RUN_TYPE": "Interactive"},
    "modelscope": {"DSW_INSTANCE_ID": "dsw-sim"},
}
FAKE_COLAB = """\
import json, os
def enable_custom_widget_manager(*args):
    with open(os.environ["SIM_CALLS"], "a") as f:
        f.write(json.dumps(["enable_custom_widget_manager", list(args)]) + "\\n")
"""
RUNNER = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("cells", sys.argv[1])
cells = importlib.util.module_from_spec(spec); spec.loader.exec_module(cells)
code = cells.code_cells(cells.read_cells(open(sys.argv[2], "rb").read()))
outcomes = cells.run_notebook_cells(code, cells.notebook_namespace())
import course_lib, ipywidgets
print("SIM " + json.dumps({
    "errors": [o for o in outcomes if o["status"] != "ok"],
    "cells": len(code),
    "course_lib": course_lib.__file__,
    "widget_model": ipywidgets.IntSlider()._model_module_version,
    "ipywidgets": ipywidgets.__version__,
}))
"""


def run(*command, **kwargs):
    """A command's completed process, its output captured."""
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def publish(work: Path) -> Path:
    """The released bundle, committed into a git repository as a teacher would publish it."""
    repo = work / "published"
    release(repo, lang="both", hosted_from=PUBLISHED)
    git = ["git", "-C", str(repo), "-c", "user.name=sim", "-c", "user.email=sim@localhost"]
    for step in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "bundle"]):
        done = run(*git, *step)
        assert done.returncode == 0, done.stderr
    return repo


def build_wheel(repo: Path, work: Path) -> str:
    """Build the package the bootstrap installs; its file name."""
    out = work / "wheels"
    done = run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-q",
        "-w",
        str(out),
        str(repo),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return next(out.glob("*.whl")).name


def platform_env(work: Path, platform_site: str) -> Path:
    """A fresh environment without course_lib that sees `platform_site`'s packages."""
    venv = work / "platform"
    done = run(sys.executable, "-m", "venv", "--without-pip", str(venv))  # pip: the platform's
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    site = run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
    Path(site.stdout.strip(), "platform.pth").write_text(platform_site + "\n")
    return python


def torch_fingerprint(python: Path) -> dict:
    """torch's version and a digest of its files' names, sizes and times, as `python` sees it."""
    code = (
        "import hashlib, os, torch; d = os.path.dirname(torch.__file__); h = hashlib.sha256()\n"
        "for r, _, fs in sorted(os.walk(d)):\n"
        "    for f in sorted(fs):\n"
        "        s = os.stat(os.path.join(r, f))\n"
        "        h.update(f'{r}/{f}{s.st_size}{s.st_mtime_ns}'.encode())\n"
        "print(torch.__version__, h.hexdigest())"
    )
    version, digest = run(str(python), "-c", code).stdout.split()
    return {"version": version, "files": digest}


def simulate(platform: str, chapters: list, platform_site: str) -> dict:
    """Run the chapters' released notebooks on the simulated platform; the report."""
    with tempfile.TemporaryDirectory(prefix="hosted-sim-") as tmp:
        work = Path(tmp)
        repo = publish(work)
        wheel = build_wheel(repo, work)
        python = platform_env(work, platform_site)
        fake = work / "fake-platform"
        (fake / "google" / "colab").mkdir(parents=True)
        (fake / "google" / "__init__.py").write_text("")
        (fake / "google" / "colab" / "__init__.py").write_text("from . import output\n")
        (fake / "google" / "colab" / "output.py").write_text(FAKE_COLAB)
        calls = work / "calls.jsonl"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(work / "home"),
            "MPLBACKEND": "Agg",
            "COURSE_DEVICE": "cpu",
            "OMP_NUM_THREADS": "1",
            "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_BUILD_ISOLATION": "0",  # pip reads this inverted: 0 turns isolation off
            "SIM_CALLS": str(calls),
            **MARKERS[platform],
        }
        if platform == "colab":
            env["PYTHONPATH"] = str(fake)
        before = torch_fingerprint(python)
        report = {"platform": platform, "wheel": wheel, "torch_before": before, "chapters": {}}
        for number in chapters:
            notebook = next((repo / "notebooks").glob(f"{number}_*.ipynb"))
            text = notebook.read_text(encoding="utf-8").replace(PUBLISHED, f"file://{repo}")
            local = work / "outside" / notebook.name
            local.parent.mkdir(exist_ok=True)
            local.write_text(text, encoding="utf-8")
            cells_py = ROOT / "course_lib" / "grading" / "cells.py"
            done = run(
                str(python), "-c", RUNNER, str(cells_py), str(local), cwd=local.parent, env=env
            )
            line = [s for s in done.stdout.splitlines() if s.startswith("SIM ")]
            result = json.loads(line[0][4:]) if line else {"failed": done.stderr[-3000:]}
            said = [s for s in done.stdout.splitlines() if "course ready" in s or "课程" in s]
            result["bootstrap_said"] = said[:3]
            report["chapters"][number] = result
        report["torch_after"] = torch_fingerprint(python)
        report["torch_unchanged"] = report["torch_after"] == before
        report["widget_manager_calls"] = calls.read_text().splitlines() if calls.exists() else []
        report["cell_installs"] = hashlib.sha256(hosted.BOOTSTRAP_CELL.encode()).hexdigest()[:12]
        return report


def main(argv=None) -> int:
    """Simulate each platform asked for; print the reports; exit 1 on any error."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=list(MARKERS), nargs="+", default=list(MARKERS))
    parser.add_argument("--chapters", nargs="+", default=["01", "03"])
    import sysconfig

    parser.add_argument("--platform-site", default=sysconfig.get_path("purelib"))
    args = parser.parse_args(argv)
    failed = False
    for platform in args.platform:
        report = simulate(platform, args.chapters, args.platform_site)
        print(json.dumps(report, indent=1, ensure_ascii=False))
        failed |= not report["torch_unchanged"] or any(
            r.get("errors") or "failed" in r for r in report["chapters"].values()
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
