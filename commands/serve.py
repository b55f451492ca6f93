"""`trajectoriz serve`: a read-only web view of the sessions, on this machine only.

The catalog as `list` sees it (this project's sessions, `--all` for every project), with filters
(agent, dates, outcome, branch, who shared it) and search (`search`'s matching: titles and
requests, or `--content` inside every step), each session's page (rendering/page.py), INDEX.md's
table, and `blame` of a file with links to the steps that wrote it.

It is a door into every session the user has, so it opens for the user alone: it listens on
127.0.0.1 only, every request must carry the random token of the URL it printed (a page of
another site cannot guess it), and its Host header must name this server (a site whose name
resolves to 127.0.0.1, DNS rebinding, is refused). It answers GET and HEAD; any other method is
405: nothing a request says is ever written. Every page carries the Content-Security-Policy of
rendering/page.py (no script or style but its own) as a header, with `frame-ancestors 'none'`,
and no Referer leaves it (the token is in its URLs).
"""

from __future__ import annotations

import argparse
import hmac
import http.server
import os
import secrets
import threading
import urllib.parse

from commands import basics
from core.errors import UserError
from discovery import catalog
from rendering import page
from rendering.page import esc

CONTENT_HITS = 200   # a content search shows the first hits only, as `search --limit`
ROWS = 1000          # a listing's rows on one page
OUTCOMES = ("completed", "interrupted", "API or auth error", "no answer", "unreadable")
METHODS = ("GET", "HEAD")


def run_serve(args, env) -> int:
    token = secrets.token_urlsafe(24)
    try:
        server = Server(("127.0.0.1", args.port), Handler)
    except OSError as exc:
        raise UserError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
    port = server.server_address[1]
    server.view = View(args, env, token, port)
    where = "every project" if args.all else catalog.chosen_project(args)
    print(f"Serving the sessions of {where}, read-only, at http://127.0.0.1:{port}/?token={token}\n"
          f"(this machine only; the token opens it: do not share the URL; Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    view: "View"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server

    def version_string(self) -> str:
        return "trajectoriz"

    def do_GET(self):
        self._answer(body=True)

    def do_HEAD(self):
        self._answer(body=False)

    def __getattr__(self, name: str):
        """Every other method (POST, PUT, DELETE, PATCH, OPTIONS, ...): 405, nothing read."""
        if name.startswith("do_"):
            return lambda: self._send(405, "text/plain; charset=utf-8",
                                      b"405: trajectoriz serve only reads (GET, HEAD)\n", True,
                                      {"Allow": ", ".join(METHODS)})
        raise AttributeError(name)

    def log_message(self, format, *args):  # the URLs hold the token: not printed
        pass

    def _answer(self, body: bool) -> None:
        view = self.server.view
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        refusal = view.refusal(self.headers.get_all("Host") or [], query.get("token") or [])
        if refusal:
            self._send(403, "text/plain; charset=utf-8", refusal.encode(), body)
            return
        try:
            status, data = view.route(url.path, {k: v[-1] for k, v in query.items()})
        except UserError as exc:
            status, data = 400, view.shell("Error", f"<p class=bad>{esc(exc)}</p>")
        except Exception as exc:  # one line, as every command says its failures; the server goes on
            status, data = 500, view.shell("Error", f"<p class=bad>internal error: {esc(type(exc).__name__)}: {esc(exc)}</p>")
        self._send(status, "text/html; charset=utf-8", data, body)

    def _send(self, status: int, kind: str, data: bytes, body: bool, extra: dict | None = None) -> None:
        self.send_response(status)
        headers = {"Content-Type": kind, "Content-Length": str(len(data)),
                   "Content-Security-Policy": page.policy() + "; frame-ancestors 'none'",
                   "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                   "X-Frame-Options": "DENY", "Cache-Control": "no-store",
                   "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Resource-Policy": "same-origin",
                   **(extra or {})}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)


