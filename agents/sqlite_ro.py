"""Read an agent's SQLite store without touching it, WAL included.

Agents keep their databases in WAL mode, and the newest sessions often live only in the `-wal`
file. SQLite's own read-only modes are not enough: `mode=ro` still writes read marks into the
`-shm` file (and creates it if missing), and `immutable=1` ignores the WAL. So this module reads
the bytes of the database and of its WAL, applies the WAL's committed frames itself, and hands
SQLite the resulting image, a plain journal-mode database with no WAL of its own. Nothing next
to the user's database is opened for writing, no lock is taken, and a database locked by a
running agent reads as its last committed state.

Where the image lives depends on the store's size (database + WAL):
- up to MEMORY_BYTES (64 MB), in memory (`snapshot`, then `Connection.deserialize`): reading
  one costs about twice its size at the peak (our image, then SQLite's copy of it);
- above, in a private file under trajectoriz's cache (`_connect_copy`): the database and the
  WAL streamed into files of ours COPY_CHUNK bytes at a time, the WAL's committed pages then
  written over the database's by seeking, the result opened by SQLite with
  `mode=ro&immutable=1`, its page cache bounded (PAGE_CACHE_KIB: an unbounded one keeps every
  page a query reads) and no memory mapping. Memory stays at a few MB however big the store
  (real opencode stores reach tens of GB, mostly events trajectoriz never reads).
  The disk cost is one extra copy of each big store (its size, the WAL applied), at rest: one
  copy per store version, named by the store's files' identity, sizes and times, written
  atomically and shared by every process (one makes it, under a lock, the others reuse it),
  replaced when the store changes (that store's older copies removed), and removed once no
  process used it for UNUSED_AFTER. While a copy is made, the WAL is there twice more. A store
  is copied only if the cache's file system keeps KEEP_FREE_BYTES free besides: the only limit
  on a store's size, since neither memory nor what a translator reads grows with it. Time
  does: a store that changed since its copy was made is copied again (a read and a write of
  its size, about a second per GB), so a store the agent is writing is copied by every
  command.
Either image is of one moment (`snapshot`'s rules, the same for both). Neither is made when the
database file alone is the store's committed state (no WAL frames, no journal in use, the file
still): a listing's query (`listed`) and a translator's (`shared`, within `in_one_moment`) then
read that file, read-only and immutable, and what they read is kept only if the file is
unchanged once they are done. What a translator reads is bounded by `RowBudget`: no value over
MAX_VALUE_BYTES reaches Python, and one document reads at most MAX_SESSION_ROWS rows and
MAX_SESSION_BYTES bytes of values.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import sqlite3
import stat
import struct
import threading
import time
import weakref
from collections import OrderedDict, namedtuple

from agents.base import open_binary
from core import cache, storefs
from core.hashes import sha256

SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_MAGIC = (0x377F0682, 0x377F0683)
WAL_HEADER_BYTES = 32
FRAME_HEADER_BYTES = 24

MEMORY_BYTES = 64 << 20             # a store (database + WAL) read into memory, at most; bigger: a copy on disk
SNAPSHOT_ATTEMPTS = 200             # reads of a store that keeps changing underneath, at most
SNAPSHOT_PATIENCE = 5.0             # seconds spent on them, at most ...
MIN_ATTEMPTS = 3                    # ... unless fewer reads were made (a big store's take longer)
QUIET_NS = 50_000_000               # see `_quiet_for`
QUIET_COARSE_NS = 2_100_000_000

QUERY_SECONDS = 60.0                # one statement on a snapshot, at most (`_Bounded`)
WATCH_SECONDS = 0.5                 # how often the deadlines are looked at

COPIES = "sqlite-v1"                # the cache's folder of copies of big stores
COPY_CHUNK = 1 << 20                # bytes of the store held at once while it is copied
CHECK_EVERY = 64 << 20              # bytes copied between two looks for a checkpoint that spoils the copy
PAGE_CACHE_KIB = 8192               # SQLite's page cache for a copy on disk (PRAGMA cache_size)
KEEP_FREE_BYTES = 2 << 30           # free space a copy leaves on the cache's file system, at least
UNUSED_AFTER = 7 * 86400            # seconds: a copy no process used for this long is removed
REFRESH_AFTER = 600                 # seconds: a copy used is marked as such when its mark is older

MAX_VALUE_BYTES = 64 << 20          # one TEXT or BLOB value read into Python
MAX_SESSION_ROWS = 200_000          # rows read for one document, its sub-agent sessions included
MAX_SESSION_BYTES = 256 << 20       # bytes of values read for one document


class StoreError(Exception):
    """A database that cannot be read (corrupt, not SQLite, unreadable, never still, too big for
    the disk)."""


class TooBig(StoreError):
    """A store bigger than MEMORY_BYTES, for `snapshot`: it is read through a copy on disk."""


class _Spoiled(Exception):
    """A reading in progress that can no longer be of one moment (`_spoiled`)."""


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


def _frames(header, read):
    """(offset, page number, commit size) of each frame SQLite would use, in order: frames whole,
    of the header's salts, each checksum continuing the one before; the first that is not ends
    them (a frame cut short or half overwritten, frames left from before the WAL was restarted).
    `read(offset, count)` gives the WAL's bytes there, fewer at its end."""
    magic, _version, page_size, _seq, salt1, salt2, s0, s1 = struct.unpack_from(">8I", header)
    big_endian = magic == WAL_MAGIC[1]
    offset, frame_size = WAL_HEADER_BYTES, FRAME_HEADER_BYTES + page_size
    while True:
        frame = read(offset, frame_size)
        if len(frame) < frame_size:
            return
        page_no, commit_size, f_salt1, f_salt2, f_c1, f_c2 = struct.unpack_from(">6I", frame)
        if (f_salt1, f_salt2) != (salt1, salt2):
            return
        s0, s1 = _checksum(frame[:8], big_endian, s0, s1)
        s0, s1 = _checksum(frame[FRAME_HEADER_BYTES:], big_endian, s0, s1)
        if (s0, s1) != (f_c1, f_c2):
            return
        yield offset, page_no, commit_size
        offset += frame_size


