"""Read an agent's SQLite store without touching it, WAL included.

Agents keep their databases in WAL mode, and the newest sessions often live only in the `-wal`
file. SQLite's own read-only modes are not enough: `mode=ro` still writes read marks into the
`-shm` file (and creates it if missing), and `immutable=1` ignores the WAL. So this module reads
the bytes of the database and of its WAL, applies the WAL's committed frames itself, and hands
SQLite the resulting image in memory (`Connection.deserialize`). Nothing next to the user's
database is opened for writing, no lock is taken, and a database locked by a running agent
reads as its last committed state.

Limits: a snapshot holds the database and its WAL in memory, so a store of more than
MAX_STORE_BYTES (database + WAL) is refused with a `StoreError`; reading one costs about twice
its size at the peak (our image, then SQLite's copy of it). What a translator reads from a
snapshot is bounded by `RowBudget`: no value over MAX_VALUE_BYTES reaches Python, and one
document reads at most MAX_SESSION_ROWS rows and MAX_SESSION_BYTES bytes of values.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import struct
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass

from agents.base import open_binary

SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_MAGIC = (0x377F0682, 0x377F0683)
WAL_HEADER_BYTES = 32
FRAME_HEADER_BYTES = 24

MAX_STORE_BYTES = 1 << 30           # database + WAL read into memory for one snapshot
SNAPSHOT_ATTEMPTS = 30              # reads of a store that keeps changing underneath, at most
SNAPSHOT_PATIENCE = 5.0             # seconds spent on them, at most
QUIET_NS = 50_000_000               # see `_quiet_for`
QUIET_COARSE_NS = 2_100_000_000

QUERY_SECONDS = 60.0                # one statement on a snapshot, at most (`_Bounded`)
WATCH_SECONDS = 0.5                 # how often the deadlines are looked at

MAX_VALUE_BYTES = 64 << 20          # one TEXT or BLOB value read into Python
MAX_SESSION_ROWS = 200_000          # rows read for one document, its sub-agent sessions included
MAX_SESSION_BYTES = 256 << 20       # bytes of values read for one document


class StoreError(Exception):
    """A database that cannot be read (corrupt, not SQLite, unreadable, too big, never still)."""


# the WAL ---------------------------------------------------------------------------------------
def _checksum(data, big_endian: bool, s0: int, s1: int) -> tuple[int, int]:
    """SQLite's WAL checksum of `data` (a multiple of 8 bytes), continued from (s0, s1)."""
    words = iter(struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data))
    for first, second in zip(words, words):
        s0 = (s0 + first + s1) & 0xFFFFFFFF
        s1 = (s1 + second + s0) & 0xFFFFFFFF
    return s0, s1


def valid_wal_header(header) -> bool:
    """Whether these are the 32 bytes of a WAL header SQLite would use: magic, a page size it
    can have, and a matching checksum. Anything else means SQLite treats the WAL as empty."""
    if len(header) < WAL_HEADER_BYTES:
        return False
    magic, _version, page_size, _seq, _salt1, _salt2, c1, c2 = struct.unpack_from(">8I", header)
    if magic not in WAL_MAGIC or not 512 <= page_size <= 65536 or page_size & (page_size - 1):
        return False
    return _checksum(header[:24], magic == WAL_MAGIC[1], 0, 0) == (c1, c2)


def committed_pages(wal: bytes) -> tuple[dict[int, memoryview], int | None]:
    """Pages of the WAL's committed transactions (page number -> a view of its bytes in `wal`)
    and the database size in pages after the last commit. Frames after the last valid commit
    are ignored, as SQLite ignores them: a transaction still being written, a frame cut short
    or half overwritten (its checksum fails), frames left from before the WAL was restarted
    (other salts)."""
    if not valid_wal_header(wal):
        return {}, None
    magic, _version, page_size, _seq, salt1, salt2, s0, s1 = struct.unpack_from(">8I", wal)
    big_endian = magic == WAL_MAGIC[1]
    view = memoryview(wal)
    committed: dict[int, memoryview] = {}
    pending: dict[int, memoryview] = {}
    db_pages = None
    offset, frame_size = WAL_HEADER_BYTES, FRAME_HEADER_BYTES + page_size
    while offset + frame_size <= len(wal):
        page_no, commit_size, f_salt1, f_salt2, f_c1, f_c2 = struct.unpack_from(">6I", wal, offset)
        if (f_salt1, f_salt2) != (salt1, salt2):
            break
        page = view[offset + FRAME_HEADER_BYTES:offset + frame_size]
        s0, s1 = _checksum(view[offset:offset + 8], big_endian, s0, s1)
        s0, s1 = _checksum(page, big_endian, s0, s1)
        if (s0, s1) != (f_c1, f_c2):
            break
        pending[page_no] = page
        if commit_size:
            committed.update(pending)
            pending.clear()
            db_pages = commit_size
        offset += frame_size
    return committed, db_pages


