"""archiving/retention.py: each agent's deletion policy, read from its own settings files, and the count of
sessions not archived that their agent will delete within a week.

Every settings file is written here, in a fake $HOME (Gemini's system files through its own
GEMINI_CLI_SYSTEM_* variables, Claude Code's managed file at a path of the test's); session
files are dated with os.utime.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from agents.base import Session
from archiving import retention
from discovery import catalog
from helpers import base_env, write_jsonl

DAY = retention.DAY
NOW = time.time()


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setattr(retention, "CLAUDE_MANAGED", str(tmp_path / "etc" / "managed-settings.json"))
    environment = base_env(tmp_path)
    environment["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = str(tmp_path / "etc" / "gemini-settings.json")
    environment["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"] = str(tmp_path / "etc" / "gemini-defaults.json")
    return environment


def write(path, content) -> str:
    """A settings file: `content` as JSON, or as given when it is text or bytes."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = content if isinstance(content, bytes) else (
        content if isinstance(content, str) else json.dumps(content)).encode()
    with open(path, "wb") as handle:
        handle.write(data)
    return str(path)


def aged(path, days: float) -> str:
    """An (empty) session file last modified `days` days before NOW."""
    if not os.path.exists(path):
        write(path, b"")
    os.utime(path, (NOW - days * DAY, NOW - days * DAY))
    return str(path)


def project(tmp_path, name: str) -> str:
    path = tmp_path / "src" / name
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def claude_session(env, cwd: str, name: str, days: float) -> Session:
    folder = os.path.join(env["HOME"], ".claude", "projects", cwd.replace("/", "-"))
    source = aged(os.path.join(folder, f"{name}.jsonl"), days)
    return Session(agent="claude", native_id=name, source=source, cwd=cwd)


def gemini_session(env, cwd: str, name: str, days: float) -> Session:
    chats = os.path.join(env["HOME"], ".gemini", "tmp", os.path.basename(cwd), "chats")
    source = aged(os.path.join(chats, f"session-2026-01-01T00-00-{name:0>8}.jsonl"), days)
    return Session(agent="gemini", native_id=name, source=source, cwd=cwd)


def at_risk(sessions, env, archived=lambda session: False) -> dict:
    return retention.at_risk(sessions, archived, env, now=NOW)


def claude_user(env, value) -> str:
    return write(os.path.join(env["HOME"], ".claude", "settings.json"), {"cleanupPeriodDays": value})


def gemini_user(env, section) -> str:
    return write(os.path.join(env["HOME"], ".gemini", "settings.json"),
                 {"general": {"sessionRetention": section}})


# Claude Code ---------------------------------------------------------------------------------------
def test_claude_deletes_after_30_days_by_default(tmp_path, env):
    proj = project(tmp_path, "app")
    sessions = [claude_session(env, proj, "fresh", 20), claude_session(env, proj, "soon", 25),
                claude_session(env, proj, "old", 40)]
    assert retention.policies(sessions, env)["claude"] == "deletes transcripts after 30 days (default)"
    assert at_risk(sessions, env) == {"claude": 2}   # 25 + 7 and 40 are past 30 days; 20 + 7 is not


def test_claude_user_settings_set_the_period(tmp_path, env):
    claude_user(env, 90)
    proj = project(tmp_path, "app")
    sessions = [claude_session(env, proj, "a", 40), claude_session(env, proj, "b", 85)]
    assert retention.policies(sessions, env)["claude"] == \
        "deletes transcripts after 90 days (~/.claude/settings.json)"
    assert at_risk(sessions, env) == {"claude": 1}


def test_claude_config_dir_holds_the_user_settings(tmp_path, env):
    env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "claude-config")
    write(tmp_path / "claude-config" / "settings.json", {"cleanupPeriodDays": 5})
    claude_user(env, 90)   # ~/.claude is not Claude Code's folder any more
    period = retention.Retention([], env).claude_period(None)
    assert (period.days, period.source) == (5, str(tmp_path / "claude-config" / "settings.json"))


def test_a_projects_settings_override_the_users_and_its_sweep_covers_every_project(tmp_path, env):
    claude_user(env, 90)
    short, other = project(tmp_path, "scratch"), project(tmp_path, "main")
    settings = write(os.path.join(short, ".claude", "settings.json"), {"cleanupPeriodDays": 10})
    sessions = [claude_session(env, short, "a", 1), claude_session(env, other, "b", 4),
                claude_session(env, other, "c", 2)]
    rules = retention.Retention(sessions, env)
    assert (rules.claude_period(short).days, rules.claude_period(short).source) == (10, settings)
    assert rules.claude_period(other).days == 90
    assert retention.policies(sessions, env)["claude"] == (
        f"deletes transcripts after 10 days ({retention.tilde(settings, env)}); "
        "its sweep covers every project")
    assert at_risk(sessions, env) == {"claude": 1}   # b, in the other project: 4 + 7 > 10


