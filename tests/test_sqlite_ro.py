"""`agents/sqlite_ro`: a snapshot is the database and its WAL as of one moment, however the agent
checkpoints while it is read, and what a snapshot costs is bounded.

The race test runs a real writer process against a copy of the opencode live store; the
deterministic ones make the agent's checkpoint happen at a chosen point of the read (the
database file's reads go through a hook) with a real SQLite writer on the same file. Each runs
twice: with the image in memory, and with it in a copy on disk (the path of a store over
MEMORY_BYTES, taken here by every store). A big store (hundreds of MB, opencode-shaped) is read
by the commands in child processes whose peak memory is measured."""

import itertools
import json
import multiprocessing
import os
import shutil
import sqlite3
import stat
import struct
import subprocess
import sys
import time

import pytest

from agents import opencode, sqlite_ro
from helpers import LIVE, ROOT, base_env, copy_database, copy_into, tree_digest

LIVE_DB = os.path.join(LIVE, "opencode-1.18.33", ".local", "share", "opencode", "opencode.db")
TEMPLATE_SESSION = "ses_dd6f4592cffeEi2zVz5av3tUd1"  # 4 messages
RACE_SESSIONS = 10
LEDGER_ROWS = 40


@pytest.fixture(params=["in-memory", "on-disk"])
def kind(request, tmp_path, monkeypatch):
    """Where the image is: in memory, or in a copy on disk under the test's own cache (every
    store is then taken for a big one)."""
    if request.param == "on-disk":
        monkeypatch.setattr(sqlite_ro, "MEMORY_BYTES", 0)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return request.param


