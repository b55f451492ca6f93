"""`agents/sqlite_ro`: a snapshot is the database and its WAL as of one moment, however the agent
checkpoints while it is read, and what a snapshot costs is bounded.

The race test runs a real writer process against a copy of the opencode live store; the
deterministic ones make the agent's checkpoint happen at a chosen point of the read (the
database file's reads go through a hook) with a real SQLite writer on the same file."""

import itertools
import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from agents import opencode, sqlite_ro
from helpers import LIVE, ROOT, base_env, copy_database, copy_into

LIVE_DB = os.path.join(LIVE, "opencode-1.18.33", ".local", "share", "opencode", "opencode.db")
TEMPLATE_SESSION = "ses_dd6f4592cffeEi2zVz5av3tUd1"  # 4 messages
RACE_SESSIONS = 10
LEDGER_ROWS = 40


# a store whose consistency can be checked --------------------------------------------------------
def add_ledger(connection: sqlite3.Connection) -> None:
    """Tables whose rows every transaction of the writers here changes together: `counter.n` is
    the number of the last transaction, every `ledger.v` equals it, and `log` has a row (a page
    of its own) per transaction. Ledger rows are a page each, spread over the file."""
    connection.execute("CREATE TABLE ledger(id INTEGER PRIMARY KEY, v INTEGER, pad BLOB)")
    connection.executemany("INSERT INTO ledger VALUES (?, 0, zeroblob(3000))",
                           [(i,) for i in range(LEDGER_ROWS)])
    connection.execute("CREATE TABLE counter(n INTEGER)")
    connection.execute("INSERT INTO counter VALUES (0)")
    connection.execute("CREATE TABLE log(n INTEGER PRIMARY KEY, pad BLOB)")


def transaction(connection: sqlite3.Connection, n: int, grow: bool = True) -> None:
    """Transaction number `n` of the ledger; `grow=False` changes existing pages only."""
    connection.execute("BEGIN IMMEDIATE")
    if grow:
        connection.execute("INSERT INTO log VALUES (?, randomblob(3000))", (n,))
    connection.execute("UPDATE ledger SET v = ?", (n,))
    connection.execute("UPDATE counter SET n = ?", (n,))
    connection.execute("COMMIT")


def ledger_state(connection: sqlite3.Connection, grow: bool = True):
    """The number of the last transaction the snapshot holds, or what is inconsistent in it."""
    try:
        n = connection.execute("SELECT n FROM counter").fetchone()[0]
        low, high, rows = connection.execute("SELECT min(v), max(v), count(*) FROM ledger").fetchone()
        logged = connection.execute("SELECT count(*) FROM log").fetchone()[0]
        check = connection.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        return f"DatabaseError: {exc}"
    if (low, high, rows) != (n, n, LEDGER_ROWS) or (grow and logged != n) or check != "ok":
        return f"mixed: counter {n}, ledger {low}..{high} of {rows} rows, {logged} log rows, {check}"
    return n


def snapshot_state(db: str, grow: bool = True):
    try:
        connection = sqlite_ro.connect(db)
    except sqlite_ro.StoreError as exc:
        return f"StoreError: {exc}"
    try:
        return ledger_state(connection, grow)
    finally:
        connection.close()