def test_local_settings_override_the_projects(tmp_path, env):
    claude_user(env, 90)
    proj = project(tmp_path, "app")
    write(os.path.join(proj, ".claude", "settings.json"), {"cleanupPeriodDays": 10})
    local = write(os.path.join(proj, ".claude", "settings.local.json"), {"cleanupPeriodDays": 60})
    period = retention.Retention([], env).claude_period(proj)
    assert (period.days, period.source, period.scope) == (60, local, "local")


def test_managed_settings_override_everything(tmp_path, env):
    proj = project(tmp_path, "app")
    write(os.path.join(proj, ".claude", "settings.local.json"), {"cleanupPeriodDays": 60})
    write(retention.CLAUDE_MANAGED, {"cleanupPeriodDays": 14})
    assert retention.Retention([], env).claude_period(proj).days == 14


@pytest.mark.parametrize("value", [0, -5, 2.5, "30", True, None, [], {"days": 9}, "1e400"])
def test_an_unusable_claude_value_gives_way_to_the_next_file_or_the_default(tmp_path, env, value):
    proj = project(tmp_path, "app")
    if value == "1e400":   # a number too large for a double: read, never a crash
        write(os.path.join(env["HOME"], ".claude", "settings.json"), '{"cleanupPeriodDays": 1e400}')
    else:
        claude_user(env, value)
    assert retention.Retention([], env).claude_period(None).days == 30
    write(os.path.join(proj, ".claude", "settings.json"), {"cleanupPeriodDays": 12})
    write(os.path.join(proj, ".claude", "settings.local.json"), {"cleanupPeriodDays": value})
    assert retention.Retention([], env).claude_period(proj).days == 12


@pytest.mark.parametrize("content", [b'{"cleanupPeriodDays": 3', b"\xff\xfe{}", b"[3]", b'"3"',
                                     b"[" * 100000 + b"]" * 100000,
                                     b'{"cleanupPeriodDays": 3, "x": "' + b"a" * (2 << 20) + b'"}'])
def test_an_unreadable_settings_file_is_as_if_absent(tmp_path, env, content):
    write(os.path.join(env["HOME"], ".claude", "settings.json"), content)
    assert retention.Retention([], env).claude_period(None).days == 30


def test_a_fifo_or_folder_named_like_settings_is_never_read(tmp_path, env):
    proj = project(tmp_path, "app")
    os.makedirs(os.path.join(proj, ".claude", "settings.json"))
    os.mkfifo(os.path.join(proj, ".claude", "settings.local.json"))   # opening it to read would block
    claude_user(env, 44)
    assert retention.Retention([], env).claude_period(proj).days == 44


def test_a_huge_period_keeps_everything(tmp_path, env):
    claude_user(env, 10 ** 400)
    sessions = [claude_session(env, project(tmp_path, "app"), "ancient", 20000)]
    assert at_risk(sessions, env) == {}


def test_claude_sessions_found_by_discovery_are_counted(tmp_path, env):
    proj = project(tmp_path, "app")
    folder = os.path.join(env["HOME"], ".claude", "projects", "-src-app")
    for name, days in (("old", 29), ("new", 3)):
        path = write_jsonl(os.path.join(folder, f"{name}.jsonl"), [
            {"type": "user", "cwd": proj, "sessionId": name, "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": f"the {name} one"}}])
        aged(path, days)
    found = catalog.discover(env)
    assert sorted(s.native_id for s in found.sessions) == ["new", "old"]
    assert at_risk(found.sessions, env) == {"claude": 1}


# Gemini CLI ----------------------------------------------------------------------------------------
def test_gemini_deletes_chats_after_30_days_by_default(tmp_path, env):
    proj = project(tmp_path, "app")
    sessions = [gemini_session(env, proj, "a", 20), gemini_session(env, proj, "b", 25),
                gemini_session(env, proj, "c", 40)]
    assert retention.policies(sessions, env)["gemini"] == "deletes chats after 30d (default)"
    assert at_risk(sessions, env) == {"gemini": 2}


@pytest.mark.parametrize("max_age, window, old, young", [("1w", 1, 6.5, 5.5), ("240h", 7, 3.5, 2.5),
                                                         ("2m", 7, 53.5, 52.5), ("2w", 7, 7.5, 6.5)])
