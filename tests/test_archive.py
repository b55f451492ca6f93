"""The archive keeps every session trajectoriz has seen, so that memory outlives the agents' own
clean-up: for every agent (tests/homes.py: live stores, file and database stores alike), a
session archived and then deleted the way its agent deletes it (its files, its database rows)
is listed, shown, searched, exported and served by the mount with the same id, file name and
document bytes as before, marked archived; a database session, from an extract of its own rows
holding no row of another session. Then: a run with nothing new archives nothing, an append
costs about the appended bytes, the health report; the database extracts: signatures that
change with their session's rows only, sub-agent sessions and parent loops, hostile schemas,
bounds (a session bigger than a translation reads, a value over the limit), damaged pages, a
session deleted while a run is under way.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
from contextlib import closing
from types import SimpleNamespace

import orjson
import pytest

import agents
from agents import sqlite_extract, sqlite_ro
from archiving import archiver
from core import cache
from discovery import archive, catalog
from mount import memoryfs
from helpers import ROOT, assert_clear, cli, run_main
from homes import agent_homes, by_agent
from test_memory import LONG_AGO_NS, append_user_message, client, mount, needs_fuse, settle, take_down

DATABASE_AGENTS = {"opencode", "kilo", "crush", "goose", "hermes"}  # many sessions per SQLite file
EMBEDDING = DATABASE_AGENTS - {"hermes"}  # a document embeds its sub-agent sessions (Hermes lists them)


# the agents' own deletions -----------------------------------------------------------------------
def is_database(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def sessions_table(connection) -> str:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return next(t for t in ("session", "sessions") if t in tables)


def columns(connection, table: str) -> set:
    return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}


def session_tree(connection, native_id: str) -> set:
    """The session and its sub-agent sessions, at any depth."""
    sessions = sessions_table(connection)
    parent = next((c for c in ("parent_id", "parent_session_id") if c in columns(connection, sessions)), None)
    ids, frontier = {native_id}, [native_id]
    while frontier and parent:
        frontier = [row[0] for row in connection.execute(
            f"SELECT id FROM {sessions} WHERE {parent} IN ({','.join('?' * len(frontier))})", frontier)
            if row[0] not in ids]
        ids.update(frontier)
    return ids


def delete_rows(db: str, native_id: str) -> None:
    """What an agent's clean-up does to a database store: the session's rows go (its sub-agent
    sessions' too), in every table that names sessions, and the rows that name those by a
    foreign key (opencode's parts name their message) go with them; then a checkpoint writes
    it all into the database file and empties the WAL."""
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA foreign_keys = ON")
    tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    ids = list(session_tree(connection, native_id))
    marks = ",".join("?" * len(ids))
    for table in tables:
        if "session_id" in columns(connection, table):
            connection.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})", ids)
    connection.execute(f"DELETE FROM {sessions_table(connection)} WHERE id IN ({marks})", ids)
    connection.commit()
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
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


# what the archive keeps of a database session ---------------------------------------------------------
def archived_image(env, session, folder) -> str:
    """The database image the archive keeps of a database session: its one file, at the
    store's path, extracted (a signature recorded); written out into `folder`."""
    index = archive.read_index(env)
    entry = index["sessions"][archive.key_of(session)]
    [(path, kind, fid, length)] = entry["files"]
    assert (path, kind) == (session.source, "file") and entry["signature"]
    data = bytearray()
    archive.read_version(env, fid, index["files"][fid], length, data.extend)
    image = os.path.join(folder, f"{fid}.db")
    with open(image, "wb") as handle:
        handle.write(data)
    return image


def foreign_rows(image: str, tree: set) -> list:
    """(table, key) of the rows of an extract that belong to no session of `tree`: rows of its
    sessions table, or naming a session (`session_id`), outside it; rows of its sessions'
    project outside theirs; rows of any other table (a virtual table's own bookkeeping aside)."""
    with closing(sqlite3.connect(image)) as connection:
        sessions = sessions_table(connection)
        tables = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
        virtual = [name for name, sql in tables if sql.upper().startswith("CREATE VIRTUAL")]
        found = []
        for name, _ in tables:
            if name == "sqlite_sequence" or any(name.startswith(v + "_") for v in virtual):
                continue
            key, allowed = "NULL", set()
            if name == sessions or "session_id" in columns(connection, name):
                key, allowed = ("id" if name == sessions else "session_id"), tree
            elif name == "project":
                key = "id"
                allowed = {row[0] for row in connection.execute(f"SELECT project_id FROM {sessions}")}
            found += [(name, row[0]) for row in connection.execute(f"SELECT {key} FROM {name}")
                      if row[0] not in allowed]
    return found


def assert_extracted_alone(env, sessions: list, folder) -> None:
    """Each database session is archived as an extract holding its rows (and its embedded
    sub-agent sessions') and no row of another session."""
    for session in sessions:
        if session.agent in DATABASE_AGENTS and is_database(session.source):
            with closing(sqlite_ro.connect(session.source)) as store:
                tree = session_tree(store, session.native_id) if session.agent in EMBEDDING else {
                    session.native_id}
            image = archived_image(env, session, folder)
            assert foreign_rows(image, tree) == []
            with closing(sqlite3.connect(image)) as connection:
                ids = {row[0] for row in connection.execute(f"SELECT id FROM {sessions_table(connection)}")}
            assert ids == tree


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
    records = [orjson.loads(line) for line in ok(env, "list", "--all", "--json", "--steps", cwd=cwd).splitlines()]
    flags = archived_flags(records)
    shown = {r["id"]: ok(env, "show", r["id"], cwd=cwd) for r in records}
    hits = run_main(env, ["search", "--content", anchor, "--json", "--limit", "0"], cwd=cwd)
    assert hits.returncode in (0, 1), hits.stderr
    hit_records = [orjson.loads(line) for line in hits.stdout.splitlines()]
    out = tmp_path / f"export-{round_name}"
    ok(env, "export", "--all", "--out", str(out), cwd=cwd)
    exported = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
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
    assert_extracted_alone(env, sessions, tmp_path)
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


def test_an_archive_run_keeps_the_facts_of_what_it_archived(tmp_path, monkeypatch):
    """A project archived daily reads its titles, steps and outcomes (INDEX.md, `list`) without
    rendering: the run rendered what was new, and a second run renders nothing."""
    from rendering import documents

    env = by_agent("claude").build(tmp_path)
    archive_json(env)
    rows = [json.loads(line) for line in ok(env, "list", "--all", "--json").splitlines()]
    assert rows and all(r["steps"] and r["bytes"] for r in rows)
    monkeypatch.setattr(documents, "_rendered", lambda *a: pytest.fail("rendered again"))
    assert archive_json(env)["unchanged"] == len(rows)  # in this process: nothing rendered


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
REWRITTEN = {"opencode": ("part", "data"), "kilo": ("part", "data"), "crush": ("messages", "parts"),
             "goose": ("messages", "content_json"), "hermes": ("messages", "content")}


def rewrite(agent: str, session) -> None:
    """The session's rows rewritten in place, as an agent updating a message does within the
    same tick of the clock it stamps rows with (no timestamp changes)."""
    table, column = REWRITTEN[agent]
    with closing(sqlite3.connect(session.source)) as connection:
        connection.execute(f"UPDATE {table} SET {column} = {column} || ' ' WHERE session_id = ?",
                           (session.native_id,))
        connection.commit()


@pytest.mark.parametrize("agent", sorted(DATABASE_AGENTS))
def test_a_signature_changes_with_its_sessions_rows_only_and_that_session_alone_is_stored_again(
        agent, tmp_path):
    env = by_agent(agent).build(tmp_path)
    cwd = env.get("PWD")
    module = agents.load(agent)
    first, second, *others = catalog.discover(env).sessions
    signatures = (module.extract_signature(first, env), module.extract_signature(second, env))
    rewrite(agent, first)
    assert module.extract_signature(first, env) != signatures[0]
    assert module.extract_signature(second, env) == signatures[1]
    summary = archive_json(env, cwd)
    kept = archive.read_index(env)["sessions"][archive.key_of(second)]["files"]
    rewrite(agent, first)
    again = archive_json(env, cwd)
    assert summary["archived"] == 2 + len(others)
    assert (again["updated"], again["unchanged"]) == (1, 1 + len(others))
    assert archive.read_index(env)["sessions"][archive.key_of(second)]["files"] == kept


def test_an_extract_keeps_its_rows_with_their_rowids_whatever_the_schema(tmp_path):
    """A store whose schema a copy could trip on: a trigger that rewrites every message
    inserted, a view, a generated column, a column named `rowid` (the rowid goes by `_rowid_`),
    a WITHOUT ROWID table, a virtual table of a module SQLite does not have; and sessions that
    are each other's parents. The image holds the session's rows, rowids included, and nothing
    else; the trigger is there and fired on none of them; the view and the virtual table are
    left out (sqlite_ro drops views from its copy of a store)."""
    db = str(tmp_path / "store.db")
    with closing(sqlite3.connect(db)) as connection:
        connection.executescript("""
            CREATE TABLE sessions (id TEXT PRIMARY KEY, parent TEXT, title TEXT);
            CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, body TEXT, rowid INTEGER,
                                   shout GENERATED ALWAYS AS (upper(body)) VIRTUAL);
            CREATE TABLE notes (session_id TEXT, n INTEGER, PRIMARY KEY (session_id, n)) WITHOUT ROWID;
            INSERT INTO sessions VALUES ('a', 'c', 'A'), ('b', 'a', 'B'), ('c', 'b', 'C'), ('other', NULL, 'O');
            INSERT INTO messages (_rowid_, id, session_id, body, rowid) VALUES
                (40, 'm1', 'a', 'hello', 3), (7, 'm2', 'other', 'secret', 2), (12, 'm3', 'c', 'child', 1);
            INSERT INTO notes VALUES ('b', 1), ('other', 2);
            CREATE TRIGGER scramble AFTER INSERT ON messages BEGIN UPDATE messages SET body = '' WHERE id = new.id; END;
            CREATE VIEW everything AS SELECT * FROM messages;
            PRAGMA writable_schema = ON;
            INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql)
                VALUES ('table', 'hostile', 'hostile', 0, 'CREATE VIRTUAL TABLE hostile USING nosuchmodule(a)');
        """)
        version = connection.execute("PRAGMA schema_version").fetchone()[0]
        connection.execute(f"PRAGMA schema_version = {version + 1}")
    def rows(connection):
        tree = sqlite_extract.tree(connection, "sessions", "parent")
        return [("sessions", f"id IN {tree}")] + [(t, f"session_id IN {tree}") for t in ("messages", "notes")]
    image = tmp_path / "image.db"
    image.write_bytes(sqlite_extract.image(db, rows, "a"))
    queries = {"sessions": "SELECT _rowid_, * FROM sessions ORDER BY id",
               "messages": "SELECT _rowid_, * FROM messages ORDER BY id", "notes": "SELECT * FROM notes"}
    with closing(sqlite3.connect(db)) as store, closing(sqlite3.connect(image)) as copy:
        for table, query in queries.items():
            assert copy.execute(query).fetchall() == [r for r in store.execute(query) if "other" not in r]
        names = {row[0] for row in copy.execute("SELECT name FROM sqlite_master")}
        assert "scramble" in names and not {"everything", "hostile"} & names


def bombed_store(tmp_path, bomb: str) -> str:
    """A store of one session with 30 messages, and `bomb` (SQL) run on it."""
    db = str(tmp_path / "bombed.db")
    with closing(sqlite3.connect(db)) as connection:
        connection.executescript("""
            CREATE TABLE sessions (id TEXT PRIMARY KEY);
            CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, body TEXT);
            CREATE INDEX by_session ON messages (session_id, id);
            INSERT INTO sessions VALUES ('a');
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
                INSERT INTO messages SELECT 'm' || i, 'a', 'x' FROM n;
        """ + bomb)
    return db


def session_rows(connection):
    return [("sessions", "id = ?"), ("messages", "session_id = ?")]


def test_an_index_over_an_expression_or_partial_is_not_built_in_the_extract(tmp_path, monkeypatch):
    """An index over an expression ran the store's SQL once per copied row when the extract
    built it (a planted `zeroblob(20000000)` took seconds a row: 200,000 rows, days). The
    extract keeps the indexes over columns only, and never evaluates the planted SQL."""
    calls = []
    db = bombed_store(tmp_path, """
        CREATE INDEX heavy ON messages (length(hex(zeroblob(20000000 + length(id)))));
        CREATE INDEX some ON messages (body) WHERE length(hex(zeroblob(20000000))) > 0;""")
    connect = sqlite_ro.bounded_memory

    def counting(longest):
        connection = connect(longest)
        connection.set_progress_handler(lambda: calls.append(1), 10_000)
        return connection
    monkeypatch.setattr(sqlite_ro, "bounded_memory", counting)
    image = tmp_path / "image.db"
    image.write_bytes(sqlite_extract.image(db, session_rows, "a"))
    with closing(sqlite3.connect(image)) as copy:
        names = {name for (name,) in copy.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "by_session" in names and not {"heavy", "some"} & names
        assert copy.execute("SELECT count(*) FROM messages").fetchone() == (30,)
    assert len(calls) < 100  # 30 rows x 40 MB of hex: millions of steps


def test_a_value_computed_past_the_bound_fails_the_extract(tmp_path):
    """A CHECK that computes hundreds of MB for each row copied: SQLite refuses a value over
    LONGEST_VALUE and the extract fails with a DatabaseError (archiving then keeps the session's
    database files, as for a session over an extract's bounds), instead of a process of GBs."""
    db = bombed_store(tmp_path, """
        CREATE TABLE notes (session_id TEXT,
                            n TEXT CHECK (length(hex(zeroblob(200000000))) > 0));""")
    with closing(sqlite3.connect(db)) as connection:
        connection.execute("PRAGMA ignore_check_constraints = ON")
        connection.execute("INSERT INTO notes VALUES ('a', 'x')")
        connection.commit()
    with pytest.raises(sqlite3.DatabaseError, match="too big"):
        sqlite_extract.image(db, lambda c: session_rows(c) + [("notes", "session_id = ?")], "a")


@pytest.mark.parametrize("agent", ["opencode", "kilo"])
def test_sub_agent_sessions_and_a_parent_loop_are_archived_with_their_session(agent, tmp_path):
    """A sub-agent session with one of its own (embedded two levels deep), and two sessions
    each the other's parent (both listed, each embedding the other): each extract holds the
    session with all of those, and they are served alike once their agent deleted them."""
    import test_agent_opencode

    env = by_agent(agent).build(tmp_path)
    first, second, *_ = catalog.discover(env).sessions
    test_agent_opencode.add_child_session(first.source, first.native_id, "ses_child")
    test_agent_opencode.add_child_session(first.source, "ses_child", "ses_grandchild")
    test_agent_opencode.add_child_session(first.source, second.native_id, "ses_loop")
    with closing(sqlite3.connect(first.source)) as connection:
        connection.execute("UPDATE session SET parent_id = 'ses_loop' WHERE id = ?", (second.native_id,))
        connection.commit()
    sessions = catalog.discover(env).sessions
    before = {s.short_id: ok(env, "show", s.short_id) for s in sessions}
    assert b"ses_grandchild" in before[first.short_id] and b"ses_loop" in before[second.short_id]
    ok(env, "archive")
    assert_extracted_alone(env, sessions, tmp_path)
    delete_natively(env, sessions, [])
    assert {s: ok(env, "show", s) for s in before} == before


def test_a_hermes_continuation_is_archived_without_its_parent_where_sqlite_enforces_foreign_keys(
        tmp_path, monkeypatch):
    """Hermes lists a session that continues another as one of its own: each extract holds its
    session alone, the continuation's with a parent_session_id its extract lacks; that copy is
    made even by a SQLite built to enforce foreign keys (SQLITE_DEFAULT_FOREIGN_KEYS=1)."""
    env = by_agent("hermes").build(tmp_path)
    parent, child, *_ = catalog.discover(env).sessions
    with closing(sqlite3.connect(child.source)) as connection:
        connection.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?",
                           (parent.native_id, child.native_id))
        connection.commit()
    connect = sqlite_ro.connect

    def enforcing(path, env=None):
        connection = connect(path, env)
        connection.execute("PRAGMA foreign_keys = ON")
        return connection
    monkeypatch.setattr(sqlite_ro, "connect", enforcing)
    sessions = catalog.discover(env).sessions
    before = {s.short_id: ok(env, "show", s.short_id) for s in sessions}
    assert parent.native_id.encode() in before[child.short_id]
    ok(env, "archive")
    assert_extracted_alone(env, sessions, tmp_path)
    delete_natively(env, sessions, [])
    assert {s: ok(env, "show", s) for s in before} == before


# the database extract's bounds ----------------------------------------------------------------------
def test_a_session_over_what_a_translation_reads_is_archived_as_its_database(tmp_path, monkeypatch):
    """With the rows one document may read lowered to 10, Crush's first session (15 rows with
    its task session's) is archived as the database files, as before extracts (its document
    is cut, live and archived alike), the other one (8 rows) as its extract."""
    env = by_agent("crush").build(tmp_path)
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_ROWS", 10, raising=False)
    big, small = sorted(catalog.discover(env).sessions, key=lambda s: s.native_id != "s-main")
    before = {s.short_id: ok(env, "show", s.short_id) for s in (big, small)}
    assert b"were not read" in before[big.short_id]
    with pytest.raises(sqlite_ro.StoreError, match="holds more than 10 rows"):
        agents.load("crush").extract(big, env)  # asked without its signature: refused all the same
    ok(env, "archive", cwd=env["PWD"])
    entry = archive.read_index(env)["sessions"][archive.key_of(big)]
    assert entry["signature"] is None and entry["files"][0][0] == big.source
    assert_extracted_alone(env, [small], tmp_path)
    delete_natively(env, [big, small], [])
    assert {s: ok(env, "show", s) for s in before} == before


def test_a_value_over_the_limit_is_extracted_whole_and_its_signature_never_reads_it(tmp_path):
    """A Crush message of 64 MB and a bit: translation leaves it out with a warning; the
    signature reads its size, never the value (Python's peak while computing it stays small);
    the extract keeps it, so that the archived document says the same."""
    import tracemalloc

    env = by_agent("crush").build(tmp_path)
    session = next(s for s in catalog.discover(env).sessions if s.native_id == "s-main")
    with closing(sqlite3.connect(session.source)) as connection:
        connection.execute("""UPDATE messages SET parts = '[{"type": "text", "data": {"text": "' ||"""
                           """ printf('%.*c', ?, 'x') || '"}}]' WHERE id = 'm1'""", (sqlite_ro.MAX_VALUE_BYTES,))
        connection.commit()
    before = ok(env, "show", session.short_id)
    assert b"held more than 64 MB each and were left out" in before
    module = agents.load("crush")
    module.extract_signature(session, env)  # the store's snapshot, read once
    tracemalloc.start()
    try:
        module.extract_signature(session, env)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < sqlite_ro.MAX_VALUE_BYTES // 16
    ok(env, "archive", cwd=env["PWD"])
    image = archived_image(env, session, tmp_path)
    with closing(sqlite3.connect(image)) as connection:
        size = connection.execute("SELECT length(parts) FROM messages WHERE id = 'm1'").fetchone()[0]
    assert size > sqlite_ro.MAX_VALUE_BYTES
    delete_natively(env, [session], [])
    assert ok(env, "show", session.short_id) == before


def damage_value(db: str, message: str) -> None:
    """A Crush message given a value long enough to take a chain of overflow pages, then one
    page of that chain overwritten (as a failing disk leaves it): reading the value fails."""
    marker = b"zqxdamaged"
    with closing(sqlite3.connect(db)) as connection:
        connection.execute("UPDATE messages SET provider = ? WHERE id = ?", ((marker * 4000).decode(), message))
        connection.commit()
        size = connection.execute("PRAGMA page_size").fetchone()[0]
    with open(db, "r+b") as handle:
        data = handle.read()
        chain = [n for n in range(len(data) // size) if marker in data[n * size:(n + 1) * size]]
        handle.seek(chain[-2] * size)  # one whose pointer to the next page is read
        handle.write(b"\xff" * size)


def test_a_session_whose_rows_sqlite_cannot_read_is_archived_as_its_database_and_served_alike(tmp_path):
    """A damaged page under one of Crush's messages: that session's document warns (what
    could be read is kept) and no extract of it can be made; `archive` says nothing goes wrong,
    keeps the database files for it and an extract for the other session, and serves both
    documents alike once the store is gone."""
    env = by_agent("crush").build(tmp_path)
    damaged, intact = sorted(catalog.discover(env).sessions, key=lambda s: s.native_id != "s-main")
    damage_value(damaged.source, "m9")
    before = {s.short_id: ok(env, "show", s.short_id) for s in (damaged, intact)}
    assert b"database disk image is malformed" in before[damaged.short_id]
    result = run_main(env, ["archive", "--json"], cwd=env["PWD"])
    assert_clear(result)
    assert result.returncode == 0 and orjson.loads(result.stdout)["archived"] == 2
    entry = archive.read_index(env)["sessions"][archive.key_of(damaged)]
    assert entry["signature"] is None and entry["files"][0][0] == damaged.source
    assert_extracted_alone(env, [intact], tmp_path)
    shutil.rmtree(os.path.dirname(damaged.source))
    assert {s: ok(env, "show", s) for s in before} == before


def test_a_session_gone_before_it_is_extracted_keeps_its_copy_with_a_warning(tmp_path):
    """Hermes deletes a session after discovery listed it: the run says so, keeps the copy it
    had, and goes on with the others (one of them changed)."""
    env = by_agent("hermes").build(tmp_path)
    ok(env, "archive")
    first, second, *_ = sessions = catalog.discover(env).sessions
    before = ok(env, "show", first.short_id)
    kept = archive.read_index(env)["sessions"][archive.key_of(first)]
    rewrite("hermes", second)
    delete_rows(first.source, first.native_id)  # by the agent, while the run is under way
    with archiver.Writer(env) as writer:
        writer.update(sessions)
        assert (writer.summary.failed, writer.summary.updated) == (1, 1)
        assert "no longer in the store" in writer.summary.problems[0]
    assert archive.read_index(env)["sessions"][archive.key_of(first)] == kept
    assert ok(env, "show", first.short_id) == before


# the mount -----------------------------------------------------------------------------------------
def archived_native_ids(env) -> set:
    return {entry["record"][1] for entry in archive.read_index(env)["sessions"].values()}


def test_the_mount_archives_its_projects_sessions_a_bounded_slice_per_rescan(tmp_path, monkeypatch):
    env = by_agent("claude").build(tmp_path)
    settle(env)
    project = "/tmp/agents/proj-claude"
    mine = {s.native_id for s in catalog.Scope(project, env).filter(catalog.discover(env).sessions)}
    assert len(mine) == 2 and len(catalog.discover(env).sessions) == 3
    monkeypatch.setattr(memoryfs, "ARCHIVE_SECONDS", 0)  # one session per pass
    fs = memoryfs.MemoryFS(project, env)
    fs._archive_some()
    assert len(archived_native_ids(env)) == 1
    fs._archive_some()
    assert archived_native_ids(env) == mine  # the other project's session is not this mount's
    index = os.stat(archive.index_path(env))
    fs._archive_some()
    assert os.stat(archive.index_path(env)).st_mtime_ns == index.st_mtime_ns


def test_the_mount_archives_a_session_being_recorded_again_once_it_settles(tmp_path):
    env = by_agent("claude").build(tmp_path)
    settle(env)
    project = "/tmp/agents/proj-claude"
    fs = memoryfs.MemoryFS(project, env)
    fs._archive_some()
    session = catalog.Scope(project, env).filter(catalog.discover(env).sessions)[0]
    append_user_message(session.source, "one more thing")  # being recorded: changed just now
    fs._refresh()
    key = archive.key_of(session)
    assert archive.read_index(env)["sessions"][key]["fingerprint"] != cache.fingerprint([session.source])
    os.utime(session.source, ns=(LONG_AGO_NS + 10**9, LONG_AGO_NS + 10**9))  # it settled
    fs._refresh()
    assert archive.read_index(env)["sessions"][key]["fingerprint"] == cache.fingerprint([session.source])


@needs_fuse
def test_a_mounted_memory_serves_archived_sessions_as_it_served_them_live(tmp_path):
    env = by_agent("claude").build(tmp_path)
    project = str(tmp_path / "proj")
    os.makedirs(project)
    for session in catalog.discover(env).sessions:  # the sessions ran in this project
        text = open(session.source, encoding="utf-8").read()
        open(session.source, "w", encoding="utf-8").write(text.replace(session.cwd, project))
    sessions = catalog.discover(env).sessions
    assert catalog.Scope(project, env).filter(sessions) == sessions
    before = {catalog.file_name(s): ok(env, "show", s.short_id) for s in sessions}
    ok(env, "archive")
    delete_natively(env, sessions, [])
    point, _ = mount(env, project, "--dir", project)
    try:
        names = sorted(n for n in os.listdir(point) if n.endswith(".atif.json"))
        assert names == sorted(before)
        assert {n: open(os.path.join(point, n), "rb").read() for n in names} == before
        listing = client("ls", "-lL", point)  # the documents' sizes, through their symlinks
        assert all(f" {len(data)} " in listing.stdout for data in before.values())
    finally:
        cli("memory", "--unmount", point, env=env, cwd=project)
        take_down(point)


@pytest.mark.parametrize("gone", [("child",), ("child", "parent")])
def test_an_archived_codex_fork_keeps_the_parent_rollout_it_is_told_apart_by(tmp_path, gone):
    """A fork's document drops the history it copied from its parent, found by the parent's
    rollout: archived with the fork, it serves the fork alike with the parent still there
    (the mirror holds it) and gone."""
    import test_agent_codex as codex_tests

    env = codex_tests.codex_env(tmp_path)
    parent = codex_tests.place(env, f"sessions/2026/11/29/{os.path.basename(codex_tests.PARENT)}",
                               codex_tests.read(codex_tests.PARENT))
    child = codex_tests.place(env, f"sessions/2026/11/29/rollout-2026-11-29T20-43-00-{codex_tests.CHILD_ID}.jsonl",
                              codex_tests.child_rollout({"forked_from_id": codex_tests.PARENT_ID}))
    fork = next(s for s in catalog.discover(env).sessions if s.native_id == codex_tests.CHILD_ID)
    before = ok(env, "show", fork.short_id)
    assert json.loads(before)["extra"]["copied_parent_lines_skipped"] > 0
    ok(env, "archive")
    for path in {"child": child, "parent": parent}.values() if "parent" in gone else [child]:
        os.unlink(path)
    assert ok(env, "show", fork.short_id) == before


def test_a_document_naming_a_store_path_names_the_original_one_when_archived(tmp_path):
    """Cursor warns with the path of a sub-agent transcript it cannot read (here a folder named
    like one): translated from the archive's private copy, the document still names the path
    the live session had, not the copy's."""
    env = by_agent("cursor").build(tmp_path)
    stray = os.path.join(env["HOME"], ".cursor/projects/fx/agent-transcripts/parent/subagents/stray.txt")
    os.makedirs(stray)
    session = next(s for s in catalog.discover(env).sessions if s.native_id == "parent")
    before = ok(env, "show", session.short_id)
    assert f"cannot read {stray}".encode() in before
    ok(env, "archive")
    delete_natively(env, [session], [])
    assert not os.path.exists(session.source) and ok(env, "show", session.short_id) == before


def test_an_archived_claude_session_keeps_its_spilled_outputs_sub_agent_metadata_and_siblings(tmp_path):
    """What Claude Code keeps beside a transcript and its translation reads back: outputs too
    large for the transcript (tool-results/), a sub-agent's .meta.json (its type, the call that
    spawned it), a 2.0.x sub-agent transcript beside its parent's."""
    from helpers import SAMPLES, base_env, write_jsonl

    env = base_env(tmp_path)
    project = os.path.join(env["HOME"], ".claude", "projects", "-showcase")
    showcase = os.path.join(SAMPLES, "claude", "claude-code-log", "minimal_showcase")
    shutil.copytree(showcase, project)
    parent_id = "55550000-0000-4000-8000-000000000001"
    sub = open(os.path.join(project, parent_id, "subagents", "agent-showcol1.jsonl"), encoding="utf-8").read()
    open(os.path.join(project, "agent-sibling1.jsonl"), "w", encoding="utf-8").write(sub.replace("showcol1", "sibling1"))
    spilled = os.path.join(project, "s1", "tool-results", "toolu_1.txt")
    os.makedirs(os.path.dirname(spilled))
    open(spilled, "w").write("spilled line\n" * 20_000)
    write_jsonl(os.path.join(project, "s1.jsonl"), [
        {"type": "user", "uuid": "u1", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z",
         "message": {"role": "user", "content": "run it"}},
        {"type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:01Z", "requestId": "r1",
         "message": {"id": "m1", "model": "claude-x", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "yes"}}]}},
        {"type": "user", "uuid": "u2", "timestamp": "2026-01-01T00:00:02Z", "toolUseResult": {"persistedOutputPath": spilled},
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": f"<persisted-output>\nFull output saved to: {spilled}\n</persisted-output>"}]}}])
    sessions = catalog.discover(env).sessions
    assert {s.native_id for s in sessions} == {parent_id, "s1"}
    before = {s.short_id: ok(env, "show", s.short_id) for s in sessions}
    assert all(text in b"".join(before.values()) for text in (b"spilled line\\n" * 3, b"agent-sibling1", b"general-purpose"))
    ok(env, "archive")
    shutil.rmtree(project)
    assert {s: ok(env, "show", s) for s in before} == before


def test_a_session_deleted_after_discovery_listed_it_is_not_archived_empty(tmp_path):
    env = by_agent("claude").build(tmp_path)
    ok(env, "archive")
    first, second, *_ = catalog.discover(env).sessions
    append_user_message(first.source, "a change to archive")
    sessions = catalog.discover(env).sessions
    for session in sessions[:2]:
        os.unlink(session.source)  # the agent deletes them while the run is under way
    with archiver.Writer(env) as writer:
        writer.update(sessions)
        assert writer.summary.failed == 2
    index = archive.read_index(env)
    for session in sessions[:2]:
        files = index["sessions"][archive.key_of(session)]["files"]
        assert [f[0] for f in files] == [session.source]  # as archived before
    assert ok(env, "show", first.short_id) != b"" and b"a change to archive" not in ok(env, "show", first.short_id)


def test_a_failure_document_names_the_original_paths_not_the_private_copy(tmp_path):
    env = by_agent("claude").build(tmp_path)
    ok(env, "archive")
    session = catalog.discover(env).sessions[0]
    delete_natively(env, [session], [])
    index = archive.read_index(env)
    index["sessions"][archive.key_of(session)]["files"] = []  # an entry that lost its transcript
    cache.write_private(archive.index_path(env), archive.encode_index(index))
    doc = json.loads(ok(env, "show", session.short_id))
    assert doc["extra"]["error"] == f"FileNotFoundError: [Errno 2] No such file or directory: {session.source!r}"


def test_a_mount_that_cannot_archive_keeps_serving_and_says_so_once(tmp_path, capsys):
    env = by_agent("claude").build(tmp_path)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    env["XDG_DATA_HOME"] = str(blocked)  # the archive cannot be made under a file
    fs = memoryfs.MemoryFS("/tmp/agents/proj-claude", env)
    for _ in range(3):
        fs._refresh()
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 1 and errors[0].startswith("trajectoriz: archiving failed: UserError: cannot write the archive")
    name = next(iter(fs._listing.files))
    assert mount_files(env, {"/tmp/agents/proj-claude"})[("/tmp/agents/proj-claude", name)]


def test_a_side_file_that_cannot_be_read_skips_its_session_with_a_warning(tmp_path):
    """A FIFO named like a 2.0.x sub-agent transcript beside a Claude session: reading it would
    block; the session is left out of this run with a warning, the others are archived."""
    env = by_agent("claude").build(tmp_path)
    sessions = catalog.discover(env).sessions
    os.mkfifo(os.path.join(os.path.dirname(sessions[0].source), "agent-stuck.jsonl"))
    result = run_main(env, ["archive", "--json"])
    assert result.returncode == 0 and b"not archived" in result.stderr and b"agent-stuck.jsonl" in result.stderr
    summary = orjson.loads(result.stdout)
    siblings = [s for s in sessions if os.path.dirname(s.source) == os.path.dirname(sessions[0].source)]
    assert summary["failed"] == len(siblings) and summary["archived"] == len(sessions) - len(siblings)


def test_archive_schedule_installs_this_programs_daily_archive_and_unschedule_removes_it(tmp_path):
    """Through the crontab (no systemd user instance): fake `systemctl` and `crontab` alone on
    $PATH (tests/test_schedule.py), so the real user's are never touched."""
    import sys as system

    import test_schedule

    fake = tmp_path / "bin"
    fake.mkdir()
    test_schedule.tool(fake, "systemctl", test_schedule.SYSTEMCTL)
    test_schedule.tool(fake, "crontab", test_schedule.CRONTAB)
    env = {**by_agent("claude").build(tmp_path), "PATH": str(fake), "FAKE_NO_SYSTEMD": "1",
           "FAKE_LOG": str(tmp_path / "calls"), "FAKE_CRONTAB": str(tmp_path / "crontab")}
    result = run_main(env, ["archive", "--schedule"])
    assert result.returncode == 0, result.stderr
    script = os.path.join(ROOT, "trajectoriz.py")
    assert shlex.join([system.executable, script, "archive"]) in (tmp_path / "crontab").read_text()
    assert run_main(env, ["archive", "--unschedule"]).returncode == 0
    assert not (tmp_path / "crontab").exists() or "archive" not in (tmp_path / "crontab").read_text()
