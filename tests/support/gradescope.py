"""Gradescope's /autograder, laid out here on a temporary tree (the autograder tests)."""

import json
import os
import subprocess
import sys
import zipfile

NO_TEACHER = (
    "import sys\nsys.meta_path[:] = [f for f in sys.meta_path "
    'if not getattr(f, "__module__", "").startswith("__editable__")]\n'
)


def gradescope_tree(tmp_path, zip_path, files: dict):
    """/autograder as Gradescope lays it out: source/ (the zip), run_autograder, submission/."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    (root / "run_autograder").write_bytes((root / "source" / "run_autograder").read_bytes())
    (root / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    for name, data in files.items():
        (root / "submission" / name).write_text(data if isinstance(data, str) else json.dumps(data))
    (root / "results").mkdir()
    return root


def run_autograder(root, tmp_path):
    hide = tmp_path / "no-teacher"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(NO_TEACHER)
    env = dict(
        os.environ,
        COURSE_AUTOGRADER_ROOT=str(root),
        COURSE_AUTOGRADER_PYTHON=sys.executable,
        PYTHONPATH=str(hide),
    )
    proc = subprocess.run(
        ["bash", str(root / "run_autograder")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
        env=env,
    )
    path = root / "results" / "results.json"
    return proc, (json.loads(path.read_text()) if path.exists() else None)
