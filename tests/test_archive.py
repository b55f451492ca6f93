"""The archive keeps every session trajectoriz has seen, so that memory outlives the agents' own
clean-up: for every agent (tests/homes.py: live stores, file and database stores alike), a
session archived and then deleted the way its agent deletes it (its files, its database rows)
is listed, shown, searched, exported and served by the mount with the same id, file name and
document bytes as before, marked archived. Then: a run with nothing new archives nothing, an
append costs about the appended bytes, what the opencode extract keeps, and the health report.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from types import SimpleNamespace

import orjson
import pytest

import agents
import archive
import catalog
import memoryfs
from helpers import assert_clear, run_main
from homes import agent_homes, by_agent

DATABASE_AGENTS = {"opencode", "kilo", "crush", "goose", "hermes"}  # many sessions per SQLite file


# the agents' own deletions -----------------------------------------------------------------------
def is_database(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def delete_rows(db: str, native_id: str) -> None:
    """What an agent's clean-up does to a database store: the session's rows go (its sub-agent
    sessions' too), in every table that names sessions."""
    connection = sqlite3.connect(db)
    tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    columns = {t: {row[1] for row in connection.execute(f"PRAGMA table_info({t})")} for t in tables}
    sessions = next(t for t in ("session", "sessions") if t in tables)
    parent = next((c for c in ("parent_id", "parent_session_id") if c in columns[sessions]), None)
    ids, frontier = {native_id}, [native_id]
    while frontier and parent:
        frontier = [row[0] for row in connection.execute(
            f"SELECT id FROM {sessions} WHERE {parent} IN ({','.join('?' * len(frontier))})", frontier)
            if row[0] not in ids]
        ids.update(frontier)
    marks = ",".join("?" * len(ids))
    for table in tables:
        if "session_id" in columns[table]:
            connection.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})", list(ids))
    connection.execute(f"DELETE FROM {sessions} WHERE id IN ({marks})", list(ids))
    connection.commit()
    connection.close()


def dependencies(env, session) -> list[str]:
    return catalog.dependencies(agents.load(session.agent), session.source, env)


def delete_natively(env, gone: list, staying: list) -> None:
    """Delete sessions as their agents do: the rows of a database store; for a file store, the
    session's files (transcript, sub-agent files, side files) that no staying session needs."""
    kept = {path for session in staying for path in dependencies(env, session)}
    for session in gone:
        if session.agent in DATABASE_AGENTS and is_database(session.source):
            delete_rows(session.source, session.native_id)
            continue
        for path in dependencies(env, session):
            if path in kept:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.unlink(path)


def is_gone(env, session, staying: list) -> bool:
    if session.agent in DATABASE_AGENTS and is_database(session.source):
        return True
    return session.source not in {p for s in staying for p in dependencies(env, s)}


# what every channel serves -------------------------------------------------------------------------
def ok(env, *args, cwd=None):
    result = run_main(env, args, cwd=cwd)
    assert_clear(result)
    assert result.returncode == 0, result.stderr
    return result.stdout


def archived_flags(records: list[dict]) -> dict:
    return {r["id"]: r.pop("archived") for r in records}


def mount_files(env, projects: set) -> dict:
    """(project, file name) -> bytes, read through the mount's file system operations."""
    found = {}
    for project in sorted(projects):
        fs = memoryfs.MemoryFS(project, env)
        for name, _, _ in fs.readdir("/", None)[2:]:
            fi = SimpleNamespace(flags=os.O_RDONLY, fh=0, keep_cache=0, direct_io=0)
            fs.open("/" + name, fi)
            size = fs.getattr("/" + name, fi)["st_size"]
            found[project, name] = fs.read("/" + name, size + 1, 0, fi)
            fs.release("/" + name, fi)
    return found


def observed(env, cwd: str, anchor: str, tmp_path, round_name: str) -> SimpleNamespace:
    records = [orjson.loads(line) for line in ok(env, "list", "--all", "--json", cwd=cwd).splitlines()]
    flags = archived_flags(records)
    shown = {r["id"]: ok(env, "show", r["id"], cwd=cwd) for r in records}
    hits = run_main(env, ["search", "--content", anchor, "--json", "--limit", "0"], cwd=cwd)
    assert hits.returncode in (0, 1), hits.stderr
    hit_records = [orjson.loads(line) for line in hits.stdout.splitlines()]
    out = tmp_path / f"export-{round_name}"
    ok(env, "export", "--all", "--out", str(out), cwd=cwd)
    exported = {p.name: p.read_bytes() for p in out.iterdir()}
    projects = {r["cwd"] for r in records if r["cwd"]}
    return SimpleNamespace(records=records, flags=flags, shown=shown, hits=hit_records,
                           exported=exported, mounted=mount_files(env, projects))