def _committed(frames) -> tuple[dict[int, int], int | None]:
    """The offset of each page's newest frame in a committed transaction, and the database size
    in pages after the last commit. Frames after the last commit are a transaction still being
    written: ignored, as SQLite ignores them."""
    committed: dict[int, int] = {}
    pending: dict[int, int] = {}
    db_pages = None
    for offset, page_no, commit_size in frames:
        pending[page_no] = offset
        if commit_size:
            committed.update(pending)
            pending.clear()
            db_pages = commit_size
    return committed, db_pages


def committed_pages(wal: bytes) -> tuple[dict[int, memoryview], int | None]:
    """Pages of the WAL's committed transactions (page number -> a view of its bytes in `wal`)
    and the database size in pages after the last commit (`_frames`, `_committed`)."""
    if not valid_wal_header(wal):
        return {}, None
    page_size = struct.unpack_from(">I", wal, 8)[0]
    view = memoryview(wal)
    offsets, db_pages = _committed(_frames(wal, lambda offset, count: view[offset:offset + count]))
    start = FRAME_HEADER_BYTES
    return {n: view[o + start:o + start + page_size] for n, o in offsets.items()}, db_pages


def _check_extent(path: str, pages, db_pages: int | None, page_size: int, most: int) -> None:
    """A WAL may not make the database bigger than `most` bytes, the database file and the WAL
    together: every page past the file's end is in a frame (one page more: SQLite never writes
    the page holding the lock byte at 1 GB). The sizes are the store's, so they are untrusted:
    a forged commit frame would otherwise have the image grow to terabytes."""
    highest = max(max(pages, default=0), db_pages or 0)
    if highest > most // page_size + 1:
        raise StoreError(f"{path}-wal is damaged: it names page {highest:,}, past the "
                         f"{most:,} bytes of the database and its WAL")


# one moment ------------------------------------------------------------------------------------
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")


class _Reading(namedtuple("_Reading", "clock before wal_before journal_before wal_read wal_after "
                                     "journal_after after")):
    """One attempt at a snapshot: the files as read, in this order, and the database file's
    state around them. `clock`: time.time_ns() just before `before`, the database file's stat,
    first; the WAL's header before the database is read (`wal_before`), as read with its
    frames after the database (`wal_read`), and after the WAL is read (`wal_after`); whether a
    rollback journal was in use before and after; `after`: the database file's stat, last."""
    __slots__ = ()


def snapshot(path: str) -> bytearray:
    """The database as SQLite would read it at one moment: the main file with its WAL applied,
    in memory. A store of more than MEMORY_BYTES is not read: `TooBig`.

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
    Anything else is read again, at most SNAPSHOT_ATTEMPTS times in SNAPSHOT_PATIENCE seconds
    (and at least MIN_ATTEMPTS times); then a StoreError says so: never an image of two
    moments. Frames being appended while the WAL is read are not seen: it is read up to its
    size when opened, a frame cut short or half written fails its checksum, and frames after
    the last commit are ignored (`committed_pages`)."""
    image, wal = _one_moment(path, _read_into_memory)
    return _applied(path, image, wal)