# one moment ------------------------------------------------------------------------------------
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")


@dataclass
class _Reading:
    """One attempt at a snapshot: the files as read, in this order, and the database file's
    state around them."""
    clock: int                  # time.time_ns() just before `before`
    before: os.stat_result      # the database file, first
    wal_before: bytes           # the WAL's header, before the database is read
    journal_before: bool        # a rollback journal in use then
    image: bytearray            # the database file
    wal: bytearray              # the WAL
    wal_after: bytes            # the WAL's header, after the WAL is read
    journal_after: bool
    after: os.stat_result       # the database file, last


def snapshot(path: str) -> bytearray:
    """The database as SQLite would read it at one moment: the main file with its WAL applied.

    The database file and the WAL are two reads, and the agent may checkpoint in between. What
    makes a pair of reads one moment follows from how SQLite runs a WAL (sqlite.org/wal.html,
    walformat.html):
    1. In WAL mode only a checkpoint writes the database file, and it copies frames that are
       committed and already in the WAL file.
    2. Within one WAL generation the file only grows, frame after frame. A new generation (the
       WAL restarted once a checkpoint has copied every frame back, or truncated to nothing, or
       deleted and created anew) always starts with a new header: salt-1 incremented, salt-2
       drawn at random, the checkpoint sequence incremented.
    3. The WAL is restarted or truncated only when the database file holds everything.
    So `_read` takes, in order: the database file's stat, the WAL header, the database, the
    WAL, the WAL header again, the database file's stat again. The pair is one moment when:
    (a) the WAL had a valid header at first, and the same one in the WAL and at the end: by 2
        it was one generation throughout, never overwritten; every page a checkpoint copied
        into the database while we read it came from a frame already in the WAL (by 1), so
        in the WAL we read afterwards, and applying the committed frames overwrites each such
        page with its newest version. Neither the WAL's size (a restart does not shrink it)
        nor the database's file change counter (not incremented per transaction in WAL mode:
        fileformat2.html) would prove this;
    (b) or the WAL had no valid header at first: the database file then held every committed
        transaction (by 3; for a rollback-journal database, when no journal was in use). If
        the file is the same one, of the same size, mtime and ctime, at the end, and no
        journal was in use then either, no checkpoint or transaction wrote it meanwhile, hence
        no WAL restart either (by 3), and the WAL read is the start of one generation built on
        it. A write within the same tick of the file system's clock as the one before it
        leaves the mtime unchanged, so this also needs the file to have been still for
        `_quiet_for` when we began (else we wait until it has been).
    Anything else is read again, at most SNAPSHOT_ATTEMPTS times in SNAPSHOT_PATIENCE seconds;
    then a StoreError says so: never an image of two moments. Frames being appended while the
    WAL is read are not seen: it is read up to its size when opened, a frame cut short or half
    written fails its checksum, and frames after the last commit are ignored
    (`committed_pages`)."""
    deadline = time.monotonic() + SNAPSHOT_PATIENCE
    for attempt in range(1, SNAPSHOT_ATTEMPTS + 1):
        reading = _read(path)
        if _one_moment(reading):
            return _applied(path, reading.image, reading.wal)
        pause = _pause(attempt)
        if time.monotonic() + pause > deadline:
            break
        time.sleep(pause)
    raise StoreError(f"{path} kept changing while it was read ({attempt} attempts in "
                     f"{SNAPSHOT_PATIENCE - (deadline - time.monotonic()):.1f} s): the agent "
                     "is writing or checkpointing it; try again")