def assert_same_service(now: SimpleNamespace, before: SimpleNamespace) -> None:
    assert now.records == before.records  # ids, file names, first messages, projects, sizes
    assert now.shown == before.shown
    assert now.hits == before.hits
    assert now.exported == before.exported
    assert now.mounted == before.mounted


@pytest.mark.parametrize("home", agent_homes(), ids=lambda h: h.agent)
def test_a_session_its_agent_deleted_is_served_from_the_archive_as_before(home, tmp_path):
    env = home.build(tmp_path)
    cwd = env.get("PWD", env["HOME"])
    before = observed(env, cwd, home.anchor, tmp_path, "live")
    assert before.shown and not any(before.flags.values())
    assert before.hits, f"{home.agent}: the anchor {home.anchor!r} finds nothing to compare"
    ok(env, "archive", cwd=cwd)
    sessions = catalog.discover(env).sessions
    first, rest = sessions[:1], sessions[1:]

    delete_natively(env, first, rest)
    ok(env, "archive", cwd=cwd)  # the live sessions archived again: the gone one keeps its copy
    gone = {s.short_id for s in first if is_gone(env, s, rest)}
    middle = observed(env, cwd, home.anchor, tmp_path, "middle")
    assert {i for i, flag in middle.flags.items() if flag} == gone
    assert_same_service(middle, before)

    delete_natively(env, rest, [])
    ok(env, "archive", cwd=cwd)
    after = observed(env, cwd, home.anchor, tmp_path, "after")
    assert all(after.flags.values()) and after.flags.keys() == before.flags.keys()
    assert_same_service(after, before)
    assert catalog.discover(env, use_cache=False).problems == []


def test_agents_counts_the_sessions_served_from_the_archive_only(tmp_path):
    env = by_agent("claude").build(tmp_path)
    ok(env, "archive")
    [gone, *staying] = catalog.discover(env).sessions
    delete_natively(env, [gone], staying)
    rows = {r["agent"]: r for r in map(json.loads, ok(env, "agents", "--json").splitlines())}
    assert (rows["claude"]["sessions"], rows["claude"]["archived_only"]) == (1 + len(staying), 1)
    assert rows["codex"]["archived_only"] == 0
    table = ok(env, "agents").decode()
    assert f"| {1 + len(staying)} (1 archived) |" in table


# incremental, idempotent ---------------------------------------------------------------------------
def archive_json(env, cwd=None) -> dict:
    return orjson.loads(ok(env, "archive", "--json", cwd=cwd))


def archive_bytes(env) -> int:
    total = 0
    for folder, _, files in os.walk(archive.folder(env)):
        total += sum(os.path.getsize(os.path.join(folder, name)) for name in files)
    return total


def test_a_second_run_with_nothing_new_archives_and_writes_nothing(tmp_path):
    env = by_agent("claude").build(tmp_path)
    first = archive_json(env)
    assert first["archived"] == first["sessions_seen"] > 0 and first["bytes_stored"] > 0
    index = os.stat(archive.index_path(env))
    second = archive_json(env)
    assert (second["archived"], second["updated"], second["bytes_native"], second["bytes_stored"]) == (0, 0, 0, 0)
    assert second["unchanged"] == first["sessions_seen"]
    after = os.stat(archive.index_path(env))
    assert (after.st_ino, after.st_mtime_ns) == (index.st_ino, index.st_mtime_ns)


