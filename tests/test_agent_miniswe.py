"""mini-swe-agent: every trajectory translates to a valid document whose counts and token totals
match its messages; a copy of a run is listed once; the task is cut out of the instance
template; format-1 trajectories (fenced actions, <returncode> observations) are read too; a file
cut short still gives a document with a warning; nothing is written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_miniswe.py` rewrites tests/golden/mswea/."""

import json
import os
import shutil

from agents import miniswe
from helpers import (LIVE, assert_golden, assert_valid, base_env, cli, doc_counts, scoped_ids,
                    totals, translate_all, tree_digest)

LIVE_HOME = os.path.join(LIVE, "mini-swe-agent-2.4.6")
CONFIG = os.path.join(LIVE_HOME, ".config", "mini-swe-agent")
LAST_RUN = os.path.join(CONFIG, "last_mini_run.traj.json")


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


def native(path):
    data = json.load(open(path))
    messages = data["messages"]
    usages = [m["extra"]["response"]["usage"] for m in messages if m["role"] == "assistant"]
    counts = {"user": 1, "calls": sum(len(m.get("tool_calls") or []) for m in messages),
              "results": sum(1 for m in messages if m["role"] == "tool")}
    total = (sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages),
             sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages))
    return data, counts, total


def test_live_runs_match_their_messages(tmp_path):
    translated = translate_all(miniswe, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        data, counts, expected = native(session.source)
        assert doc_counts(doc) == counts
        assert totals(doc) == expected
        assert doc["agent"]["version"] == data["info"]["mini_version"] == "2.4.6"
        user = next(s for s in doc["steps"] if s["source"] == "user")
        assert user["message"] == session.title and user["message"].startswith("SCENARIO mswea-")
        assert user["message"] in data["messages"][1]["content"]
        assert doc["steps"][-1]["extra"]["kind"] == "exit"
        assert session.cwd is None  # mini-swe-agent records no directory for a local run


def test_a_copy_of_a_run_is_listed_once(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(os.path.join(LIVE_HOME, ".config"), home / ".config")
    trajectories = home / ".config" / "mini-swe-agent" / "trajectories"
    shutil.copy(LAST_RUN, trajectories / "saved-again.traj.json")
    env = base_env(tmp_path, home=str(home))
    result = cli("list", "--all", "--json", env=env)
    listed = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(listed) == 3
    assert any(r["source"].endswith("saved-again.traj.json") for r in listed)


def test_config_dir_can_be_relocated(tmp_path):
    env = {**base_env(tmp_path), "MSWEA_GLOBAL_CONFIG_DIR": CONFIG}
    assert len(miniswe.sources(env)) == 3
    env = {**base_env(tmp_path), "XDG_CONFIG_HOME": os.path.join(LIVE_HOME, ".config")}
    assert len(miniswe.sources(env)) == 3


def write_run(home, name, data):
    folder = home / ".config" / "mini-swe-agent" / "trajectories"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data, indent=2))


FORMAT_1 = {
    "trajectory_format": "mini-swe-agent-1",
    "info": {"exit_status": "Submitted", "mini_version": "1.9.0",
             "config": {"agent": {"instance_template": "Task: {{task}}\nWork in {{cwd}}."},
                        "environment": {"cwd": "/tmp/agents/proj-v1"},
                        "model": {"model_name": "anthropic/claude-x"}}},
    "messages": [
        {"role": "system", "content": "Use bash."},
        {"role": "user", "content": "Task: fix the test\nWork in /tmp/agents/proj-v1."},
        {"role": "assistant", "content": "THOUGHT: look\n```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
        {"role": "assistant", "content": "THOUGHT: run\n```bash\npytest -q\n```"},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>1 failed</output>"},
        {"role": "assistant", "content": "Two actions\n```bash\nls\n```\n```bash\nls\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks."},
    ],
}


def test_format_1_fenced_actions_and_observations(tmp_path):
    home = tmp_path / "home"
    write_run(home, "v1.traj.json", FORMAT_1)
    env = base_env(tmp_path, home=str(home))
    (session, doc), = translate_all(miniswe, env)
    assert session.title == "fix the test" and session.extra["format"] == "mini-swe-agent-1"
    assert doc_counts(doc) == {"user": 1, "calls": 2, "results": 2}  # two blocks: not run
    steps = doc["steps"]
    assert steps[2]["tool_calls"][0]["arguments"] == {"command": "ls"}
    assert steps[3]["observation"]["results"][0]["extra"] == {"exit_code": 1, "is_error": True}
    assert steps[-1]["source"] == "system" and steps[-1]["extra"]["kind"] == "harness_message"
    assert scoped_ids(env, "/tmp/agents/proj-v1", "mswea") == {session.native_id}


def test_a_run_cut_short_keeps_its_complete_messages(tmp_path):
    home = tmp_path / "home"
    data = open(LAST_RUN, "rb").read()
    cut = data.index(b'"role": "tool"', data.index(b"cat note.txt"))  # inside the 2nd tool message
    folder = home / ".config" / "mini-swe-agent"
    folder.mkdir(parents=True)
    (folder / "last_mini_run.traj.json").write_bytes(data[:cut])
    (folder / "empty.traj.json").write_bytes(b"")
    translated = {os.path.basename(s.source): d for s, d in translate_all(miniswe, base_env(tmp_path, home=str(home)))}
    doc = translated["last_mini_run.traj.json"]
    assert any("not complete JSON" in w for w in doc["extra"]["warnings"])
    assert doc_counts(doc) == {"user": 1, "calls": 2, "results": 1}
    assert translated["empty.traj.json"]["extra"]["warnings"]


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    (session,) = miniswe.scan(LAST_RUN, env)
    doc = miniswe.translate(session, env)
    assert_valid(doc)
    assert_golden(doc, "mswea", "live-last-run")


def test_store_is_never_written(tmp_path):
    before = tree_digest(LIVE_HOME)
    env = live_env(tmp_path)
    translate_all(miniswe, env)
    assert cli("list", "--all", env=env).returncode == 0
    assert tree_digest(LIVE_HOME) == before


def test_a_run_id_is_no_digest_of_a_secret_in_its_task(tmp_path):
    """A run's id is a digest of its task, its first reply's id and time: with neither of the
    latter recorded (format 1), `run-` + sha256(task) let whoever reads the id test guesses of
    a secret in the task offline (the rest of the task is in the listing). The digest is of
    the task with each secret replaced by its kind: the same for every user and run."""
    import hashlib

    from redaction import redact

    task = "deploy with DB_PASSWORD=Summer2024!Acme"
    run = json.loads(json.dumps(FORMAT_1))
    run["messages"][1]["content"] = f"Task: {task}\nWork in /tmp/agents/proj-v1."
    home = tmp_path / "home"
    write_run(home, "v1.traj.json", run)
    (session,) = miniswe.scan(str(home / ".config/mini-swe-agent/trajectories/v1.traj.json"), {})
    assert session.native_id != "run-" + hashlib.sha256(f"{task}\x00None\x00None".encode()).hexdigest()[:16]
    with redact.markers_of("another:session"):
        assert redact.kinds_only(task) == "deploy with DB_PASSWORD=«REDACTED:password»"
    assert session.native_id == "run-" + hashlib.sha256(
        "deploy with DB_PASSWORD=«REDACTED:password»\x00None\x00None".encode()).hexdigest()[:16]
