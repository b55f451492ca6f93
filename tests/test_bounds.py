"""The bounds on what a native file can cost (agents/base.py states each one): a zstd bomb, a
line of hundreds of megabytes, a session file past its limit, files too large to read whole, a
first prompt of megabytes that discovery must still read, values nested a thousand levels deep,
a title of millions of words, a flood of records.

The costly cases run the CLI as a user runs it, in a child process whose peak memory the kernel
reports (the child's and its reaped workers'): each has a timeout, none a time assert. A child
also gets an address-space cap, so that a regression fails the test instead of exhausting a
shared machine.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

import pytest

from agents import base, cline_tasks
from discovery import catalog
from rendering import documents
from helpers import ROOT, SAMPLES, base_env, run_main
from homes import by_agent, live_store
from test_scoping import rewrite_store

RSS_BOUND = 512 * 1024 * 1024        # what a command may reach on these hostile files
ADDRESS_CAP = 3 * 1024 * 1024 * 1024  # a measured child cannot map more


# running the CLI, measured ------------------------------------------------------------------------
@dataclass
class Measured:
    returncode: int
    stdout: bytes
    stderr: bytes
    peak_rss: int   # bytes


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_CAP, ADDRESS_CAP))


def run_measured(env: dict, *args: str, timeout: float = 300) -> Measured:
    """`trajectoriz ARGS` in a child process, killed after `timeout` seconds; its peak RSS is
    the kernel's (wait4), which includes the pool workers it waited for."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, os.path.join(ROOT, "trajectoriz.py"), *args], env=env,
                                 cwd=env["HOME"], stdout=out, stderr=err, preexec_fn=_cap_address_space)
        killer = threading.Timer(timeout, child.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            killer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(child.returncode, out.read(), err.read(), usage.ru_maxrss * 1024)


def assert_bounded(result: Measured) -> None:
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-2000:]
    assert result.peak_rss < RSS_BOUND, f"peak RSS {result.peak_rss >> 20} MiB"


# native sessions ----------------------------------------------------------------------------------
def live_rollout() -> str:
    return sorted(glob.glob(os.path.join(live_store("codex"), ".codex", "sessions", "*", "*", "*",
                                         "rollout-*.jsonl")))[0]


def live_claude_session() -> str:
    return sorted(glob.glob(os.path.join(live_store("claude"), ".claude", "projects", "*", "*.jsonl")))[0]


def steps_of(doc: dict) -> list:
    return [(s["source"], s.get("message"), len(s.get("tool_calls") or [])) for s in doc["steps"]]


def document_of(path: str, tmp_path, target: str) -> dict:
    """The document of the one session of a native file placed at `target` in a fresh home."""
    env = base_env(tmp_path / "reference", str(tmp_path / "reference" / "home"))
    destination = os.path.join(env["HOME"], target)
    os.makedirs(os.path.dirname(destination))
    shutil.copy(path, destination)
    (session,) = catalog.discover(env, use_cache=False).sessions
    return documents.translate(session, env)