def test_an_append_adds_about_the_appended_bytes_to_the_archive(tmp_path):
    """A transcript grown by 2 MB of new records: the archive grows by about their compressed
    size, not by a new copy of the whole 40 MB transcript (random text: it does not compress)."""
    env = by_agent("claude").build(tmp_path)
    session = next(s for s in catalog.discover(env).sessions if s.agent == "claude")
    lines = open(session.source, "rb").read().splitlines(keepends=True)
    record = json.loads(lines[-1])

    def grow(size: int) -> None:
        with open(session.source, "ab") as handle:
            while size > 0:
                filler = os.urandom(3 * 1024 * 1024 // 4).hex()[: min(size, 1024 * 1024)]
                handle.write(json.dumps({**record, "uuid": os.urandom(8).hex(), "filler": filler}).encode() + b"\n")
                size -= len(filler)
    grow(40 * 1024 * 1024)
    archive_json(env)
    old = archive_bytes(env)
    grow(2 * 1024 * 1024)
    summary = archive_json(env)
    grown = archive_bytes(env) - old
    assert summary["updated"] == 1
    assert 2 * 1024 * 1024 * 0.4 < grown < 2 * 1024 * 1024 * 1.2  # hex text: about 2x in zstd
    assert summary["bytes_native"] < 2.2 * 1024 * 1024
    before = ok(env, "show", session.short_id)
    delete_natively(env, [session], [])
    assert ok(env, "show", session.short_id) == before


def test_a_file_rewritten_otherwise_is_stored_anew_and_the_old_version_goes(tmp_path):
    env = by_agent("claude").build(tmp_path)
    session = catalog.discover(env).sessions[0]
    archive_json(env)
    data = open(session.source, "rb").read()
    with open(session.source, "wb") as handle:  # same size, one byte in the head changed
        handle.write(data.replace(b'"type"', b'"typE"', 1))
    summary = archive_json(env)
    assert summary["updated"] == 1 and summary["bytes_native"] == len(data)
    index = archive.read_index(env)
    paths = [record["path"] for record in index["files"].values()]
    assert paths.count(session.source) == 1  # the old version, needed by nothing, was removed
    blobs = sum(len(files) for _, _, files in os.walk(os.path.join(archive.folder(env), "data")))
    assert blobs == len(index["files"])


def test_the_archive_is_private(tmp_path):
    env = by_agent("opencode").build(tmp_path)
    ok(env, "archive")
    for folder, dirs, files in os.walk(os.path.join(env["HOME"], ".local", "share", "trajectoriz")):
        assert os.stat(folder).st_mode & 0o777 == 0o700, folder
        for name in files:
            assert os.stat(os.path.join(folder, name)).st_mode & 0o777 == 0o600, name


# the database extract -----------------------------------------------------------------------------
def test_the_opencode_extract_holds_only_the_session_and_translates_alike(tmp_path):
    env = by_agent("opencode").build(tmp_path)
    module = agents.load("opencode")
    sessions = catalog.discover(env).sessions
    for session in sessions:
        image = module.extract(session, env)
        path = tmp_path / f"{session.native_id}.db"
        path.write_bytes(image)
        connection = sqlite3.connect(path)
        ids = {row[0] for row in connection.execute("SELECT id FROM session")}
        assert session.native_id in ids and not ids & {s.native_id for s in sessions if s is not session}
        assert connection.execute("SELECT count(*) FROM account").fetchone() == (0,)
        connection.close()
        relocated = catalog.Session.from_cache(session.to_cache())
        relocated.source = str(path)
        assert module.translate(relocated, env) == module.translate(session, env)


def test_the_opencode_signature_changes_with_the_sessions_rows_only(tmp_path):
    env = by_agent("opencode").build(tmp_path)
    module = agents.load("opencode")
    first, second, *_ = catalog.discover(env).sessions
    signatures = (module.extract_signature(first, env), module.extract_signature(second, env))
    connection = sqlite3.connect(first.source)
    connection.execute("UPDATE part SET data = data, time_updated = time_updated + 1 WHERE session_id = ?",
                       (first.native_id,))
    connection.commit()
    connection.close()
    assert module.extract_signature(first, env) != signatures[0]
    assert module.extract_signature(second, env) == signatures[1]
    summary = archive_json(env)  # after a first run: only the changed session is extracted again
    connection = sqlite3.connect(first.source)
    connection.execute("UPDATE message SET time_updated = time_updated + 1 WHERE session_id = ?",
                       (first.native_id,))
    connection.commit()
    connection.close()
    again = archive_json(env)
    assert summary["archived"] == 3 and (again["updated"], again["unchanged"]) == (1, 2)
