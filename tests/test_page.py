"""`show ID --html` and `serve`, read as HTML (test_page_browser.py looks at them in Chromium):
every agent's sessions make a page with every step's anchor and every tool call folded; what a
session holds is escaped and redacted; the long texts wait as inert data; the server answers
only its own Host with its token, only reads, and sends its policy; pulled sessions too.
"""

from __future__ import annotations

import argparse
import html.parser
import http.client
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import homes
import test_sharing
from helpers import ROOT, SAMPLES, base_env, live_claude_in, needs, run_main
from commands import serve
from rendering import page
from test_sharing import team  # noqa: F401  (a fixture: a bare remote, Alice's sessions, Bob's clone)

PLANT = "<img src=x onerror=document.title='pwned'><script>document.title='pwned'</script>"
LONG = "long output line that waits until it is opened\n" * 80  # over page.INLINE_CHARS
SECRET = "ghp_N1fHW93RYY7TKuHmvguTEKhCpqHKCn8TSCpq"
REFUSED = "The user doesn't want to proceed with this tool use. The tool use was rejected."
SHOWCASE = os.path.join(SAMPLES, "claude", "claude-code-log", "minimal_showcase")


# a home with planted content -----------------------------------------------------------------------
def _rewrite(path: str, change) -> None:
    """Each JSON line of a transcript through `change(record)`."""
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            change(record)
            handle.write(json.dumps(record) + "\n")


def planted_home(root) -> tuple[dict, str]:
    """The live Claude store in a home of its own, its sessions in `root/projects`: in one,
    markup that would run in a page and a secret in the request, a long output holding the
    same markup, a failed call; in another, a refused call. And Claude Code's sub-agent showcase
    in the same project. The env, and the project."""
    env = base_env(root)
    projects = str(root / "projects")
    live_claude_in(env, projects)
    project = f"{projects}/proj-claude"
    os.makedirs(project, exist_ok=True)
    folder = os.path.join(env["HOME"], ".claude", "projects", "-tmp-agents-proj-claude")

    def planted(record):
        message = record.get("message") or {}
        if record.get("type") == "user" and isinstance(message.get("content"), str):
            message["content"] = f"{PLANT} look, a secret {SECRET} and " + message["content"]
        for part in message.get("content") if isinstance(message.get("content"), list) else ():
            if part.get("type") == "tool_result" and part.get("content") == "README.md\nnote.txt":
                part["content"] = PLANT + "\n" + LONG
                part["is_error"] = True

    def refused(record):
        for part in (record.get("message") or {}).get("content") if isinstance(
                (record.get("message") or {}).get("content"), list) else ():
            if part.get("type") == "tool_result" and part.get("content") == "README.md\nnote.txt":
                part["content"] = REFUSED
    _rewrite(os.path.join(folder, "348a3463-5332-480a-8329-09f4fe2cc499.jsonl"), planted)
    _rewrite(os.path.join(folder, "ab3fbeec-4afd-4ceb-bb88-ea8164efb94e.jsonl"), refused)
    shutil.copytree(SHOWCASE, folder, dirs_exist_ok=True)  # recorded elsewhere: seen with --all
    return env, project


def listed(env, *args) -> dict:
    result = run_main(env, ["list", "--json", *args])
    assert result.returncode == 0, result.stderr
    return {r["id"]: r for r in map(json.loads, result.stdout.splitlines())}


def show_html(env, short_id: str) -> str:
    result = run_main(env, ["show", short_id, "--html"])
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