def _one_moment(path: str, read_files):
    """What `read_files(path, spoiled)` returns (the WAL's header as read with its frames, and
    the content read) for the first reading of `path` that is of one moment (`snapshot`).
    `spoiled()` says, during a long read, when the reading can no longer be one."""
    deadline = time.monotonic() + SNAPSHOT_PATIENCE
    for attempt in range(1, SNAPSHOT_ATTEMPTS + 1):
        with contextlib.suppress(_Spoiled):
            reading, content = _read(path, read_files)
            if _is_one_moment(reading):
                return content
        pause = _pause(attempt)
        if attempt >= MIN_ATTEMPTS and time.monotonic() + pause > deadline:
            break
        time.sleep(pause)
    raise StoreError(f"{path} kept changing while it was read ({attempt} attempts in "
                     f"{SNAPSHOT_PATIENCE - (deadline - time.monotonic()):.1f} s): the agent "
                     "is writing or checkpointing it; try again")


def _read(path: str, read_files) -> tuple[_Reading, object]:
    clock = time.time_ns()
    before = _stat_database(path)
    wal_before, journal_before = _wal_header(path), _journal_in_use(path)
    wal_read, content = read_files(path, lambda: _spoiled(path, before, wal_before))
    wal_after, journal_after = _wal_header(path), _journal_in_use(path)
    return _Reading(clock, before, wal_before, journal_before, wal_read, wal_after,
                    journal_after, _stat_database(path)), content


def _is_one_moment(reading: _Reading) -> bool:
    """Whether the reading is of one moment, by (a) or (b) of `snapshot`."""
    before, after = reading.before, reading.after
    if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
        return False
    if valid_wal_header(reading.wal_before):
        return reading.wal_before == reading.wal_read == reading.wal_after
    return (_same_state(before, after) and not reading.journal_before and not reading.journal_after
            and _still_for(reading) >= _quiet_for(before))


def _spoiled(path: str, before: os.stat_result, wal_before: bytes) -> bool:
    """Whether a reading begun with the database file's stat `before` and the WAL header
    `wal_before` has already failed (a) or (b) of `snapshot`: the header changed, or (with no
    WAL in use at first) the file did. Neither ever changes back (a new header has new salts;
    a ctime only grows), so the reading could only be thrown away at its end."""
    if valid_wal_header(wal_before):
        return _wal_header(path) != wal_before
    return not _same_state(_stat_database(path), before)


