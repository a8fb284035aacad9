"""Grades a teacher can trust: each attack of issue 10
is a hostile fixture with the grade it must get.

One grader run per isolation mode grades the six attacks beside three honest reference
notebooks and a blank one: with everything this machine has (namespaces and Landlock), without
Landlock, without namespaces (Landlock alone), and with neither. Where a mode cannot hold a
guarantee, the gradebook summary must say so; everywhere else each attack gets exactly the points
its honest content earns, and a flag, and the honest notebooks lose nothing.
"""

import csv
import json
import secrets
import socket
import threading

import pytest

from support import submissions  # noqa: E402

FULL, FUNCTION = 13.0, 3.0
ATTACKS = [
    "attack1_gc_channel",
    "attack1_frames",
    "attack1_fd_forgery",
    "attack2_key_read",
    "attack3_network",
    "attack4_outlive",
    "attack5_classmates",
    "attack6_csv",
]
MODES = {
    "full": {},
    "no-landlock": {"COURSE_GRADER_NO_LANDLOCK": "1"},
    "no-namespaces": {"COURSE_GRADER_NO_NAMESPACES": "1"},
    "neither": {"COURSE_GRADER_NO_LANDLOCK": "1", "COURSE_GRADER_NO_NAMESPACES": "1"},
}
HONEST = ["honest1", "honest2", "honest3"]


class Listener:
    """A TCP and a UDP socket on the grading machine's loopback; records who reached them."""

    def __init__(self):
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.tcp.settimeout(0.2)
        self.udp.settimeout(0.2)
        self.got, self.stop = [], False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            for sock, kind in ((self.tcp, "tcp"), (self.udp, "udp")):
                try:
                    (sock.accept() if kind == "tcp" else sock.recvfrom(64))
                    self.got.append(kind)
                except OSError:
                    pass

    def close(self):
        self.stop = True
        self.thread.join()
        self.tcp.close()
        self.udp.close()


@pytest.fixture(scope="module", params=list(MODES))
def graded(request, tmp_path_factory):
    mode, env = request.param, MODES[request.param]
    tmp = tmp_path_factory.mktemp("attacks")
    subs, out = tmp / "submissions", tmp / "out" / "gradebook.csv"
    subs.mkdir()
    listener, mark = Listener(), secrets.token_hex(6)
    names = [n for n in ATTACKS if not (mode == "neither" and n == "attack5_classmates")]
    submissions.write_all(
        subs, names, {"SUBMISSIONS": subs, "OUT": out.parent, "PORT": listener.port, "MARK": mark}
    )
    bases = submissions.bases()
    for name in HONEST:
        (subs / f"{name}.ipynb").write_text(json.dumps(bases["reference"]))
    (subs / "=blank.ipynb").write_text(json.dumps(bases["blank"]))
    proc = submissions.run_grader(
        subs, out, "--workers", 2, "--cell-timeout", 20, "--test-timeout", 5, env=env
    )
    listener.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {
        p.stem: json.loads(p.read_text())
        for p in out.with_name("gradebook_feedback").glob("*.json")
    }
    return {
        "mode": mode,
        "book": submissions.read_gradebook(out),
        "records": records,
        "out": out,
        "mark": mark,
        "net": listener.got,
        "stderr": proc.stderr,
        "names": names,
        "summary": out.with_name("gradebook.summary.csv").read_text(),
    }


def points(graded, name, exercise="TOTAL"):
    return float(graded["book"][name][exercise]["points"])


def flags(graded, name):
    return graded["book"][name]["TOTAL"]["flags"].split()


def stdout(graded, name):
    return graded["records"][name]["output"]["stdout"]


def _holds(graded) -> bool:
    """Whether this mode keeps a graded process from the key, the network and other processes."""
    return graded["mode"] != "neither"


def test_honest_notebooks_graded_alongside_lose_nothing(graded):
    for name in HONEST:
        assert points(graded, name) == FULL, graded["book"][name]["TOTAL"]["detail"]
        assert graded["book"][name]["TOTAL"]["status"] == "ok"
        assert flags(graded, name) == []