def copies(cache: str) -> list[str]:
    """The copies of big stores in a cache folder (XDG_CACHE_HOME), by name."""
    folder = os.path.join(cache, "trajectoriz", sqlite_ro.COPIES)
    return sorted(n for n in os.listdir(folder) if n != ".lock") if os.path.isdir(folder) else []


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
    env = dict(os.environ)  # the test's cache, for copies on disk
    try:
        listed = [s for s in opencode.scan(db, env) if s.native_id.startswith("race-")]
        doc = opencode.translate(listed[len(listed) // 2], env)
    except Exception as exc:  # what the race breaks is exactly what is looked for
        return f"{type(exc).__name__}: {exc}"
    if len(listed) != RACE_SESSIONS or len(doc["steps"]) < 2:
        return f"{len(listed)} race sessions listed, {len(doc['steps'])} steps"
    return None


def test_snapshots_are_consistent_while_the_agent_checkpoints(tmp_path, kind):
    """300 snapshots (every third also a scan and a translate) while a writer process commits
    and checkpoints in a loop: every one opens and is consistent, in memory and in a copy on
    disk (streamed, the WAL applied by seeking into the copy). Before the snapshots were
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
    assert len(copies(str(tmp_path / "cache"))) == (1 if kind == "on-disk" else 0)  # each replaced the one before


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
    that reach byte `at` run `action` there. Returns the list of the file's openings (each a
    HookedFile: its `position` is how far it was read)."""
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
            opened.append(HookedFile(handle, once, at))
            return opened[-1]

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


def test_a_wal_restarted_between_the_two_reads_is_read_again(tmp_path, hook_reads, kind):
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


def test_a_wal_restarted_while_it_is_read_is_read_again(tmp_path, hook_reads, kind):
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


def test_a_checkpoint_after_the_wal_is_read_is_not_mixed_in(tmp_path, hook_reads, kind):
    """Transaction 1 in the WAL; once the WAL is read, the agent commits transaction 2 and
    checkpoints it into the database file (PASSIVE: the WAL keeps its header). The database
    was read before the WAL, so it cannot hold transaction 2: the image is transaction 1's.
    Read in the other order, by either path, the file's pages of transaction 2 are mixed with
    the WAL's of transaction 1 ("database disk image is malformed"); the order held before the
    copy on disk too: checked here for both."""
    db, connection = ledger_store(tmp_path)
    transaction(connection, 1)

    def write_then_checkpoint():
        transaction(connection, 2)
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")

    hook_reads(db + "-wal", write_then_checkpoint)
    assert snapshot_state(db) == 1


def test_a_wal_truncated_while_the_file_is_read_is_read_again(tmp_path, hook_reads, kind):
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
def test_a_transaction_written_while_the_file_is_read_without_a_wal(tmp_path, hook_reads, kind, wal):
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


def test_a_write_the_mtime_cannot_show_is_waited_out(tmp_path, hook_reads, kind, monkeypatch):
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


def test_a_store_that_never_holds_still_is_an_error(tmp_path, hook_reads, kind, monkeypatch):
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
        sqlite_ro.connect(db)
    assert len(reads) == 5


def test_a_wal_that_cannot_be_read_is_an_error(tmp_path, kind):
    """A `-wal` that exists but cannot be read (here a directory): without it the database file
    alone may be half checkpointed, so the store is an error (before: the file alone)."""
    db, connection = ledger_store(tmp_path)
    connection.close()
    os.mkdir(db + "-wal")
    with pytest.raises(sqlite_ro.StoreError, match="cannot (read|copy)"):
        sqlite_ro.connect(db)


def test_frames_being_appended_are_not_seen(tmp_path, kind):
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
    if kind == "on-disk":  # each copy waits for the WAL just written to be still: fewer cuts,
        cuts = cuts[::4] + [len(wal)]  # still at every offset in a frame (4 and 3 are coprime)
    for cut in cuts:
        open(copy + "-wal", "wb").write(wal[:cut])
        expected = max([n for n, size in states.items() if size <= cut], default=0)
        assert snapshot_state(copy) == expected, cut
    torn = bytearray(wal)
    torn[-page_size // 2:] = os.urandom(page_size // 2)
    open(copy + "-wal", "wb").write(bytes(torn))
    assert snapshot_state(copy) == 2


def test_a_rollback_journal_in_use_is_not_read_past(tmp_path, kind, monkeypatch):
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
        sqlite_ro.connect(db)
    connection.execute("UPDATE counter SET n = 1")
    connection.execute("COMMIT")
    assert snapshot_state(db, grow=False) == 1


JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # sqlite.org/fileformat2.html#the_rollback_journal


def file_ledger(db: str) -> tuple:
    """The ledger values the database file itself holds, read from a copy (past the lock)."""
    copy = db + ".copy"
    shutil.copy(db, copy)
    return sqlite3.connect(copy).execute("SELECT min(v), max(v) FROM ledger").fetchone()


def test_a_store_read_for_longer_than_the_patience_is_read_again(tmp_path, hook_reads, monkeypatch, kind):
    """SNAPSHOT_PATIENCE spent before the first reading ends (as copying a store of gigabytes
    spends it), and that reading spoiled by a checkpoint: the store is read again, as it is
    MIN_ATTEMPTS times at least (before: a StoreError after the one reading)."""
    monkeypatch.setattr(sqlite_ro, "SNAPSHOT_PATIENCE", 0)
    db, connection = ledger_store(tmp_path)
    transaction(connection, 1)

    def checkpoint_then_write():
        connection.execute("PRAGMA wal_checkpoint(RESTART)")
        transaction(connection, 2)

    reads = hook_reads(db, checkpoint_then_write)
    assert snapshot_state(db) == 2
    assert len(reads) == 2


def wal_checksum(data: bytes, big_endian: bool, s0: int, s1: int) -> tuple[int, int]:
    """sqlite.org/fileformat2.html#checksum_algorithm"""
    words = struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data)
    for first, second in zip(words[0::2], words[1::2]):
        s0 = (s0 + first + s1) & 0xFFFFFFFF
        s1 = (s1 + second + s0) & 0xFFFFFFFF
    return s0, s1


def with_commit_size(wal: bytes, db_pages: int) -> bytes:
    """The WAL with its last frame (a commit) saying the database has `db_pages` pages, and
    every checksum recomputed as SQLite would write them: a WAL SQLite itself would use."""
    page_size = int.from_bytes(wal[8:12], "big")
    frame, big_endian = 24 + page_size, wal[3] == 0x83
    s0, s1 = struct.unpack_from(">II", wal, 24)
    forged = bytearray(wal)
    count = (len(wal) - 32) // frame
    for k in range(count):
        at = 32 + k * frame
        if k == count - 1:
            struct.pack_into(">I", forged, at + 4, db_pages)
        s0, s1 = wal_checksum(bytes(forged[at:at + 8] + forged[at + 24:at + frame]), big_endian, s0, s1)
        struct.pack_into(">II", forged, at + 16, s0, s1)
    return bytes(forged)


def test_a_wal_that_grows_the_database_past_its_files_is_an_error(tmp_path, kind):
    """A WAL whose valid commit frame says the database has 2^31 pages (8 TB), though the
    database and the WAL hold a few hundred kB: a StoreError that says the WAL is damaged,
    nothing allocated or written for the pages it names (before: MemoryError in memory, a
    sparse copy of 8 TB on disk)."""
    db, connection = ledger_store(tmp_path)
    transaction(connection, 1)
    copy = str(tmp_path / "copy.db")
    shutil.copy(db, copy)
    with open(db + "-wal", "rb") as handle, open(copy + "-wal", "wb") as out:
        out.write(with_commit_size(handle.read(), 1 << 31))
    with pytest.raises(sqlite_ro.StoreError, match=r"copy\.db-wal is damaged: it names page 2,147,483,648"):
        sqlite_ro.connect(copy)
    assert copies(str(tmp_path / "cache")) == []


ENDLESS = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c)"


def test_the_store_s_views_are_not_in_its_image(tmp_path, kind):
    """A store with a view where a table is expected, one that never ends: the image has no
    view, in memory or on disk (the copy's dropped before it is used), so the name is no table
    at all (before on disk: the copy kept it, and any query naming it ran forever)."""
    db = str(tmp_path / "views.db")
    connection = sqlite3.connect(db)
    connection.executescript(f"CREATE TABLE session_real(n); CREATE VIEW session AS {ENDLESS} SELECT n FROM c;")
    connection.close()
    image = sqlite_ro.connect(db)
    assert image.execute("SELECT count(*) FROM sqlite_master WHERE type = 'view'").fetchone() == (0,)
    with pytest.raises(sqlite3.OperationalError, match="no such table: session"):
        image.execute("SELECT n FROM session")


def test_a_statement_past_its_deadline_is_interrupted(tmp_path, monkeypatch, kind):
    """Every statement on an image is interrupted once it has run QUERY_SECONDS (lowered here
    to 0.2 s), in memory and on disk: a recursion that would count for minutes ends in an
    OperationalError (before on disk: it ran to its end)."""
    monkeypatch.setattr(sqlite_ro, "QUERY_SECONDS", 0.2)
    db, connection = ledger_store(tmp_path)
    image = sqlite_ro.connect(db)
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        image.execute(ENDLESS.replace("FROM c)", "FROM c WHERE n < 3e8)") + " SELECT count(*) FROM c").fetchone()


# the listing's one query, on the store's file itself ----------------------------------------------
def listed(db: str, query, monkeypatch) -> tuple:
    """`sqlite_ro.listed(db, None, query)`, and whether a snapshot was made for it."""
    made = []
    real = sqlite_ro.connect
    monkeypatch.setattr(sqlite_ro, "connect", lambda *args: made.append(args) or real(*args))
    return sqlite_ro.listed(db, None, query), bool(made)


def counter(connection: sqlite3.Connection) -> int:
    return ledger_state(connection)


def checkpointed_store(tmp_path, transactions: int) -> tuple[str, sqlite3.Connection]:
    """The ledger after `transactions`, every page in the database file (the WAL emptied by a
    checkpoint), still; its writer open, as a running agent's."""
    db, connection = ledger_store(tmp_path)
    for n in range(1, transactions + 1):
        transaction(connection, n)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    still(db)
    return db, connection


@pytest.mark.parametrize("writer_open", [True, False], ids=["writer-open", "writer-closed"])
def test_a_still_store_whose_file_holds_everything_is_listed_from_it(tmp_path, monkeypatch, writer_open):
    """The WAL emptied (or gone, its writer closed), the file still: the listing's query reads
    the file itself, makes no snapshot (for opencode's 189 MB store in the bench: no copy
    written and synced), gets what a snapshot gets, and nothing beside the store is created
    or changed: no -shm, no WAL, no lock (before: every listing of it made a snapshot)."""
    db, connection = checkpointed_store(tmp_path, 3)
    if not writer_open:
        connection.close()
        still(db)
    before = tree_digest(str(tmp_path))
    assert listed(db, counter, monkeypatch) == (3, False)
    assert tree_digest(str(tmp_path)) == before
    assert snapshot_state(db) == 3


def test_a_store_with_commits_in_its_wal_is_listed_from_a_snapshot(tmp_path, monkeypatch):
    """Transaction 4 only in the WAL: the file alone is not the store, so the snapshot (the WAL
    applied) is read, and the listing has transaction 4 (read in place, it would say 3)."""
    db, connection = checkpointed_store(tmp_path, 3)
    transaction(connection, 4)
    still(db)
    assert listed(db, counter, monkeypatch) == (4, True)


def test_a_store_just_written_is_listed_from_a_snapshot(tmp_path, monkeypatch):
    """A file written within the last tick of the clock (`_quiet_for`) may change again with
    the same mtime: it is not read in place."""
    db, connection = checkpointed_store(tmp_path, 3)
    transaction(connection, 4)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert listed(db, counter, monkeypatch) == (4, True)


def test_a_store_written_while_it_is_listed_in_place_is_listed_again(tmp_path, monkeypatch):
    """The agent commits and checkpoints transaction 4 while the query reads the file: the
    file's stat shows it, the rows read in place are dropped, and the snapshot's are the
    listing (in place alone, it would say 3: or a torn read of both)."""
    db, connection = checkpointed_store(tmp_path, 3)
    writes = []

    def query(store):
        found = counter(store)
        if not writes:
            writes.append(transaction(connection, 4))
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return found

    assert listed(db, query, monkeypatch) == (4, True)


def test_a_view_of_the_store_is_never_read_in_place(tmp_path, monkeypatch):
    """A view named like a table, that never ends: a store with views is not read in place (the
    file cannot have its views dropped), and the snapshot, which has none, says there is no
    such table: the query never runs through the view."""
    db = str(tmp_path / "views.db")
    connection = sqlite3.connect(db)
    connection.executescript(f"CREATE TABLE session_real(n); CREATE VIEW session AS {ENDLESS} SELECT n FROM c;")
    connection.close()
    still(db)
    failures = []

    def query(store):
        try:
            return store.execute("SELECT n FROM session").fetchall()
        except sqlite3.DatabaseError as exc:
            failures.append(str(exc))
            raise

    with pytest.raises(sqlite_ro.StoreError, match="no such table: session"):
        listed(db, query, monkeypatch)
    assert failures == ["no such table: session"]


def test_a_store_whose_wal_cannot_be_read_is_not_listed_in_place(tmp_path, monkeypatch):
    """A WAL there that this process cannot read (here a folder in its place; for another
    user, a file it may not read) may hold commits the file lacks: the listing is the
    snapshot's, which says it cannot read it (in place, it listed the file alone, silently
    without them). A journal that cannot be read leaves the listing to the snapshot too."""
    db, connection = checkpointed_store(tmp_path, 3)
    connection.close()
    os.mkdir(db + "-wal")
    still(db)
    with pytest.raises(sqlite_ro.StoreError, match="-wal"):
        listed(db, counter, monkeypatch)
    os.rmdir(db + "-wal")
    os.mkdir(db + "-journal")
    assert listed(db, counter, monkeypatch) == (3, True)


def test_a_store_in_a_folder_others_can_change_is_listed_from_a_snapshot(tmp_path, monkeypatch):
    """SQLite opens the file by its name, blocking: in a folder others may write, it could be
    a FIFO by then. Such a store is read through a snapshot (which opens it without blocking)."""
    db, connection = checkpointed_store(tmp_path, 3)
    os.chmod(tmp_path, 0o777)
    try:
        assert listed(db, counter, monkeypatch) == (3, True)
    finally:
        os.chmod(tmp_path, 0o700)


def test_a_listing_past_its_deadline_in_place_is_not_run_again(tmp_path, monkeypatch):
    """A statement interrupted at QUERY_SECONDS (lowered to 0.2 s) in place would be as long on
    the snapshot: the listing fails then, once (before: interrupted, then run again whole)."""
    monkeypatch.setattr(sqlite_ro, "QUERY_SECONDS", 0.2)
    db, connection = checkpointed_store(tmp_path, 3)
    endless = "SELECT count(*) FROM ledger a, ledger b, ledger c, ledger d, ledger e, ledger f"  # 40 ** 6 rows
    with pytest.raises(sqlite_ro.StoreError, match="interrupted"):
        listed(db, lambda store: store.execute(endless).fetchone(), monkeypatch)
    made = []
    monkeypatch.setattr(sqlite_ro, "connect", lambda *args: made.append(args))
    with pytest.raises(sqlite_ro.StoreError):
        sqlite_ro.listed(db, None, lambda store: store.execute(endless).fetchone())
    assert made == []


# translating from the store's own file ------------------------------------------------------------
@pytest.fixture
def fresh_shared(monkeypatch):
    """`shared` with nothing kept from other tests; what it made here is forgotten after."""
    sqlite_ro.release_shared()
    made = []
    real = sqlite_ro.connect
    monkeypatch.setattr(sqlite_ro, "connect", lambda *args: made.append(args) or real(*args))
    yield made
    sqlite_ro.release_shared()


def shared_counter(db: str) -> tuple[int, str]:
    store = sqlite_ro.shared(db)
    return counter(store), type(store).__name__


@pytest.mark.parametrize("writer_open", [True, False], ids=["writer-open", "writer-closed"])
def test_a_still_store_is_translated_from_its_own_file(tmp_path, fresh_shared, kind, writer_open):
    """Within `in_one_moment`, `shared` hands the translator the store's own file when that
    alone is its committed state: no snapshot made (opencode's 189 MB store: no copy written,
    0.4 s, by each process reading it after a change), the same rows, and nothing beside the
    store created or changed; the next document reads the same connection."""
    db, connection = checkpointed_store(tmp_path, 3)
    if not writer_open:
        connection.close()
        still(db)
    before = tree_digest(str(tmp_path))
    assert sqlite_ro.in_one_moment(lambda: shared_counter(db)) == (3, "InPlace")
    assert sqlite_ro.in_one_moment(lambda: sqlite_ro.shared(db)) is sqlite_ro.in_one_moment(lambda: sqlite_ro.shared(db))
    assert fresh_shared == [] and copies(str(tmp_path / "cache")) == []
    assert tree_digest(str(tmp_path)) == before


def test_outside_a_moment_a_store_is_read_from_a_snapshot(tmp_path, fresh_shared, kind):
    """No one checks what `shared` read unless `in_one_moment` does: without it, a snapshot (and
    an in-place connection kept from a moment is not handed out)."""
    db, _ = checkpointed_store(tmp_path, 3)
    assert sqlite_ro.in_one_moment(lambda: shared_counter(db)) == (3, "InPlace")
    assert shared_counter(db)[0] == 3 and len(fresh_shared) == 1
    assert type(sqlite_ro.shared(db)).__name__ != "InPlace"


def committing_during_the_first_read(db: str, connection: sqlite3.Connection, failure=None):
    """A read of the ledger (`shared_counter`) during whose first attempt the agent commits and
    checkpoints transaction 4 (the attempt then raising `failure`, when given), and the list
    of what each attempt read."""
    attempts = []

    def read():
        found = shared_counter(db)
        attempts.append(found)
        if len(attempts) == 1:
            transaction(connection, 4)
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if failure is not None:
                raise failure
        return found
    return read, attempts


def test_a_store_written_while_translated_in_place_is_translated_again(tmp_path, fresh_shared, kind):
    """The agent commits and checkpoints transaction 4 while a document is read from the file:
    the file's stat shows it after, the document is thrown away and read again from a snapshot
    (in place alone it would say 3, or mix both)."""
    db, connection = checkpointed_store(tmp_path, 3)
    read, reads = committing_during_the_first_read(db, connection)
    assert sqlite_ro.in_one_moment(read)[0] == 4
    assert [r[1] == "InPlace" for r in reads] == [True, False] and len(fresh_shared) == 1


def test_a_read_that_fails_after_reading_in_place_is_made_again_on_snapshots(tmp_path, fresh_shared, kind):
    """A torn read may fail instead of mislead, and the file's own schema may refuse what an
    image allows: a failure after reading in place is met again on snapshots. One that fails
    there too stands; a statement out of time is not run again."""
    db, connection = checkpointed_store(tmp_path, 3)
    read, attempts = committing_during_the_first_read(
        db, connection, sqlite3.DatabaseError("database disk image is malformed"))
    assert sqlite_ro.in_one_moment(read) == (4, type(sqlite_ro.connect(db)).__name__)
    assert [kind for _, kind in attempts][0] == "InPlace" and len(attempts) == 2
    still(db)
    sqlite_ro.release_shared()

    def only_in_place(kinds):
        def read():
            found = shared_counter(db)
            kinds.append(found[1])
            if found[1] == "InPlace":
                raise sqlite3.OperationalError("unsafe use of a function in a generated column")
            return found
        return read

    kinds = []
    assert sqlite_ro.in_one_moment(only_in_place(kinds))[0] == 4 and kinds[0] == "InPlace" and len(kinds) == 2
    sqlite_ro.release_shared()

    def failing(kinds, message):
        def read():
            kinds.append(shared_counter(db)[1])
            raise sqlite3.DatabaseError(message)
        return read

    for message, tries in (("a real defect", 2), ("interrupted", 1)):
        kinds = []
        with pytest.raises(sqlite3.DatabaseError, match=message):
            sqlite_ro.in_one_moment(failing(kinds, message))
        assert kinds[0] == "InPlace" and len(kinds) == tries
        sqlite_ro.release_shared()


def test_a_file_replaced_between_two_moments_is_not_read_through_its_old_connection(tmp_path, fresh_shared, kind):
    """The agent replaces its database whole (a new file renamed over it) with one of the same
    size and mtime: the connection kept from the first moment reads the old file, and the
    second moment sees that the file it read is gone and reads again (before the check of a
    kept connection, it would say 3)."""
    db, connection = checkpointed_store(tmp_path, 3)
    connection.close()
    still(db)
    assert sqlite_ro.in_one_moment(lambda: shared_counter(db)) == (3, "InPlace")
    replacement = str(tmp_path / "replacement.db")
    shutil.copyfile(db, replacement)
    other = sqlite3.connect(replacement, isolation_level=None)
    other.execute("PRAGMA journal_mode=DELETE")
    transaction(other, 4, grow=False)  # existing pages only: the same size
    other.close()
    st = os.stat(db)
    assert os.path.getsize(replacement) == st.st_size
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replacement, db)
    assert sqlite_ro.stamp_of(db) == [(st.st_size, st.st_mtime_ns), None]  # the kept connection's stamp
    still(db)
    assert sqlite_ro.in_one_moment(lambda: ledger_state(sqlite_ro.shared(db), grow=False)) == 4