def _same_state(one: os.stat_result, other: os.stat_result) -> bool:
    """Whether two stats are of the same file with the same content: device, inode, size,
    mtime, ctime (a write changes the last two, a file renamed over it the inode)."""
    return ((one.st_dev, one.st_ino, one.st_size, one.st_mtime_ns, one.st_ctime_ns)
            == (other.st_dev, other.st_ino, other.st_size, other.st_mtime_ns, other.st_ctime_ns))


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
    must be still for (b) is after a few of these. Drawn at random around that, so that reads
    do not fall into step with an agent that writes at a steady beat and lose every time."""
    return random.uniform(0.5, 1.5) * min(0.001 * 2 ** attempt, 0.05)


# reading the files -----------------------------------------------------------------------------
def _stat_database(path: str) -> os.stat_result:
    try:
        return storefs.stat(path)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None


def _size(path: str) -> int:
    try:
        return storefs.stat(path).st_size
    except OSError:
        return 0


def _read_into_memory(path: str, _spoiled) -> tuple[bytes, tuple[bytearray, bytearray]]:
    """`read_files` for `snapshot`: the database file, then the WAL, each into one buffer.
    A store over MEMORY_BYTES (found so before, or while, it is read) is `TooBig`."""
    if _stat_database(path).st_size + _size(path + "-wal") > MEMORY_BYTES:
        raise TooBig(path)
    image = _read_file(path, MEMORY_BYTES)
    wal = _read_wal(path, MEMORY_BYTES - len(image))
    return bytes(wal[:WAL_HEADER_BYTES]), (image, wal)


def _read_file(path: str, limit: int) -> bytearray:
    """The file's bytes (up to its size when opened), read into one buffer without copies."""
    try:
        with open_binary(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise TooBig(path)
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
    if not storefs.lexists(path + "-wal"):
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
        _check_extent(path, pages, db_pages, page_size, len(image) + len(wal))
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


# a copy on disk, for a big store ---------------------------------------------------------------
def _connect_copy(path: str, env) -> sqlite3.Connection:
    """A connection to the private copy of the store as it is now, made unless a process made
    it already: a file in the cache's COPIES folder (0700), 0600, named by the store (its real
    path) and its version (`_version`). Copies are made, opened and removed under one lock, so
    concurrent processes make one, and none is removed between being found and being opened; a
    copy is only ever renamed into place whole (written, synced, renamed), so one that exists
    is complete. Making one removes the store's older copies, the leftovers of a process killed
    while copying, and the copies no process used for UNUSED_AFTER; a process that still reads
    a removed copy keeps reading it (its blocks are freed once it closes it)."""
    folder = _copies_folder(path, env)
    key = sha256(os.fsencode(storefs.realpath(path))).hexdigest()[:20]
    with _locked(folder):
        copy = os.path.join(folder, f"{key}-{_version(path)[0]}.db")
        if not _reuse(copy):
            copy = _new_copy(path, folder, key)
        return _on_disk(copy)


def _new_copy(path: str, folder: str, key: str) -> str:
    """A copy made now, under the lock. It is named by the version taken before it is read
    once the store's files have been still for `_quiet_for` (waited for once): a write in the
    same tick of the clock as the one before leaves the version unchanged, so a copy named by
    the version of a file just written could be reused after such a write, without it. A store
    still being written then gets a copy of its own, under a name no version has, for this
    connection only (the next copy of the store removes it)."""
    version, wait = _version(path)
    if wait:
        time.sleep(wait / 1e9)
        version, wait = _version(path)
    name = f"{key}-once-{os.getpid()}-{time.time_ns()}" if wait else f"{key}-{version}"
    copy = os.path.join(folder, name + ".db")
    _remove_old(folder, key)
    _check_room(path, folder)
    _make_copy(path, folder, copy)
    return copy


def _copies_folder(path: str, env) -> str:
    directory = cache.cache_dir(os.environ if env is None else env)
    folder = os.path.join(directory, COPIES)
    try:
        if not cache.usable(directory):
            raise PermissionError(f"{directory} is not this user's")
        cache.make_private_dirs(folder)
    except OSError as exc:
        raise StoreError(f"{path} is too big to read in memory ({size_of(path):,} bytes with its "
                         f"WAL, over {MEMORY_BYTES >> 20} MB), and no copy of it can be made in "
                         f"{folder}: {exc.strerror or exc}") from None
    return folder


@contextlib.contextmanager
def _locked(folder: str):
    """The folder's lock, held while a copy is looked for, made or removed (flock: released if
    the process dies; the descriptor is not inherited by the programs it starts)."""
    try:
        fd = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                     cache.PRIVATE_FILE)
    except OSError as exc:
        raise StoreError(f"cannot lock {folder}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise StoreError(f"cannot lock {folder}: {exc.strerror or exc}") from None
        yield
    finally:
        os.close(fd)


def _version(path: str) -> tuple[str, int]:
    """A name for the store's current content, and the nanoseconds until it is settled (0 when
    it is: each file unmodified for `_quiet_for`). Taken before the store is read, so that what
    is read is at least as new: the database file's and the WAL's device, inode, size, mtime
    and ctime; a write changes one of them, unless it falls in the same tick of the file
    system's clock as the write before (see `_new_copy`)."""
    clock = time.time_ns()
    stats = [_stat(name) for name in fingerprint_paths(path)]
    wait = max([_quiet_for(st) - (clock - max(st.st_mtime_ns, st.st_ctime_ns)) for st in stats if st],
               default=0)
    found = [(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if st else None
             for st in stats]
    return sha256(repr(found).encode()).hexdigest()[:20], max(wait, 0)


def _stat(path: str) -> os.stat_result | None:
    try:
        return storefs.stat(path)
    except OSError:
        return None


def _reuse(copy: str) -> bool:
    """Whether the copy exists; if so, it is marked used (its mtime, if older than
    REFRESH_AFTER: not every read writes the inode)."""
    try:
        if time.time() - storefs.stat(copy).st_mtime > REFRESH_AFTER:
            os.utime(copy)
    except OSError:
        return False
    return True


def _remove_old(folder: str, key: str) -> None:
    """Under the lock: the store's other copies, every temporary file (no copy is being made:
    each is a killed process's), and copies unused for UNUSED_AFTER."""
    with contextlib.suppress(OSError), storefs.scandir(folder) as entries:
        for entry in list(entries):
            name = entry.name
            with contextlib.suppress(OSError):
                unused = time.time() - entry.stat(follow_symlinks=False).st_mtime > UNUSED_AFTER
                if name.endswith(".tmp") or name.startswith(key + "-") or (name.endswith(".db") and unused):
                    os.unlink(entry.path)


def _check_room(path: str, folder: str) -> None:
    """A copy is made only if the file system keeps KEEP_FREE_BYTES free besides: the agent
    writing its store, and the user, need the disk more than trajectoriz does. While it is
    made, the WAL is there twice (copied as it is, then applied)."""
    needed = size_of(path) + _size(path + "-wal")
    try:
        found = os.statvfs(folder)
    except OSError:
        return
    free = found.f_bavail * found.f_frsize
    if free < needed + KEEP_FREE_BYTES:
        raise StoreError(f"{path} is too big to read in memory ({needed:,} bytes with its WAL, "
                         f"over {MEMORY_BYTES >> 20} MB), and a copy of it in {folder} would leave "
                         f"less than {KEEP_FREE_BYTES >> 30} GB free there ({free:,} bytes free)")


def _make_copy(path: str, folder: str, copy: str) -> None:
    """The store's image of one moment (`snapshot`'s rules), written to a temporary file
    beside `copy`, synced, then renamed to it. The WAL is copied as it is into a second one,
    and applied only once the reading is known to be of one moment: checking its frames (in
    Python, slow) then lengthens no reading, and a shorter reading meets fewer checkpoints."""
    temporary = os.path.join(folder, f".{os.path.basename(copy)}.{os.getpid()}")
    try:
        with _created(temporary + ".tmp") as out, _created(temporary + "-wal.tmp") as wal:
            _one_moment(path, lambda store, spoiled: _read_into_files(store, out, wal, spoiled))
            _apply_wal(path, out, wal)
            _finish(path, out)
            _without_views(temporary + ".tmp")
            os.fsync(out.fileno())  # a copy renamed into place is whole on disk, even after a crash
        os.replace(temporary + ".tmp", copy)
    except OSError as exc:
        raise StoreError(f"cannot copy {path} into {folder}: {exc.strerror or exc}") from None
    finally:
        for name in (temporary + ".tmp", temporary + "-wal.tmp"):
            with contextlib.suppress(OSError):
                os.unlink(name)


def _created(name: str):
    """A new file, owner-only, open for reading and writing."""
    return os.fdopen(os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                             cache.PRIVATE_FILE), "r+b")


def _read_into_files(path: str, out, wal, spoiled) -> tuple[bytes, None]:
    """`read_files` for a copy: the database file into `out`, then the WAL (none: nothing)
    into `wal`, each as it is, over what an earlier attempt left there."""
    _copy_file(path, out, spoiled)
    if storefs.lexists(path + "-wal"):
        _copy_file(path + "-wal", wal, spoiled)
    else:
        wal.seek(0)
        wal.truncate()
    return os.pread(wal.fileno(), WAL_HEADER_BYTES, 0), None


def _copy_file(source_path: str, out, spoiled) -> None:
    """The file's bytes, up to its size when opened, COPY_CHUNK at a time, into `out` (cut to
    them). Every CHECK_EVERY bytes, a reading that `spoiled()` is abandoned (`_Spoiled`): a
    WAL restarted while a store of gigabytes is copied is seen then, not at the end."""
    out.seek(0)
    with open_binary(source_path) as source:
        left = os.fstat(source.fileno()).st_size
        buffer = memoryview(bytearray(max(1, min(COPY_CHUNK, left))))
        since_look = 0
        while left > 0:
            count = source.readinto(buffer[:min(left, len(buffer))])
            if not count:
                break  # the file shrank while being read
            out.write(buffer[:count])
            left -= count
            since_look += count
            if since_look >= CHECK_EVERY:
                since_look = 0
                if spoiled():
                    raise _Spoiled
    out.truncate()


def _apply_wal(path: str, out, wal) -> None:
    """The committed pages of the WAL's copy written over the database's, the WAL read twice,
    never whole: its frames in order (checksums, `_committed`), then the newest version of
    each committed page, read where its frame lies."""
    header = os.pread(wal.fileno(), WAL_HEADER_BYTES, 0)
    if not valid_wal_header(header):
        return
    wal.seek(WAL_HEADER_BYTES)
    offsets, db_pages = _committed(_frames(header, lambda _offset, count: wal.read(count)))
    if offsets:
        page_size = struct.unpack_from(">I", header, 8)[0]
        most = os.fstat(out.fileno()).st_size + os.fstat(wal.fileno()).st_size
        _check_extent(path, offsets, db_pages, page_size, most)
        _write_pages(out, wal.fileno(), offsets, db_pages, page_size)


def _write_pages(out, wal_fd: int, offsets: dict[int, int], db_pages: int, page_size: int) -> None:
    """Each page of `offsets` (page number -> its frame's offset in the WAL) into `out`, in page
    order; the copy cut or extended to `db_pages` pages first (pages past it are left out)."""
    out.truncate(db_pages * page_size)
    for number in sorted(offsets):
        if number <= db_pages:
            out.seek((number - 1) * page_size)
            out.write(os.pread(wal_fd, page_size, offsets[number] + FRAME_HEADER_BYTES))


def _finish(path: str, out) -> None:
    """The copy checked to be SQLite and made a journal-mode database (no WAL of its own: SQLite
    then reads it as it is, and looks for no file beside it)."""
    out.seek(0)
    if not out.read(100).startswith(SQLITE_MAGIC):
        raise StoreError(f"{path} is empty or not a SQLite database")
    out.seek(18)
    out.write(b"\x01\x01")
    out.flush()


def _without_views(copy: str) -> None:
    """The store's views dropped from the copy before it is used, as from an image in memory
    (`_drop_views`): opened by SQLite for writing, our own file, with no journal (a copy cut
    short is a temporary file, never used); a copy without views is not written to."""
    connection = sqlite3.connect(copy, isolation_level=None, factory=_Bounded)
    try:
        connection.execute("PRAGMA journal_mode=OFF")
        _drop_views(connection)
    finally:
        connection.close()


# connections -----------------------------------------------------------------------------------
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
_watching = threading.Lock()  # held while the watcher looks, and by every fork: a child never
os.register_at_fork(before=_watching.acquire, after_in_parent=_watching.release,  # has it half-way
                    after_in_child=_watching.release)


def _watch(connection: _Bounded) -> None:
    """Have the watcher look at `connection`, starting it in this process if need be."""
    global _watcher_pid
    with _watching:  # not while the watcher goes through them
        _watched.add(connection)
    if _watcher_pid != os.getpid():
        _watcher_pid = os.getpid()
        from core import parallel

        watcher = threading.Thread(target=_interrupt_overdue, name="sqlite-deadline", daemon=True)
        watcher.start()
        parallel.fork_safe(watcher)  # discovery's scans may still fork (a first run's stores)


def _interrupt_overdue() -> None:
    while True:
        time.sleep(WATCH_SECONDS)
        with _watching:
            now = time.monotonic()
            for connection in list(_watched):
                if connection.deadline < now:
                    connection.deadline = float("inf")
                    try:
                        connection.interrupt()
                    except Exception:  # closed meanwhile
                        pass


def connect(path: str, env=None) -> sqlite3.Connection:
    """A read-only connection to the store's committed state at one moment: in memory, or for a
    store over MEMORY_BYTES through its copy on disk (`_connect_copy`, in the cache folder of
    `env`, this process's environment by default). The store's views are not in either image
    (`_drop_views`), and every statement is bounded in time (`_Bounded`)."""
    try:
        image = snapshot(path)
    except TooBig:
        image = None
    try:
        connection = _in_memory(image) if image is not None else _connect_copy(path, env)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: {exc}") from None
    try:
        connection.execute("PRAGMA query_only=1")
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        connection.close()
        raise StoreError(f"{path}: {exc}") from None
    return connection


def bounded_memory(longest: int) -> sqlite3.Connection:
    """An empty database in memory, with a store's bounds: every statement within QUERY_SECONDS
    (`_Bounded`), and no value longer than `longest` bytes made (a store's schema run in it may
    compute any)."""
    connection = sqlite3.connect(":memory:", check_same_thread=False, factory=_Bounded)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, longest)
    return connection


