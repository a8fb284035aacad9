"""A class on a real JupyterHub (issue 22, item 1): jupyterhub with configurable-http-proxy, a local
spawner and a shared-password authenticator on 127.0.0.1; the course's hub configuration
(docs/classroom/course_hub_config.py). Three students log in, follow the README's nbgitpuller
link (the student bundle from a git repository), answer chapter 01 and run it in their own
kernels through the hub; the teacher collects every user's notebook and grades them.
"""

import asyncio
import concurrent.futures
import csv
import json
import subprocess
import sys
import time
from urllib.parse import quote

import pytest

from course_lib.classroom.collect import COURSE_FOLDER
from course_lib.grading.release import find_leaks
from course_lib.grading.selftest import chapter_cases
from support import submissions  # noqa: E402

from .conftest import course_repo, readme_link
from .hub import Hub, Student

USERS = {"alice": "ch01-reference", "bob": "ch01-blank", "carol": "ch01-wrong01"}
NOTEBOOK = f"{COURSE_FOLDER}/notebooks/01_device_check.ipynb"
PROBE = (
    "import importlib.util, json, course_lib\n"
    "print('PROBE ' + json.dumps({'course_lib': course_lib.__file__,"
    " 'key': importlib.util.find_spec('course_lib.key') is not None}))"
)
ROSTER = (
    "id,name,email,username\nS1,Alice A,alice@uni.edu,alice\nS2,Bob B,bob@uni.edu,bob\nS3,Carol "
    "C,carol@uni.edu,\n"
)


def text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def answer(notebook: dict, answers: dict) -> dict:
    """The student types their answers into the pulled notebook's cells (matched by cell id)."""
    for cell in notebook["cells"]:
        if cell.get("id") in answers and text(cell["source"]) != answers[cell["id"]]:
            cell["source"] = answers[cell["id"]]
    return notebook