def write_zstd(path: str, prefix: bytes, zeros: int) -> None:
    """`prefix` then `zeros` zero bytes, compressed by streaming, as a writer would (4 GiB of
    zeros come to about 130 KB)."""
    import zstandard

    compressor = zstandard.ZstdCompressor().compressobj()
    chunk = bytes(16 * 1024 * 1024)
    with open(path, "wb") as handle:
        handle.write(compressor.compress(prefix))
        for _ in range(zeros // len(chunk)):
            handle.write(compressor.compress(chunk))
        handle.write(compressor.flush())


def listed(result) -> dict:
    return {row["native_id"]: row for row in map(json.loads, result.stdout.splitlines())}


# a zstd bomb --------------------------------------------------------------------------------------
def test_a_zstd_bomb_is_read_to_its_limit_in_bounded_memory(tmp_path):
    """Two Codex archives of 4 GiB of zeros (about 130 KB each on disk), one after a real
    session: `list`, `show` and `export` finish with bounded memory, the real session's steps
    are all there, and the document says where reading stopped."""
    source = live_rollout()
    expected = document_of(source, tmp_path, ".codex/sessions/2026/11/29/" + os.path.basename(source))
    env = base_env(tmp_path)
    archived = os.path.join(env["HOME"], ".codex", "archived_sessions")
    os.makedirs(archived)
    bomb = os.path.join(archived, "rollout-2026-01-01T00-00-00-0000aaaa-0000-0000-0000-000000000000.jsonl.zst")
    write_zstd(bomb, b"", 4 << 30)
    with open(source, "rb") as handle:
        write_zstd(os.path.join(archived, os.path.basename(source) + ".zst"), handle.read(), 4 << 30)
    assert os.path.getsize(bomb) < 1 << 20

    result = run_measured(env, "list", "--all", "--json", "--steps")
    assert_bounded(result)
    rows = listed(result)
    assert rows[expected["session_id"]]["steps"] == len(expected["steps"])
    assert rows[expected["session_id"]]["first_message"] == expected["extra"]["title"]
    assert len(rows) == 2

    result = run_measured(env, "show", expected["session_id"])
    assert_bounded(result)
    doc = json.loads(result.stdout)
    assert steps_of(doc) == steps_of(expected)
    assert "the decompressed size limit of 1 GiB was reached; the rest was not read" in doc["extra"]["warnings"]

    result = run_measured(env, "export", "--all", "--out", str(tmp_path / "out"))
    assert_bounded(result)
    assert len(glob.glob(str(tmp_path / "out" / "*.atif.json"))) == 2


# lines and session files past their limits ---------------------------------------------------------
def write_session_with(path: str, source: str, after_line: int, writer) -> None:
    """A copy of the JSONL `source` with what `writer(handle)` writes after its line `after_line`."""
    with open(source, "rb") as handle:
        lines = handle.readlines()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.writelines(lines[:after_line])
        writer(handle)
        handle.writelines(lines[after_line:])


def test_a_line_over_the_line_limit_is_skipped_without_being_held(tmp_path):
    """A Claude session with a 300 MB record in it (a valid one: a prompt pasted whole): the
    record is skipped with a warning, read through in pieces, and the session's other steps
    are all there."""
    source = live_claude_session()
    target = os.path.join(".claude", "projects", os.path.basename(os.path.dirname(source)), os.path.basename(source))
    expected = document_of(source, tmp_path, target)
    env = base_env(tmp_path)

    def huge_record(handle):
        handle.write(b'{"type":"user","uuid":"huge","timestamp":"2026-11-29T20:42:18Z",'
                     b'"message":{"role":"user","content":"')
        for _ in range(300):
            handle.write(b"x" * (1 << 20))
        handle.write(b'"}}\n')

    write_session_with(os.path.join(env["HOME"], target), source, 3, huge_record)
    result = run_measured(env, "list", "--all", "--json")
    assert_bounded(result)
    assert listed(result)[expected["session_id"]]["first_message"] == expected["extra"]["title"]
    result = run_measured(env, "show", expected["session_id"])
    assert_bounded(result)
    doc = json.loads(result.stdout)
    assert steps_of(doc) == steps_of(expected)
    assert "1 line(s) over the 256 MiB limit of one record skipped, first at line 4" in doc["extra"]["warnings"]


def test_a_session_file_is_read_up_to_its_limit(tmp_path):
    """A Claude session followed by a hole of zeros making it 1.06 GiB (a sparse file, a
    damaged disk): reading stops at 1 GiB, with a warning, and the session's steps are kept."""
    source = live_claude_session()
    target = os.path.join(".claude", "projects", os.path.basename(os.path.dirname(source)), os.path.basename(source))
    expected = document_of(source, tmp_path, target)
    env = base_env(tmp_path)
    path = os.path.join(env["HOME"], target)
    os.makedirs(os.path.dirname(path))
    shutil.copy(source, path)
    os.truncate(path, (1 << 30) + (64 << 20))
    result = run_measured(env, "show", expected["session_id"])
    assert_bounded(result)
    doc = json.loads(result.stdout)
    assert steps_of(doc) == steps_of(expected)
    assert "the limit of 1 GiB read of one session file was reached; the rest was not read" in doc["extra"]["warnings"]


def test_a_flood_of_records_is_read_up_to_the_record_limit(tmp_path):
    """A real session followed by two million empty records (6 MB that would cost a dict
    each): the first million records are read, the session's own among them, and the reader
    says where it stopped."""
    source = live_claude_session()
    path = str(tmp_path / "flood.jsonl")
    shutil.copy(source, path)
    with open(path, "ab") as handle:
        handle.write(b"{}\n" * 2_000_000)
    with open(source, "rb") as handle:
        own = [json.loads(line) for line in handle]
    reader = base.JsonlReader(path)
    records = list(reader)
    assert len(records) == 1_000_000 and records[:len(own)] == own
    assert reader.problems() == [f"the limit of 1,000,000 records was reached at line {1_000_001}; "
                                 "the rest was not read"]


# files read whole ------------------------------------------------------------------------------------
def _cline_task(root) -> tuple[dict, str]:
    env = base_env(root)
    task = os.path.join(env["HOME"], ".config", "Code", "User", "globalStorage", "saoudrizwan.claude-dev",
                        "tasks", "1777073100000")
    os.makedirs(task)
    shutil.copy(os.path.join(SAMPLES, "cline", "mra04242026", cline_tasks.API_HISTORY), task)
    return env, os.path.join(task, cline_tasks.API_HISTORY)


def _placed(agent: str, sample: str, target: str):
    def build(root) -> tuple[dict, str]:
        env = base_env(root)
        path = os.path.join(env["HOME"], target)
        os.makedirs(os.path.dirname(path))
        shutil.copy(sample, path)
        return env, path
    return build


def _live(agent: str, pattern: str):
    def build(root) -> tuple[dict, str]:
        env = by_agent(agent).build(root)
        return env, sorted(glob.glob(os.path.join(env["HOME"], pattern)))[0]
    return build


WHOLE_FILES = {
    "amp": _placed("amp", os.path.join(SAMPLES, "amp", "cass", "threads", "thread-001.json"),
                   ".local/share/amp/threads/thread-001.json"),
    "mswea": _live("mswea", ".config/mini-swe-agent/trajectories/*.traj.json"),
    "gemini": _placed("gemini", os.path.join(SAMPLES, "gemini", "cass", "tmp", "hash123", "chats", "session-test.json"),
                      ".gemini/tmp/hash123/chats/session-test.json"),
    "copilot": _placed("copilot", os.path.join(SAMPLES, "copilot", "cass", "legacy_history_human.json"),
                       ".copilot/history-session-state/legacy_history_human.json"),
    "cline": _live("cline", ".cline/data/sessions/*/*.messages.json"),
    "cline-task": lambda root: _cline_task(root),
    "continue": _live("continue", ".continue/sessions/[0-9a-f]*.json"),
    "openhands": _live("openhands", ".openhands/conversations/*/events/event-00001-*.json"),
}


@pytest.mark.parametrize("case", WHOLE_FILES)
def test_a_file_over_the_whole_file_limit_is_not_read(case, tmp_path):
    """A session kept as one JSON document, grown past FILE_LIMIT (a sparse tail: nothing is
    written to disk): discovery still lists it, and its document says why it holds nothing."""
    env, path = WHOLE_FILES[case](tmp_path)
    before = sorted(s.source for s in catalog.discover(env, use_cache=False).sessions)
    os.truncate(path, (512 << 20) + 1)
    sessions = catalog.discover(env, use_cache=False).sessions
    assert sorted(s.source for s in sessions) == before
    problem = f"{os.path.basename(path)} is over the 512 MiB limit of a file read whole; it was not read"
    for session in sessions:
        doc = documents.translate(session, env)
        said = doc["extra"].get("warnings", []) + [doc["extra"].get("error") or ""]
        if any(problem in w for w in said):
            return
    raise AssertionError(f"no document says {problem!r}")


# heads with a first prompt of megabytes ------------------------------------------------------------
DATA_URL = "data:image/png;base64,"


def _claude_image(record: dict, image: str) -> bool:
    message = record.get("message")
    if record.get("type") != "user" or not isinstance(message, dict) or not isinstance(message.get("content"), str):
        return False
    message["content"] = [{"type": "text", "text": message["content"]},
                          {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}]
    return True


def _codex_image(record: dict, image: str) -> bool:
    payload = record.get("payload") or {}
    if record.get("type") == "response_item" and payload.get("role") == "user":
        payload["content"].append({"type": "input_image", "image_url": DATA_URL + image})
        return True
    item = payload.get("item") or {}
    if payload.get("type") == "item_completed" and item.get("type") == "UserMessage":
        item["content"].append({"type": "image", "url": DATA_URL + image})
        return True
    return False


def _copilot_image(record: dict, image: str) -> bool:
    if record.get("type") != "user.message":
        return False
    record["data"]["attachments"] = [{"type": "blob", "mimeType": "image/png", "data": image,
                                      "displayName": "pasted-image.png"}]
    return True


def _parts_image(parts: list, image: str) -> bool:
    parts.append({"inlineData": {"mimeType": "image/png", "data": image}})
    return True


def _gemini_image(record: dict, image: str) -> bool:
    return record.get("type") == "user" and isinstance(record.get("content"), list) and \
        _parts_image(record["content"], image)


def _qwen_image(record: dict, image: str) -> bool:
    return record.get("type") == "user" and _parts_image(record["message"]["parts"], image)


def _pi_image(record: dict, image: str) -> bool:
    message = record.get("message") or {}
    if record.get("type") != "message" or message.get("role") != "user":
        return False
    message["content"].append({"type": "image", "data": image, "mimeType": "image/png"})
    return True


def _kimi_image(record: dict, image: str) -> bool:
    message = record.get("message") or {}
    if message.get("type") != "TurnBegin":
        return False
    payload = message["payload"]
    payload["user_input"] = [{"type": "text", "text": payload["user_input"]},
                             {"type": "image_url", "image_url": {"url": DATA_URL + image}}]
    return True


def _droid_image(record: dict, image: str) -> bool:
    message = record.get("message") or {}
    if record.get("type") != "message" or message.get("role") != "user":
        return False
    message["content"].append({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                           "data": image}})
    return True


