"""The session page and `serve`, looked at as a person does: a real headless Chromium (one per
module, tests/browser.py) opens the file `show --html` wrote and the pages `serve` serves, reads
what is shown, folds and unfolds tool calls, follows step anchors, searches through the form,
is refused without the token and under another host name (DNS rebinding: the browser resolves
a foreign name to 127.0.0.1), and never runs the markup planted in a session. Screenshots of a
session page and of the list are kept in $TRAJECTORIZ_TEST_ARTIFACTS (default: test-artifacts/
in the work tree).
"""

from __future__ import annotations

import html
import json
import os
import re

import pytest

import browser
from helpers import ROOT, needs, run_main
from rendering import page
from test_page import LONG, PLANT, Served, listed, planted_home

pytestmark = needs("chromium")
ARTIFACTS = os.environ.get("TRAJECTORIZ_TEST_ARTIFACTS") or os.path.join(ROOT, "test-artifacts")
REBOUND = "rebound.example"  # a name an attacker's DNS answers with 127.0.0.1


@pytest.fixture(scope="module")
def chromium():
    started = browser.Browser(flags=(f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",))
    yield started
    started.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The planted home, its sessions' pages written by `show --html`, and a server over it."""
    root = tmp_path_factory.mktemp("browser")
    env, project = planted_home(root)
    sessions = listed(env, "--all")
    files = {}
    for short_id in sessions:
        files[short_id] = str(root / f"{short_id}.html")
        assert run_main(env, ["show", short_id, "--html", "--out", files[short_id]]).returncode == 0
    server = Served(env, "--all")
    yield env, sessions, files, server
    server.stop()


@pytest.fixture
def tab(chromium):
    opened = chromium.tab()
    yield opened
    opened.close()


def named(sessions: dict, native: str) -> str:
    return next(i for i, r in sessions.items() if r["native_id"].startswith(native))


def title_of(path: str) -> str:
    """The title a page's file gives it (what the tab's title stays when nothing planted runs)."""
    with open(path, encoding="utf-8") as handle:
        return html.unescape(re.search(r"<title>(.*?)</title>", handle.read()).group(1))


def settled(tab) -> None:
    """Time for what a planted handler would do (an image's error fires after its load fails)."""
    tab.js("new Promise(r => setTimeout(r, 300))")


def test_the_file_shows_the_planted_markup_as_text_and_runs_none_of_it(tab, world):
    env, sessions, files, _ = world
    planted = named(sessions, "348a3463")
    tab.goto("file://" + files[planted])
    settled(tab)
    assert tab.js("document.title") == title_of(files[planted])
    assert tab.js("document.querySelectorAll('img').length") == 0
    assert tab.js("document.querySelector('#step-1 .msg').textContent").startswith(PLANT)
    assert PLANT in tab.js("document.body.innerText")
    assert tab.js("document.querySelector('h1').textContent").startswith("<img src=x")
    assert "«REDACTED:" in tab.js("document.querySelector('#step-1 .msg').textContent")


def test_a_call_folds_to_one_line_and_opens_to_its_arguments_and_output(tab, world):
    env, sessions, files, _ = world
    planted = named(sessions, "348a3463")
    tab.goto("file://" + files[planted])
    call = "details.call.bad"
    assert tab.js(f"document.querySelector('{call}').open") is False
    assert "✗ failed" in tab.js(f"document.querySelector('{call} > summary').innerText")
    assert tab.js(f"document.querySelector('{call} pre[data-d]').textContent") == ""  # not rendered yet
    assert tab.js(f"document.querySelector('{call} pre[data-d]').checkVisibility()") is False
    tab.click(f"{call} > summary")
    assert tab.wait_for(f"document.querySelector('{call} pre[data-d]').textContent.length > 0")
    assert tab.js(f"document.querySelector('{call}').open") is True
    assert tab.js(f"document.querySelector('{call} pre[data-d]').textContent") == PLANT + "\n" + LONG
    assert tab.js(f"document.querySelector('{call} pre[data-d]').checkVisibility()") is True
    assert "echo hello-claude-2" in tab.js(f"document.querySelector('{call}').innerText")  # its arguments
    settled(tab)
    assert tab.js("document.title") != "pwned" and tab.js("document.querySelectorAll('img').length") == 0
    tab.click(f"{call} > summary")
    assert tab.wait_for(f"!document.querySelector('{call}').open")
    assert tab.js(f"document.querySelector('{call} pre[data-d]').checkVisibility()") is False


def test_a_step_anchor_shows_its_step_and_opens_the_sub_agent_around_it(tab, world):
    env, sessions, files, _ = world
    showcase = named(sessions, "55550000")
    tab.goto("file://" + files[showcase] + "#step-1-2")
    assert tab.wait_for("document.getElementById('step-1-2').checkVisibility()")
    assert tab.js("document.getElementById('sub-1').open") is True
    top = tab.js("document.getElementById('step-1-2').getBoundingClientRect().top")
    assert 0 <= top < tab.js("innerHeight")
    tab.js("location.hash = '#step-2'")  # a link within the page
    assert tab.wait_for("Math.abs(document.getElementById('step-2').getBoundingClientRect().top) < 40 "
                        "|| scrollY + innerHeight >= document.body.scrollHeight - 2")


def test_the_policy_alone_stops_markup_that_escaped_the_escaping(tab, world, tmp_path, monkeypatch):
    """Were a string left unescaped, the page's policy still runs none of it; without the
    policy the same page runs it (the check can fail)."""
    env, sessions, _, _ = world
    doc = json.loads(run_main(env, ["show", named(sessions, "348a3463")]).stdout)
    monkeypatch.setattr(page, "esc", lambda value: value if isinstance(value, str) else str(value))
    unescaped = page.render(doc).decode()
    with_policy, without = tmp_path / "with.html", tmp_path / "without.html"
    with_policy.write_text(unescaped)
    without.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^\n]*\n', "", unescaped))
    tab.goto(f"file://{with_policy}")
    settled(tab)
    assert tab.js("document.querySelectorAll('img').length") >= 1  # the markup is live here
    assert tab.js("document.title") != "pwned"
    tab.goto(f"file://{without}")
    assert tab.wait_for("document.title === 'pwned'", timeout=5)


def test_served_list_search_session_and_screenshots(tab, world):
    env, sessions, _, server = world
    tab.goto(server.url)
    assert tab.js("document.getElementById('count').textContent") == f"{len(sessions)} session(s)"
    assert tab.js("document.querySelectorAll('#sessions tbody tr').length") == len(sessions)
    settled(tab)
    assert tab.js("document.title") != "pwned" and tab.js("document.querySelectorAll('img').length") == 0
    tab.screenshot(os.path.join(ARTIFACTS, "serve-list.png"))

    tab.click("nav input[name=q]")  # search as a person does: type, press Enter
    tab.type("hello-claude-3")
    assert tab.js("document.activeElement.value") == "hello-claude-3"
    seen = len(tab.browser.events)
    tab.key("Enter", 13)
    tab.browser.wait_event("Page.loadEventFired", tab.session, seen)
    assert tab.js("document.getElementById('count').textContent") == "1 session(s)"
    assert "q=hello-claude-3" in tab.js("location.search")

    planted = named(sessions, "348a3463")
    tab.goto(f"{server.base}?token={server.token}")
    seen = len(tab.browser.events)
    tab.click(f"a[href^='/session/{planted}?']")
    tab.browser.wait_event("Page.loadEventFired", tab.session, seen)
    assert tab.js("location.pathname") == f"/session/{planted}"
    settled(tab)
    assert tab.js("document.title") != "pwned" and tab.js("document.querySelectorAll('img').length") == 0
    assert tab.js("document.querySelector('#step-1 .msg').textContent").startswith(PLANT)
    tab.click("details.call.bad > summary")
    assert tab.wait_for("document.querySelector('details.call.bad pre[data-d]').textContent.length > 0")
    tab.js("window.scrollTo(0, 0)")
    tab.screenshot(os.path.join(ARTIFACTS, "serve-session.png"))


def test_a_content_hit_links_to_its_step(tab, world):
    env, sessions, _, server = world
    tab.goto(f"{server.base}?token={server.token}&q=hello-claude-2&content=1")
    links = tab.js("[...document.querySelectorAll('#hits a')].map(a => a.getAttribute('href'))")
    assert links and all("#step-" in link for link in links)
    seen = len(tab.browser.events)
    tab.click("#hits a")
    tab.browser.wait_event("Page.loadEventFired", tab.session, seen)
    step = links[0].rsplit("#", 1)[1]
    assert tab.js("location.hash") == f"#{step}"
    top = tab.wait_for(f"document.getElementById('{step}').getBoundingClientRect().top + 1")
    assert 0 < top <= tab.js("innerHeight")


def test_the_browser_is_refused_without_the_token_and_under_another_name(tab, world):
    env, sessions, _, server = world
    tab.goto(server.base)
    assert tab.js("document.body.innerText").startswith("403: a token is needed")
    tab.goto(f"http://{REBOUND}:{server.port}/?token={server.token}")  # DNS rebinding, token and all
    assert tab.js("document.body.innerText").startswith("403: this server answers only to")
    assert "<tr" not in tab.js("document.documentElement.outerHTML")


def test_a_two_thousand_step_page_opens_with_its_outputs_left_for_later(tab, tmp_path):
    """A long session: every output over the inline limit waits as data; the page loads and
    its last step's anchor works (its time is measured, not asserted: bench/RESULTS-page.md)."""
    steps = []
    for n in range(1, 2001):
        call = {"tool_call_id": f"c{n}", "function_name": "Bash", "arguments": {"command": f"echo {n}"},
                "extra": {"kind": "shell", "command": f"echo {n}"}}
        steps.append({"step_id": n, "source": "agent", "message": f"step {n}", "tool_calls": [call],
                      "observation": {"results": [{"source_call_id": f"c{n}", "content": f"{n}\n" * 1000}]}})
    doc = {"schema_version": "ATIF-v1.7", "session_id": "s", "agent": {"name": "x", "version": "1"},
           "steps": steps, "extra": {"short_id": "cl-00000000"}}
    path = tmp_path / "long.html"
    path.write_bytes(page.render(doc))
    tab.goto(f"file://{path}#step-2000")
    assert tab.js("document.querySelectorAll('section.step').length") == 2000
    assert tab.js("document.querySelectorAll('pre[data-shown]').length") == 0
    assert tab.wait_for("document.getElementById('step-2000').getBoundingClientRect().top < innerHeight")