class Parsed(html.parser.HTMLParser):
    """What a page holds, as a browser's parser sees it: ids, elements by tag and class, scripts."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids, self.tags, self.scripts, self.classes = [], [], [], []
        self._script = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        self.classes.append((tag, attrs.get("class") or ""))
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "script":
            self._script = [attrs.get("type"), ""]

    def handle_data(self, data):
        if self._script is not None:
            self._script[1] += data

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append(tuple(self._script))
            self._script = None


def anchors_of(doc: dict, path: str = "") -> list[str]:
    found = [page.anchor(step["step_id"], path) for step in doc["steps"]]
    for i, sub in enumerate(doc.get("subagent_trajectories") or (), 1):
        found += anchors_of(sub, f"{path}.{i}" if path else str(i))
    return found


def calls_of(doc: dict) -> int:
    return sum(len(s.get("tool_calls") or ()) for s in doc["steps"]) + \
        sum(calls_of(sub) for sub in doc.get("subagent_trajectories") or ())


def assert_page_of(text: str, doc: dict) -> Parsed:
    """The page of `doc`: the policy as a <meta>, one script of ours and at most one inert data
    block, every step's anchor once, every tool call folded into a <details>."""
    parsed = Parsed(text)
    assert text.startswith("<!DOCTYPE html>")
    assert f'content="{page.esc(page.policy())}"' in text and "default-src 'none'" in page.policy()
    assert [s for s in parsed.scripts if s[0] is None] == [(None, page.SCRIPT)]
    assert all(kind == "application/json" for kind, _ in parsed.scripts if kind is not None)
    wanted = anchors_of(doc)
    shown = [i for i in parsed.ids if i.startswith("step-")]
    assert sorted(shown) == sorted(wanted) and len(set(shown)) == len(shown)  # each once
    assert [i for i in shown if i.count("-") == 1] == [i for i in wanted if i.count("-") == 1]  # in order
    folded = sum(1 for tag, cls in parsed.classes if tag == "details" and cls.split()[:1] == ["call"])
    assert folded >= calls_of(doc)
    return parsed


# show --html ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("home", homes.agent_homes(), ids=lambda h: h.agent)
def test_every_agents_sessions_make_a_page_with_every_step_and_call(home, tmp_path):
    env = home.build(tmp_path)
    sessions = listed(env, "--all")
    assert sessions, home.agent
    view = serve.View(argparse.Namespace(all=True, dir=None), env, "token", 1)  # serve's pages, in this process
    status, listing = view.route("/", {})
    assert status == 200 and f">{len(sessions)} session(s)<".encode() in listing
    assert view.route("/index", {})[0] == 200
    for short_id in sessions:
        doc = json.loads(run_main(env, ["show", short_id]).stdout)
        text = show_html(env, short_id)
        assert_page_of(text, doc)
        status, served = view.route(f"/session/{short_id}", {})
        assert status == 200 and served == page.render(doc, view.nav())
        for step in doc["steps"][:50]:  # what each step says is on the page, as text
            message = step.get("message")
            if isinstance(message, str) and message.strip() and len(message) <= page.INLINE_CHARS:
                assert page.esc(message) in text, (short_id, step["step_id"])


def test_planted_markup_is_text_the_secret_is_redacted_and_long_outputs_wait_as_data(tmp_path):
    env, _ = planted_home(tmp_path)
    (short_id,) = [i for i, r in listed(env, "--all").items() if "348a3463" in r["native_id"]]
    doc = json.loads(run_main(env, ["show", short_id]).stdout)
    text = show_html(env, short_id)
    parsed = assert_page_of(text, doc)
    assert page.esc(PLANT) in text and "<img" not in text and "<script>document" not in text
    assert "img" not in parsed.tags
    assert SECRET not in text and "«REDACTED:" in text
    (data,) = [body for kind, body in parsed.scripts if kind == "application/json"]
    assert LONG[:60] not in text.replace(data, "")  # not in the page's text until opened
    assert PLANT + "\n" + LONG in json.loads(data)  # kept whole, as data
    assert "<" not in data and "</script" not in data.lower()
    assert re.search(r'<details class="call bad"><summary>.*?✗ failed', text)  # the failed call is marked
    (refused,) = [i for i, r in listed(env, "--all").items() if "ab3fbeec" in r["native_id"]]
    assert re.search(r'<details class="call refused"><summary>.*?⊘ refused', show_html(env, refused))


def test_sub_agents_are_nested_at_the_call_that_spawned_them_with_their_own_anchors(tmp_path):
    env, _ = planted_home(tmp_path)
    (short_id,) = [i for i, r in listed(env, "--all").items() if r["native_id"].startswith("55550000")]
    doc = json.loads(run_main(env, ["show", short_id]).stdout)
    assert doc["subagent_trajectories"]
    text = show_html(env, short_id)
    assert_page_of(text, doc)
    nested = text.index('<details class="subagent" id="sub-1">')
    spawner = text.rindex('<details class="call', 0, nested)
    assert "Task" in text[spawner:nested] or "Agent" in text[spawner:nested]
    assert 'id="step-1-1"' in text[nested:]
    assert "Sub-agents not linked from a step" not in text or len(doc["subagent_trajectories"]) > 1