def _cline_image(record: dict, image: str) -> bool:
    if record.get("role") != "user":
        return False
    record["content"].insert(1, {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                             "data": image}})
    return True


def _gptme_text(record: dict, image: str) -> bool:
    """gptme keeps an image as a path beside the message: its megabytes prompt is pasted text."""
    if record.get("role") != "user":
        return False
    record["content"] += "\n\n" + image
    return True


IMAGES = {"claude": _claude_image, "codex": _codex_image, "copilot": _copilot_image, "gemini": _gemini_image,
          "qwen": _qwen_image, "pi": _pi_image, "kimi": _kimi_image, "droid": _droid_image, "cline": _cline_image,
          "omp": _pi_image, "gptme": _gptme_text}


def head_home(agent: str, root) -> dict:
    """The agent's store (Cline's: a VS Code task, whose working directory is only in its
    history), its recorded projects moved under `root`, where they exist."""
    if agent == "cline":
        return _cline_task(root)[0]
    env = by_agent(agent).build(root)
    if agent == "copilot":  # the flat layout: no workspace.yaml to name the session
        for log in glob.glob(os.path.join(env["HOME"], ".copilot", "session-state", "*", "events.jsonl")):
            os.rename(log, os.path.dirname(log) + ".jsonl")
            shutil.rmtree(os.path.dirname(log))
    moves = [(f"/tmp/agents/proj-{agent}{end}", str(root / "agents" / f"proj-{agent}{end}")) for end in ("-other", "")]
    rewrite_store(env["HOME"], moves)
    for _, project in moves:
        os.makedirs(project)
    return env