def _in_memory(image: bytearray) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", check_same_thread=False, factory=_Bounded)
    try:
        connection.deserialize(image)
        _drop_views(connection)
    except sqlite3.DatabaseError:
        connection.close()
        raise
    return connection


def _drop_views(connection: sqlite3.Connection) -> None:
    """The store's views dropped from our image (no agent's store has any; a query naming one
    would run whatever it says: an endless recursion, for one)."""
    views = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]
    for name in views:
        connection.execute(f"DROP VIEW {quoted(name)}")  # in our copy only


def _on_disk(copy: str) -> sqlite3.Connection:
    """SQLite on our own copy (`_read_only`)."""
    return _read_only(copy, OnDisk)


def _read_only(path: str, factory) -> sqlite3.Connection:
    """SQLite on a database file, read-only and immutable (no lock taken, no journal or WAL
    looked for: nothing is written beside it), with a page cache of PAGE_CACHE_KIB and no
    memory mapping (mapped pages would count in the process's memory)."""
    import urllib.parse  # here: a listing imports this module, seldom opens a file so

    connection = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro&immutable=1", uri=True,
                                 check_same_thread=False, factory=factory)
    connection.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
    connection.execute("PRAGMA mmap_size=0")
    return connection


class OnDisk(_Bounded):
    """A connection to a copy on disk (`_on_disk`), as `shared` tells them apart."""