def cli(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "course_lib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_in_own_loop(coroutine):
    """asyncio.run in a thread of its own: another test (Playwright's sync API) may leave an
    event loop running in this thread, where asyncio.run refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="module")
def classroom(tmp_path_factory, proxy_command):
    tmp = tmp_path_factory.mktemp("class")
    started = time.monotonic()
    repo = course_repo(tmp / "teacher")
    hub = Hub(tmp / "hub", proxy_command, list(USERS))
    cases = {c.name: c.notebook for c in chapter_cases("01")}
    seen = {"hub": hub, "tmp": tmp, "users": {}}
    try:
        hub.start()
        hub.start_servers()
        seen["servers_seconds"] = round(time.monotonic() - started, 1)
        link = (
            readme_link()
            .replace("https://HUB", hub.url)
            .replace("REPO", quote(f"file://{repo}", safe=""))
        )
        students = {name: Student(hub, name) for name in USERS}
        for name, student in students.items():
            student.log_in()
            page = student.follow(link)
            events, landing = student.git_pull(page)
            seen["users"][name] = {
                "page": page,
                "events": events,
                "landing": student.follow(hub.url + landing),
                "leaks": find_leaks(hub.homes / name / COURSE_FOLDER),
            }  # as pulled
        kernels = {}
        for name, student in students.items():  # each student answers, saves, opens a kernel
            answers = {
                c["id"]: text(c["source"]) for c in cases[USERS[name]]["cells"] if c.get("id")
            }
            notebook = answer(student.contents(NOTEBOOK), answers)
            student.save(NOTEBOOK, notebook)
            kernels[name] = (notebook, student.start_kernel(NOTEBOOK))

        async def run_all():
            async def one(name):
                notebook, kernel = kernels[name]
                code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
                results = await students[name].run(
                    kernel, [text(c["source"]) for c in code] + [PROBE]
                )
                for cell, (_, outputs, count) in zip(code, results):
                    cell["outputs"], cell["execution_count"] = outputs, count
                students[name].save(NOTEBOOK, notebook)  # "save" in JupyterLab, with the outputs
                seen["users"][name]["results"] = results

            await asyncio.gather(*(one(name) for name in USERS))

        run_in_own_loop(run_all())
        seen["class_seconds"] = round(time.monotonic() - started, 1)
        # the teacher's side
        (tmp / "roster.csv").write_text(ROSTER)
        seen["collect"] = cli(
            "collect", hub.homes, tmp / "submissions", "--chapter", "01", "--no-owner-check"
        )  # the test hub's users are not system users: every home belongs to the test's user
        out = tmp / "grades" / "ch01.csv"
        seen["grade"] = submissions.run_grader(
            tmp / "submissions",
            out,
            "--workers",
            2,
            "--export",
            "nbgrader",
            "--roster",
            tmp / "roster.csv",
        )
        seen["out"] = out
        seen["seconds"] = round(time.monotonic() - started, 1)
        yield seen
    finally:
        hub.stop()


def test_three_users_got_the_bundle_through_the_readme_link(classroom):
    hub = classroom["hub"]
    for name, seen in classroom["users"].items():
        assert seen["page"].status_code == 200 and f"/user/{name}/git-pull" in seen["page"].url, (
            hub.log_tail()
        )
        assert seen["events"][-1]["phase"] == "finished", seen["events"][-3:]
        assert seen["landing"].status_code == 200 and seen["landing"].url.endswith(
            f"/user/{name}/lab/tree/{NOTEBOOK}"
        )
        course = hub.homes / name / COURSE_FOLDER
        assert (course / "notebooks" / "01_device_check.ipynb").is_file() and (
            course / ".git"
        ).is_dir()
        assert not (course / "course_lib" / "key").exists() and seen["leaks"] == []


def test_each_users_kernel_ran_the_chapter_with_the_student_copy(classroom):
    hub = classroom["hub"]
    for name, seen in classroom["users"].items():
        *cells, probe = seen["results"]
        assert len(cells) > 20 and all(status == "ok" for status, _, _ in cells), [
            (i, o) for i, (s, o, _) in enumerate(cells) if s != "ok"
        ][:2]
        said = json.loads(
            next(o["text"] for o in probe[1] if o.get("name") == "stdout").split("PROBE ", 1)[1]
        )
        assert said == {
            "course_lib": str(hub.homes / name / COURSE_FOLDER / "course_lib" / "__init__.py"),
            "key": False,
        }  # the key is nowhere in the user's environment
        saved = json.loads((hub.homes / name / NOTEBOOK).read_text())
        assert any(c.get("outputs") for c in saved["cells"] if c["cell_type"] == "code")
    shown = lambda name: json.dumps(
        [o for _, outs, _ in classroom["users"][name]["results"] for o in outs]
    )
    assert (
        "Correct" in shown("alice")
        and "Not attempted" in shown("bob")
        and "Incorrect" in shown("carol")
    )


def test_teacher_collects_every_user_and_grades_them(classroom):
    collect, grade, out = classroom["collect"], classroom["grade"], classroom["out"]
    assert collect.returncode == 0 and "3 of 3 user(s)" in collect.stdout, (
        collect.stdout + collect.stderr
    )
    assert sorted(p.name for p in (classroom["tmp"] / "submissions").glob("*.ipynb")) == [
        "alice.ipynb",
        "bob.ipynb",
        "carol.ipynb",
    ]
    assert grade.returncode == 0, grade.stderr[-3000:]
    totals = {
        r["submission"]: float(r["points"])
        for r in csv.DictReader(open(out.with_name("ch01.summary.csv")))
        if r["submission"] != "(grader note)"  # e.g. which mechanism held the limits
    }
    wrong = next(c for c in chapter_cases("01") if c.name == "ch01-wrong01")
    assert totals == {
        "alice": 13.0,
        "bob": 0.0,
        "carol": pytest.approx(sum(p for _, p in wrong.expected.values())),
    }
    rows = list(csv.DictReader(open(out.with_name("ch01.nbgrader.csv"))))
    assert {r["student_id"]: float(r["score"]) for r in rows} == {
        "S1": 13.0,
        "S2": 0.0,
        "S3": totals["carol"],
    }
    print(
        f"hub: servers ready after {classroom['servers_seconds']} s, chapter run in 3 kernels "
        f"after {classroom['class_seconds']} s, collected and graded after "
        f"{classroom['seconds']} s"
    )


def test_the_hub_stops_with_its_proxy_and_the_users_servers(classroom):
    hub = classroom["hub"]
    hub.stop()
    assert hub.process.returncode is not None
    deadline = time.monotonic() + 1  # they have a second to go, as before; no longer a fixed wait
    while submissions.alive_under(classroom["tmp"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert submissions.alive_under(classroom["tmp"]) == [], hub.log_tail()
