"""The review page: the teacher grades written answers question by question, in a browser
(`python -m course_lib review GRADEBOOK`; teacher).

A web server on 127.0.0.1 only, no account: its address holds a random token that every
request must carry, so neither another local user nor another web page can read or change the
reviews. Each answer is shown as text (the page builds it with textContent, never as markup);
each review is saved as it is given (review.save), and a review the file cannot take (points
above the maximum, say) is answered with the reason and changes nothing. Beside each question
stands what its chapter declares (written.py): the question, the points a good answer makes,
where the chapter teaches them, and the maximum; a question no chapter declares shows what the
student's notebook asked, and the teacher sets its maximum.
"""

import json
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from ..i18n import tr
from ..i18n.catalogue import in_language
from . import report, review, written

LABELS = (
    "Written answers",
    "Question",
    "Student",
    "Answer",
    "Points",
    "Max",
    "Comment",
    "Save",
    "saved",
    "answer changed since it was reviewed: review again",
    written.NOT_REVIEWED,
    "What a good answer says",
)

PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}
.answer{{white-space:pre-wrap;background:#f6f6f6;padding:.5em;border-radius:4px}}
.row{{border-top:1px solid #ddd;padding:.6em 0}}.status{{color:#555;margin-left:.5em}}
.error{{color:#b00}}.prompt,.asked{{white-space:pre-wrap;margin:.3em 0 .8em}}
.expects{{background:#eef5ee;padding:.4em 1.6em;border-radius:4px}}.where{{color:#555}}
input[type=number]{{width:5em}}input[type=text]{{width:30em}}</style>
</head><body><h1>{title}</h1><div id="main"></div>
<script>
const TOKEN = {token};
async function call(path, body) {{
  const r = await fetch(path, {{method: body ? "POST" : "GET",
    headers: {{"X-Review-Token": TOKEN, "Content-Type": "application/json"}},
    body: body ? JSON.stringify(body) : undefined}});
  return [r.ok, await r.json()];
}}
function el(tag, props, ...kids) {{
  const e = document.createElement(tag);
  Object.assign(e, props || {{}});
  kids.forEach(k => e.append(k));
  return e;
}}
async function show() {{
  const [ok, data] = await call("/api/answers");
  const main = document.getElementById("main");
  main.replaceChildren();
  const L = data.labels;
  for (const q of data.questions) {{
    const box = el("section", {{className: "question"}});
    box.dataset.question = q.question;
    box.append(el("h2", {{textContent: L["Question"] + ": " + q.question}}));
    const d = q.declared;
    if (d) {{
      box.append(el("h3", {{className: "title", textContent: d.title}}));
      box.append(el("div", {{className: "asked", textContent: d.question}}));
      const points = el("ul", {{className: "expects"}});
      d.expects.forEach(p => points.append(el("li", {{textContent: p}})));
      box.append(el("b", {{textContent: L["What a good answer says"]}}), points,
        el("div", {{className: "where", textContent: d.where}}));
    }} else {{
      box.append(el("div", {{className: "prompt", textContent: q.prompt}}));
    }}
    for (const a of q.answers) {{
      const points = el("input", {{type: "number", min: 0, step: "any", value: a.points ?? "",
        className: "points"}});
      const top = el("input", {{type: "number", min: 0, step: "any",
        value: d ? d.max_points : (a.max_points ?? 1), className: "max", readOnly: !!d}});
      const comment = el("input", {{type: "text", value: a.comment ?? "", className: "comment"}});
      const status = el("span", {{className: "status", textContent: a.status}});
      const save = el("button", {{textContent: L["Save"], className: "save"}});
      save.onclick = async () => {{
        const [ok, r] = await call("/api/review", {{submission: a.submission,
          question: q.question, points: points.value, max_points: top.value,
          comment: comment.value}});
        status.textContent = ok ? L["saved"] : r.error;
        status.className = ok ? "status" : "status error";
      }};
      const row = el("div", {{className: "row"}},
        el("b", {{textContent: a.submission}}),
        el("div", {{className: "answer", textContent: a.text}}),
        L["Points"] + " ", points, " / " + L["Max"] + " ", top, " " + L["Comment"] + " ",
        comment, " ", save, status);
      row.dataset.submission = a.submission;
      box.append(row);
    }}
    main.append(box);
  }}
}}
show();
</script></body></html>
"""


def answers_json(book, lang: str) -> dict:
    """Every written answer by question, with its review so far, and the page's labels."""
    records = report.load(book)
    answers = review.written_answers(records)
    reviews = review.read(review.review_path(book), answers, written.maxima(records))
    with in_language(lang):
        labels = {k: tr(k) for k in LABELS}
    questions, asked, declared = {}, {}, {}
    by_name = {r["submission"]: r for r in records}
    for (name, question), text in sorted(answers.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if question not in declared:
            found = written.declared(by_name[name], question)
            declared[question] = written.expectation(found, lang) if found else None
        if declared[question] is None:
            asked[question] = asked.get(question) or written.question_text(by_name[name], question)
        done = reviews.get((name, question))
        changed = done is not None and done["answer_sha256"] != review.digest(text)
        status = (
            labels[written.NOT_REVIEWED]
            if done is None
            else labels["answer changed since it was reviewed: review again"]
            if changed
            else labels["saved"]
        )
        entry = {"submission": name, "text": text, "status": status}
        if done is not None:
            entry.update(points=done["points"], max_points=done["max_points"])
            entry["comment"] = done["comment"]
        questions.setdefault(question, []).append(entry)
    return {
        "labels": labels,
        "questions": [
            {"question": q, "prompt": asked.get(q, ""), "declared": declared[q], "answers": a}
            for q, a in questions.items()
        ],
    }


class Handler(BaseHTTPRequestHandler):
    """GET / (the page), GET /api/answers, POST /api/review; each needs the server's token."""

    server_version = "course-review"

    def log_message(self, *args) -> None:  # the teacher's terminal stays quiet
        pass

    def _send(self, status, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self' 'unsafe-inline'")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status, data) -> None:
        self._send(status, json.dumps(data).encode(), "application/json; charset=utf-8")

    def _allowed(self, url) -> bool:
        given = self.headers.get("X-Review-Token") or parse_qs(url.query).get("token", [""])[0]
        return secrets.compare_digest(given, self.server.token)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if not self._allowed(url):
            return self._json(HTTPStatus.FORBIDDEN, {"error": "wrong or missing token"})
        if url.path == "/":
            with in_language(self.server.lang):
                title = tr("Written answers")
            page = PAGE.format(
                lang=self.server.lang, title=title, token=json.dumps(self.server.token)
            )
            return self._send(HTTPStatus.OK, page.encode(), "text/html; charset=utf-8")
        if url.path == "/api/answers":
            return self._json(HTTPStatus.OK, answers_json(self.server.book, self.server.lang))
        self._json(HTTPStatus.NOT_FOUND, {"error": "no such page"})

    def do_POST(self) -> None:
        url = urlparse(self.path)
        if not self._allowed(url):
            return self._json(HTTPStatus.FORBIDDEN, {"error": "wrong or missing token"})
        if url.path != "/api/review":
            return self._json(HTTPStatus.NOT_FOUND, {"error": "no such page"})
        try:
            length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
            body = json.loads(self.rfile.read(length) or b"{}")
            with self.server.lock:
                saved = review.save(
                    self.server.book,
                    body.get("submission"),
                    body.get("question"),
                    body.get("points"),
                    body.get("max_points"),
                    body.get("comment", ""),
                )
        except (review.ReviewError, ValueError, AttributeError) as err:
            with in_language(self.server.lang):
                return self._json(HTTPStatus.BAD_REQUEST, {"error": tr(str(err))})
        self._json(HTTPStatus.OK, saved)


def serve(book, port: int = 0, lang: str = "en") -> ThreadingHTTPServer:
    """The review server of `book` on 127.0.0.1 (port 0: any free one), not yet serving."""
    records = report.load(book)  # a gradebook without records is refused before any server starts
    review.read(review.review_path(book), review.written_answers(records), written.maxima(records))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.book, server.lang, server.lock = book, lang, threading.Lock()
    server.token = secrets.token_urlsafe(24)
    return server


def url_of(server) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/?token={server.token}"