def session_file(session) -> str:
    return os.path.join(session.source, cline_tasks.API_HISTORY) if os.path.isdir(session.source) else session.source


def add_image(path: str, agent: str, prompt: str, image: str) -> None:
    """The records of `path` that hold `prompt` (the first user message, and for Codex its
    event too) given an image, in the agent's own form."""
    with open(path, "rb") as handle:
        text = handle.read().decode()
    whole = not path.endswith(".jsonl")
    records = json.loads(text) if whole else [json.loads(line) for line in text.splitlines()]
    changed = sum(IMAGES[agent](record, image) for record in records if prompt in json.dumps(record))
    assert changed, f"no record of {path} holds {prompt!r}"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(records) if whole else "".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("megabytes", [1, 10])
@pytest.mark.parametrize("agent", list(IMAGES))
def test_a_first_prompt_of_megabytes_is_found_by_discovery(agent, megabytes, tmp_path):
    """A real session whose first prompt carries a pasted image (1 MB and 10 MB of base64, past
    the 256 KiB head): discovery still finds its working directory, title and model, and
    `list` in its project shows it with its first message."""
    env = head_home(agent, tmp_path)
    baseline = sorted((s for s in catalog.discover(env, [agent], use_cache=False).sessions if s.title and s.cwd),
                      key=lambda s: s.source)[0]
    image = base64.b64encode(bytes(range(256)) * (megabytes * 3 * 1024)).decode()
    add_image(session_file(baseline), agent, baseline.title[:60], image)
    found = {s.native_id: s for s in catalog.discover(env, [agent], use_cache=False).sessions}[baseline.native_id]
    assert (found.cwd, found.model, found.started) == (baseline.cwd, baseline.model, baseline.started)
    assert found.title.startswith(baseline.title)
    if agent != "cline":  # (its task ran on Windows)
        rows = listed(run_main(env, ["list", "--dir", baseline.cwd, "--json"]))
        assert rows[baseline.native_id]["first_message"] == found.title