def writer(db: str) -> sqlite3.Connection:
    """A writer as an agent holds one: WAL mode, no automatic checkpoint (the tests do them)."""
    connection = sqlite3.connect(db, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    return connection


# (a) a real race --------------------------------------------------------------------------------
def race_store(folder: str) -> str:
    """A copy of the opencode live store (its WAL too) with the ledger tables, race sessions
    copied from a real one, and a few MB of rows the writer never changes."""
    db = os.path.join(folder, "opencode.db")
    copy_database(LIVE_DB, db)
    connection = sqlite3.connect(db, isolation_level=None)
    add_ledger(connection)
    columns = [row[1] for row in connection.execute("PRAGMA table_info(session)")][1:]
    names = ", ".join(columns)
    for k in range(RACE_SESSIONS):
        connection.execute(f"INSERT INTO session (id, {names}) SELECT ?, {names} FROM session "
                           "WHERE id = ?", (f"race-{k}", TEMPLATE_SESSION))
    connection.execute("CREATE TABLE padding(pad BLOB)")
    connection.executemany("INSERT INTO padding VALUES (randomblob(3000))", [()] * 1000)
    connection.close()
    return db


def race_writer(db: str, stop, started, checkpoints) -> None:
    """The agent: transaction after transaction, each rewriting one race session (its messages
    and parts deleted and inserted anew, so pages are freed and reused) and the ledger, then a
    checkpoint, PASSIVE, RESTART and TRUNCATE in turn (`checkpoints` counts them by mode)."""
    connection = writer(db)
    connection.execute("PRAGMA synchronous=OFF")
    modes = itertools.cycle(enumerate(("PASSIVE", "RESTART", "TRUNCATE")))
    for n in itertools.count(1):
        if stop.is_set():
            break
        session = f"race-{n % RACE_SESSIONS}"
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("DELETE FROM part WHERE session_id = ?", (session,))
        connection.execute("DELETE FROM message WHERE session_id = ?", (session,))
        connection.execute("INSERT INTO message SELECT ? || id, ?, time_created, ?, data FROM message "
                           "WHERE session_id = ?", (session, session, n, TEMPLATE_SESSION))
        connection.execute("INSERT INTO part SELECT ? || id, ? || message_id, ?, time_created, ?, data "
                           "FROM part WHERE session_id = ?", (session, session, session, n, TEMPLATE_SESSION))
        connection.execute("UPDATE ledger SET v = ?", (n,))
        connection.execute("UPDATE counter SET n = ?", (n,))
        connection.execute("COMMIT")
        time.sleep(0.003)
        index, mode = next(modes)
        connection.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
        checkpoints[index] += 1
        if n >= RACE_SESSIONS:  # every race session has its messages
            started.set()
    connection.close()


def race_problem(db: str, listing: bool):
    """What is wrong with one snapshot of the race store: inconsistent tables, a race session
    without its four messages, or (with `listing`) a session that `scan` lists and `translate`
    then does not find (each takes its own snapshot)."""
    try:
        connection = sqlite_ro.connect(db)
    except sqlite_ro.StoreError as exc:
        return f"StoreError: {exc}"
    try:
        state = ledger_state(connection, grow=False)
        messages = connection.execute("SELECT count(*) FROM message WHERE session_id LIKE 'race-%'").fetchone()
    except sqlite3.DatabaseError as exc:
        return f"DatabaseError: {exc}"
    finally:
        connection.close()
    if isinstance(state, str):
        return state
    if messages != (4 * RACE_SESSIONS,):
        return f"{messages[0]} messages in the race sessions"
    return listing_problem(db) if listing else None


def listing_problem(db: str):
    try:
        listed = [s for s in opencode.scan(db, {}) if s.native_id.startswith("race-")]
        doc = opencode.translate(listed[len(listed) // 2], {})
    except Exception as exc:  # what the race breaks is exactly what is looked for
        return f"{type(exc).__name__}: {exc}"
    if len(listed) != RACE_SESSIONS or len(doc["steps"]) < 2:
        return f"{len(listed)} race sessions listed, {len(doc['steps'])} steps"
    return None


def test_snapshots_are_consistent_while_the_agent_checkpoints(tmp_path):
    """300 snapshots (every third also a scan and a translate) while a writer process commits
    and checkpoints in a loop: every one opens and is consistent. Before the snapshots were
    made consistent, 6-28% of them were not (mixed tables, "database disk image is
    malformed", listed sessions not found)."""
    db = race_store(str(tmp_path))
    start = multiprocessing.get_context("fork")
    stop, started, checkpoints = start.Event(), start.Event(), start.Array("i", 3)
    process = start.Process(target=race_writer, args=(db, stop, started, checkpoints))
    process.start()
    try:
        assert started.wait(30)
        before = list(checkpoints)
        problems = [p for i in range(300) if (p := race_problem(db, listing=i % 3 == 0))]
        during = [after - first for after, first in zip(checkpoints, before)]
    finally:
        stop.set()
        process.join(30)
    assert problems == []
    assert min(during) >= 20, during  # the writer did checkpoint, in every mode, meanwhile


# (b) a checkpoint at a chosen point of the read -------------------------------------------------
class HookedFile:
    """A file as `open_binary` gives it, with `hook` run when the reading reaches byte `at` (its
    end when `at` is None): the agent acting at that moment of the read."""

    def __init__(self, handle, hook, at):
        self.handle, self.hook = handle, hook
        self.at = os.fstat(handle.fileno()).st_size if at is None else at
        self.position = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def fileno(self):
        return self.handle.fileno()

    def read(self, size=-1):
        if self.hook is None or 0 <= size and self.position + size < self.at:
            data = self.handle.read(size)
        else:
            data = self.handle.read(self.at - self.position)
            self.hook()
            self.hook = None
            data += self.handle.read(size - len(data) if size >= 0 else -1)
        self.position += len(data)
        return data

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


@pytest.fixture
def hook_reads(monkeypatch):
    """`hook_reads(path, action, at=None, times=1)`: the next `times` reads of the file `path`
    that reach byte `at` run `action` there. Returns the list of the file's openings."""
    def install(path, action, at=None, times=1):
        opened, fired = [], []
        real_open = sqlite_ro.open_binary

        def once():
            if len(fired) < times:
                fired.append(action())

        def hooked_open(name):
            handle = real_open(name)
            if name != path:
                return handle
            opened.append(name)
            return HookedFile(handle, once, at)

        monkeypatch.setattr(sqlite_ro, "open_binary", hooked_open)
        return opened
    return install


def ledger_store(tmp_path, name: str = "store.db") -> tuple[str, sqlite3.Connection]:
    """A WAL database with the ledger, every page of it in the database file (the WAL emptied),
    and its writer, still open."""
    db = str(tmp_path / name)
    connection = writer(db)
    add_ledger(connection)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db, connection


def test_a_wal_restarted_between_the_two_reads_is_read_again(tmp_path, hook_reads):
    """Transactions 1-3 in the WAL; after the database file is read, the agent checkpoints them
    into the file, restarts the WAL and commits transaction 4 over it. The image is read again
    and holds all four (before: the old file with transaction 4 only, whose log rows point to
    pages that were never read)."""
    db, connection = ledger_store(tmp_path)
    for n in (1, 2, 3):
        transaction(connection, n)

    def checkpoint_then_write():
        connection.execute("PRAGMA wal_checkpoint(RESTART)")
        transaction(connection, 4)

    reads = hook_reads(db, checkpoint_then_write)
    assert snapshot_state(db) == 4
    assert len(reads) == 2


def test_a_wal_restarted_while_it_is_read_is_read_again(tmp_path, hook_reads):
    """Transactions 1-3 in the WAL (1 leaves the ledger at 0, 2 and 3 set it), copied into the
    database file by a checkpoint before the file is read; while the WAL is read, just past
    transaction 1, the agent restarts it and writes a longer transaction 4 over its start.
    The frames after that point have the new salts, so the WAL read ends at transaction 1,
    older than the file: the header read after the WAL shows the restart, and the store is
    read again (before: transaction 1's counter and log over the file's ledger of 3)."""
    db, connection = ledger_store(tmp_path)
    connection.execute("CREATE TABLE bulk(pad BLOB)")

    def write(n, ledger=True, bulk=0):
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO log VALUES (?, randomblob(3000))", (n,))
        connection.execute("UPDATE counter SET n = ?", (n,))
        if ledger:
            connection.execute("UPDATE ledger SET v = ?", (n,))
        connection.executemany("INSERT INTO bulk VALUES (randomblob(3000))", [()] * bulk)
        connection.execute("COMMIT")

    write(1, ledger=False)
    after_first = os.path.getsize(db + "-wal")
    write(2)
    write(3)
    connection.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def restart_then_write_more():
        connection.execute("PRAGMA wal_checkpoint(RESTART)")
        write(4, bulk=20)

    hook_reads(db + "-wal", restart_then_write_more, at=after_first)
    image = sqlite_ro.connect(db)
    n, logged = image.execute("SELECT n, (SELECT count(*) FROM log) FROM counter").fetchone()
    ledger = image.execute("SELECT min(v), max(v) FROM ledger").fetchone()
    assert (n, logged, ledger) == (4, 4, (4, 4))


def test_a_wal_truncated_while_the_file_is_read_is_read_again(tmp_path, hook_reads):
    """Transaction 1 in the WAL; half way through the read of the database file, the agent
    copies it into the file and truncates the WAL. The torn read is not used (before: the
    ledger rows of the first half had the old value, those of the second half the new one)."""
    db, connection = ledger_store(tmp_path)
    transaction(connection, 1, grow=False)
    reads = hook_reads(db, lambda: connection.execute("PRAGMA wal_checkpoint(TRUNCATE)"),
                       at=os.path.getsize(db) // 2)
    assert snapshot_state(db, grow=False) == 1
    assert len(reads) >= 2


def still(db: str) -> None:
    """Wait until the file has not changed for longer than a snapshot asks of a file read with
    no WAL in use (`sqlite_ro.QUIET_NS`)."""
    time.sleep(0.1)


@pytest.mark.parametrize("wal", [True, False], ids=["wal-emptied", "rollback-journal"])
def test_a_transaction_written_while_the_file_is_read_without_a_wal(tmp_path, hook_reads, wal):
    """No WAL in use when the read starts (emptied by a checkpoint, or a rollback-journal
    database), the file still for a while; half way through its read a transaction is written
    into it (and, in WAL mode, checkpointed and the WAL emptied again): seen in the file's
    stat, the read is done again (before: a torn image)."""
    db, connection = ledger_store(tmp_path)
    if not wal:
        connection.execute("PRAGMA journal_mode=DELETE")
    still(db)

    def write():
        transaction(connection, 1, grow=False)
        if wal:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    reads = hook_reads(db, write, at=os.path.getsize(db) // 2)
    assert snapshot_state(db, grow=False) == 1
    assert len(reads) >= 2


def test_a_write_the_mtime_cannot_show_is_waited_out(tmp_path, hook_reads, monkeypatch):
    """A rollback-journal database on a file system that keeps whole seconds (the stat here
    says so: every stat shows the same times), written half way through its read: the stat
    cannot show the write, so the snapshot is only taken once the file has been still for
    longer than the clock's step (before: the torn image)."""
    db, connection = ledger_store(tmp_path)
    connection.execute("PRAGMA journal_mode=DELETE")
    real_stat = os.stat
    second = time.time_ns() // 10**9 * 10**9

    def whole_seconds(path):
        found = os.stat_result(real_stat(path))
        fields = list(found)
        fields[7] = fields[8] = fields[9] = second // 10**9  # st_atime, st_mtime, st_ctime
        return os.stat_result(fields, {"st_mtime_ns": second, "st_ctime_ns": second,
                                       "st_atime_ns": second})

    monkeypatch.setattr(sqlite_ro, "_stat_database", whole_seconds, raising=False)
    reads = hook_reads(db, lambda: transaction(connection, 1, grow=False), at=os.path.getsize(db) // 2)
    assert snapshot_state(db, grow=False) == 1
    assert len(reads) >= 2
    assert time.time_ns() - second >= sqlite_ro.QUIET_COARSE_NS


def test_a_store_that_never_holds_still_is_an_error(tmp_path, hook_reads, monkeypatch):
    """The agent restarts the WAL during every read: after SNAPSHOT_ATTEMPTS reads, a
    StoreError that says so, never an image (before: the mixed image of the first read)."""
    monkeypatch.setattr(sqlite_ro, "SNAPSHOT_ATTEMPTS", 5, raising=False)
    db, connection = ledger_store(tmp_path)
    numbers = itertools.count(1)
    transaction(connection, next(numbers))

    def checkpoint_then_write():
        connection.execute("PRAGMA wal_checkpoint(RESTART)")
        transaction(connection, next(numbers))

    reads = hook_reads(db, checkpoint_then_write, times=1000)
    with pytest.raises(sqlite_ro.StoreError, match=r"store\.db kept changing while it was read \(5 attempts"):
        sqlite_ro.snapshot(db)
    assert len(reads) == 5


def test_a_wal_that_cannot_be_read_is_an_error(tmp_path):
    """A `-wal` that exists but cannot be read (here a directory): without it the database file
    alone may be half checkpointed, so the store is an error (before: the file alone)."""
    db, connection = ledger_store(tmp_path)
    connection.close()
    os.mkdir(db + "-wal")
    with pytest.raises(sqlite_ro.StoreError, match="cannot read"):
        sqlite_ro.snapshot(db)


def test_frames_being_appended_are_not_seen(tmp_path):
    """The WAL as a reader finds it while a transaction is being appended: cut at every frame
    boundary and inside frames, or with its last frame half overwritten. Each reads as the last
    transaction whose commit frame is whole and valid (this held before too: checked here)."""
    db, connection = ledger_store(tmp_path)
    states = {}
    for n in (1, 2, 3):
        transaction(connection, n)
        states[n] = os.path.getsize(db + "-wal")
    wal = open(db + "-wal", "rb").read()
    page_size = int.from_bytes(wal[8:12], "big")
    frame = 24 + page_size
    copy = str(tmp_path / "copy.db")
    shutil.copy(db, copy)
    cuts = list(range(32, len(wal) + 1, frame // 3)) + [len(wal)]
    for cut in cuts:
        open(copy + "-wal", "wb").write(wal[:cut])
        expected = max([n for n, size in states.items() if size <= cut], default=0)
        assert snapshot_state(copy) == expected, cut
    torn = bytearray(wal)
    torn[-page_size // 2:] = os.urandom(page_size // 2)
    open(copy + "-wal", "wb").write(bytes(torn))
    assert snapshot_state(copy) == 2


def test_a_rollback_journal_in_use_is_not_read_past(tmp_path, monkeypatch):
    """A rollback-journal database with a transaction in progress whose changes already spilled
    into the file (a cache too small for them), the file still since: its journal is in use,
    so the file's pages are not taken for committed ones, and the store is an error until the
    transaction commits (before: the spilled, uncommitted pages were read as the store)."""
    monkeypatch.setattr(sqlite_ro, "SNAPSHOT_PATIENCE", 0.3, raising=False)
    db, connection = ledger_store(tmp_path)
    connection.execute("PRAGMA journal_mode=DELETE")
    connection.execute("PRAGMA cache_size=2")
    connection.execute("BEGIN IMMEDIATE")
    connection.execute("UPDATE ledger SET v = 1")
    assert open(db + "-journal", "rb").read(8) == JOURNAL_MAGIC
    assert file_ledger(db) != (0, 0)  # the file does hold uncommitted pages
    still(db)
    with pytest.raises(sqlite_ro.StoreError, match="kept changing"):
        sqlite_ro.snapshot(db)
    connection.execute("UPDATE counter SET n = 1")
    connection.execute("COMMIT")
    assert snapshot_state(db, grow=False) == 1


JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # sqlite.org/fileformat2.html#the_rollback_journal


def file_ledger(db: str) -> tuple:
    """The ledger values the database file itself holds, read from a copy (past the lock)."""
    copy = db + ".copy"
    shutil.copy(db, copy)
    return sqlite3.connect(copy).execute("SELECT min(v), max(v) FROM ledger").fetchone()


# what a snapshot costs --------------------------------------------------------------------------
PEAK_RSS = r"""
import json, os, sys
sys.path.insert(0, os.getcwd())
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
def high_water_mark():  # this process's peak since it started (ru_maxrss keeps the parent's)
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024
before = rss()
{body}
print(json.dumps({{"growth": high_water_mark() - before, "result": result}}))
"""


def peak_rss(body: str, env: dict | None = None) -> dict:
    """Run `body` (which sets `result`) in a fresh interpreter; its result and how far the peak
    resident memory grew over what the interpreter held before it."""
    code = PEAK_RSS.format(body=body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_snapshot_costs_twice_the_database_at_most(tmp_path):
    """A 62 MB database with 7 MB of committed frames in its WAL: reading it grows the process
    by at most twice the database (our image, then SQLite's copy of it) plus the WAL and a
    little. Measured: 126 MB (before: 204 MB, the image copied twice more while the WAL was
    applied)."""
    db = str(tmp_path / "big.db")
    connection = writer(db)
    connection.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, pad BLOB)")
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO t VALUES (?, randomblob(4000))", [(i,) for i in range(16000)])
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute("UPDATE t SET pad = randomblob(4000) WHERE id % 8 = 0")
    size, wal = os.path.getsize(db), os.path.getsize(db + "-wal")
    found = peak_rss("from agents import sqlite_ro\n"
                     f"result = sqlite_ro.connect({db!r}).execute('SELECT count(*) FROM t').fetchone()[0]")
    assert found["result"] == 16000
    assert found["growth"] <= 2 * size + wal + (16 << 20), (found["growth"] >> 20, size >> 20, wal >> 20)


def test_a_store_over_the_limit_is_reported_and_never_read(tmp_path):
    """An opencode.db of more than MAX_STORE_BYTES (1 GiB; a sparse file): `trajectoriz agents`
    names it with the limit, and its process never grows by more than a few MB (before: the
    whole file was read, twice over: 2.1 GB)."""
    env = base_env(tmp_path)
    db = copy_into(env["HOME"], LIVE_DB, ".local/share/opencode/opencode.db")
    os.truncate(db, sqlite_ro.MAX_STORE_BYTES + 4096)
    body = ("import tempfile, trajectoriz\n"
            "out = tempfile.TemporaryFile()\n"
            "saved = os.dup(1)\n"
            "os.dup2(out.fileno(), 1)\n"
            "trajectoriz.main(['agents', '--json'])\n"
            "sys.stdout.flush()\n"
            "os.dup2(saved, 1)\n"
            "out.seek(0)\n"
            "result = [r for r in map(json.loads, out.read().decode().splitlines()) if r['agent'] == 'opencode']")
    found = peak_rss(body, env=env)
    [row] = found["result"]
    assert "too big to read" in row["store_problems"][0]
    assert f"over the {sqlite_ro.MAX_STORE_BYTES >> 20} MB" in row["store_problems"][0]
    assert found["growth"] < 64 << 20, found["growth"] >> 20


# what a translation reads ----------------------------------------------------------------------
def values_store(tmp_path) -> sqlite3.Connection:
    connection = sqlite3.connect(str(tmp_path / "values.db"), isolation_level=None)
    connection.execute("CREATE TABLE v(id INTEGER PRIMARY KEY, value)")
    return connection


def test_a_value_over_the_limit_never_reaches_python(tmp_path):
    """A text and a blob of MAX_VALUE_BYTES + 1 bytes come back None, the size measured by
    SQLite, with a warning; the values around them are read."""
    connection = values_store(tmp_path)
    limit = sqlite_ro.MAX_VALUE_BYTES
    connection.execute("INSERT INTO v VALUES (1, 'small'), (2, printf('%.*c', ?, 'x')), "
                       "(3, zeroblob(?)), (4, printf('%.*c', ?, 'y'))", (limit + 1, limit + 1, limit))
    budget = sqlite_ro.RowBudget()
    rows = budget.select(connection, ["id", "value"], "FROM v ORDER BY id", (), "values")
    assert [(n, value if n != 4 else len(value)) for n, value in rows] == [
        (1, "small"), (2, None), (3, None), (4, limit)]
    assert budget.take_warnings() == ["2 value(s) of the values held more than 64 MB each and "
                                      "were left out"]


def test_rows_beyond_the_limit_are_not_read(tmp_path):
    """One document reads at most MAX_SESSION_ROWS rows, over all its queries: the query that
    reaches the limit is cut there, the next ones read nothing, each with a warning."""
    connection = values_store(tmp_path)
    connection.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                       f"WHERE i < {sqlite_ro.MAX_SESSION_ROWS + 10}) INSERT INTO v SELECT i, 'row' FROM n")
    budget = sqlite_ro.RowBudget()
    first = budget.select(connection, ["id"], "FROM v WHERE id <= 10", (), "sessions")
    rest = budget.select(connection, ["id"], "FROM v WHERE id > 10 ORDER BY id", (), "messages")
    after = budget.select(connection, ["id"], "FROM v WHERE id = 1", (), "parts")
    assert (len(first), len(rest), after) == (10, sqlite_ro.MAX_SESSION_ROWS - 10, [])
    assert budget.take_warnings() == [
        f"the session holds more than trajectoriz reads of one ({sqlite_ro.MAX_SESSION_ROWS} rows, "
        f"256 MB): the {what} after the first {read} were not read"
        for what, read in (("messages", sqlite_ro.MAX_SESSION_ROWS - 10), ("parts", 0))]


def test_bytes_beyond_the_limit_are_not_read(tmp_path, monkeypatch):
    """One document reads at most MAX_SESSION_BYTES bytes of values (lowered here to 10 kB):
    rows of 1 kB, the tenth is the last one read."""
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_BYTES", 10_000)
    connection = values_store(tmp_path)
    connection.executemany("INSERT INTO v VALUES (?, randomblob(1000))", [(i,) for i in range(50)])
    budget = sqlite_ro.RowBudget()
    rows = budget.select(connection, ["value"], "FROM v ORDER BY id", (), "messages")
    assert len(rows) == 10 and budget.exhausted
    assert "the messages after the first 10 were not read" in budget.take_warnings()[0]