def test_gemini_max_age(tmp_path, env, max_age, window, old, young):
    """`old` days old is deleted within `window` days, `young` is not (a month is 30 days)."""
    gemini_user(env, {"maxAge": max_age, "minRetention": "1h"})
    proj = project(tmp_path, "app")
    sessions = [gemini_session(env, proj, "old", old), gemini_session(env, proj, "young", young)]
    assert retention.policies(sessions, env)["gemini"] == \
        f"deletes chats after {max_age} (~/.gemini/settings.json)"
    doomed = retention.Retention(sessions, env).doomed(NOW + window * DAY)
    assert [s.native_id for s in doomed] == ["old"]


def test_gemini_max_count_keeps_the_newest_of_each_project(tmp_path, env):
    gemini_user(env, {"maxCount": 2})
    one, two = project(tmp_path, "one"), project(tmp_path, "two")
    sessions = [gemini_session(env, one, str(i), i) for i in range(4)]
    sessions += [gemini_session(env, two, "t1", 5), gemini_session(env, two, "t2", 6)]
    assert retention.policies(sessions, env)["gemini"] == \
        "deletes chats after 30d, keeps the 2 newest per project (~/.gemini/settings.json)"
    doomed = retention.Retention(sessions, env).doomed(NOW + 7 * DAY)
    assert sorted(s.native_id for s in doomed) == ["2", "3"]
    assert at_risk(sessions, env) == {"gemini": 2}


def test_a_max_age_shorter_than_min_retention_turns_gemini_cleanup_off(tmp_path, env):
    gemini_user(env, {"maxAge": "12h"})   # minRetention defaults to 1d
    proj = project(tmp_path, "app")
    sessions = [gemini_session(env, proj, "a", 3)]
    assert retention.policies(sessions, env)["gemini"] == (
        "keeps everything (its cleanup is off: maxAge is shorter than minRetention; "
        "~/.gemini/settings.json)")
    assert at_risk(sessions, env) == {}
    gemini_user(env, {"maxAge": "12h", "minRetention": "6h"})
    assert at_risk(sessions, env) == {"gemini": 1}


def test_disabled_gemini_cleanup_keeps_everything(tmp_path, env):
    gemini_user(env, {"enabled": False, "maxAge": "1d"})
    sessions = [gemini_session(env, project(tmp_path, "app"), "a", 400)]
    assert retention.policies(sessions, env)["gemini"].startswith("keeps everything (its cleanup is off")
    assert at_risk(sessions, env) == {}