def test_out_writes_a_private_file_and_refuses_what_does_not_go_with_it(tmp_path):
    env, _ = planted_home(tmp_path)
    short_id = next(iter(listed(env, "--all")))
    out = tmp_path / "pages" / "one.html"
    result = run_main(env, ["show", short_id, "--html", "--out", str(out)])
    assert result.returncode == 0, result.stderr
    assert b"read it before you share it" in result.stderr
    assert out.read_bytes() == run_main(env, ["show", short_id, "--html"]).stdout
    assert os.stat(out).st_mode & 0o777 == 0o600
    for extra in (["--markdown"], ["--step", "1"], ["--subagent", "1"]):
        refused = run_main(env, ["show", short_id, "--html", *extra])
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert run_main(env, ["show", short_id, "--out", str(out)]).returncode == 2


# serve ---------------------------------------------------------------------------------------------
class Served:
    """`trajectoriz serve` running in its own process; its URL, port and token."""

    def __init__(self, env, *args, cwd=None):
        self.process = subprocess.Popen([sys.executable, os.path.join(ROOT, "trajectoriz.py"), "serve", *args],
                                        env=env, cwd=cwd or env["HOME"], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        line = self.process.stdout.readline().decode()
        found = re.search(r"(http://127\.0\.0\.1:(\d+)/)\?token=(\S+)", line)
        assert found, line + self.process.stderr.read().decode()
        self.base, self.port, self.token = found.group(1), int(found.group(2)), found.group(3)
        self.url = f"{self.base}?token={self.token}"

    def get(self, path: str, method: str = "GET", host: str | None = None, token: bool = True):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sep = "&" if "?" in path else "?"
        connection.putrequest(method, path + (f"{sep}token={self.token}" if token else ""), skip_host=True)
        connection.putheader("Host", host or f"127.0.0.1:{self.port}")
        connection.endheaders()
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
        return answer.status, dict(answer.getheaders()), body

    def stop(self):
        self.process.terminate()
        self.process.wait(10)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    env, project = planted_home(root)
    server = Served(env, "--all")
    yield server, env
    server.stop()


def test_serve_refuses_a_missing_or_wrong_token_and_a_host_not_its_own(served):
    server, _ = served
    for path, token, host, wanted in (("/", True, None, 200), (f"/?token={server.token}", False, None, 200),
                                      ("/localhost", True, f"localhost:{server.port}", 404)):  # its own names
        status, _, body = server.get(path, host=host, token=token)
        assert status == wanted, (path, host, status, body[:300])
    for path, token, host in (("/", False, None), (f"/?token={server.token[:-1]}x", False, None),
                              (f"/?token={server.token}&token=other", False, None),
                              ("/", True, f"evil.example:{server.port}"), ("/", True, "127.0.0.1"),
                              ("/", True, f"127.0.0.1:{server.port + 1}"), ("/session/x", False, None)):
        status, headers, body = server.get(path, host=host, token=token)
        assert status == 403, (path, host, status, body[:300])
        assert server.token.encode() not in body and b"<tr" not in body
        assert headers["Content-Type"].startswith("text/plain")


def test_serve_listens_on_the_loopback_address_alone(served):
    server, _ = served
    listening = []
    with open("/proc/net/tcp") as handle:  # local address (hex, little-endian IPv4) and port, state 0A: LISTEN
        for line in handle.readlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.split(":")[1], 16) == server.port:
                listening.append(local.split(":")[0])
    assert listening == ["0100007F"]  # 127.0.0.1
    with open("/proc/net/tcp6") as handle:
        assert not [line for line in handle.readlines()[1:]
                    if line.split()[3] == "0A" and int(line.split()[1].split(":")[1], 16) == server.port]


def test_the_branch_filter_reads_the_branch_the_agent_recorded(tmp_path):
    env = homes.by_agent("qwen").build(tmp_path)
    server = Served(env, "--all")
    try:
        everything = len(listed(env, "--all"))
        assert f">{everything} session(s)<" in server.get("/?branch=master")[2].decode()
        assert ">0 session(s)<" in server.get("/?branch=main")[2].decode()
    finally:
        server.stop()