class InPlace(_Bounded):
    """A connection to a store's own file (`_open_in_place`)."""


SHARED_BYTES = 128 * 1024 * 1024  # with two reads of a store at MEMORY_BYTES, a process stays under 300 MB
_shared_lock = threading.Lock()
_shared: OrderedDict = OrderedDict()  # path -> (stamp, bytes, connection, pid, file's stat when read in place)
_moment = threading.local()  # this thread's `in_one_moment`: .readings, (path, stat) of each store
# read in place; .held, path -> the connection `shared` gave for it


def shared(path: str, env=None) -> sqlite3.Connection:
    """The `connect` snapshot of a store, kept while its files do not change, for translators
    that read its sessions one after another: a store of N sessions is copied once, not N
    times. Within `in_one_moment`, the store's own file instead, when that alone is its
    committed state (`_file_alone`): nothing is copied (a 189 MB opencode database took 0.4 s,
    and every process reading it after a change). Recently used connections are kept up to
    SHARED_BYTES of memory in all (the last one always; one on a file counts its page cache).
    A connection to a file is not used in a process forked from the one that opened it
    (sqlite.org/howtocorrupt.html: no connection is carried across a fork); one in memory is
    (its image is the child's own). Never close what it returns; it is read from one thread at
    a time."""
    readings = getattr(_moment, "readings", None)
    held = getattr(_moment, "held", {})
    if readings is not None and path in held:  # one connection per store in one moment:
        return held[path]                       # a second one could be of another state
    stamp = stamp_of(path)
    with _shared_lock:
        entry = _shared.get(path)
        if entry is not None and entry[0] == stamp and entry[3] in (None, os.getpid()) \
                and (entry[4] is None or readings is not None):
            _shared.move_to_end(path)
            connection, before = entry[2], entry[4]
        else:
            if entry is not None:
                del _shared[path]
            opened = _open_in_place(path) if readings is not None else None
            if opened is not None:
                connection, before = opened
                _shared[path] = (stamp, PAGE_CACHE_KIB << 10, connection, os.getpid(), before)
            else:
                connection, before = connect(path, env), None
                on_disk = isinstance(connection, OnDisk)
                cost = PAGE_CACHE_KIB << 10 if on_disk else size_of(path)
                _shared[path] = (stamp, cost, connection, os.getpid() if on_disk else None, None)
            while len(_shared) > 1 and sum(e[1] for e in _shared.values()) > SHARED_BYTES:
                _shared.popitem(last=False)
    if readings is not None:
        held[path] = connection
        if before is not None:
            readings.append((path, before))
    return connection