def test_gemini_settings_precedence(tmp_path, env):
    """System defaults < user < workspace < system, key by key."""
    quiet, busy = project(tmp_path, "quiet"), project(tmp_path, "busy")
    write(env["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"], {"general": {"sessionRetention": {"maxAge": "2d"}}})
    gemini_user(env, {"maxAge": "10d"})
    write(os.path.join(quiet, ".gemini", "settings.json"),
          {"general": {"sessionRetention": {"enabled": False}}})
    sessions = [gemini_session(env, quiet, "q", 5), gemini_session(env, busy, "b", 5)]
    rules = retention.Retention(sessions, env)
    assert [s.native_id for s in rules.doomed(NOW + 7 * DAY)] == ["b"]   # 5 + 7 > 10; quiet is off
    assert retention.policies(sessions, env)["gemini"].endswith("; 1 project(s) set their own")
    write(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"], {"general": {"sessionRetention": {"maxAge": "30d"}}})
    assert retention.Retention(sessions, env).doomed(NOW + 7 * DAY) == []


def test_gemini_settings_may_hold_comments(tmp_path, env):
    write(os.path.join(env["HOME"], ".gemini", "settings.json"),
          '{\n  // keep a week\n  "general": {"sessionRetention": /* short */ {"maxAge": "7d"}},\n'
          '  "url": "http://example.com/*not a comment*/"\n}')
    sessions = [gemini_session(env, project(tmp_path, "app"), "a", 1)]
    assert at_risk(sessions, env) == {"gemini": 1}


@pytest.mark.parametrize("section", [{"maxAge": "30"}, {"maxAge": 30}, {"maxAge": "0d"},
                                     {"maxAge": "3 d"}, {"maxAge": "7d\n"}, {"maxCount": 0},
                                     {"maxCount": -1}, {"maxAge": "", "maxCount": "abc"}])
def test_a_gemini_value_it_rejects_turns_its_cleanup_off(tmp_path, env, section):
    gemini_user(env, section)
    sessions = [gemini_session(env, project(tmp_path, "app"), "a", 400)]
    assert retention.policies(sessions, env)["gemini"].startswith("keeps everything")
    assert at_risk(sessions, env) == {}


@pytest.mark.parametrize("content", ['{"general": {"sessionRetention": "7d"}}', '{"general": 7}',
                                     "not json", '{"general": {"sessionRetention": {"maxCount": "2"}}}',
                                     '{"general": {"sessionRetention": {"maxAge": "9' + "9" * 30 + 'd"}}}'])
def test_odd_gemini_settings_never_crash(tmp_path, env, content):
    write(os.path.join(env["HOME"], ".gemini", "settings.json"), content)
    sessions = [gemini_session(env, project(tmp_path, "app"), str(i), 1) for i in range(3)]
    assert at_risk(sessions, env) == {}
    assert retention.policies(sessions, env)["gemini"]


def test_only_gemini_chat_files_are_counted(tmp_path, env):
    proj = project(tmp_path, "app")
    chats = os.path.join(env["HOME"], ".gemini", "tmp", "app")
    prompt_log = Session(agent="gemini", native_id="p", cwd=proj,
                         source=aged(os.path.join(chats, "logs.json"), 90))
    subagent = Session(agent="gemini", native_id="s", cwd=proj,
                       source=aged(os.path.join(chats, "chats", "abcd1234-x", "sub.jsonl"), 90))
    chat = gemini_session(env, proj, "c", 90)
    assert at_risk([prompt_log, subagent, chat], env) == {"gemini": 1}


# Qwen Code and the others --------------------------------------------------------------------------
def test_qwen_keeps_its_chats_whatever_its_cleanup_period(tmp_path, env):
    proj = project(tmp_path, "app")
    chat = os.path.join(env["HOME"], ".qwen", "projects", "-src-app", "chats", "q.jsonl")
    sessions = [Session(agent="qwen", native_id="q", source=aged(chat, 900), cwd=proj)]
    assert retention.policies(sessions, env)["qwen"] == (
        "keeps its chats; deletes only file-history backups and sub-agent transcripts, after 30 days "
        "(default)")
    write(os.path.join(env["HOME"], ".qwen", "settings.json"), {"general": {"cleanupPeriodDays": 7}})
    write(os.path.join(proj, ".qwen", "settings.json"), '{"general": {"cleanupPeriodDays": 0}} // none')
    assert retention.policies(sessions, env)["qwen"] == (
        "keeps its chats; deletes only file-history backups and sub-agent transcripts, after 7 days "
        "(~/.qwen/settings.json); 1 project(s) set their own")
    assert retention.Retention(sessions, env).qwen_period(proj) == (
        "1 hour", os.path.join(proj, ".qwen", "settings.json"))
    assert at_risk(sessions, env) == {}


def test_every_other_agent_keeps_everything(tmp_path, env):
    old = Session(agent="codex", native_id="x", source=aged(tmp_path / "rollout.jsonl", 900), cwd=None)
    found = retention.policies([old], env)
    deleting = {name for name, text in found.items() if text != "keeps everything"}
    assert deleting == {"claude", "gemini", "qwen"}
    assert at_risk([old], env) == {}


# the count and its line ----------------------------------------------------------------------------
def test_archived_sessions_are_not_at_risk(tmp_path, env):
    proj = project(tmp_path, "app")
    sessions = [claude_session(env, proj, "saved", 40), claude_session(env, proj, "lost", 40),
                gemini_session(env, proj, "g", 40)]
    assert at_risk(sessions, env, archived=lambda s: s.native_id == "saved") == {"claude": 1, "gemini": 1}
    assert at_risk(sessions, env, archived=lambda s: True) == {}


def test_a_session_file_gone_since_discovery_is_not_counted(tmp_path, env):
    session = claude_session(env, project(tmp_path, "app"), "gone", 40)
    os.remove(session.source)
    assert at_risk([session], env) == {}


def test_each_settings_file_is_read_once_per_run(tmp_path, env):
    settings = claude_user(env, 90)
    files = retention.SettingsFiles(env)
    assert files.get(settings) == {"cleanupPeriodDays": 90}
    write(settings, {"cleanupPeriodDays": 1})
    assert files.get(settings) == {"cleanupPeriodDays": 90}


def test_a_projects_settings_count_only_for_the_agents_that_ran_there(tmp_path, env):
    proj = project(tmp_path, "app")
    write(os.path.join(proj, ".claude", "settings.json"), {"cleanupPeriodDays": 1})
    codex = Session(agent="codex", native_id="x", source=aged(tmp_path / "rollout.jsonl", 1), cwd=proj)
    assert retention.policies([codex], env)["claude"] == "deletes transcripts after 30 days (default)"


def test_the_warning_line():
    assert retention.warning({}) is None
    assert retention.warning({"gemini": 1, "claude": 2}) == (
        "3 session(s) not archived yet will be deleted by their agent within 7 days "
        "(claude 2, gemini 1): run `trajectoriz archive`")


def test_list_says_which_sessions_are_about_to_be_lost_until_they_are_archived(tmp_path, env):
    """The one line of `list` (and `memory`): a Claude session 29 days old is deleted within the
    week unless archived; after `trajectoriz archive`, nothing is said."""
    from helpers import run_main

    proj = project(tmp_path, "app")
    folder = os.path.join(env["HOME"], ".claude", "projects", "-src-app")
    for name, days in (("old", 29), ("new", 3)):
        aged(write_jsonl(os.path.join(folder, f"{name}.jsonl"), [
            {"type": "user", "cwd": proj, "sessionId": name, "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": f"the {name} one"}}]), days)
    listed = run_main(env, ["list"], cwd=proj)
    assert listed.returncode == 0
    assert b"1 session(s) not archived yet will be deleted by their agent within 7 days (claude 1)" in listed.stderr
    assert run_main(env, ["archive"], cwd=proj).returncode == 0
    assert b"will be deleted" not in run_main(env, ["list"], cwd=proj).stderr