def test_serve_only_reads(served):
    server, _ = served
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        status, headers, _ = server.get("/", method=method)
        assert status == 405 and headers["Allow"] == "GET, HEAD", method
    status, headers, body = server.get("/", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0


def test_serve_sends_its_policy_and_no_referrer(served):
    server, _ = served
    status, headers, body = server.get("/")
    assert headers["Content-Security-Policy"] == page.policy() + "; frame-ancestors 'none'"
    assert "unsafe-inline" not in headers["Content-Security-Policy"]
    assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Content-Type-Options"] == "nosniff"


def test_served_pages_list_filter_search_show_index_and_blame(served):
    server, env = served
    sessions = listed(env, "--all")
    _, _, body = server.get("/")
    text = body.decode()
    assert f">{len(sessions)} session(s)<" in text
    for short_id in sessions:
        assert f'/session/{short_id}?token={server.token}' in text
    planted = next(i for i, r in sessions.items() if "348a3463" in r["native_id"])
    assert "<img" not in text and "<script>document" not in text
    status, _, body = server.get(f"/session/{planted}")
    assert status == 200
    doc = json.loads(run_main(env, ["show", planted]).stdout)
    assert_page_of(body.decode(), doc)
    assert f"trajectoriz resume {planted}" in body.decode() and f"trajectoriz handoff {planted} --to AGENT" in body.decode()
    assert server.get("/session/cl-00000000")[0] == 404

    _, _, body = server.get("/?agent=codex")
    assert ">0 session(s)<" in body.decode()
    _, _, body = server.get("/?q=hello-claude-3")  # the default search: titles and requests
    assert ">1 session(s)<" in body.decode()
    _, _, body = server.get("/?q=hello-claude-2&content=1")  # inside the steps, with links to them
    hits = re.findall(rf'/session/{planted}\?token={server.token}#step-(\d+)', body.decode())
    expected = run_main(env, ["search", "--content", "hello-claude-2", "--json", "--limit", "0"])
    assert sorted(map(int, hits)) == sorted(json.loads(line)["step"] for line in expected.stdout.splitlines()
                                            if json.loads(line)["id"] == planted)
    _, _, body = server.get("/?outcome=completed")
    assert re.search(r">(\d+) session\(s\)<", body.decode())
    dates = sorted(r["date"] for r in sessions.values())  # the showcase's 2026-06-15, the live ones' 2026-11-29
    assert dates[0] < dates[-1]
    assert f">{dates.count(dates[-1])} session(s)<" in server.get(f"/?since={dates[-1]}")[2].decode()
    assert f">{dates.count(dates[0])} session(s)<" in server.get(f"/?until={dates[0]}")[2].decode()
    status, _, body = server.get("/?since=yesterday-ish")
    assert status == 400 and b"yesterday-ish" in body

    _, _, body = server.get("/index")
    for short_id, record in sessions.items():
        assert f'/session/{short_id}?token={server.token}">{record["file"]}</a>' in body.decode()

    project = f"{os.path.dirname(env['HOME'])}/projects/proj-claude"
    _, _, body = server.get(f"/blame?file={project}/note.txt")
    changes = re.findall(r'/session/(cl-[0-9a-f]+)\?token=\S+?#step-(\d+)', body.decode())
    blamed = run_main(env, ["blame", f"{project}/note.txt", "--all", "--json"])
    assert changes == [(json.loads(line)["id"], str(json.loads(line)["step"])) for line in blamed.stdout.splitlines()]
    assert changes


@needs("git")
def test_pulled_sessions_make_pages_and_are_served_with_who_shared_them(team):
    remote, (alice, a), (bob, b) = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0
    mine = listed(bob, "--dir", b)
    assert len(mine) == 2 and all(r["shared_by"] for r in mine.values())
    for short_id in mine:
        result = run_main(bob, ["show", short_id, "--html"], cwd=b)
        assert result.returncode == 0, result.stderr
        assert_page_of(result.stdout.decode(), json.loads(run_main(bob, ["show", short_id], cwd=b).stdout))
        assert test_sharing.SECRET not in result.stdout.decode()
    server = Served(bob, cwd=b)
    try:
        text = server.get("/")[2].decode()
        sharer = next(iter(mine.values()))["shared_by"]
        assert "<th>Shared by</th>" in text and f"<td>{sharer}</td>" in text
        assert ">2 session(s)<" in server.get(f"/?shared_by={sharer}")[2].decode()
        assert ">0 session(s)<" in server.get("/?shared_by=me")[2].decode()
        blamed = server.get("/blame?file=src/app.py")[2].decode()
        assert len(re.findall(r"#step-\d+", blamed)) == 2 and f"shared by {sharer}" in blamed
    finally:
        server.stop()