def in_one_moment(read):
    """`read()`, whose reads of the stores that `shared` opens in place are checked once it is
    done: when one of those files changed meanwhile (a write in place, a checkpoint), what it
    read may mix two states, so it is thrown away and `read()` runs again, on snapshots only
    (`connect`: outside a moment `shared` opens nothing in place). A file that was still for
    `_quiet_for` when opened gets a new mtime from any later write; a WAL begun meanwhile
    leaves the file, and what was read, as committed before. A failure after a reading in
    place is also met again on snapshots (the file's own schema may refuse what an image
    allows: `trusted_schema=0`), unless a statement ran out of time (it would again). Within
    one moment a store is read through one connection. Nested calls are checked by the
    outermost."""
    if getattr(_moment, "readings", None) is not None:
        return read()
    _moment.readings, _moment.held = [], {}
    try:
        result, error = read(), None
    except Exception as exc:  # a torn read can fail as well as mislead: judged below
        result, error = None, exc
    finally:
        readings, _moment.readings, _moment.held = _moment.readings, None, {}
    changed = {path for path, before in readings if not _unchanged(path, before)}
    if error is not None and readings and "interrupted" not in str(error):
        changed |= {path for path, _ in readings}
    if not changed:
        if error is not None:
            raise error
        return result
    result = error = None  # (the first attempt's rows go before the second's come)
    with _shared_lock:
        for path in changed:
            _shared.pop(path, None)  # not closed: see release_shared
    return read()


os.register_at_fork(after_in_child=lambda: setattr(_moment, "readings", None))  # a child's reads:
# no moment of its parent's checks them


def _open_in_place(path: str) -> tuple | None:
    """(connection, the file's stat) on the store's own file (`_file_connection`) when the file
    alone is its committed state, else None (the snapshot is then read, and meets any failure
    again, and reports it)."""
    try:
        before = _file_alone(path)
        return None if before is None else (_file_connection(path, InPlace), before)
    except Exception:
        return None


def _unchanged(path: str, before: os.stat_result) -> bool:
    try:
        return _same_state(storefs.stat(path), before)
    except OSError:
        return False


def stamp_of(path: str) -> list:
    """The (size, mtime) of the store's files (`fingerprint_paths`): a snapshot of it is good
    while they stay the same."""
    return [_stamp(p) for p in fingerprint_paths(path)]