def test_one_moment_reads_a_store_through_one_connection(tmp_path, fresh_shared, kind):
    """A translator asking twice for the same store within one moment gets the same connection,
    even when the agent committed in between (a snapshot then would hold the commit, the file
    read before it not)."""
    db, connection = checkpointed_store(tmp_path, 3)

    def read():
        first = sqlite_ro.shared(db)
        transaction(connection, 4)
        return first is sqlite_ro.shared(db), counter(first)

    assert sqlite_ro.in_one_moment(read) == (True, 3)


def test_stores_not_alone_in_their_file_are_translated_from_a_snapshot(tmp_path, fresh_shared, kind):
    """Commits only in the WAL, a file written within the clock's tick, a folder others can
    change: a snapshot each time, which has transaction 4."""
    db, connection = checkpointed_store(tmp_path, 3)
    transaction(connection, 4)
    still(db)
    found = sqlite_ro.in_one_moment(lambda: shared_counter(db))
    assert found[0] == 4 and found[1] != "InPlace"
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert sqlite_ro.in_one_moment(lambda: shared_counter(db))[1] != "InPlace"  # just written
    still(db)
    sqlite_ro.release_shared()
    os.chmod(tmp_path, 0o777)
    try:
        made = len(fresh_shared)
        found = sqlite_ro.in_one_moment(lambda: shared_counter(db))
        assert found[0] == 4 and found[1] != "InPlace" and len(fresh_shared) == made + 1
    finally:
        os.chmod(tmp_path, 0o755)