class View:
    """The pages, made from the catalog at each request (so new sessions appear), one request
    at a time (discovery and rendering use every core already)."""

    def __init__(self, args, env, token: str, port: int):
        self.env = env
        self.scope = argparse.Namespace(all=args.all, dir=args.dir, agent=None)
        self.token = token
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.lock = threading.Lock()

    def refusal(self, hosts: list, tokens: list) -> str | None:
        """Why a request is refused (its Host is not this server's, its token is missing or
        wrong), or None."""
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            return "403: this server answers only to http://127.0.0.1 and localhost at its own port\n"
        if len(tokens) != 1 or not hmac.compare_digest(tokens[0].encode(), self.token.encode()):
            return "403: a token is needed: open the URL trajectoriz serve printed\n"
        return None

    def link(self, path: str, **params) -> str:
        """A URL of this server, with the token (escaped for an attribute)."""
        query = urllib.parse.urlencode({**{k: v for k, v in params.items() if v not in (None, "")},
                                        "token": self.token})
        return esc(f"{urllib.parse.quote(path)}?{query}")

    def route(self, path: str, query: dict) -> tuple[int, bytes]:
        with self.lock:
            if path == "/":
                return 200, self.sessions(query)
            if path.startswith("/session/"):
                return self.session(path[len("/session/"):])
            if path == "/index":
                return 200, self.index()
            if path == "/blame":
                return 200, self.blame(query)
        return 404, self.shell("Not found", "<p>No such page.</p>")

    # pages --------------------------------------------------------------------------------------
    def nav(self, query: dict | None = None) -> str:
        query = query or {}
        return (f'<nav><a href="{self.link("/")}">Sessions</a><a href="{self.link("/index")}">Index</a>'
                f'<a href="{self.link("/blame")}">Blame</a>'
                f'<form method="get" action="/" role="search">{self.hidden_token()}'
                f'<input name="q" placeholder="search" value="{esc(query.get("q", ""))}" aria-label="search">'
                f'<label><input type="checkbox" name="content" value="1"{" checked" if query.get("content") else ""}>'
                f' content</label><button>Search</button></form></nav>')

    def hidden_token(self) -> str:
        return f'<input type="hidden" name="token" value="{esc(self.token)}">'

    def shell(self, title: str, body: str, query: dict | None = None) -> bytes:
        return page.shell(f"{title} — trajectoriz", self.nav(query) + body, wide=True)

    def selected(self) -> tuple:
        found, sessions, project = basics.selected(self.scope, self.env)
        return found, sessions, project

    def session(self, short_id: str) -> tuple[int, bytes]:
        from rendering import documents

        _, sessions, _ = self.selected()
        session = next((s for s in sessions if s.short_id == short_id), None)
        if session is None:
            return 404, self.shell("Not found", f"<p>No session {esc(short_id)} here.</p>")
        return 200, page.render(documents.translate(session, self.env), self.nav())

    def sessions(self, query: dict) -> bytes:
        from rendering import documents

        found, sessions, project = self.selected()
        agents_here = sorted({s.agent for s in sessions})
        sharers = sorted({catalog.origin(s).contributor or "" for s in sessions} - {""})
        sessions = filtered(sessions, query, self.env)
        facts = dict(zip(map(id, sessions), basics.known_facts(found, sessions, self.env, False)))
        if query.get("outcome"):
            sessions = [s for s in sessions if (facts[id(s)] or {}).get("outcome", "").startswith(query["outcome"])]
        if query.get("branch"):
            sessions = [s for s in sessions if query["branch"] in
                        page.branches(documents.translate(s, self.env))]
        form = self.filters(query, agents_here, sharers)
        heading = f"Sessions of {esc(project or 'every project')}"
        if query.get("q") and query.get("content"):
            return self.shell(heading, f"<h1>{heading}</h1>{form}{self.content_hits(sessions, query['q'])}", query)
        if query.get("q"):
            from commands import search

            words = search.Query(query["q"])
            latest = documents.Facts(self.env)
            sessions = [s for s in sessions if words.matches(search.listed_text(s, latest.latest(s)))]
        rows = [self.row(s, facts[id(s)], project, bool(sharers)) for s in sessions[:ROWS]]
        more = f"<p class=note>{len(sessions) - ROWS} more: narrow the filters.</p>" if len(sessions) > ROWS else ""
        headers = ["ID", "Date", "Agent", "Steps", *(["Project"] if project is None else []), "Title", "Outcome",
                   *(["Shared by"] if sharers else [])]
        table = (f'<table id="sessions"><thead><tr>{"".join(f"<th>{h}</th>" for h in headers)}</tr></thead>'
                 f'<tbody>{"".join(rows)}</tbody></table>')
        count = f'<p class=note id="count">{len(sessions)} session(s)</p>'
        return self.shell(heading, f"<h1>{heading}</h1>{form}{count}{table}{more}", query)

    def filters(self, query: dict, agents_here: list, sharers: list) -> str:
        def select(name: str, options: list, label: str) -> str:
            shown = "".join(f'<option value="{esc(o)}"{" selected" if query.get(name) == o else ""}>{esc(o or label)}</option>'
                            for o in ["", *options])
            return f'<select name="{name}" aria-label="{label}">{shown}</select>'
        sharer = select("shared_by", ["me", *sharers], "shared by anyone") if sharers else ""
        return (f'<form class="filters" method="get" action="/">{self.hidden_token()}'
                f'<input name="q" placeholder="title, request, id" value="{esc(query.get("q", ""))}">'
                f'<label><input type="checkbox" name="content" value="1"{" checked" if query.get("content") else ""}> content</label>'
                f'{select("agent", agents_here, "every agent")}{select("outcome", list(OUTCOMES), "any outcome")}'
                f'<input name="branch" placeholder="branch" value="{esc(query.get("branch", ""))}">'
                f'<label>since <input type="date" name="since" value="{esc(query.get("since", ""))}"></label>'
                f'<label>until <input type="date" name="until" value="{esc(query.get("until", ""))}"></label>'
                f'{sharer}<button>Filter</button></form>')

    def row(self, session, facts: dict | None, project, sharers: bool) -> str:
        facts = facts or {}
        cells = [f'<a href="{self.link("/session/" + session.short_id)}"><code>{esc(session.short_id)}</code></a>',
                 esc(catalog.local_date(session)), esc(session.agent),
                 esc(facts["steps"]) if facts.get("steps") is not None else "",
                 *([esc(basics.project_cell(session, self.env))] if project is None else []),
                 esc(catalog.title(session, facts or None)), esc(facts.get("outcome") or ""),
                 *([esc(catalog.origin(session).contributor or "")] if sharers else [])]
        wrapped = {len(cells) - 2 - bool(sharers), *([4] if project is None else [])}  # title, project
        return "<tr>" + "".join(f'<td class="wrap">{c}</td>' if i in wrapped else f"<td>{c}</td>"
                                for i, c in enumerate(cells)) + "</tr>"

    def content_hits(self, sessions: list, text: str) -> str:
        from commands import search
        from core import parallel
        from rendering import documents

        query = search.Query(text)
        shown = parallel.Shared()
        rows, total = [], 0
        work = search.kept_then_pooled(sessions, self.env, query, CONTENT_HITS, True, shown)
        try:
            for session, (count, _, hits, _) in zip(sessions, work):
                if hits is None and count and total < CONTENT_HITS:
                    hits = search.hits_of(documents.document(session, self.env)[0], query)
                for step, path, _, snippet, *_ in (hits or ())[: max(0, CONTENT_HITS - total)]:
                    where = page.anchor(step, path)
                    rows.append(f'<tr><td><a href="{self.link("/session/" + session.short_id)}#{esc(where)}">'
                                f'<code>{esc(session.short_id)}</code> step {esc(f"{path}:{step}" if path else step)}</a></td>'
                                f'<td>{esc(session.agent)}</td><td>{esc(catalog.local_date(session))}</td>'
                                f'<td class="wrap">{esc(snippet)}</td></tr>')
                total += count
                shown.value = total
        finally:
            work.close()
        more = f"<p class=note>The first {CONTENT_HITS} are shown.</p>" if total > CONTENT_HITS else ""
        return (f'<p class=note id="count">{total} hit(s) inside {len(sessions)} session(s)</p>'
                f'<table id="hits"><thead><tr><th>Step</th><th>Agent</th><th>Date</th><th>Snippet</th></tr></thead>'
                f'<tbody>{"".join(rows)}</tbody></table>{more}')

    def index(self) -> bytes:
        from mount import memoryindex

        found, sessions, project = self.selected()
        known = basics.known_facts(found, sessions, self.env, False)
        headers = memoryindex.HEADERS + ["Directory"]
        rows = []
        for session, f in zip(sessions, known):
            cells = memoryindex.row(session, f, project or "")
            cells[0] = f'<a href="{self.link("/session/" + session.short_id)}">{esc(cells[0].strip("`"))}</a>'
            rows.append("<tr>" + "".join(f'<td class="wrap">{c if i == 0 else esc(c.replace(chr(92) + "|", "|"))}</td>'
                                         if i in (0, 4, 7, 8) else f"<td>{esc(c)}</td>" for i, c in enumerate(cells)) + "</tr>")
        table = (f'<table id="index"><thead><tr>{"".join(f"<th>{esc(h)}</th>" for h in headers)}</tr></thead>'
                 f'<tbody>{"".join(rows)}</tbody></table>')
        return self.shell("Index", f"<h1>INDEX.md of {esc(project or 'every project')}</h1>"
                                   f"<p class=note>The table memory/INDEX.md holds: steps, outcome, commits and "
                                   f"files are blank for sessions not rendered since they changed.</p>{table}")

    def blame(self, query: dict) -> bytes:
        from commands import blame

        form = (f'<form class="filters" method="get" action="/blame">{self.hidden_token()}'
                f'<input name="file" size="50" placeholder="path/to/file (from the project root)" value="{esc(query.get("file", ""))}">'
                f'<input name="line" size="6" placeholder="line" value="{esc(query.get("line", ""))}"><button>Blame</button></form>')
        if not query.get("file"):
            return self.shell("Blame", f"<h1>Blame</h1>{form}")
        _, sessions, project = self.selected()
        line = int(query["line"]) if query.get("line", "").isdigit() else None
        name = query["file"] if os.path.isabs(query["file"]) else os.path.join(project or os.getcwd(), query["file"])
        shown, paths, line = blame.target(name, line)
        content = blame.line_content(paths[0], line) if line is not None else None
        writes = [w for s in blame.writers(sessions, paths, self.env) for w in blame.session_writes(s, paths, self.env)]
        writes.sort(key=lambda w: (w["started"], w["step"]))
        if content is not None:
            writes = [w for w in reversed(writes) if blame.wrote_line(w, content)]
        what = f"line {line} of {query['file']}" if line is not None else query["file"]
        if not writes:
            said = (f"No session found wrote {esc(what)}: a person wrote it, or a tool trajectoriz does not see."
                    if content is not None else f"No session found wrote or edited {esc(what)}.")
            return self.shell("Blame", f"<h1>Blame</h1>{form}<p id=count>{said}</p>")
        items = []
        for w in writes:
            target = f'{self.link("/session/" + w["id"])}#{esc(page.anchor(w["step"]))}'
            by = f", shared by {esc(w['shared_by'])}" if w["shared_by"] else ""
            items.append(f'<li><a href="{target}">{esc(w["date"])} {esc(w["agent"])} <code>{esc(w["id"])}</code> '
                         f'step {esc(w["step"])}</a> ({esc(w["tool"])}{by})<div>Request: {esc(w["request"] or "(none recorded)")}</div>'
                         f'<pre>{esc(w["diff"])}</pre></li>')
        order = "most recent first" if content is not None else "oldest first"
        return self.shell("Blame", f"<h1>Blame</h1>{form}<p id=count>{len(writes)} change(s) to {esc(what)}, {order}</p>"
                                   f'<ol id="changes">{"".join(items)}</ol>')


def filtered(sessions: list, query: dict, env) -> list:
    """The sessions the listing's filters keep: agent, dates (as `search --since/--until`), who
    shared it (`me`: this machine's own)."""
    from core.timespec import when

    if query.get("agent"):
        sessions = [s for s in sessions if s.agent == query["agent"]]
    since = when(query.get("since") or None, "since")
    until = when(query.get("until") or None, "until", end=True)
    if since is not None or until is not None:
        sessions = [s for s in sessions if s.started is not None
                    and (since is None or s.started >= since) and (until is None or s.started <= until)]
    sharer = query.get("shared_by")
    if sharer:
        sessions = [s for s in sessions if (catalog.origin(s).contributor or "me") == sharer]
    return sessions