def test_reduced_isolation_is_said_once_in_the_summary(graded):
    notes = [
        line
        for line in graded["summary"].splitlines()
        if line.startswith("(grader note)") and "limits: " not in line  # always there (issue 34)
    ]
    assert any("limits: " in line for line in graded["summary"].splitlines())
    if graded["mode"] in ("full", "no-landlock"):
        assert notes == []
    else:
        assert any("UDP is not blocked" in n for n in notes)
        assert len(notes) == len(set(notes))
    if graded["mode"] == "neither":
        assert any("reading the answer key" in n for n in notes)
        assert any("signal each other" in n for n in notes)


@pytest.mark.parametrize(
    "name,exercise",
    [
        ("attack1_gc_channel", "ch01.make_batch"),
        ("attack1_frames", "ch01.gpu_names"),
        ("attack1_fd_forgery", "ch01.choose_device"),
    ],
)
def test_attack1_a_forged_report_earns_nothing_and_is_flagged(graded, name, exercise):
    """The forging functions are wrong answers: they get what a wrong answer gets (0 here) whatever
    they reach, since the process that runs them holds no verdict and no key (issue 18). Lines they
    write on the report pipe make the verdict "tampered"; their gc and frame walks are flagged."""
    row = graded["book"][name][exercise]
    assert row["status"] in ("incorrect", "tampered") and float(row["points"]) == 0.0, row["detail"]
    assert points(graded, name) == FULL - FUNCTION  # the rest is its honest work
    assert {
        "tampered",
        "review:forged-report-lines",
        "review:grader-internals",
        "review:frame-walking",
    } & set(flags(graded, name))


def test_attack2_the_key_and_the_teachers_files_are_out_of_reach(graded):
    said = stdout(graded, "attack2_key_read")
    if not _holds(graded):
        return  # the summary says so (test above)
    assert points(graded, "attack2_key_read") == 0.0
    assert "review:grader-internals" in flags(graded, "attack2_key_read")
    found = eval(
        said.split("KEY-ATTEMPT", 1)[1].strip().splitlines()[0]
    )  # the fixture's own report
    assert all(
        isinstance(v, str) and v.endswith("Error") for k, v in found.items() if k != "listdir"
    ), found
    assert found["listdir"] in ([], "PermissionError", "FileNotFoundError")


def test_attack3_no_network_but_a_private_loopback(graded):
    assert points(graded, "attack3_network") == FULL
    assert "review:network" in flags(graded, "attack3_network")
    said = stdout(graded, "attack3_network")
    if not _holds(graded):
        return
    assert "tcp" not in graded["net"]
    assert (
        "'tcp host loopback': 'connected'" not in said and "'tcp outside': 'connected'" not in said
    )
    if graded["mode"] != "no-namespaces":  # Landlock alone cannot stop UDP (the summary says so)
        assert "udp" not in graded["net"]
        assert "'private server': '127.0.0.1'" in said  # chapter 07's gloo needs this


def test_attack4_nothing_outlives_grading_anywhere_on_the_machine(graded):
    assert points(graded, "attack4_outlive") == FULL
    assert "review:processes-and-files" in flags(graded, "attack4_outlive")
    assert submissions.alive_with(f"leftover-{graded['mark']}") == []
    said = stdout(graded, "attack4_outlive")
    assert "STARTED" in said, (graded["book"]["attack4_outlive"]["TOTAL"]["detail"], said[-2000:])
    started = said.split("STARTED", 1)[1].split()[0]
    if graded["mode"] in ("full", "no-landlock"):
        assert int(started) < 64  # the process-count limit


def test_attack5_a_classmate_cannot_be_hurt(graded):
    if "attack5_classmates" not in graded["names"]:
        return  # with neither mechanism it would kill the grader itself: the summary says so
    assert points(graded, "attack5_classmates") == 0.0
    assert "review:processes-and-files" in flags(graded, "attack5_classmates")


def test_attack6_exports_are_safe_in_a_spreadsheet(graded):
    out = graded["out"]
    texts = out.with_name("gradebook.texts.csv").read_text()
    assert "HYPERLINK" in texts and "markdown_formula" in texts
    for path in (out, out.with_name("gradebook.summary.csv"), out.with_name("gradebook.texts.csv")):
        with open(path, newline="") as f:
            for row in csv.reader(f):
                for cell in row:
                    if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                        float(cell)  # only numbers may start so
    assert "'=blank" in out.read_text()
    assert points(graded, "attack6_csv") == FULL
