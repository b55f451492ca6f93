"""`trajectoriz agents`: over a $HOME holding several agents' stores with planted defects (a
truncated session, a malformed line, an empty trajectory, a thread that is not an object, a
profile database that is not SQLite), every known agent is listed with the right counts, the
problems are named by kind, and a failed session is still a valid document in listings."""

import json
import os
import shutil

import pytest

import agents
from commands import health
from core import parallel
from helpers import LIVE, SAMPLES, assert_valid, base_env, cli, run_main

LIVE_SUBDIRS = {"pi-0.73.1": ".pi", "kimi-cli-1.52.0": ".kimi", "hermes-agent-0.19.0": ".hermes",
                "mini-swe-agent-2.4.6": ".config"}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The live stores of four agents plus an Amp thread, each agent with one defect planted."""
    tmp = tmp_path_factory.mktemp("health")
    env = base_env(tmp)
    home = env["HOME"]
    for live, sub in LIVE_SUBDIRS.items():
        shutil.copytree(os.path.join(LIVE, live, sub), os.path.join(home, sub))
    # pi: a session cut mid-line (a crash while writing)
    pi_dir = os.path.join(home, ".pi", "agent", "sessions", "--tmp-agents-proj-pi--")
    source = sorted(os.listdir(pi_dir))[0]
    lines = open(os.path.join(pi_dir, source), "rb").read().split(b"\n")
    header = json.loads(lines[0])
    header["id"] = "broken-pi-session"
    cut = b"\n".join([json.dumps(header).encode(), *lines[1:5], lines[5][:40]])
    open(os.path.join(pi_dir, "2026-11-29T21-00-00-000Z_broken-pi-session.jsonl"), "wb").write(cut)
    # kimi: a malformed line in one wire log
    wire = os.path.join(home, ".kimi", "sessions", "864d39b0c6d74eb010dfb736f76ba741",
                        "6af17eca-d66e-42b6-8975-27e459b9f2ad", "wire.jsonl")
    lines = open(wire, "rb").read().split(b"\n")
    open(wire, "wb").write(b"\n".join(lines[:3] + [b"{this is not json"] + lines[3:]))
    # hermes: a profile whose database is not SQLite
    bad = os.path.join(home, ".hermes", "profiles", "work")
    os.makedirs(bad)
    open(os.path.join(bad, "state.db"), "wb").write(b"not a database " * 20)
    # mini-swe-agent: an empty trajectory file
    open(os.path.join(home, ".config", "mini-swe-agent", "trajectories", "empty.traj.json"), "wb").close()
    # amp: a sample thread, and a thread file that is a JSON array
    threads = os.path.join(home, ".local", "share", "amp", "threads")
    os.makedirs(threads)
    shutil.copy(os.path.join(SAMPLES, "amp", "cass", "threads", "thread-001.json"), threads)
    open(os.path.join(threads, "T-array.json"), "w").write("[1, 2, 3]")
    return env


@pytest.fixture(scope="module")
def rows(planted):
    result = cli("agents", "--json", env=planted)
    assert result.returncode == 0, result.stderr
    return {row["agent"]: row for row in map(json.loads, result.stdout.splitlines())}


def kinds(row, key="warnings"):
    return " | ".join(group["first"] for group in row[key])


def test_every_known_agent_is_listed(rows):
    assert list(rows) == agents.names()
    assert rows["droid"]["sources"] == 0 and rows["droid"]["store"] is None


def test_counts_match_the_stores(rows, planted):
    home = planted["HOME"]
    pi_files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(home, ".pi")) for f in fs]
    assert rows["pi"]["sessions"] == rows["pi"]["sources"] == len(pi_files) == 4
    assert rows["pi"]["native_bytes"] == sum(os.path.getsize(p) for p in pi_files)
    assert (rows["kimi"]["sessions"], rows["hermes"]["sessions"], rows["mswea"]["sessions"],
            rows["amp"]["sessions"]) == (3, 3 + 1, 3 + 1, 2)
    assert rows["hermes"]["sources"] == 2
    assert rows["pi"]["formats"] == {"v3": 4} and rows["kimi"]["formats"] == {"wire-1.10": 3}
    assert rows["mswea"]["versions"] == {"2.4.6": 3, "unknown": 1}


def test_planted_defects_are_named(rows):
    assert rows["pi"]["sessions_with_warnings"] == 1 and "truncated" in kinds(rows["pi"])
    assert rows["pi"]["warnings"][0]["first_session"].startswith("pi-")
    assert rows["kimi"]["sessions_with_warnings"] == 1 and "malformed" in kinds(rows["kimi"])
    assert rows["mswea"]["sessions_with_warnings"] == 1 and "the file is empty" in kinds(rows["mswea"])
    assert rows["amp"]["sessions_with_warnings"] == 1 and "not a JSON object" in kinds(rows["amp"])
    assert rows["hermes"]["sessions_failed"] == 1 and rows["hermes"]["sessions_with_warnings"] == 0
    assert "not a SQLite database" in kinds(rows["hermes"], "failures")
    assert "profiles/work/state.db" in rows["hermes"]["store_problems"][0]
    clean = [r for name, r in rows.items() if name not in ("pi", "kimi", "mswea", "amp", "hermes")]
    assert all(r["sessions_with_warnings"] == r["sessions_failed"] == 0 for r in clean)


def test_markdown_report(planted, rows):
    result = cli("agents", env=planted)
    text = result.stdout.decode()
    assert text.startswith(f"## Agent stores — 5 of {len(rows)} agents' stores found on this machine\n")
    table_rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| Agent")]
    assert [line.split(" | ")[0][2:] for line in table_rows[: len(rows)]] == list(rows)
    assert "| pi | `~/.pi/agent/sessions` | 4 |" in text
    assert "- **hermes** failed in 1 session(s)" in text and "truncated" in text


def test_a_failed_session_is_still_a_valid_document(planted):
    listed = [json.loads(line) for line in cli("list", "--all", "--json", env=planted).stdout.splitlines()]
    failed = [r for r in listed if r["source"].endswith(os.path.join("profiles", "work", "state.db"))]
    assert len(failed) == 1 and failed[0]["first_message"] == "(unreadable session)"
    doc = json.loads(cli("show", failed[0]["id"], env=planted).stdout)
    assert_valid(doc)
    assert "not a SQLite database" in doc["extra"]["error"]
    out = os.path.join(planted["HOME"], "..", "export")
    assert cli("export", "--all", "--out", out, env=planted).returncode == 0
    exported = json.load(open(os.path.join(out, failed[0]["file"])))  # the mount's file, too
    assert exported["extra"]["error"] == doc["extra"]["error"]


def test_the_pool_gives_the_serial_answer(planted, monkeypatch):
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    serial = health.report(planted)
    monkeypatch.setattr(health, "POOL_THRESHOLD", 1)
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    assert health.report(planted) == serial


@pytest.mark.parametrize("reason, kind", [
    ("3 malformed line(s) skipped, first at line 7: Expecting value", "N malformed line(s) skipped, first at line N"),
    ("wire.jsonl: the last line is incomplete", "wire.jsonl: the last line is incomplete"),
    ("StoreError: /x/state.db: database disk image is malformed", "StoreError"),
    ("unknown entry type 'foo' skipped", "unknown entry type … skipped"),
])
def test_problem_kinds(reason, kind):
    assert health.problem_kind(reason) == kind


def test_each_agent_says_how_long_it_keeps_sessions(tmp_path):
    """The retention column, as each agent's own settings set it (archiving/retention.py reads them)."""
    env = base_env(tmp_path)
    shutil.copytree(os.path.join(LIVE, "claude-2.1.332"), env["HOME"], dirs_exist_ok=True)

    def retention_of(agent):
        result = cli("agents", "--json", env=env)
        assert result.returncode == 0, result.stderr
        return next(r for r in map(json.loads, result.stdout.splitlines()) if r["agent"] == agent)["retention"]

    assert "30 days (default)" in retention_of("claude")
    with open(os.path.join(env["HOME"], ".claude", "settings.json"), "w") as handle:
        json.dump({"cleanupPeriodDays": 90}, handle)
    assert "90 days" in retention_of("claude") and retention_of("codex") == "keeps everything"
    assert "30d" in retention_of("gemini")
    table = cli("agents", env=env).stdout.decode()
    assert "| Retention |" in table and "90 days" in table


def test_shared_sessions_without_a_store_are_not_called_not_found(tmp_path):
    """Issue 42: a teammate who pulled sessions and has no agent store of their own read "0 of 23
    found" above a table listing those sessions; the heading says what was found where."""
    from test_sharing import claude_session, clone, seeded_remote, teammate

    alice, bob = teammate(tmp_path, "alice"), teammate(tmp_path, "bob")
    remote = seeded_remote(tmp_path, alice, {"notes.txt": "notes\n"})
    a = clone(alice, remote, os.path.join(alice["HOME"], "src", "proj"))
    claude_session(alice["HOME"], a, "c1", 1, "write the notes", [
        ("Write", {"file_path": f"{a}/notes.txt", "content": "notes\n"})])
    b = clone(bob, remote, str(tmp_path / "bob" / "work" / "proj"))
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0
    text = run_main(bob, ["agents"], cwd=b).stdout.decode()
    known = len(agents.names())
    assert text.startswith(f"## Agent stores — 0 of {known} agents' stores found on this machine; sessions of "
                           f"1 more agent(s) shared by teammates (`pull`)\n"), text
    assert "| claude | not found | 1 (1 shared) |" in text
