"""Titles that say what a session was about (titles.py): real Claude sessions that open with `.`,
with `/init`, and with the IDE's context before the user's words (samples/claude/dotfile-titles),
and every agent's live store."""

import json
import os
import shutil

import pytest

from agents import titles
from helpers import SAMPLES, base_env, cli
from homes import live_stores

TITLES = os.path.join(SAMPLES, "claude", "dotfile-titles")
DOT, INIT, IDE = "e827650c-0d38-4ecf-8575-2f75aaf959bc", "617b8d63-f8d1-495e-9a83-5c0291579fe1", \
    "b23883a8-3ff5-47ba-a2b9-d1b710b77d8d"


@pytest.fixture
def env(tmp_path):
    env = base_env(tmp_path)
    folder = os.path.join(env["HOME"], ".claude", "projects", "-Users-xuwentao-Projects")
    os.makedirs(folder)
    for name in os.listdir(TITLES):
        shutil.copy(os.path.join(TITLES, name), folder)
    return env


def listed(env, *args) -> dict:
    result = cli("list", "--all", "--json", *args, env=env)
    assert result.returncode == 0, result.stderr
    return {r["native_id"]: r for r in map(json.loads, result.stdout.splitlines())}


def test_a_listing_titles_each_session_by_its_first_task_and_keeps_its_first_message(env):
    rows = listed(env)
    assert rows[DOT]["first_message"] == "." and rows[DOT]["title"] == "优化后段服务使用uv管理"
    assert rows[INIT]["first_message"] == "/init" and rows[INIT]["title"] == "为什么 npm install 会报错"
    assert rows[IDE]["first_message"].startswith("<ide_opened_file>The user opened the file ")
    assert rows[IDE]["title"] == "修复代码lint问题"  # the user's words after the IDE's context


def test_the_agents_own_title_wins_once_the_session_was_rendered(env):
    rendered = listed(env, "--steps")
    assert rendered[IDE]["title"] == "Fix code linting issues"  # its ai-title record
    assert rendered[DOT]["title"] == "优化后段服务使用uv管理"  # none recorded: the first task
    table = cli("list", "--all", env=env).stdout.decode()
    assert "| Fix code linting issues |" in table and "| 为什么 npm install 会报错 |" in table


def test_default_search_finds_a_session_by_any_request_its_user_typed(env):
    said = []

    def found(query):
        result = cli("search", query, "--json", env=env)
        said.append(result.stderr.decode())
        return {json.loads(line)["native_id"] for line in result.stdout.splitlines()}

    # its fifth request; from outside its project (tests/test_first_read.py searches from inside,
    # where the first search reads it), a first search matches title and first message only, and
    # says so
    assert found("makerun ImportError") == set() and "of other projects not read yet" in said[-1]
    listed(env, "--steps")
    assert found("makerun ImportError") == {DOT}  # from the kept facts
    assert found("uv管理") == {DOT}


@pytest.mark.parametrize("text, task", [
    (".", ""), ("hi", ""), ("Hello!", ""), ("continue", ""), ("/init", ""), ("/plugin install x@y", ""),
    ("[Request interrupted by user for tool use]", ""), ("<local-command-stdout></local-command-stdout>", ""),
    ("[Image #1]", ""), ("<ide_opened_file>The user opened the file /a/b.vue in the IDE.</ide_opened_file>", ""),
    ("<ide_opened_file>The user opened the file /a/b.vue.</ide_opened_file>修复代码lint问题", "修复代码lint问题"),
    ("<ide_selection>The user selected lines 1 to 3: x = 1</ide_selection> rename x", "rename x"),
    ("[Image #1] why does this page overflow?", "why does this page overflow?"),
    ("fix the flaky test in ci", "fix the flaky test in ci"),
])
def test_what_carries_a_task(text, task):
    assert titles.task_text(text) == task


def test_an_agents_title_that_says_nothing_is_not_taken():
    request = "SCENARIO droid-1 in /tmp/agents/proj-droid: run a shell command that writes hello"
    assert titles.title_of("Untitled Session", [request]) == request  # Continue's default
    assert titles.title_of("New session - 2026-01-01T10:00:00.000Z", [request]) == request  # opencode's
    assert titles.title_of("SCENARIO droid-1 in /tmp/agents/proj-droid: run a...", [request]) == request
    assert titles.title_of("Scenario session", [request]) == "Scenario session"


# the agents' own titles of the live stores, as their documents carry them (opencode's and Kilo's
# as their listing reads them too)
NATIVE = {"gptme": "Conformance scenario", "opencode": {"Scenario session", "second session"},
          "kilo": {"Scenario session", "second session"}}
LISTED_NATIVE = {"opencode", "kilo"}


@pytest.mark.parametrize("agent, store", live_stores())
def test_every_live_session_has_a_title_that_is_its_task_or_its_agents_title(agent, store, tmp_path):
    home = str(tmp_path / "home")
    shutil.copytree(store, home, symlinks=True)
    env = base_env(tmp_path, home=home)
    if agent == "aider":
        env["PWD"] = os.path.join(home, "projects", "proj-aider")
    for rendered in (False, True):
        args = ["--all", "--agent", agent] + (["--steps"] if rendered else [])
        rows = list(listed(env, *args).values())
        assert rows
        for row in rows:
            native = NATIVE.get(agent)
            if native and (rendered or agent in LISTED_NATIVE):
                assert row["title"] in ({native} if isinstance(native, str) else native), row
            else:
                assert row["title"].lstrip('"').startswith("SCENARIO "), row
            assert row["first_message"].lstrip('"').startswith("SCENARIO "), row
