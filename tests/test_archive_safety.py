"""The archive survives what a machine does to it: a run killed at any point (every write of a
run, in turn; and at moments of a run in its own process), a full disk, damaged data, and a
user who wants a session gone for good (`forget`: no trace in any folder of trajectoriz's).

The store used mixes the kinds of work a run does: a transcript appended to (Claude Code), a
file rewritten (Gemini CLI), a session deleted by its agent (Codex), a new session, and
database sessions extracted (opencode, Hermes).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import orjson
import pytest

import agents
from archiving import archiver
from atif.serialize import dumps
from discovery import archive, catalog
from rendering import documents
from helpers import LIVE, ROOT, assert_clear, base_env, run_main
from test_archive import delete_natively, ok
from test_memory import append_user_message, copy_session

MIXED = ("claude-2.1.332", "gemini-0.61.0", "codex-0.171.0", "opencode-1.18.33", "hermes-agent-0.19.0")


def mixed_home(tmp_path) -> dict:
    env = base_env(tmp_path)
    for name in MIXED:
        shutil.copytree(os.path.join(LIVE, name), env["HOME"], dirs_exist_ok=True, symlinks=True)
    return env


def live_documents(env) -> dict:
    """(agent, native id) -> the document bytes each live session translates to now."""
    found = {}
    for session in catalog.discover(env, use_cache=False).sessions:
        if not archive.marked(session):
            found[session.agent, session.native_id] = dumps(agents.load(session.agent).translate(session, env))
    return found


def archived_documents(env) -> dict:
    """(agent, native id) -> the document bytes each archived session translates to, from the
    archive alone; raises on an entry that cannot be served."""
    found = {}
    for name in agents.names():
        for session in archive.sessions_of(env, name):
            found[name, session.native_id] = dumps(archive.translate(agents.load(name), session, env))
    return found


def change_everything(env) -> None:
    sessions = {s.agent: [x for x in catalog.discover(env, use_cache=False).sessions if x.agent == s.agent]
                for s in catalog.discover(env, use_cache=False).sessions}
    claude = sessions["claude"][0].source
    append_user_message(claude, "and once more, please")
    copy_session(claude, "0f0f0f0f-0000-4000-8000-000000000001")
    gemini = sessions["gemini"][0].source
    data = open(gemini, "rb").read()
    open(gemini, "wb").write(data.replace(b"SCENARIO", b"SCENARIo", 1))
    delete_natively(env, sessions["codex"][:1], sessions["codex"][1:])
    for agent, change in (("opencode", "UPDATE part SET data = replace(data, 'note.txt', 'note.TXT'), "
                                       "time_updated = time_updated + 1 WHERE session_id = ?"),
                          ("hermes", "UPDATE messages SET timestamp = timestamp + 1 WHERE session_id = ?")):
        connection = sqlite3.connect(sessions[agent][0].source)
        connection.execute(change, (sessions[agent][0].native_id,))
        connection.commit()
        connection.close()


def assert_complete(env, expected: dict) -> None:
    """Every archived session serves its expected document; every version is intact, and the
    archive holds no byte that its index does not name."""
    assert archived_documents(env) == expected
    index = archive.read_index(env)
    for fid, record in index["files"].items():
        assert archive.check_version(env, fid, record) is None
    blobs = {name[: -len(".zst")] for _, _, names in os.walk(os.path.join(archive.folder(env), "data"))
             for name in names}
    assert blobs == set(index["files"])
    assert not [n for n in os.listdir(archive.folder(env)) if n.endswith(".tmp")]


@pytest.fixture(scope="module")
def changed_store(tmp_path_factory):
    """A store archived once (`before`, its archive folder kept aside) and then changed."""
    tmp_path = tmp_path_factory.mktemp("changed")
    env = mixed_home(tmp_path)
    ok(env, "archive")
    old = archived_documents(env)
    assert old == live_documents(env)
    saved = str(tmp_path / "archive-before")
    shutil.copytree(archive.folder(env), saved)
    change_everything(env)
    new = {**old, **live_documents(env)}  # the deleted Codex session keeps its archived document
    assert len(new) == len(old) + 1 and sum(new[k] != old.get(k) for k in new) >= 5
    return env, saved, old, new


def restore(env, saved: str) -> None:
    shutil.rmtree(archive.folder(env))
    shutil.copytree(saved, archive.folder(env))


def forked_archive(env) -> int:
    """`trajectoriz archive` in a forked child (no interpreter start-up): its wait status."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = run_main(env, ["archive"]).returncode
        finally:
            os._exit(code)
    return os.waitpid(pid, 0)[1]