def test_the_archive_is_read_only_when_a_session_is_at_risk(tmp_path, env, monkeypatch):
    """`archive.holds` reads the archive's index the first time it is asked about a session not
    listed from the archive: a listing none of whose sessions an agent will delete soon reads
    none (7 ms for 40,000 archived sessions); once one is at risk, it is read, once."""
    from discovery import archive

    proj = project(tmp_path, "app")
    fresh = claude_session(env, proj, "fresh", 3)
    doomed = claude_session(env, proj, "doomed", 29)
    reads = []
    real = archive._listing
    monkeypatch.setattr(archive, "_listing", lambda *a: reads.append(a) or real(*a))
    assert retention.at_risk([fresh], archive.holds(env), env) == {} and reads == []
    assert retention.at_risk([fresh, doomed, doomed], archive.holds(env), env) == {"claude": 2}
    assert len(reads) == 1


def test_a_warm_list_decides_the_warning_at_most_once_a_day(tmp_path, env, monkeypatch):
    """Issue 37: deciding the warning stats every session of the machine not yet archived (30,000
    for a heavy user), so it is decided at most once a day: a later `list` says the same line
    without looking at one session file, and the decision is made again after a day, or as soon
    as a settings file it read or the archive changes. A decision made without every project's
    sessions (a project's first discovery reads its own sources only) is not kept."""
    from core import cache
    from helpers import run_main

    looked = []
    real = retention.last_activity
    monkeypatch.setattr(retention, "last_activity", lambda session: looked.append(session.source) or real(session))
    proj, other = project(tmp_path, "app"), project(tmp_path, "other")
    for name, days, cwd in (("old", 29, other), ("older", 28, other), ("new", 3, proj)):
        folder = os.path.join(env["HOME"], ".claude", "projects", cwd.replace("/", "-"))
        aged(write_jsonl(os.path.join(folder, f"{name}.jsonl"), [
            {"type": "user", "cwd": cwd, "sessionId": name, "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": f"the {name} one"}}]), days)
    line = b"2 session(s) not archived yet will be deleted by their agent within 7 days (claude 2)"

    def listed(*args) -> bytes:
        result = run_main(env, ["list", *args], cwd=proj)
        assert result.returncode == 0 and b"the new one" in result.stdout
        return result.stderr

    assert b"will be deleted" not in listed()  # the other project's sessions are not read here
    assert line in listed("--all") and len(looked) >= 2
    looked.clear()
    assert line in listed() and line in listed() and line in listed("--all") and looked == []
    note = cache.load(env, retention.NOTE)
    cache.save(env, retention.NOTE, {**note, "decided": note["decided"] - retention.DAY - 60})
    assert line in listed("--all") and len(looked) >= 2   # a day later: decided again
    looked.clear()
    assert line in listed() and looked == []
    write(os.path.join(env["HOME"], ".claude", "settings.json"), {"cleanupPeriodDays": 90})
    assert b"will be deleted" not in listed("--all")   # the user's settings changed
    os.remove(os.path.join(env["HOME"], ".claude", "settings.json"))
    assert line in listed("--all")
    assert run_main(env, ["archive"], cwd=proj).returncode == 0   # every project's sessions
    assert b"will be deleted" not in listed() and b"will be deleted" not in listed("--all")  # the archive changed
