"""Read an agent's SQLite store without touching it, WAL included.

Agents keep their databases in WAL mode, and the newest sessions often live only in the `-wal`
file. SQLite's own read-only modes are not enough: `mode=ro` still writes read marks into the
`-shm` file (and creates it if missing), and `immutable=1` ignores the WAL. So this module reads
the bytes of the database and of its WAL, applies the WAL's committed frames itself, and hands
SQLite the resulting image in memory (`Connection.deserialize`). Nothing next to the user's
database is opened for writing, no lock is taken, and a database locked by a running agent
reads as its last committed state.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import struct
import threading
from collections import OrderedDict
from agents.base import open_binary

WAL_MAGIC = (0x377F0682, 0x377F0683)


class StoreError(Exception):
    """A database that cannot be read (corrupt, not SQLite, unreadable)."""


def _checksum(data: bytes, big_endian: bool, s0: int, s1: int) -> tuple[int, int]:
    words = struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def committed_pages(wal: bytes) -> tuple[dict[int, bytes], int | None]:
    """Pages of the WAL's committed transactions (page number -> bytes) and the database size
    in pages after the last commit. Frames after the last valid commit are ignored, as SQLite
    ignores them: a transaction still being written is not seen."""
    if len(wal) < 32:
        return {}, None
    magic, _version, page_size, _seq, salt1, salt2, c1, c2 = struct.unpack(">8I", wal[:32])
    if magic not in WAL_MAGIC or page_size < 512 or page_size & (page_size - 1):
        return {}, None
    big_endian = magic == 0x377F0683
    s0, s1 = _checksum(wal[:24], big_endian, 0, 0)
    if (s0, s1) != (c1, c2):
        return {}, None
    committed: dict[int, bytes] = {}
    pending: dict[int, bytes] = {}
    db_pages = None
    offset, frame_size = 32, 24 + page_size
    while offset + frame_size <= len(wal):
        page_no, commit_size, f_salt1, f_salt2, f_c1, f_c2 = struct.unpack(
            ">6I", wal[offset:offset + 24])
        if (f_salt1, f_salt2) != (salt1, salt2):
            break
        page = wal[offset + 24:offset + frame_size]
        s0, s1 = _checksum(wal[offset:offset + 8], big_endian, s0, s1)
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


def snapshot(path: str) -> bytes:
    """The database as SQLite would read it now: the main file with its WAL applied."""
    try:
        with open_binary(path) as handle:
            image = bytearray(handle.read())
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(image) >= 100 and not image.startswith(b"SQLite format 3\x00"):
        raise StoreError(f"{path} is not a SQLite database")
    try:
        with open_binary(path + "-wal") as handle:
            wal = handle.read()
    except OSError:
        wal = b""
    pages, db_pages = committed_pages(wal)
    if pages:
        page_size = struct.unpack(">I", wal[8:12])[0]
        if db_pages:
            image = image[:db_pages * page_size].ljust(db_pages * page_size, b"\0")
        for number, page in pages.items():
            start = (number - 1) * page_size
            if start + page_size > len(image):
                image.extend(b"\0" * (start + page_size - len(image)))
            image[start:start + page_size] = page
    if len(image) < 100:
        raise StoreError(f"{path} is empty or not a SQLite database")
    image[18:20] = b"\x01\x01"  # a journal-mode image: the in-memory copy has no WAL of its own
    return bytes(image)


def connect(path: str) -> sqlite3.Connection:
    """A read-only, in-memory connection to the store's current committed state."""
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        connection.deserialize(snapshot(path))
        connection.execute("PRAGMA query_only=1")
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise StoreError(f"{path}: {exc}") from None
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
    not have (`columns`): one query serves every release."""
    return ", ".join(f"{alias}.{name}" if name in present else "NULL" for name in fields)


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
