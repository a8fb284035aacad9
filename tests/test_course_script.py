"""The README's first command really starts JupyterLab on loopback with the notebooks folder."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

from conftest import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_course_start_serves_the_notebooks_on_loopback(tmp_path):
    port = free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    proc = subprocess.Popen([str(ROOT / "course.sh"), "start", "--no-browser", f"--port={port}",
                             "--ServerApp.token="], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, listing = time.monotonic() + 90, None
        while time.monotonic() < deadline and listing is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents", timeout=5) as r:
                    listing = json.load(r)
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
                time.sleep(1)
        assert listing is not None, "JupyterLab did not answer within 90 s"
        names = {item["name"] for item in listing["content"]}
        assert "01_device_check.ipynb" in names
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