def on_disk(tmp_path, monkeypatch) -> str:
    """Every store taken for a big one, copied under the test's cache, whose path it returns."""
    cache = str(tmp_path / "cache")
    monkeypatch.setattr(sqlite_ro, "MEMORY_BYTES", 0)
    monkeypatch.setenv("XDG_CACHE_HOME", cache)
    return cache


def test_making_a_copy_removes_the_old_ones(tmp_path, monkeypatch):
    """Copies of a store are replaced, never piled up: making one removes the store's older
    copies, temporary files a killed process left, and other stores' copies no process used
    for UNUSED_AFTER; another store's copy in use stays. The copies are 0600 in a 0700 folder."""
    cache = on_disk(tmp_path, monkeypatch)
    folder = os.path.join(cache, "trajectoriz", sqlite_ro.COPIES)
    os.makedirs(folder)
    left = {name: os.path.join(folder, name) for name in
            (".a-b.db.1234.tmp", "0" * 20 + "-" + "1" * 20 + ".db", "2" * 20 + "-" + "3" * 20 + ".db")}
    for path in left.values():
        open(path, "wb").close()
    unused = time.time() - sqlite_ro.UNUSED_AFTER - 60
    os.utime(left["0" * 20 + "-" + "1" * 20 + ".db"], (unused, unused))
    db, connection = ledger_store(tmp_path)
    assert snapshot_state(db) == 0
    [first] = set(copies(cache)) - set(left)
    transaction(connection, 1)
    assert snapshot_state(db) == 1
    [second] = set(copies(cache)) - set(left)
    assert first != second
    assert set(copies(cache)) == {second, "2" * 20 + "-" + "3" * 20 + ".db"}
    modes = (os.stat(folder).st_mode, os.stat(os.path.join(folder, second)).st_mode)
    assert tuple(map(stat.S_IMODE, modes)) == (0o700, 0o600)


