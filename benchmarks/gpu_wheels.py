"""The wheels gpu_check.sh brings to a GPU machine
that lacks the notebook tools (standard library only).

    python benchmarks/gpu_wheels.py install WHEELS_DIR TARGET_DIR  on the GPU machine, offline
    python benchmarks/gpu_wheels.py plan WHEELS_DIR                 what install would do, and why
    python benchmarks/gpu_wheels.py prepare WHEELS_DIR              here, online (pip download)

`install` puts into TARGET_DIR (for PYTHONPATH) every wheel of WHEELS_DIR whose project this
Python does not have yet, with ``pip install --no-index --no-deps --target``; where pip is
missing or refuses, it unpacks the wheels itself (a wheel is a zip of the installed files).
Projects already installed (pytest, numpy, matplotlib, torch...) are left alone, so the
machine's own versions are the ones used, unless a wheel being installed needs a version the
machine's does not satisfy (ipykernel needs tornado and pyzmq minimums, say): then that
project's wheel is installed too, and shadows the machine's on PYTHONPATH. `plan` says what
`install` would do and why, installing nothing. `prepare` downloads the wheels for Python 3.12
on x86-64 Linux (the GPU machine's), binary only, with their dependencies.
"""

import email.parser
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


def installed_version(project: str):
    """The version of `project` this Python imports, or None."""
    try:
        return metadata.version(project)
    except metadata.PackageNotFoundError:
        return None


def packaging_module(wheels: list):
    """`packaging` (requirements, markers, versions): the machine's, pip's copy, or the wheel's."""
    try:
        import packaging.requirements
        import packaging.version

        return packaging
    except ImportError:
        pass
    try:
        import pip._vendor.packaging.requirements  # noqa: F401
        import pip._vendor.packaging.version  # noqa: F401
        from pip._vendor import packaging

        return packaging
    except ImportError:
        pass
    for wheel in wheels:  # a pure-Python wheel imports from the zip itself
        if project_of(wheel) == "packaging":
            sys.path.append(str(wheel))
            import packaging.requirements
            import packaging.version

            return packaging
    return None


def wheel_metadata(wheel: Path) -> tuple:
    """(version, [Requires-Dist lines]) read from the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as z:
        name = next(
            n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
        )
        meta = email.parser.Parser().parsestr(
            z.read(name).decode("utf-8", "replace"), headersonly=True
        )
    return meta["Version"], meta.get_all("Requires-Dist") or []


def plan(wheels: list, version_of=installed_version) -> tuple:
    """(wheels to install, notes): the wheels of projects this Python lacks, plus the wheels of
    installed projects whose version does not satisfy what a wheel to install requires."""
    pk = packaging_module(wheels)
    if pk is None:
        newest = {project_of(w): w for w in sorted(wheels, key=lambda w: w.name)}
        return [w for p, w in sorted(newest.items()) if version_of(p) is None], [
            (
                "WARNING: no `packaging` here: the installed versions were not checked against "
                "the wheels' requirements"
            )
        ]
    newest, versions = {}, {}
    for wheel in wheels:  # one wheel per project: its newest version
        project, version = project_of(wheel), wheel_metadata(wheel)[0]
        if project not in newest or pk.version.Version(version) > pk.version.Version(
            versions[project]
        ):
            newest[project], versions[project] = wheel, version
    chosen = {p: w for p, w in newest.items() if version_of(p) is None}
    notes, seen = [], set()
    todo = list(chosen)
    while todo:
        needer = todo.pop()
        for line in wheel_metadata(newest[needer])[1]:
            req = pk.requirements.Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            dep = re.sub(r"[-_.]+", "-", req.name).lower()
            have = versions[dep] if dep in chosen else version_of(dep)
            if have is not None and req.specifier.contains(
                pk.version.Version(have), prereleases=True
            ):
                continue
            if (
                dep not in chosen
                and dep in newest
                and req.specifier.contains(pk.version.Version(versions[dep]), prereleases=True)
            ):
                chosen[dep] = newest[dep]
                todo.append(dep)
                notes.append(
                    f"installing {dep} {versions[dep]}: {needer} needs {req.specifier} and this "
                    f"Python has {have}"
                )
            elif (needer, dep) not in seen:
                seen.add((needer, dep))
                notes.append(
                    f"WARNING: {needer} needs {dep}{req.specifier}; this Python has {have} and the "
                    f"wheels folder {'has ' + versions[dep] if dep in newest else 'has none'}"
                )
    return [chosen[p] for p in sorted(chosen)], notes


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
        print(
            f"no wheels in {folder}: prepare them with "
            f"`bash benchmarks/gpu_check.sh --prepare-wheels {folder}` and bring that folder along"
        )
        return 1
    todo, notes = plan(wheels)
    print(
        f"{len(wheels)} wheels in {folder}; installing {len(todo)}"
        + (": " + " ".join(project_of(w) for w in todo) if todo else "")
    )
    for note in notes:
        print(note)
    target.mkdir(parents=True, exist_ok=True)
    if todo:
        pip = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--disable-pip-version-check",
            "-q",
            "--target",
            str(target),
            *map(str, todo),
        ]
        if subprocess.run(pip).returncode != 0:
            print("pip could not install them; unpacking the wheels instead")
            for wheel in todo:
                unpack(wheel, target)
    return 0


def prepare(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".gitignore").write_text("*\n")  # the wheels are never committed
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "-q",
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "-d",
        str(folder),
    ]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    code = subprocess.run(cmd + list(NEEDED)).returncode
    size = sum(p.stat().st_size for p in folder.glob("*.whl"))
    print(f"{len(list(folder.glob('*.whl')))} wheels, {size / 2**20:.1f} MiB in {folder}")
    return code


def show_plan(folder: Path) -> int:
    """What install would do here, and why; installs nothing (gpu_check.sh's dry run)."""
    wheels = sorted(Path(folder).glob("*.whl")) if Path(folder).is_dir() else []
    if not wheels:
        print(
            f"no wheels in {folder}: prepare them with "
            f"`bash benchmarks/gpu_check.sh --prepare-wheels {folder}`"
        )
        return 1
    todo, notes = plan(wheels)
    for note in notes:
        print(note)
    print(
        f"would install {len(todo)} of {len(wheels)} wheels in {folder}"
        + (": " + " ".join(project_of(w) for w in todo) if todo else "")
    )
    return 0


def main(argv: list) -> int:
    if len(argv) == 4 and argv[0] == "install" and argv[3] == "--dry-run":  # gpu_check.sh's dry run
        return show_plan(Path(argv[1]))
    if len(argv) == 3 and argv[0] == "install":
        return install(Path(argv[1]), Path(argv[2]))
    if len(argv) == 2 and argv[0] == "plan":
        return show_plan(Path(argv[1]))
    if len(argv) == 2 and argv[0] == "prepare":
        return prepare(Path(argv[1]))
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
