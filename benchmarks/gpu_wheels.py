"""The wheels gpu_check.sh brings to a GPU machine that lacks the notebook tools (standard library only).

    python benchmarks/gpu_wheels.py install WHEELS_DIR TARGET_DIR   on the GPU machine, offline
    python benchmarks/gpu_wheels.py prepare WHEELS_DIR               here, with internet (pip download)

`install` puts into TARGET_DIR (for PYTHONPATH) every wheel of WHEELS_DIR whose project this
Python does not have yet, with ``pip install --no-index --no-deps --target``; where pip is
missing or refuses, it unpacks the wheels itself (a wheel is a zip of the installed files).
Projects already installed (pytest, numpy, matplotlib, torch...) are left alone, so the
machine's own versions are the ones used. `prepare` downloads the wheels for Python 3.12 on
x86-64 Linux (the GPU machine's), binary only, with their dependencies.
"""
import importlib.metadata as metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

NEEDED = ("nbval", "nbclient", "nbformat", "ipykernel", "ipywidgets")  # what the GPU machine lacks
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
PYTHON_VERSION = "3.12"


def project_of(wheel: Path) -> str:
    """'jupyter_client-8.6.0-py3-none-any.whl' -> 'jupyter-client' (PEP 503 normalized)."""
    return re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()


def is_installed(project: str) -> bool:
    try:
        metadata.distribution(project)
        return True
    except metadata.PackageNotFoundError:
        return False


def wanted(wheels: list, installed=is_installed) -> list:
    """The wheels whose project is not installed yet, one per project (the newest name wins)."""
    chosen = {}
    for wheel in sorted(wheels, key=lambda w: w.name):
        if not installed(project_of(wheel)):
            chosen[project_of(wheel)] = wheel
    return list(chosen.values())


def unpack(wheel: Path, target: Path) -> None:
    """Install one wheel by unpacking it (purelib/platlib of its .data folder go to the top)."""
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            parts = name.split("/")
            if len(parts) > 2 and parts[0].endswith(".data"):
                if parts[1] not in ("purelib", "platlib"):
                    continue  # scripts, headers, data files: not needed to import
                parts = parts[2:]
            path = target.joinpath(*parts)
            if name.endswith("/"):
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            with z.open(name) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)


def install(folder: Path, target: Path) -> int:
    wheels = sorted(Path(folder).glob("*.whl")) if Path(folder).is_dir() else []
    if not wheels:
        print(f"no wheels in {folder}: prepare them with "
              f"`bash benchmarks/gpu_check.sh --prepare-wheels {folder}` and bring that folder along")
        return 1
    todo = wanted(wheels)
    print(f"{len(wheels)} wheels in {folder}; {len(wheels) - len(todo)} projects already installed here; "
          f"installing {len(todo)}" + (": " + " ".join(project_of(w) for w in todo) if todo else ""))
    target.mkdir(parents=True, exist_ok=True)
    if todo:
        pip = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--disable-pip-version-check",
               "-q", "--target", str(target), *map(str, todo)]
        if subprocess.run(pip).returncode != 0:
            print("pip could not install them; unpacking the wheels instead")
            for wheel in todo:
                unpack(wheel, target)
    return 0


def prepare(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".gitignore").write_text("*\n")  # the wheels are never committed
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--only-binary=:all:",
           "--python-version", PYTHON_VERSION, "--implementation", "cp", "-d", str(folder)]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    code = subprocess.run(cmd + list(NEEDED)).returncode
    size = sum(p.stat().st_size for p in folder.glob("*.whl"))
    print(f"{len(list(folder.glob('*.whl')))} wheels, {size / 2**20:.1f} MiB in {folder}")
    return code


def main(argv: list) -> int:
    if len(argv) == 3 and argv[0] == "install":
        return install(Path(argv[1]), Path(argv[2]))
    if len(argv) == 2 and argv[0] == "prepare":
        return prepare(Path(argv[1]))
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