def open_at_once(db: str, ready, found) -> None:
    ready.wait(10)
    connection = sqlite_ro.connect(db)
    copy = connection.execute("PRAGMA database_list").fetchone()[2]
    found.put((os.stat(copy).st_ino, ledger_state(connection)))


def test_processes_opening_a_big_store_at_once_make_one_copy(tmp_path, monkeypatch):
    """Four processes open the store at the same moment, the copy slowed down (its reads wait
    0.3 s): one of them makes it, and all four read the same file (before the copies were
    made under a lock, each made its own and removed the others' half-written files)."""
    on_disk(tmp_path, monkeypatch)
    db, connection = ledger_store(tmp_path)
    transaction(connection, 1)
    real_open = sqlite_ro.open_binary

    def slow_open(name):
        if name == db:
            time.sleep(0.3)
        return real_open(name)

    monkeypatch.setattr(sqlite_ro, "open_binary", slow_open)
    start = multiprocessing.get_context("fork")
    ready, found = start.Barrier(4), start.Queue()
    processes = [start.Process(target=open_at_once, args=(db, ready, found)) for _ in range(4)]
    for process in processes:
        process.start()
    results = [found.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(10)
    assert len({inode for inode, _ in results}) == 1
    assert [state for _, state in results] == [1] * 4


def shared_in_a_child(db: str, held_id: int, found) -> None:
    connection = sqlite_ro.shared(db)
    found.put((id(connection) == held_id, ledger_state(connection)))


def test_a_connection_to_a_copy_is_not_carried_across_a_fork(tmp_path, kind):
    """`shared` in a process forked after its parent opened the store: a copy on disk is
    opened anew in the child (SQLite: no connection may be used across a fork), an image in
    memory is the child's own and is reused (before: the parent's connection to the file, in
    every worker of the pool)."""
    db, connection = ledger_store(tmp_path)
    transaction(connection, 1)
    held = sqlite_ro.shared(db)
    start = multiprocessing.get_context("fork")
    found = start.Queue()
    child = start.Process(target=shared_in_a_child, args=(db, id(held), found))
    child.start()
    result = found.get(timeout=30)
    child.join(10)
    assert result == (kind == "in-memory", 1)


def test_a_copy_spoiled_by_a_checkpoint_is_abandoned_as_it_happens(tmp_path, hook_reads, monkeypatch):
    """A copy being made when the agent restarts the WAL, a quarter of the way through the
    database file (looked for every 4 kB here, CHECK_EVERY bytes otherwise): that reading
    stops right there, and the store is read again (before: the whole file was copied, then
    thrown away)."""
    on_disk(tmp_path, monkeypatch)
    monkeypatch.setattr(sqlite_ro, "COPY_CHUNK", 4096)
    monkeypatch.setattr(sqlite_ro, "CHECK_EVERY", 4096)
    db, connection = ledger_store(tmp_path)
    for n in (1, 2, 3):
        transaction(connection, n)

    def checkpoint_then_write():
        connection.execute("PRAGMA wal_checkpoint(RESTART)")
        transaction(connection, 4)

    size = os.path.getsize(db)
    reads = hook_reads(db, checkpoint_then_write, at=size // 4)
    assert snapshot_state(db) == 4
    first, *_, last = reads
    assert size // 4 <= first.position <= size // 4 + 4096 and last.position == os.path.getsize(db)


def floored(path: str) -> os.stat_result:
    """os.stat as a file system that keeps whole seconds gives it."""
    found = os.stat(path)
    fields = list(found)
    times = {}
    for index, name in ((7, "st_atime"), (8, "st_mtime"), (9, "st_ctime")):
        fields[index] = int(getattr(found, name))
        times[name + "_ns"] = fields[index] * 10**9
    return os.stat_result(fields, times)


def test_a_copy_is_named_for_reuse_only_once_the_store_is_still(tmp_path, monkeypatch):
    """A store on a file system that keeps whole seconds (the stat here floors its times), its
    WAL restarted, so that a transaction leaves the WAL's size as it was: copied in the second
    a transaction was written, and written again in that second, the store would show the same
    version twice. So a copy is named by its version only once the store has been still for
    longer than the clock's step (waited for), and the second transaction, a new version, is
    seen (before: the copy of the first was reused for it)."""
    on_disk(tmp_path, monkeypatch)
    monkeypatch.setattr(sqlite_ro, "_stat", lambda path: floored(path) if os.path.exists(path) else None)
    monkeypatch.setattr(sqlite_ro, "_stat_database", floored)
    db, connection = ledger_store(tmp_path)
    for n in (1, 2, 3):
        transaction(connection, n)
    connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
    size = os.path.getsize(db + "-wal")
    time.sleep(1.01 - time.time() % 1)  # the start of a second: what follows takes a fraction of it
    transaction(connection, 4)  # the WAL restarted: written over from its start
    assert snapshot_state(db) == 4
    transaction(connection, 5)
    assert os.path.getsize(db + "-wal") == size
    assert snapshot_state(db) == 5


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
    """A 46 MB database with 5 MB of committed frames in its WAL (in all, under MEMORY_BYTES:
    read in memory): reading it grows the process by at most twice the database (our image,
    then SQLite's copy of it) plus the WAL and a little. Measured: 103 MB (before the WAL was
    applied in place, the image was copied twice more: 204 MB for the 62 MB database this test
    used then, which now goes to disk)."""
    db = str(tmp_path / "big.db")
    connection = writer(db)
    connection.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, pad BLOB)")
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO t VALUES (?, randomblob(4000))", [(i,) for i in range(12000)])
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute("UPDATE t SET pad = randomblob(4000) WHERE id % 8 = 0")
    size, wal = os.path.getsize(db), os.path.getsize(db + "-wal")
    assert size + wal <= sqlite_ro.MEMORY_BYTES
    found = peak_rss("from agents import sqlite_ro\n"
                     f"result = sqlite_ro.connect({db!r}).execute('SELECT count(*) FROM t').fetchone()[0]")
    assert found["result"] == 12000
    assert found["growth"] <= 2 * size + wal + (16 << 20), (found["growth"] >> 20, size >> 20, wal >> 20)


def test_a_store_the_disk_has_no_room_to_copy_is_read_in_place_and_never_copied(tmp_path):
    """An opencode.db just over MEMORY_BYTES (a sparse file) whose copy would leave less than
    KEEP_FREE_BYTES free (raised here to all but 32 MB of the free space, so that a regression
    writes a small copy, not one that fills the disk): `trajectoriz agents` lists its sessions
    and translates them, reading the file itself (its listing since `sqlite_ro.listed`, its
    sessions since `in_one_moment`: before, each one's translation failed for want of a copy);
    its process never grows by more than a few MB, and nothing is left in the cache. A snapshot
    of it, which must copy, is refused with the room a copy must leave."""
    env = base_env(tmp_path)
    db = copy_into(env["HOME"], LIVE_DB, ".local/share/opencode/opencode.db")
    os.truncate(db, sqlite_ro.MEMORY_BYTES + 4096)
    still(db)  # (a file written in the last tick of the clock is never read in place)
    body = ("import tempfile, trajectoriz\n"
            "from agents import sqlite_ro\n"
            f"found = os.statvfs({str(tmp_path)!r})\n"
            "sqlite_ro.KEEP_FREE_BYTES = found.f_bavail * found.f_frsize - (32 << 20)\n"
            "out = tempfile.TemporaryFile()\n"
            "saved = os.dup(1)\n"
            "os.dup2(out.fileno(), 1)\n"
            "trajectoriz.main(['agents', '--json'])\n"
            "sys.stdout.flush()\n"
            "os.dup2(saved, 1)\n"
            "out.seek(0)\n"
            "rows = [r for r in map(json.loads, out.read().decode().splitlines()) if r['agent'] == 'opencode']\n"
            "try:\n"
            f"    sqlite_ro.connect({db!r})\n"
            "    refused = None\n"
            "except sqlite_ro.StoreError as exc:\n"
            "    refused = str(exc)\n"
            "result = [rows, refused]")
    found = peak_rss(body, env=env)
    [row], refused = found["result"]
    assert row["store_problems"] == [] and row["failures"] == []
    assert (row["sessions"], row["sessions_failed"]) == (2, 0)
    assert "too big to read in memory" in refused and "and a copy of it in" in refused
    assert " GB free there (" in refused
    assert found["growth"] < 64 << 20, found["growth"] >> 20
    assert copies(env["XDG_CACHE_HOME"]) == []


# a big store, read through its copy on disk -----------------------------------------------------
BIG_EVENTS = 100_000            # rows of 4 kB in the `event` table: a store of about 420 MB
PEAK_LIMIT = 300 << 20          # the peak memory of any command, the product's target
WAL_SESSION = "ses_committed_after_the_last_checkpoint"


def add_session(connection: sqlite3.Connection, session: str) -> None:
    """A copy of the template session (its messages and parts too) under a new id, in one
    transaction."""
    columns = [row[1] for row in connection.execute("PRAGMA table_info(session)")][1:]
    names = ", ".join(columns)
    connection.execute("BEGIN IMMEDIATE")
    connection.execute(f"INSERT INTO session (id, {names}) SELECT ?, {names} FROM session WHERE id = ?",
                       (session, TEMPLATE_SESSION))
    connection.execute("INSERT INTO message SELECT ? || id, ?, time_created, time_updated, data "
                       "FROM message WHERE session_id = ?", (session, session, TEMPLATE_SESSION))
    connection.execute("INSERT INTO part SELECT ? || id, ? || message_id, ?, time_created, time_updated, "
                       "data FROM part WHERE session_id = ?", (session, session, session, TEMPLATE_SESSION))
    connection.execute("COMMIT")


@pytest.fixture(scope="module")
def big_home(tmp_path_factory):
    """A $HOME whose opencode.db is the live store with 400 MB of events added (a table that
    trajectoriz never reads, which fills real stores of many GB) and, after the last
    checkpoint, one more session: only in the WAL, as a running agent leaves it (copied while
    its writer is open)."""
    folder = tmp_path_factory.mktemp("big")
    scratch = str(folder / "scratch.db")
    copy_database(LIVE_DB, scratch)
    connection = sqlite3.connect(scratch, isolation_level=None)
    connection.execute("PRAGMA journal_mode=DELETE")  # the live WAL checkpointed into the file
    connection.execute("PRAGMA synchronous=OFF")
    connection.execute(f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {BIG_EVENTS}) "
                       "INSERT INTO event (id, aggregate_id, seq, type, data) "
                       "SELECT 'event-' || i, 'aggregate-' || (i % 50), i, 'x', printf('%.*c', 4000, 'e') FROM n")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    add_session(connection, WAL_SESSION)
    home = str(folder / "home")
    store = os.path.join(home, ".local", "share", "opencode")
    os.makedirs(store)
    copy_database(scratch, os.path.join(store, "opencode.db"))
    connection.close()
    yield home
    shutil.rmtree(str(folder))