# nesting and huge strings --------------------------------------------------------------------------
def nested(depth: int) -> str:
    return "[" * depth + '"x"' + "]" * depth


def test_a_record_nested_a_thousand_levels_deep_is_read(tmp_path):
    """A Claude session whose first prompt carries a block nested 1000 levels deep (a depth
    the JSON parser accepts, and printing or walking it would exhaust the stack): the session
    is listed with its first message, and its document keeps every step, saying what was cut."""
    source = live_claude_session()
    target = os.path.join(".claude", "projects", os.path.basename(os.path.dirname(source)), os.path.basename(source))
    expected = document_of(source, tmp_path, target)
    env = base_env(tmp_path)
    path = os.path.join(env["HOME"], target)
    with open(source, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    index = next(i for i, line in enumerate(lines) if '"type":"user"' in line)
    record = json.loads(lines[index])
    record["message"]["content"] = [{"type": "text", "text": record["message"]["content"]}, "@@deep@@"]
    lines[index] = json.dumps(record).replace('"@@deep@@"', nested(1000))
    os.makedirs(os.path.dirname(path))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    (session,) = catalog.discover(env, use_cache=False).sessions
    assert session.title.startswith(expected["extra"]["title"])
    doc = documents.translate(session, env)
    assert [s["source"] for s in doc["steps"]] == [s["source"] for s in expected["steps"]]
    assert "1 record(s) nested deeper than 200 levels: the deeper parts were replaced by a note" in \
        doc["extra"]["warnings"]


def test_a_truncated_document_with_a_member_too_deep_to_parse_keeps_the_rest(tmp_path):
    """An Amp thread cut short while writing a member nested 5000 levels deep (too deep for
    the parser): its complete members are salvaged, the messages with them."""
    env, path = WHOLE_FILES["amp"](tmp_path)
    (before,) = [documents.translate(s, env) for s in catalog.discover(env, use_cache=False).sessions]
    with open(path, encoding="utf-8") as handle:
        thread = json.load(handle)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(thread)[:-1] + ', "deep": ' + "[" * 5000)
    (session,) = catalog.discover(env, use_cache=False).sessions
    doc = documents.translate(session, env)
    assert steps_of(doc) == steps_of(before)
    assert any(w.startswith("the file is not complete JSON") for w in doc["extra"]["warnings"])