def assert_each_old_or_new(env, old: dict, new: dict) -> None:
    for key, data in archived_documents(env).items():
        assert data in (old.get(key), new[key]), key


def test_a_run_killed_at_any_write_leaves_a_readable_archive_and_the_next_run_completes(changed_store):
    env, saved, old, new = changed_store
    killed = 0
    for after in range(1, 500):
        restore(env, saved)
        status = forked_archive({**env, archiver.CRASH_VARIABLE: str(after)})
        if os.WIFEXITED(status):
            assert os.WEXITSTATUS(status) == 0
            break
        assert os.WTERMSIG(status) == signal.SIGKILL
        killed += 1
        assert_each_old_or_new(env, old, new)  # the previous archive, or some of the new, reads
        ok(env, "archive")
        assert_complete(env, new)
    assert killed >= 10  # every write of the run, from the first to the last, was a kill point
    assert_complete(env, new)


def test_a_run_killed_at_any_moment_leaves_a_readable_archive(changed_store):
    env, saved, old, new = changed_store
    command = [sys.executable, os.path.join(ROOT, "trajectoriz.py"), "archive"]
    for delay in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6):
        restore(env, saved)
        child = subprocess.Popen(command, env=env, cwd=env["HOME"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert_each_old_or_new(env, old, new)
        ok(env, "archive")
        assert_complete(env, new)


# a full disk -----------------------------------------------------------------------------------------
def mount_tmpfs(path: str, size: str) -> str | None:
    os.makedirs(path, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", path],
                          capture_output=True)
    return None if done.returncode == 0 else done.stderr.decode(errors="replace").strip() or "mount failed"


def test_a_full_disk_stops_with_one_clear_error_and_serves_no_half_written_entry(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the archive needs root")
    env = base_env(tmp_path)
    for name in ("claude-2.1.332", "gemini-0.61.0", "codex-0.171.0"):  # no store under XDG_DATA_HOME
        shutil.copytree(os.path.join(LIVE, name), env["HOME"], dirs_exist_ok=True)
    big = catalog.discover(env).sessions[0].source
    with open(big, "a") as handle:  # about 600 kB compressed: the disk fills at every stage
        handle.write(json.dumps({"type": "noise", "text": os.urandom(400_000).hex()}) + "\n")
    expected = live_documents(env)
    full = 0
    for size_kb in range(8, 1000, 60):
        disk = str(tmp_path / f"data-{size_kb}")
        problem = mount_tmpfs(disk, f"{size_kb}k")
        if problem:
            pytest.skip(f"cannot mount a tmpfs: {problem}")
        try:
            result = run_main({**env, "XDG_DATA_HOME": disk}, ["archive"])
            assert_clear(result)
            if result.returncode:
                full += 1
                assert result.returncode == 2
                assert result.stderr.decode().startswith("trajectoriz: the disk holding the archive is full")
            copy = str(tmp_path / f"copy-{size_kb}")  # served from a disk with room for the copies
            if os.path.exists(os.path.join(disk, "trajectoriz")):
                shutil.copytree(os.path.join(disk, "trajectoriz"), os.path.join(copy, "trajectoriz"))
        finally:
            subprocess.run(["umount", disk], check=True)
        served = archived_documents({**env, "XDG_DATA_HOME": copy})
        assert all(data == expected[key] for key, data in served.items())
        assert result.returncode or served == expected
    assert full >= 5


# damage ------------------------------------------------------------------------------------------------
def archived_claude(tmp_path):
    env = mixed_home(tmp_path)
    ok(env, "archive")
    session = next(s for s in catalog.discover(env).sessions if s.agent == "claude")
    before = ok(env, "show", session.short_id)
    index = archive.read_index(env)
    fid = index["current"][session.source]
    return env, session, before, fid


@pytest.mark.parametrize("damage", ["flipped byte", "cut short", "other valid zstd"])
def test_a_damaged_entry_is_never_served_and_verify_reports_it(tmp_path, damage):
    env, session, before, fid = archived_claude(tmp_path)
    others = {s.short_id: ok(env, "show", s.short_id) for s in catalog.discover(env).sessions
              if s.short_id != session.short_id}
    saved = str(tmp_path / "saved-native")
    shutil.copy2(session.source, saved)
    delete_natively(env, [session], [])
    blob = archive.blob_path(env, fid)
    data = bytearray(open(blob, "rb").read())
    if damage == "flipped byte":
        data[len(data) // 2] ^= 0x40
    elif damage == "cut short":
        del data[-10:]
    else:
        import zstandard

        native = open(saved, "rb").read()
        data = bytearray(zstandard.ZstdCompressor().compress(native.replace(b"note.txt", b"NOTE.txt")))
    open(blob, "wb").write(bytes(data))

    listed = [json.loads(line) for line in ok(env, "list", "--all", "--json").splitlines()]
    assert any(r["id"] == session.short_id and r["archived"] for r in listed)
    shown = json.loads(ok(env, "show", session.short_id))
    assert "damaged" in shown["extra"]["error"] and shown != json.loads(before)
    assert {s: ok(env, "show", s) for s in others} == others
    verify = run_main(env, ["archive", "--verify"])
    assert verify.returncode == 1 and session.source in verify.stdout.decode()
    assert "damaged" in verify.stdout.decode()

    shutil.copy2(saved, session.source)  # the agent still has it: the next run stores it anew
    assert archive_summary(env)["updated"] == 1
    assert run_main(env, ["archive", "--verify"]).returncode == 0
    delete_natively(env, [session], [])
    assert ok(env, "show", session.short_id) == before


def archive_summary(env) -> dict:
    return orjson.loads(ok(env, "archive", "--json"))


def test_a_damaged_index_is_left_alone_and_reported(tmp_path):
    env, session, before, fid = archived_claude(tmp_path)
    path = archive.index_path(env)
    data = bytearray(open(path, "rb").read())
    data[-5] ^= 1
    open(path, "wb").write(bytes(data))
    result = run_main(env, ["archive"])
    assert_clear(result)
    assert result.returncode == 2 and b"damaged" in result.stderr
    assert open(path, "rb").read() == bytes(data)
    listed = run_main(env, ["list", "--all", "--json"])
    assert listed.returncode == 0 and b"archived sessions not read" in listed.stderr


# forget -------------------------------------------------------------------------------------------------
MARKER = b"zqxplantedmarkerzqx"


def traces(*roots: str) -> list[str]:
    """Files under `roots` holding MARKER, as bytes or once decompressed (zstd, every frame)."""
    import zstandard

    found = []
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                data = open(path, "rb").read()
                try:
                    data += zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
                except zstandard.ZstdError:
                    pass
                if MARKER in data:
                    found.append(path)
    return found


def planted_home(tmp_path):
    env = mixed_home(tmp_path)
    sessions = catalog.discover(env).sessions
    claude = next(s for s in sessions if s.agent == "claude")
    opencode = next(s for s in sessions if s.agent == "opencode")
    append_user_message(claude.source, f"remember {MARKER.decode()} for me")
    connection = sqlite3.connect(opencode.source)
    connection.execute("UPDATE part SET data = replace(data, 'note.txt', ?) WHERE session_id = ?",
                       (f"note.txt {MARKER.decode()}", opencode.native_id))
    connection.commit()
    connection.close()
    return env, claude, opencode


def use_everything(env, project_sessions) -> None:
    ok(env, "list", "--all")
    for session in project_sessions:
        ok(env, "show", session.short_id)
    run_main(env, ["search", "--content", MARKER.decode()])
    run_main(env, ["search", MARKER.decode()])


def ours(env) -> tuple[str, str]:
    return os.path.join(env["HOME"], ".local", "share", "trajectoriz"), env["XDG_CACHE_HOME"]


def test_forget_leaves_no_trace_in_the_archive_or_any_cache(tmp_path):
    env, claude, opencode = planted_home(tmp_path)
    planted = [claude, opencode]
    use_everything(env, planted)  # live renderings, search texts, facts, the index
    ok(env, "archive")
    delete_natively(env, planted, [])
    use_everything(env, planted)  # archived renderings too
    assert len({os.path.dirname(p) for p in traces(*ours(env))}) >= 3  # the marker was everywhere
    others = {s.short_id: ok(env, "show", s.short_id) for s in catalog.discover(env).sessions
              if s.short_id not in (claude.short_id, opencode.short_id)}

    facts = documents.Facts(env).entries
    assert {documents.cache_key(s) for s in planted} <= facts.keys()
    result = run_main(env, ["forget", claude.short_id, opencode.short_id])
    assert result.returncode == 0, result.stderr
    assert traces(*ours(env)) == []
    assert not {documents.cache_key(s) for s in planted} & documents.Facts(env).entries.keys()
    listed = {json.loads(line)["id"] for line in ok(env, "list", "--all", "--json").splitlines()}
    assert listed == others.keys()
    assert {s: ok(env, "show", s) for s in others} == others
    ok(env, "archive")
    assert traces(*ours(env)) == []


def test_forget_before_a_date_and_a_live_session_is_not_archived_again(tmp_path):
    env = mixed_home(tmp_path)
    ok(env, "archive")
    sessions = catalog.discover(env).sessions
    assert len(archive.read_index(env)["sessions"]) == len(sessions)
    result = run_main(env, ["forget", "--before", "2100-01-01"])
    assert result.returncode == 0, result.stderr
    assert archive.read_index(env)["sessions"] == {}
    assert archive_summary(env)["archived"] == 0  # still live, and forgotten: not archived again
    said = ok(env, "archive").decode()  # and it says so (issue 42)
    assert said.startswith(f"Archived 0 new and 0 changed session(s) of {len(sessions)} (0 unchanged, "
                           f"{len(sessions)} skipped: forgotten (trajectoriz forget)): "), said
    assert [name for _, _, names in os.walk(os.path.join(archive.folder(env), "data")) for name in names] == []
    listed = [json.loads(line) for line in ok(env, "list", "--all", "--json").splitlines()]
    assert len(listed) == len(sessions) and not any(r["archived"] for r in listed)


def test_forget_needs_something_to_forget(tmp_path):
    env = mixed_home(tmp_path)
    result = run_main(env, ["forget"])
    assert_clear(result)
    assert result.returncode == 2 and b"--before" in result.stderr
    assert run_main(env, ["forget", "cl-00000000"]).returncode == 2


def test_forget_says_when_a_file_other_sessions_keep_holds_what_it_forgets(tmp_path, monkeypatch):
    """A Goose session over what an extract holds is archived as the store's database, which
    holds every session's rows: forgetting another session of that store said "every cached
    copy removed" while its rows stayed in that file. It says so now, and forgetting the
    sessions that keep the file too leaves no trace."""
    from agents import sqlite_ro
    from homes import by_agent

    env = by_agent("goose").build(tmp_path)
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_ROWS", 4)  # the bigger sessions: kept whole
    sessions = catalog.discover(env).sessions
    victim = next(s for s in sessions if s.native_id == "20260101_3")
    with sqlite3.connect(victim.source) as connection:
        connection.execute("UPDATE messages SET content_json = replace(content_json, 'hi', ?) WHERE session_id = ?",
                           (f"hi {MARKER.decode()}", victim.native_id))
    ok(env, "archive")
    data = os.path.join(env["HOME"], ".local", "share", "trajectoriz")
    assert traces(data)
    result = run_main(env, ["forget", victim.short_id])
    assert result.returncode == 0 and traces(data)
    assert b"other archived session(s) keep a file these were recorded in too" in result.stderr
    result = run_main(env, ["forget", *(s.short_id for s in sessions)])
    assert b"keep a file" not in result.stderr and traces(data) == []