def _read(path: str) -> _Reading:
    clock = time.time_ns()
    before = _stat_database(path)
    wal_before, journal_before = _wal_header(path), _journal_in_use(path)
    wal_size = _size(path + "-wal")
    if before.st_size + wal_size > MAX_STORE_BYTES:
        raise _too_big(path, before.st_size + wal_size)
    image = _read_file(path, MAX_STORE_BYTES)
    wal = _read_wal(path, MAX_STORE_BYTES - len(image))
    wal_after, journal_after = _wal_header(path), _journal_in_use(path)
    return _Reading(clock, before, wal_before, journal_before, image, wal, wal_after,
                    journal_after, _stat_database(path))


def _one_moment(reading: _Reading) -> bool:
    """Whether the reading is of one moment, by (a) or (b) of `snapshot`."""
    before, after = reading.before, reading.after
    if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
        return False
    if valid_wal_header(reading.wal_before):
        return reading.wal_before == reading.wal[:WAL_HEADER_BYTES] == reading.wal_after
    unchanged = ((before.st_size, before.st_mtime_ns, before.st_ctime_ns)
                 == (after.st_size, after.st_mtime_ns, after.st_ctime_ns))
    return (unchanged and not reading.journal_before and not reading.journal_after
            and _still_for(reading) >= _quiet_for(before))


def _still_for(reading: _Reading) -> int:
    """Nanoseconds the database file had gone unmodified when the reading began."""
    return reading.clock - max(reading.before.st_mtime_ns, reading.before.st_ctime_ns)


def _quiet_for(st: os.stat_result) -> int:
    """How long a file must have been unmodified before a write to it surely changes its mtime:
    a tick of the kernel's coarse clock, which stamps writes (a few ms), with room to spare; two
    seconds and a bit where the file system keeps whole seconds (ext3, FAT, some network file
    systems: the mtime has no fraction)."""
    return QUIET_NS if st.st_mtime_ns % 1_000_000_000 else QUIET_COARSE_NS


def _pause(attempt: int) -> float:
    """Seconds to wait before reading again: a checkpoint takes milliseconds, and a file that
    must be still for (b) is after a few of these."""
    return min(0.001 * 2 ** attempt, 0.1)