def test_a_title_of_millions_of_words_costs_no_word_objects(tmp_path):
    """A first prompt of 16 million words (32 MB): discovery's title is its first words, found
    without splitting the whole text (a string object per word would cost a gigabyte). A search
    of titles reads no session beyond discovery."""
    env = base_env(tmp_path)
    path = os.path.join(env["HOME"], ".claude", "projects", "-p", "s.jsonl")
    os.makedirs(os.path.dirname(path))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{"type": "user", "uuid": "u1", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z", '
                     '"message": {"role": "user", "content": "' + "a " * (16 << 20) + '"}}\n')
    result = run_measured(env, "search", "--json", "a a a")
    assert_bounded(result)
    (row,) = map(json.loads, result.stdout.splitlines())
    assert row["first_message"] == ("a " * 100)[:199] + "…"


def test_a_side_file_that_is_a_fifo_is_never_opened(tmp_path):
    """Copilot's workspace.yaml made a FIFO: discovery does not wait for a writer that never
    comes (an open would block); the session is listed from its event log."""
    env = by_agent("copilot").build(tmp_path)
    log = sorted(glob.glob(os.path.join(env["HOME"], ".copilot", "session-state", "*", "events.jsonl")))[0]
    workspace = os.path.join(os.path.dirname(log), "workspace.yaml")
    os.remove(workspace)
    os.mkfifo(workspace)
    result = run_measured(env, "search", "--json", "SCENARIO", timeout=60)
    assert result.returncode == 0, result.stderr
    assert log in [json.loads(line)["source"] for line in result.stdout.splitlines()]


# text that makes a lazy regex quadratic --------------------------------------------------------------
def _claude_hostile(root) -> tuple[dict, str]:
    env = by_agent("claude").build(root)
    path = sorted(glob.glob(os.path.join(env["HOME"], ".claude", "projects", "*", "*.jsonl")))[0]
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    first = next(r for r in records if r.get("type") == "user")
    first["message"]["content"] = "<command-name>" * 100_000
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    return env, path


def _cline_cli_hostile(root) -> tuple[dict, str]:
    env = by_agent("cline").build(root)
    path = sorted(p for p in glob.glob(os.path.join(env["HOME"], ".cline", "data", "sessions", "*", "*.json"))
                  if not p.endswith(".messages.json"))[0]
    with open(path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    manifest["prompt"] = "<task>" * 100_000
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle)
    return env, path


def _cline_task_hostile(root) -> tuple[dict, str]:
    env, path = _cline_task(root)
    with open(path, encoding="utf-8") as handle:
        history = json.load(handle)
    history[0]["content"][0]["text"] = "<task>" * 40_000
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(history, handle)
    return env, os.path.dirname(path)


@pytest.mark.parametrize("plant", [_claude_hostile, _cline_cli_hostile, _cline_task_hostile],
                         ids=["claude-command", "cline-manifest", "cline-task"])
def test_an_opening_tag_repeated_without_its_closing_does_not_hang(plant, tmp_path):
    """A first prompt of 100,000 `<command-name>` (or `<task>`) with no closing tag: finding a
    command or the human's words in it is linear, so `list` (discovery and translation) is not
    held for hours."""
    env, source = plant(tmp_path)
    result = run_measured(env, "list", "--all", "--json", timeout=60)
    assert result.returncode == 0, result.stderr
    assert source in [row["source"] for row in listed(result).values()]


def test_a_first_line_of_megabytes_is_read_in_a_few_growing_pieces(tmp_path, monkeypatch):
    """A head's line longer than a read is read in pieces as large as what is already pending:
    a 24 MB first record takes about a dozen reads, each copying what came before once, not
    one read of 16 KiB per piece with everything before copied again each time (which took
    seconds for a 32 MB line)."""
    path = tmp_path / "long.jsonl"
    first = {"type": "user", "message": {"role": "user", "content": "x" * (24 << 20)}, "cwd": "/w"}
    path.write_text(json.dumps(first) + "\n" + json.dumps({"type": "assistant", "message": {"model": "m"}}) + "\n")
    reads = []
    real = base.open_binary

    class Counted:
        def __init__(self, handle):
            self.handle = handle

        def read(self, size=-1):
            data = self.handle.read(size)
            reads.append(len(data))
            return data

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr(base, "open_binary", lambda p: Counted(real(p)))
    records = list(base.head_records(str(path)))
    assert [r["type"] for r in records] == ["user", "assistant"]
    assert len(reads) <= 16 and sum(reads) == path.stat().st_size
