"""A real JupyterHub on 127.0.0.1 for the tests: its proxy, a local spawner, a shared-password
authenticator, users' homes under a temporary folder; and a student's client for it."""

import asyncio
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import requests

from support import ROOT

COURSE_CONFIG = ROOT / "docs" / "classroom" / "course_hub_config.py"
# The hub's users get the student bundle only: hide the teacher's editable install from their
# processes, as a real user image (which never has this checkout) would.
NO_TEACHER = (
    "import sys\nsys.meta_path[:] = [f for f in sys.meta_path "
    'if not getattr(f, "__module__", "").startswith("__editable__")]\n'
)

CONFIG = """\
import sys
c = get_config()
load_subconfig({course_config!r})
env = c.Spawner.environment
env = env.get_value({{}}) if hasattr(env, "get_value") else dict(env)
course = env["PYTHONPATH"]
env.update(PYTHONPATH=lambda spawner: {hide!r} + ":" + course(spawner), OMP_NUM_THREADS="1")
c.Spawner.environment = env
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/cookie_secret"
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {password!r}
c.Authenticator.allowed_users = set({users!r})
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {home!r}
c.Spawner.ip = "127.0.0.1"
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--allow-root"]
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.JupyterHub.services = [{{"name": "teacher", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "teacher", "services": ["teacher"], "scopes": [
    "admin:users", "admin:servers", "tokens", "list:users", "read:users", "read:servers"]}}]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    """jupyterhub in its own process group; `stop()` ends it, its proxy and the users' servers."""

    def __init__(self, folder: Path, proxy: str, users: list):
        self.folder, self.users = Path(folder), list(users)
        self.homes = self.folder / "homes"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(12)
        self.token = secrets.token_hex(16)
        hide = self.folder / "user-image"
        hide.mkdir(parents=True)
        (hide / "sitecustomize.py").write_text(NO_TEACHER)
        self.config = self.folder / "jupyterhub_config.py"
        self.config.write_text(
            CONFIG.format(
                course_config=str(COURSE_CONFIG),
                hide=str(hide),
                port=self.port,
                hub_port=free_port(),
                api_port=free_port(),
                proxy=proxy,
                folder=self.folder,
                password=self.password,
                users=self.users,
                home=str(self.homes / "{username}"),
                token=self.token,
            )
        )
        self.log = self.folder / "jupyterhub.log"
        self.process = None

    def start(self, timeout=120) -> None:
        env = dict(os.environ, COURSE_HUB_HOME=str(self.homes / "{username}"))
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(self.config)],
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"jupyterhub exited ({self.process.returncode}):\n{self.log_tail()}"
                )
            try:
                if requests.get(f"{self.url}/hub/api", timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"jupyterhub did not answer in {timeout} s:\n{self.log_tail()}")

    def log_tail(self, chars=4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def api(self, method: str, path: str, **kwargs):
        """The hub's REST API as the teacher's service."""
        reply = requests.request(
            method,
            f"{self.url}/hub/api{path}",
            timeout=60,
            headers={"Authorization": f"token {self.token}"},
            **kwargs,
        )
        reply.raise_for_status()
        return reply.json() if reply.content else None

    def start_servers(self, timeout=180) -> None:
        for user in self.users:
            self.api("POST", f"/users/{user}/server")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = {
                u: self.api("GET", f"/users/{u}")["servers"].get("", {}).get("ready")
                for u in self.users
            }
            if all(ready.values()):
                return
            time.sleep(0.2)
        raise RuntimeError(f"user servers not ready in {timeout} s: {ready}\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)  # jupyterhub stops the users' servers and the proxy
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


class Student:
    """One hub user, as their browser and their kernel would talk to the hub."""

    def __init__(self, hub: Hub, name: str):
        self.hub, self.name = hub, name
        self.session = requests.Session()
        self.prefix = f"{hub.url}/user/{name}"
        token = hub.api("POST", f"/users/{name}/tokens", json={"note": "test", "expires_in": 3600})
        self.token = token["token"]
        self.headers = {"Authorization": f"token {self.token}"}

    def log_in(self) -> None:
        page = self.session.get(f"{self.hub.url}/hub/login", timeout=60)
        xsrf = re.search(r'name="_xsrf"\s+value="([^"]+)"', page.text)
        data = {
            "username": self.name,
            "password": self.hub.password,
            "_xsrf": xsrf.group(1) if xsrf else "",
        }
        reply = self.session.post(f"{self.hub.url}/hub/login", data=data, timeout=60)
        assert reply.ok and "jupyterhub-session-id" in self.session.cookies, reply.text[-1000:]

    def follow(self, link: str):
        """Open a link in the logged-in browser session (redirects followed, as a browser does)."""
        return self.session.get(link, timeout=120)

    def git_pull(self, page) -> list:
        """What nbgitpuller's page does in the browser: read its data-* attributes, then open the
        event stream of git-pull/api with them; returns the events."""
        data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', page.text))
        from html import unescape
        from urllib.parse import unquote

        value = lambda key: unquote(unescape(data.get(key, "")))
        params = {"_xsrf": value("xsrf"), "repo": value("repo"), "targetpath": value("targetpath")}
        if value("branch"):
            params["branch"] = value("branch")
        base = value("base-url")
        events = []
        with self.session.get(
            f"{self.hub.url}{base}git-pull/api", params=params, stream=True, timeout=300
        ) as r:
            for line in r.iter_lines(decode_unicode=True):
                if line and line.startswith("data: "):
                    events.append(json.loads(line[6:]))
                    if events[-1].get("phase") in ("finished", "error"):
                        break
        return events, base + value("path")

    def contents(self, path: str) -> dict:
        reply = requests.get(f"{self.prefix}/api/contents/{path}", headers=self.headers, timeout=60)
        reply.raise_for_status()
        return reply.json()["content"]

    def save(self, path: str, notebook: dict) -> None:
        reply = requests.put(
            f"{self.prefix}/api/contents/{path}",
            headers=self.headers,
            timeout=60,
            json={"type": "notebook", "format": "json", "content": notebook},
        )
        reply.raise_for_status()

    def start_kernel(self, path: str) -> str:
        reply = requests.post(
            f"{self.prefix}/api/sessions",
            headers=self.headers,
            timeout=120,
            json={
                "path": path,
                "type": "notebook",
                "name": Path(path).name,
                "kernel": {"name": "python3"},
            },
        )
        reply.raise_for_status()
        return reply.json()["kernel"]["id"]

    async def run(self, kernel_id: str, sources: list, timeout: float = 180) -> list:
        """Execute each source in the kernel through the hub's proxy (Jupyter's websocket protocol);
        returns per source (status, outputs as nbformat dicts, execution count)."""
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = (
            f"ws://127.0.0.1:{self.hub.port}/user/{self.name}/api/kernels/{kernel_id}/channels"
            f"?session_id={uuid.uuid4().hex}"
        )
        conn = await websocket_connect(HTTPRequest(url, headers=self.headers, request_timeout=120))
        session, results = uuid.uuid4().hex, []
        try:
            await self._request(conn, session, "kernel_info_request", {}, timeout)
            for source in sources:
                content = {
                    "code": source,
                    "silent": False,
                    "store_history": True,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": False,
                }
                results.append(
                    await self._request(conn, session, "execute_request", content, timeout)
                )
        finally:
            conn.close()
        return results

    async def _request(self, conn, session, msg_type, content, timeout):
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "username": self.name,
            "session": session,
            "msg_type": msg_type,
            "version": "5.3",
            "date": "",
        }
        await conn.write_message(
            json.dumps(
                {
                    "header": header,
                    "parent_header": {},
                    "metadata": {},
                    "content": content,
                    "channel": "shell",
                    "buffers": [],
                }
            )
        )
        outputs, reply, idle = [], None, False
        deadline = time.monotonic() + timeout
        while reply is None or not idle:
            raw = await asyncio.wait_for(conn.read_message(), max(1.0, deadline - time.monotonic()))
            if raw is None:
                raise RuntimeError(f"{self.name}'s kernel connection closed")
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, body = msg["msg_type"], msg["content"]
            if kind == "status" and body.get("execution_state") == "idle":
                idle = True
            elif kind.endswith("_reply"):
                reply = body
            elif kind == "stream":
                outputs.append(
                    {"output_type": "stream", "name": body["name"], "text": body["text"]}
                )
            elif kind in ("display_data", "execute_result"):
                out = {
                    "output_type": kind,
                    "data": body["data"],
                    "metadata": body.get("metadata", {}),
                }
                if kind == "execute_result":
                    out["execution_count"] = body["execution_count"]
                outputs.append(out)
            elif kind == "error":
                outputs.append(
                    {
                        "output_type": "error",
                        "ename": body["ename"],
                        "evalue": body["evalue"],
                        "traceback": body["traceback"],
                    }
                )
        return reply.get("status"), outputs, reply.get("execution_count")