# reading the files -----------------------------------------------------------------------------
def _stat_database(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _too_big(path: str, size: int) -> StoreError:
    return StoreError(f"{path} is too big to read: {size:,} bytes with its WAL, over the "
                      f"{MAX_STORE_BYTES >> 20} MB ({MAX_STORE_BYTES:,} bytes) that trajectoriz "
                      "reads into memory")


def _read_file(path: str, limit: int) -> bytearray:
    """The file's bytes (up to its size when opened), read into one buffer without copies."""
    try:
        with open_binary(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise _too_big(path, size)
            data = bytearray(size)
            view, got = memoryview(data), 0
            while got < size:
                count = handle.readinto(view[got:])
                if not count:
                    break
                got += count
            view.release()
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    del data[got:]  # the file shrank while being read
    return data


def _read_wal(path: str, limit: int) -> bytearray:
    """The WAL's bytes, empty when there is none. One that exists but cannot be read is an
    error: without it the database file alone may be a mix of two moments."""
    if not os.path.lexists(path + "-wal"):
        return bytearray()
    return _read_file(path + "-wal", limit)


def _wal_header(path: str) -> bytes:
    return _head(path + "-wal", WAL_HEADER_BYTES)


def _journal_in_use(path: str) -> bool:
    """Whether a rollback journal is in use: a transaction of a rollback-journal database is
    writing the file, or was cut off doing so (a hot journal, which only a writer can roll
    back). A journal that is committed is deleted, emptied or has its header zeroed."""
    return _head(path + "-journal", len(JOURNAL_MAGIC)) == JOURNAL_MAGIC


def _head(path: str, count: int) -> bytes:
    try:
        with open_binary(path) as handle:
            return handle.read(count)
    except OSError:
        return b""


def _applied(path: str, image: bytearray, wal) -> bytearray:
    """`image` (the database file) with the WAL's committed pages written over it, in place."""
    if len(image) >= 100 and not image.startswith(SQLITE_MAGIC):
        raise StoreError(f"{path} is not a SQLite database")
    pages, db_pages = committed_pages(wal)
    if pages:
        page_size = struct.unpack_from(">I", wal, 8)[0]
        if db_pages:
            _resize(image, db_pages * page_size)
        for number, page in pages.items():
            start = (number - 1) * page_size
            if start + page_size > len(image):
                _resize(image, start + page_size)
            image[start:start + page_size] = page
    if len(image) < 100:
        raise StoreError(f"{path} is empty or not a SQLite database")
    image[18:20] = b"\x01\x01"  # a journal-mode image: the in-memory copy has no WAL of its own
    return image


def _resize(image: bytearray, size: int) -> None:
    if size < len(image):
        del image[size:]
    else:
        image.extend(bytes(size - len(image)))


class _Bounded(sqlite3.Connection):
    """A connection whose every statement (`execute`, and the reading of its rows) is
    interrupted once it has run QUERY_SECONDS: a store's schema is untrusted, and a generated
    column (100 MB computed for every row read, in one step of SQLite's machine) would make
    one SELECT run for hours. The interruption is SQLite's OperationalError, a DatabaseError
    like any damaged store's. A watcher thread (`_watch`) interrupts the overdue statements."""

    deadline = float("inf")

    def execute(self, *args):
        self.deadline = time.monotonic() + QUERY_SECONDS
        _watch(self)
        return super().execute(*args)


_watched: "weakref.WeakSet[_Bounded]" = weakref.WeakSet()
_watcher_pid = None


def _watch(connection: _Bounded) -> None:
    """Have the watcher look at `connection`, starting it in this process if need be."""
    global _watcher_pid
    _watched.add(connection)
    if _watcher_pid != os.getpid():
        _watcher_pid = os.getpid()
        threading.Thread(target=_interrupt_overdue, name="sqlite-deadline", daemon=True).start()


def _interrupt_overdue() -> None:
    while True:
        time.sleep(WATCH_SECONDS)
        now = time.monotonic()
        for connection in list(_watched):
            if connection.deadline < now:
                connection.deadline = float("inf")
                try:
                    connection.interrupt()
                except Exception:  # closed meanwhile
                    pass


def connect(path: str) -> sqlite3.Connection:
    """A read-only, in-memory connection to the store's committed state at one moment. The
    store's views are dropped from the copy (no agent's store has any; a query naming one
    would run whatever it says), and every statement is bounded in time (`_Bounded`)."""
    connection = sqlite3.connect(":memory:", check_same_thread=False, factory=_Bounded)
    try:
        connection.deserialize(snapshot(path))
        views = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]
        for name in views:
            connection.execute(f"DROP VIEW {quoted(name)}")  # in our copy only
        connection.execute("PRAGMA query_only=1")
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise StoreError(f"{path}: {exc}") from None
    except StoreError:
        connection.close()
        raise
    return connection


SHARED_BYTES = 256 * 1024 * 1024
_shared_lock = threading.Lock()
_shared: OrderedDict = OrderedDict()  # path -> (stamp, size, connection), least recent first


def shared(path: str) -> sqlite3.Connection:
    """The `connect` snapshot of a store, kept while its files do not change, for translators
    that read its sessions one after another: a store of N sessions is copied once, not N
    times. Recently used snapshots are kept up to SHARED_BYTES in all (the last one always).
    Never close what it returns; it is read from one thread at a time."""
    stamp = [_stamp(p) for p in fingerprint_paths(path)]
    with _shared_lock:
        entry = _shared.get(path)
        if entry is not None and entry[0] == stamp:
            _shared.move_to_end(path)
            return entry[2]
        if entry is not None:
            del _shared[path]
        connection = connect(path)
        _shared[path] = (stamp, size_of(path), connection)
        while len(_shared) > 1 and sum(e[1] for e in _shared.values()) > SHARED_BYTES:
            _shared.popitem(last=False)
        return connection


def _stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def fingerprint_paths(path: str) -> list[str]:
    """The files whose change changes what `connect(path)` sees."""
    return [path, path + "-wal"]


def columns(connection: sqlite3.Connection, table: str) -> set[str]:
    """Column names of a table (empty when it does not exist): schemas drift between releases."""
    try:
        return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
    except sqlite3.DatabaseError:
        return set()


def size_of(path: str) -> int:
    return sum(os.path.getsize(p) for p in fingerprint_paths(path) if os.path.exists(p))


def select_list(fields, present: set[str], alias: str = "s") -> str:
    """The SELECT list of `fields` of table `alias`, NULL for those this database's schema does
    not have (`columns`): one query serves every release. Each value is `capped`."""
    return ", ".join(capped(field) for field in fields_of(fields, present, alias))


def fields_of(fields, present: set[str], alias: str = "s") -> list[str]:
    """The SQL expressions of `fields` of table `alias`, NULL for those the schema lacks."""
    return [f"{alias}.{name}" if name in present else "NULL" for name in fields]


def quoted(name: str) -> str:
    """A column name as SQL (names come from the store's own schema)."""
    return '"' + name.replace('"', '""') + '"'


# bounds on what is read ------------------------------------------------------------------------
def byte_length(expression: str) -> str:
    """SQL for the size in bytes of a value (of its text for a number): measured by SQLite, in
    its own memory."""
    return f"length(CAST({expression} AS BLOB))"


def capped(expression: str) -> str:
    """SQL for a value, NULL when it holds more than MAX_VALUE_BYTES: such a value is never
    copied into Python."""
    return f"CASE WHEN {byte_length(expression)} > {MAX_VALUE_BYTES} THEN NULL ELSE {expression} END"


class RowBudget:
    """What the translation of one document may read from a snapshot: MAX_SESSION_ROWS rows and
    MAX_SESSION_BYTES bytes of values in all, its sub-agent sessions included, and no value
    over MAX_VALUE_BYTES. What was left out is said in `warnings`, for the document."""

    def __init__(self):
        self.rows = 0
        self.bytes = 0
        self.exhausted = False
        self.warnings: list[str] = []

    def select(self, connection, fields, rest: str, args=(), what: str = "rows") -> list[tuple]:
        """The rows of `SELECT <fields> <rest>` (`rest`: FROM .. WHERE .. ORDER BY, no LIMIT),
        as far as the budget goes. A value over the limit comes back None; the rows after the
        budget is spent are not read (SQLite is told the LIMIT), nor those after SQLite fails
        on a damaged page. Each cut is a warning naming `what`."""
        if self.exhausted:
            self.warnings.append(self._spent(what, 0))
            return []
        select = ", ".join(f"{capped(f)}, {byte_length(f)}" for f in fields)
        room = MAX_SESSION_ROWS - self.rows
        found: list[tuple] = []
        oversized = 0
        try:
            for row in connection.execute(f"SELECT {select} {rest} LIMIT ?", (*args, room + 1)):
                values, sizes = row[0::2], row[1::2]
                size = sum(n for v, n in zip(values, sizes) if v is not None and n)
                if len(found) == room or self.bytes + size > MAX_SESSION_BYTES:
                    self.exhausted = True
                    self.warnings.append(self._spent(what, len(found)))
                    break
                oversized += sum(1 for v, n in zip(values, sizes) if v is None and n)
                self.rows += 1
                self.bytes += size
                found.append(values)
        except sqlite3.DatabaseError as exc:
            self.warnings.append(f"reading the {what} stopped after {len(found)} rows: {exc}")
        if oversized:
            self.warnings.append(f"{oversized} value(s) of the {what} held more than "
                                 f"{MAX_VALUE_BYTES >> 20} MB each and were left out")
        return found

    def _spent(self, what: str, read: int) -> str:
        return (f"the session holds more than trajectoriz reads of one ({MAX_SESSION_ROWS} rows, "
                f"{MAX_SESSION_BYTES >> 20} MB): the {what} after the first {read} were not read")

    def take_warnings(self) -> list[str]:
        """The warnings so far, for the document being built; forgotten here."""
        found, self.warnings = self.warnings, []
        return found


@contextlib.contextmanager
def listing(path: str):
    """A snapshot of the store for discovery's one query, closed after it; SQLite's error on a
    damaged database becomes a `StoreError` naming the file."""
    connection = connect(path)
    try:
        yield connection
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot list the sessions: {exc}") from None
    finally:
        connection.close()


def release_shared() -> None:
    """Forget the snapshots `shared` keeps: for a long-lived process that is done with them (the
    mount server, whose rendering happens in worker processes), so that their memory goes back.
    Not closed: another thread may be reading one; it is freed when that reader lets go (a
    connection and its statement cache refer to each other: the cycle collector frees them)."""
    with _shared_lock:
        if not _shared:
            return
        _shared.clear()
    import gc

    gc.collect()