COMMAND = r"""
import json, os, resource, sys, tempfile
sys.path.insert(0, os.getcwd())
from agents import sqlite_ro
import trajectoriz
if {in_memory}:
    sqlite_ro.MEMORY_BYTES = 1 << 40  # the reference: the same store read in memory
out = tempfile.TemporaryFile()
saved = os.dup(1)
os.dup2(out.fileno(), 1)
code = trajectoriz.main({args!r})
sys.stdout.flush()
os.dup2(saved, 1)
out.seek(0)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(json.dumps({{"code": code, "out": out.read().decode(), "peak": int(status["VmHWM"].split()[0]) << 10,
                  "workers": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10}}))
"""


def command(args: list[str], env: dict, in_memory: bool = False) -> dict:
    """`trajectoriz ARGS` in a child process, its index and documents cache emptied first (so
    that it reads the store itself; copies of stores are kept): its exit status, output, peak
    memory (VmHWM), and the largest peak of its workers (the pool's processes)."""
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    for name in os.listdir(cache) if os.path.isdir(cache) else []:
        if name != sqlite_ro.COPIES:
            path = os.path.join(cache, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
    code = COMMAND.format(args=list(args), in_memory=in_memory)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def the_commands(env: dict, in_memory: bool = False, copied=None) -> list[dict]:
    """list --all, show of every session listed, search --content, each in its own process;
    `copied()` is called after the first."""
    listed = command(["list", "--all", "--json"], env, in_memory)
    if copied:
        copied()
    ids = [json.loads(line)["id"] for line in listed["out"].splitlines()]
    shown = [command(["show", i], env, in_memory) for i in ids]
    found = command(["search", "--content", "hello-opencode", "--json"], env, in_memory)
    return [listed, *shown, found]


def copies_on_disk(cache: str) -> dict:
    """Each copy in a cache folder: its name -> (inode, mtime, mode), with the folder's mode."""
    folder = os.path.join(cache, "trajectoriz", sqlite_ro.COPIES)
    found = {}
    for name in copies(cache):
        st = os.stat(os.path.join(folder, name))
        found[name] = (st.st_ino, st.st_mtime_ns, stat.S_IMODE(st.st_mode))
    return {"folder": stat.S_IMODE(os.stat(folder).st_mode), **found} if found else {}


def test_a_big_store_is_read_through_a_private_copy_in_bounded_memory(big_home, tmp_path):
    """A 420 MB opencode store (its newest session only in the WAL) read by list --all, show of
    each session and search --content, each in a process of its own: every process, and every
    worker of its pool, peaks under 300 MB; every output is the one the same commands give
    reading the store in memory (whose processes peak over 300 MB). The copy is private (0600
    in a 0700 folder), made by the first command and reused by the others (the same file: inode
    and mtime), and nothing appears or changes beside the store (before: 818 MB for each
    command, 417 MB for each worker)."""
    store = os.path.join(big_home, ".local", "share", "opencode")
    untouched = tree_digest(store)
    on_disk = base_env(tmp_path / "disk", home=big_home)
    made = []
    runs = the_commands(on_disk, copied=lambda: made.append(copies_on_disk(on_disk["XDG_CACHE_HOME"])))
    reference = the_commands(base_env(tmp_path / "memory", home=big_home), in_memory=True)
    assert [r["out"] for r in runs] == [r["out"] for r in reference]
    assert {r["code"] for r in runs} == {0}
    listed = [json.loads(line) for line in runs[0]["out"].splitlines()]
    assert len(listed) == 4 and WAL_SESSION in {row["native_id"] for row in listed}
    assert "hello-opencode" in runs[-1]["out"]
    peaks = [(r["peak"] >> 20, r["workers"] >> 20) for r in runs]
    assert max(max(p) for p in peaks) < PEAK_LIMIT >> 20, peaks
    assert max(r["peak"] for r in reference) > PEAK_LIMIT  # the store is big enough to matter
    [(name, (_, _, mode))] = [(k, v) for k, v in made[0].items() if k != "folder"]
    assert (mode, made[0]["folder"]) == (0o600, 0o700)
    assert copies_on_disk(on_disk["XDG_CACHE_HOME"]) == made[0]
    assert tree_digest(store) == untouched


def test_the_copy_is_replaced_when_the_store_changes(big_home, tmp_path):
    """The big store copied by `list`; the agent then commits a new session (in the WAL, its
    writer still open): the next `list` shows it, from a new copy, and the old copy is gone."""
    home = str(tmp_path / "home")
    shutil.copytree(big_home, home)
    env = base_env(tmp_path, home=home)
    first = command(["list", "--all", "--json"], env)
    old = copies_on_disk(env["XDG_CACHE_HOME"])
    agent = writer(os.path.join(home, ".local", "share", "opencode", "opencode.db"))
    try:
        add_session(agent, "ses_committed_after_the_copy")
        second = command(["list", "--all", "--json"], env)
    finally:
        agent.close()
    new = copies_on_disk(env["XDG_CACHE_HOME"])
    assert len(old) == len(new) == 2 and not old.keys() & new.keys() - {"folder"}
    sessions = [{json.loads(line)["native_id"] for line in run["out"].splitlines()} for run in (first, second)]
    assert sessions[1] - sessions[0] == {"ses_committed_after_the_copy"}


def test_reading_every_page_of_a_big_store_costs_its_page_cache(big_home, tmp_path):
    """A query that reads every page of the big store's 400 MB of events, through its copy:
    the process, copying included, grows by little more than SQLite's page cache
    (PAGE_CACHE_KIB). Measured: 17 MB; with a page cache of 1 GB it keeps every page read
    (429 MB), and in memory the store costs twice its size (before: 804 MB)."""
    env = base_env(tmp_path, home=big_home)
    db = os.path.join(big_home, ".local", "share", "opencode", "opencode.db")
    found = peak_rss("from agents import sqlite_ro\n"
                     f"connection = sqlite_ro.connect({db!r}, {env!r})\n"
                     "result = connection.execute(\"SELECT count(*), sum(length(data)) FROM event WHERE id LIKE 'event-%'\").fetchone()",
                     env=env)
    assert found["result"] == [BIG_EVENTS, BIG_EVENTS * 4000]
    assert found["growth"] < (sqlite_ro.PAGE_CACHE_KIB << 10) + (32 << 20), found["growth"] >> 20


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