def _stamp(path: str) -> tuple | None:
    try:
        st = storefs.stat(path)
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
    return sum(storefs.getsize(p) for p in fingerprint_paths(path) if storefs.exists(p))


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


def listed(path: str, env, query):
    """`query(connection)` for discovery, its rows read whole (it is run again when the reading
    was not of one moment): on the store's own file when that alone is its committed state
    (`_in_place`), else on a `connect` snapshot, closed after it. SQLite's error on a damaged
    database becomes a `StoreError` naming the file."""
    found = _in_place(path, query)
    if found is not None:
        return found[0]
    connection = connect(path, env)
    try:
        return query(connection)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot list the sessions: {exc}") from None
    finally:
        connection.close()


def _in_place(path: str, query) -> tuple | None:
    """(`query`'s result,) read by SQLite from the store's file itself, or None when it could
    not be, or not of one moment: a first listing then copies no store (a 189 MB opencode
    database costs 150 ms to copy and sync). Only when the file alone is the store's committed
    state, by (b) of `snapshot`: no WAL or journal that cannot be read (`_readable_or_absent`:
    a WAL unreadable here may hold commits the file lacks), no valid WAL header (no frame to
    apply), no journal in use, still for `_quiet_for`, and the same file, size, mtime and ctime
    after the query. Only in a folder no one but its owner (this user, or root) can change:
    SQLite opens the file by its name, blocking, so a file swapped for a FIFO there after it
    was looked at would hang it. SQLite opens it read-only and immutable (no lock, nothing
    looked for or made beside it), with a bounded page cache and no mapping; a store with views
    is left to the snapshot (an image drops them, this file is not ours to change: a query
    naming one would run whatever it says), and every statement is bounded in time
    (`_Bounded`). A failure is left to the snapshot to meet again, and report; a statement
    past its deadline is not run again."""
    try:
        if _file_alone(path) is None:
            return None
        reading, found = _read(path, lambda _path, _spoiled: (b"", _query_file(path, query)))
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):  # past QUERY_SECONDS: the snapshot's would be too
            raise StoreError(f"{path}: cannot list the sessions: {exc}") from None
        return None
    except Exception:  # the snapshot's reading meets it again, and says what it is
        return None
    return (found,) if _is_one_moment(reading) else None


def _file_alone(path: str) -> os.stat_result | None:
    """The store file's stat when the file alone is the store's committed state and may be read
    by SQLite in place (the conditions `_in_place` gives), else None; OSError when it cannot be
    looked at. The clock is read before the stat: a write after the stat, in the same tick as
    the one before it, cannot then pass for stillness. The folder checked is the one holding
    the file and the one its name is in (a link to a store elsewhere)."""
    clock = time.time_ns()
    st = storefs.stat(path)
    folders = {os.path.dirname(path) or ".", os.path.dirname(storefs.realpath(path))}
    if not (stat.S_ISREG(st.st_mode) and st.st_size >= 100 and _head(path, 16) == SQLITE_MAGIC
            and all(_kept_by_owner(folder) for folder in folders)):
        return None
    if not (_readable_or_absent(path + "-wal") and _readable_or_absent(path + "-journal")):
        return None
    if valid_wal_header(_wal_header(path)) or _journal_in_use(path) or \
            clock - max(st.st_mtime_ns, st.st_ctime_ns) < _quiet_for(st):
        return None
    return st


def _kept_by_owner(folder: str) -> bool:
    """Whether only this user (or root) can add, remove or rename files in `folder`."""
    st = storefs.stat(folder)
    return st.st_uid in (os.geteuid(), 0) and not st.st_mode & 0o022


def _readable_or_absent(path: str) -> bool:
    """Whether a file beside the store is absent, or a regular file this process can read."""
    try:
        with open_binary(path):
            return True
    except FileNotFoundError:
        return not storefs.lexists(path)  # a dangling link is there, and cannot be read
    except OSError:
        return False


def _query_file(path: str, query):
    connection = _file_connection(path, _Bounded)
    try:
        return query(connection)
    finally:
        connection.close()


def _file_connection(path: str, factory) -> sqlite3.Connection:
    """SQLite on the store's own file (`_read_only`), which it may not change and whose views
    are not run (a store with views raises StoreError: a snapshot drops them)."""
    connection = _read_only(path, factory)
    try:
        connection.execute("PRAGMA query_only=1")
        connection.execute("PRAGMA trusted_schema=0")
        if connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'view' LIMIT 1").fetchone():
            raise StoreError(f"{path} has views: read through a snapshot, which drops them")
    except BaseException:
        connection.close()
        raise
    return connection


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
