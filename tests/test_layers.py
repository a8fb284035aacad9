"""The layers of course_lib, as docs/architecture.md draws them (issue 37, items 4 and 5).

Every import inside course_lib (also those inside functions) is read from the source; each
module has the layer the document's table gives it. An import from a lower layer up to a higher
one, or two modules that import each other, must be listed in the document's lists of what is
still to fix, and every listed one must still exist: so the map stays true as the code changes.
"""

import ast
import fnmatch
import re
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "course_lib"
DOC = ROOT / "docs" / "architecture.md"


def modules() -> dict:
    """{dotted name: path} of every module of course_lib."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _targets(name: str, path: Path, node, known: dict) -> list:
    """The course_lib modules one import statement of module `name` names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    names = [f"{origin}.{a.name}" for a in node.names]
    return [n if n in known else origin for n in names if (n in known or origin in known)]


def imports() -> set:
    """(importer, imported) pairs of course_lib modules, each module's own package aside."""
    known = modules()
    pairs = set()
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(name, path, node, known):
                    if target != name and not name.startswith(target + "."):
                        pairs.add((name, target))
    return pairs


def doc_section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#+ |\Z)", text, re.M | re.S)
    assert match, f"docs/architecture.md has no section {title!r}"
    return match.group(1)


def layers() -> list:
    """[(layer number, [module patterns])] from the document's layer table."""
    rows = re.findall(r"^\| (\d) [^|]*\| ([^|]+) \|", doc_section("The layers"), re.M)
    return [(int(n), re.findall(r"`([^`]+)`", cells)) for n, cells in rows]


def layer_of(module: str, table: list) -> int:
    """The layer of the first row whose pattern matches `module` (course_lib. left out)."""
    short = module.removeprefix("course_lib.") if module != "course_lib" else "course_lib"
    for number, patterns in table:
        if any(fnmatch.fnmatchcase(short, p) for p in patterns):
            return number
    raise AssertionError(f"{module} is in no layer of docs/architecture.md's table")


def listed(title: str) -> set:
    """The `a` -> `b` pairs a list of the document names."""
    pairs = re.findall(r"^- `([^`]+)` (?:->|<->) `([^`]+)`", doc_section(title), re.M)
    return {(f"course_lib.{a}", f"course_lib.{b}") for a, b in pairs}


def upward() -> set:
    table = layers()
    return {(a, b) for a, b in imports() if layer_of(a, table) < layer_of(b, table)}


def mutual() -> set:
    pairs = imports()
    return {(a, b) for a, b in pairs if (b, a) in pairs and a < b}


def test_every_module_has_a_layer():
    table = layers()
    assert len(table) >= 5
    for name in modules():
        layer_of(name, table)


def test_the_arrows_that_point_up_are_the_ones_the_map_lists():
    found, said = upward(), listed("Arrows that still point up")
    short = lambda pairs: sorted(f"{a[11:]} -> {b[11:]}" for a, b in pairs)  # noqa: E731
    assert not found - said, f"new upward imports, not in the map: {short(found - said)}"
    assert not said - found, f"the map lists arrows that are gone: {short(said - found)}"


def test_the_modules_that_import_each_other_are_the_ones_the_map_lists():
    found, said = mutual(), listed("Modules that import each other")
    assert found == said, (sorted(found - said), sorted(said - found))


def test_no_import_points_up_and_no_two_modules_import_each_other():
    """Issue 37's done-means: the lists of what is left to fix are empty, and so is the code."""
    assert not upward() and not mutual(), (sorted(upward()), sorted(mutual()))


def test_a_new_upward_import_would_fail():
    """The check can fail: an import from the engine up to the grader is upward and unlisted."""
    table = layers()
    extra = ("course_lib.exercises.spec", "course_lib.grading.judge")
    assert layer_of(extra[0], table) < layer_of(extra[1], table)
    assert extra not in listed("Arrows that still point up")


PATH = re.compile(r"`((?:course_lib|tests|notebooks|docs|benchmarks)/[^` ]*)`")
COMMAND = re.compile(r"`python -m ([A-Za-z0-9_.]+)")


def recipe_paths(text: str) -> list:
    """Paths a recipe names, with NN / chNN_topic / <family> placeholders as globs."""
    paths = []
    for path in PATH.findall(text):
        path = re.sub(r"<[^>]+>|NN_topic|NN|\*", "*", path.split("::")[0]).rstrip(".,:")
        paths.append(path)
    return paths


def test_every_path_and_command_of_the_recipes_exists():
    text = doc_section("Where each kind of change goes")
    paths, commands = recipe_paths(text), set(COMMAND.findall(text))
    assert len(paths) >= 15 and commands, (paths, commands)
    missing = [p for p in paths if not list(ROOT.glob(p))]
    assert not missing, f"docs/architecture.md's recipes name paths that do not exist: {missing}"
    import importlib.util

    gone = [m for m in sorted(commands) if importlib.util.find_spec(m) is None]
    assert not gone, f"docs/architecture.md's recipes name commands that do not exist: {gone}"


def test_every_recipe_has_its_chinese_steps():
    text = doc_section("Where each kind of change goes")
    for recipe in re.findall(r"^- \*\*(.+?)\*\*(.*?)(?=^- \*\*|\Z)", text, re.M | re.S):
        title, body = recipe
        if title.startswith(("A new", "A grading rule")):
            assert "Chinese" in body or "zh" in body, f"recipe {title!r} has no Chinese step"


# What the judge of one chapter's grade imports: that chapter's declarations and its key only.
JUDGE_VIEW = """
import json, sys
from course_lib import chapters
from course_lib.exercises import get
chapter = chapters.get(sys.argv[1])
rows = json.load(open("course_lib/exercises/index.json", encoding="utf-8"))
for row in rows:
    if row["chapter"] == chapter.number:
        get(row["id"]).key()
print(json.dumps(sorted(m for m in sys.modules if m.startswith("course_lib."))))
"""


def apart_chapters() -> list:
    from course_lib.chapters import CHAPTERS

    return [c for c in CHAPTERS if c.declarations != c.module]


def test_chapters_05_06_and_07_declare_their_exercises_apart():
    assert {"05", "06", "07"} <= {c.number for c in apart_chapters()}


def test_the_judge_of_a_chapter_declared_apart_imports_no_demonstration():
    """Grading a chapter imports its declarations and its key, not its chapter module (the demos,
    the widgets, the plots); the learner's module still offers every exercise under its name."""
    import importlib
    import json
    import subprocess
    import sys

    from course_lib.exercises import get

    for chapter in apart_chapters():
        run = subprocess.run(
            [sys.executable, "-c", JUDGE_VIEW, chapter.number],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        imported = json.loads(run.stdout.splitlines()[-1])
        assert chapter.declarations in imported and chapter.key_module in imported
        assert chapter.module not in imported, f"the judge of chapter {chapter.number} imported it"
        assert "course_lib.widgets" not in imported
        module = importlib.import_module(chapter.module)
        for name, exercise in chapter.exercises.items():
            assert getattr(module, name) is exercise is get(exercise.id)
