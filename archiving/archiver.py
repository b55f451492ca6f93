"""Writing the archive (its format is in discovery/archive.py): `trajectoriz archive`, the mount's passes,
and the removals of `trajectoriz forget`.

One process writes at a time (an flock on `archive/lock`); readers never wait. A run compares
each live session's native fingerprint with the one archived, so that a run with nothing new
reads no session. A changed file is appended to, or stored anew (discovery/archive.py says when).

What a kill, a full disk or a damaged entry leaves:
- data is written first, the index after it, by rename: a run killed at any point leaves the
  last committed index, which names only complete frames. Bytes a killed run appended past the
  lengths the index records are never read, and are cut off before the next append; versions it
  wrote and never committed, and temporary index files, are removed by the next run.
- a full disk (ENOSPC, EDQUOT) stops the run with one clear error (`DiskFull`, exit 2), after
  cutting back what it was writing; the index stays the last committed one.
- a session whose native files cannot be read is skipped with a warning and stays as archived
  before; `--verify` reads every frame back and marks what is damaged, so that the next run
  stores those files anew when their agent still has them.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sqlite3
import stat
import sys
import time
from dataclasses import asdict, dataclass, field

import agents
from agents.base import listdir
from core import cache, invocation
from core.errors import UserError
from core.output import human_bytes
from discovery import archive, catalog

LEVEL = 3                        # zstd level: about 8x on transcripts, at hundreds of MB/s
MAX_FRAMES = 64                  # a version appended to more often is stored anew, in one frame
COMMIT_BYTES = 64 * 1024 * 1024  # the index is written at least this often while data is
COMMIT_SECONDS = 5.0             # being added, so that a killed run loses little
LOCK_WAIT_SECONDS = 60.0
CRASH_VARIABLE = "TRAJECTORIZ_ARCHIVE_CRASH_AFTER"  # tests: SIGKILL after that many writes
FULL = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(UserError):
    def __init__(self, where: str):
        super().__init__(f"the disk holding the archive is full ({where}): free some space and "
                         f"run `trajectoriz archive` again (the archive keeps what it held before)")


class Busy(Exception):
    """Another process is writing the archive."""


class NativeError(Exception):
    """A session's native file could not be read."""


@dataclass
class Summary:
    sessions_seen: int = 0
    archived: int = 0       # new to the archive
    updated: int = 0        # archived before, changed since
    unchanged: int = 0
    deferred: int = 0       # being recorded (the mount archives those once they settle)
    skipped: int = 0        # forgotten, or unreadable when scanned
    forgotten: int = 0      # of those skipped: forgotten (`trajectoriz forget`), never archived again
    failed: int = 0         # native files that could not be read
    bytes_native: int = 0   # native bytes read and stored by this run
    bytes_stored: int = 0   # bytes this run added to the archive
    problems: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _open_lock(root: str, wait: bool) -> int:
    import fcntl

    fd = os.open(os.path.join(root, "lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                 cache.PRIVATE_FILE)
    deadline = time.monotonic() + (LOCK_WAIT_SECONDS if wait else 0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise Busy() from None
            time.sleep(0.1)


def open_native(path: str) -> int:
    """A read-only descriptor of a regular file (never a FIFO or a device: opening one could
    block, reading it never end)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    return fd


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Writer:
    """The one writer of an archive, from `open` (the lock taken, the committed index read) to
    `close`. Raises UserError when the archive cannot be written, Busy when another process
    writes it and `wait` is False."""

    def __init__(self, env, wait: bool = True):
        self.env = env
        self.root = archive.folder(env)
        try:
            cache.make_private_dirs(os.path.join(self.root, archive.DATA))
            self._lock = _open_lock(self.root, wait)
        except OSError as exc:
            raise self._failure(exc) from None
        except Busy:
            if wait:
                raise UserError(f"another trajectoriz process has been writing the archive for "
                                f"{LOCK_WAIT_SECONDS:.0f} s ({self.root}); try again later") from None
            raise
        try:
            self.index = archive.read_index(env)
        except (OSError, ValueError) as exc:
            os.close(self._lock)
            raise UserError(f"{exc} ({archive.index_path(env)}): it was left as it is; move it "
                            f"aside to start a new archive") from None
        self.summary = Summary()
        self._stored: dict = {}      # native path -> (fid, length) this run
        self._stat_memo: dict = {}
        self._dirty = False
        self._added_since_commit = 0
        self._committed_at = time.monotonic()
        self._writes = 0
        self._crash_after = int(env.get(CRASH_VARIABLE) or 0)

    def close(self) -> None:
        os.close(self._lock)

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # sessions -----------------------------------------------------------------------------------
    def update(self, sessions: list, progress=None, deadline: float | None = None,
               settled_before_ns: int | None = None) -> int:
        """Archive each live session that is new or changed; the index is committed on the way
        and at the end. `deadline` (time.monotonic()) stops the run once reached (after one
        session at least); `settled_before_ns` defers sessions already archived whose files changed
        after it. The number of sessions looked at."""
        done = 0
        for session in sessions:
            if deadline is not None and done and time.monotonic() > deadline:
                break
            self.summary.sessions_seen += 1
            self.archive_session(session, settled_before_ns)
            done += 1
            if progress is not None:
                progress.step()
            self._commit_when_due()
        self.commit()
        return done

    def archive_session(self, session, settled_before_ns: int | None = None) -> None:
        module = agents.load(session.agent)
        key = archive.key_of(session, module)
        entry = self.index["sessions"].get(key)
        if key in self.index["forgotten"] or "scan_error" in session.extra:
            self.summary.skipped += 1
            self.summary.forgotten += key in self.index["forgotten"]
            return
        deps = catalog.dependencies(module, session.source, self.env)
        stats = cache.stats(deps, self._stat_memo)
        fingerprint = cache.fingerprint_of(stats)
        record = discovery_record(session)
        if is_current(entry, fingerprint, record, self.index):
            self.summary.unchanged += 1
            return
        if entry and settled_before_ns is not None and _newest(fingerprint) > settled_before_ns:
            self.summary.deferred += 1
            return
        if not os.path.exists(session.source):  # deleted since discovery listed it: as archived before
            self.summary.failed += 1
            self.summary.problems.append(f"{session.short_id}: gone before it could be archived")
            return
        try:
            also = _read_also(module, session, self.env)
            files, signature = self._files_of(module, session, deps + also,
                                              stats + cache.stats(also, self._stat_memo), entry)
        except NativeError as exc:
            self.summary.failed += 1
            self.summary.problems.append(f"{session.short_id}: not archived: {exc}")
            return
        self._record(key, session, record, fingerprint, files, signature, entry)

    def _record(self, key: str, session, record: list, fingerprint: list, files: list,
                signature, entry: dict | None) -> None:
        now = time.time()
        if entry is None:
            self.summary.archived += 1
        elif entry["files"] == files and entry["record"] == record:
            self.summary.unchanged += 1
        else:
            self.summary.updated += 1
        self.index["sessions"][key] = {
            "agent": session.agent, "record": record, "fingerprint": fingerprint, "files": files,
            "signature": signature, "archived": entry["archived"] if entry else now, "updated": now}
        self._dirty = True

    def _files_of(self, module, session, deps: list, stats: list, entry: dict | None) -> tuple[list, str | None]:
        """The [path, kind, fid, length] of each file the session depends on, and the signature
        of its rows when its module extracts them."""
        if getattr(module, "extract", None) is not None:
            extracted = self._extracted(module, session, entry)
            if extracted is not None:
                return extracted
        files = []
        for path, st in dict(zip(deps, stats)).items():  # a module may name a file twice
            if st is not None and stat.S_ISDIR(st.st_mode):
                files.append([path, "dir", None, 0])
            elif st is not None and stat.S_ISREG(st.st_mode):
                files.append([path, "file", *self._store_path(path, st)])
        return files, None

    def _extracted(self, module, session, entry: dict | None) -> tuple[list, str] | None:
        """The session's own rows as one image (the module's `extract`), kept as long as their
        signature does not change; None when the module does not extract this session."""
        try:
            signature = module.extract_signature(session, self.env)
            if signature is None:
                return None
            if entry and entry.get("signature") == signature:
                return entry["files"], signature
            image = module.extract(session, self.env)
        except sqlite3.DatabaseError:  # rows SQLite does not copy within its bounds: the files
            return None
        except Exception as exc:  # a store that cannot be read now: archived as it was
            raise NativeError(f"{type(exc).__name__}: {exc}") from None
        fid = archive.new_fid()
        self._write_version(fid, session.source, lambda bfd: self._frame_of_bytes(image, bfd))
        return [[session.source, "file", fid, len(image)]], signature

    # files ----------------------------------------------------------------------------------------
    def _store_path(self, path: str, st) -> tuple[str, int]:
        """(fid, length) of the native file's current content in the archive, stored or
        appended to now unless its fingerprint says it is the version archived."""
        if path not in self._stored:
            fid = self.index["current"].get(path)
            record = self.index["files"].get(fid)
            if record and not record.get("damaged") and record["fingerprint"] == [st.st_size, st.st_mtime_ns]:
                self._stored[path] = (fid, archive.native_size(record))
            else:
                self._stored[path] = self._read_native(path, fid, record)
        return self._stored[path]

    def _read_native(self, path: str, fid: str | None, record: dict | None) -> tuple[str, int]:
        try:
            fd = open_native(path)
        except OSError as exc:
            raise NativeError(f"{path}: {exc.strerror or exc}") from None
        try:
            st = os.fstat(fd)
            if record and self._extends(fd, fid, record, st.st_size):
                old = archive.native_size(record)
                if st.st_size > old:
                    self._append(fd, fid, record, old, st)
                elif not self._same_content(fd, record):
                    return self._new_version(fd, path, st)
                record["fingerprint"] = _fingerprint_if_whole(record, st)
                self._dirty = True
                return fid, archive.native_size(record)
            return self._new_version(fd, path, st)
        finally:
            os.close(fd)

    def _extends(self, fd: int, fid: str, record: dict, size: int) -> bool:
        """Whether the file is the archived version, grown or not: no smaller than it, its head
        and the bytes before the archived end unchanged, the version intact and not yet cut in
        too many frames."""
        old = archive.native_size(record)
        if record.get("damaged") or not old or size < old or len(record["frames"]) >= MAX_FRAMES:
            return False
        try:
            if os.path.getsize(archive.blob_path(self.env, fid)) < archive.stored_size(record):
                return False  # the blob lost data: stored anew
        except OSError:
            return False
        head, tail = _ends(fd, old)
        return head == record["head"] and tail == record["tail"]

    def _same_content(self, fd: int, record: dict) -> bool:
        """A file of the archived size whose mtime changed: each frame's bytes compared."""
        position = 0
        for _, native, digest in record["frames"]:
            hasher = hashlib.sha256()
            for data in _native_chunks(fd, position, position + native):
                hasher.update(data)
            if hasher.hexdigest() != digest:
                return False
            position += native
        return True

    def _append(self, fd: int, fid: str, record: dict, old: int, st) -> None:
        """The bytes past the archived end, as one more frame of the same blob."""
        stored = archive.stored_size(record)
        try:
            bfd = os.open(archive.blob_path(self.env, fid), os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise self._failure(exc) from None
        try:
            os.ftruncate(bfd, stored)  # what a killed run appended past the index
            frame = self._frame(fd, old, st.st_size, bfd, stored)
        except BaseException:
            _cut(bfd, stored)
            raise
        finally:
            os.close(bfd)
        if frame is not None:
            record["frames"].append(frame)
        record["head"], record["tail"] = _ends(fd, archive.native_size(record))

    def _new_version(self, fd: int, path: str, st) -> tuple[str, int]:
        fid = archive.new_fid()
        record = self._write_version(fid, path, lambda bfd: self._frame(fd, 0, st.st_size, bfd, 0))
        record["fingerprint"] = _fingerprint_if_whole(record, st)
        record["head"], record["tail"] = _ends(fd, archive.native_size(record))
        self.index["current"][path] = fid
        return fid, archive.native_size(record)

    def _write_version(self, fid: str, path: str, write) -> dict:
        """A new blob holding one frame (`write(blob fd)`), and its record."""
        blob = archive.blob_path(self.env, fid)
        try:
            cache.make_private_dirs(os.path.dirname(blob))
            bfd = os.open(blob, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                          cache.PRIVATE_FILE)
        except OSError as exc:
            raise self._failure(exc) from None
        try:
            frame = write(bfd)
        except BaseException:
            os.close(bfd)
            _unlink(blob)
            raise
        os.close(bfd)
        record = {"path": path, "frames": [frame] if frame else [], "fingerprint": None,
                  "head": "", "tail": ""}
        self.index["files"][fid] = record
        self._dirty = True
        return record

    def _frame(self, fd: int, start: int, end: int, bfd: int, at: int) -> list | None:
        """Bytes [start, end) of a native file compressed into one zstd frame written at `at`:
        [stored bytes, native bytes, sha256]; None when there were no bytes."""
        import zstandard

        compressor = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).compressobj()
        hasher, native, position = hashlib.sha256(), 0, at
        for data in _native_chunks(fd, start, end):
            hasher.update(data)
            native += len(data)
            position = self._write(bfd, compressor.compress(data), position)
        if not native:
            return None
        position = self._write(bfd, compressor.flush(), position)
        self.summary.bytes_native += native
        self.summary.bytes_stored += position - at
        self._added_since_commit += position - at
        return [position - at, native, hasher.hexdigest()]

    def _frame_of_bytes(self, data: bytes, bfd: int) -> list | None:
        import zstandard

        if not data:
            return None
        compressed = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).compress(data)
        end = self._write(bfd, compressed, 0)
        self.summary.bytes_native += len(data)
        self.summary.bytes_stored += end
        self._added_since_commit += end
        return [end, len(data), _digest(data)]

    def _write(self, fd: int, data: bytes, position: int) -> int:
        view = memoryview(data)
        while view:
            self._crash_point()
            try:
                written = os.pwrite(fd, view[:archive.CHUNK], position)
            except OSError as exc:
                raise self._failure(exc) from None
            view = view[written:]
            position += written
        return position

    # the index --------------------------------------------------------------------------------------
    def _commit_when_due(self) -> None:
        if self._dirty and (self._added_since_commit >= COMMIT_BYTES
                            or time.monotonic() - self._committed_at >= COMMIT_SECONDS):
            self.commit()

    def commit(self) -> None:
        """Write the index (atomically: temporary file, rename), naming everything written."""
        if not self._dirty:
            return
        self._crash_point()
        try:
            cache.write_private(archive.index_path(self.env), archive.encode_index(self.index))
        except OSError as exc:
            raise self._failure(exc) from None
        self._crash_point()
        self._dirty = False
        self._added_since_commit = 0
        self._committed_at = time.monotonic()

    def collect_garbage(self, orphans: bool = True) -> None:
        """Drop the versions no session needs (their blobs removed after the index that no
        longer names them is committed); with `orphans`, also the blobs and temporary index
        files a killed run left."""
        files = self.index["files"]
        needed = {fid for entry in self.index["sessions"].values()
                  for _, kind, fid, _ in entry["files"] if kind == "file"}
        dropped = [fid for fid in files if fid not in needed]
        for fid in dropped:
            del files[fid]
        current = self.index["current"]
        for path in [p for p, fid in current.items() if fid not in files]:
            del current[path]
        self._dirty = self._dirty or bool(dropped)
        self.commit()
        for fid in dropped:
            self._crash_point()
            _unlink(archive.blob_path(self.env, fid))
        if orphans:
            self._remove_orphans()

    def _remove_orphans(self) -> None:
        data = os.path.join(self.root, archive.DATA)
        for name in listdir(self.root):
            if name.startswith(f".{archive.INDEX}.") and name.endswith(".tmp"):
                _unlink(os.path.join(self.root, name))
        for sub in listdir(data):
            for name in listdir(os.path.join(data, sub)):
                if name[: -len(".zst")] not in self.index["files"]:
                    _unlink(os.path.join(data, sub, name))

    # forgetting ------------------------------------------------------------------------------------
    def forget(self, keys: list[str]) -> tuple[int, int]:
        """Remove sessions from the archive for good (never archived again); their versions no
        other session needs are deleted. The number that were archived, and the number of other
        sessions still holding one of their versions: a file of many sessions (a database kept
        whole, for a session an extract could not hold; Aider's history) stays while one of
        them needs it, with what it says of the forgotten ones."""
        removed, paths = 0, set()
        for key in keys:
            entry = self.index["sessions"].pop(key, None)
            removed += entry is not None
            paths |= {path for path, kind, _, _ in (entry or {}).get("files", []) if kind == "file"}
            self.index["forgotten"][key] = time.time()
        self._dirty = True
        self.collect_garbage()
        return removed, sum(1 for entry in self.index["sessions"].values() if _keeps_whole(entry, paths))

    # verifying -------------------------------------------------------------------------------------
    def verify(self) -> list[str]:
        """Read every version back; mark those that are damaged (the next run stores them anew
        when their agent still has them). One line per damaged version."""
        problems = []
        for fid, record in self.index["files"].items():
            if record.get("damaged"):
                problems.append(f"{record['path']}: {record['damaged']}")
                continue
            reason = archive.check_version(self.env, fid, record)
            if reason:
                record["damaged"] = reason
                self._dirty = True
                problems.append(f"{record['path']}: {reason}")
        self.commit()
        return problems

    # failures --------------------------------------------------------------------------------------
    def _failure(self, exc: OSError) -> UserError:
        if exc.errno in FULL:
            return DiskFull(self.root)
        return UserError(f"cannot write the archive ({self.root}): {exc.strerror or exc}")

    def _crash_point(self) -> None:
        """Where the kill tests stop a run: after `CRASH_VARIABLE` writes, SIGKILL."""
        if self._crash_after:
            self._writes += 1
            if self._writes >= self._crash_after:
                import signal

                os.kill(os.getpid(), signal.SIGKILL)


def _fingerprint_if_whole(record: dict, st) -> list | None:
    """The fingerprint the version is known by: the file's, when every byte of it was read
    (None when it shrank while read: the next run reads it again)."""
    return [st.st_size, st.st_mtime_ns] if archive.native_size(record) == st.st_size else None


def _native_chunks(fd: int, start: int, end: int):
    """The bytes [start, end) of a native file, in chunks (fewer when it shrank meanwhile)."""
    position = start
    while position < end:
        try:
            data = os.pread(fd, min(archive.CHUNK, end - position), position)
        except OSError as exc:
            raise NativeError(f"cannot read: {exc.strerror}") from None
        if not data:
            return
        position += len(data)
        yield data


def _ends(fd: int, length: int) -> tuple[str, str]:
    """sha256 of the first HEAD_BYTES of the first `length` bytes, and of the last HEAD_BYTES."""
    head = b"".join(_native_chunks(fd, 0, min(length, archive.HEAD_BYTES)))
    tail = b"".join(_native_chunks(fd, max(0, length - archive.HEAD_BYTES), length))
    return _digest(head), _digest(tail)


def _cut(fd: int, length: int) -> None:
    try:
        os.ftruncate(fd, length)
    except OSError:
        pass


def _keeps_whole(entry: dict, paths: set) -> bool:
    """Whether an archived session keeps one of `paths` as the whole file (not as an extract of
    its own rows, which has a signature): a file that holds other sessions too."""
    return entry.get("signature") is None and any(kind == "file" and path in paths for path, kind, _, _ in entry["files"])


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def is_current(entry: dict | None, fingerprint: list, record: list, index: dict) -> bool:
    """Whether an archived entry holds the session as it is now: same discovery record, same
    native fingerprint, and none of its versions found damaged (those are stored anew)."""
    if not entry or entry["fingerprint"] != fingerprint or entry["record"] != record:
        return False
    files = index["files"]
    return all(kind != "file" or (fid in files and not files[fid].get("damaged"))
               for _, kind, fid, _ in entry["files"])


def _read_also(module, session, env) -> list[str]:
    """The files the module says translation reads besides `dependencies` (discovery/archive.py)."""
    found = getattr(module, "archive_dependencies", None)
    try:
        return list(found(session, env)) if found else []
    except OSError as exc:  # a side file that cannot be read now: archived as it was
        raise NativeError(f"{exc.filename or session.source}: {exc.strerror or exc}") from None


def _newest(fingerprint: list) -> int:
    return max((entry[1] for entry in fingerprint if entry), default=0)


def discovery_record(session) -> list:
    """The session as live discovery saw it, without what the catalog adds to it (twins are
    marked again when the archived session is listed)."""
    record = session.to_cache()
    extra = {k: v for k, v in session.extra.items() if k not in ("twin", "archived")}
    return record[:-1] + [extra] if isinstance(record[-1], dict) else record


def pending(env, sessions: list, settled_before_ns: int | None = None) -> list:
    """The sessions a run would archive, found from the committed index without taking the
    lock (the mount asks this on every pass): those new or changed since archived, except the
    forgotten and, with `settled_before_ns`, those already archived whose files changed after
    it (being recorded: archived once they settle)."""
    index = archive.load(env)
    found, memo = [], {}
    for session in sessions:
        if not catalog.origin(session).in_store:  # archived already, or pulled: kept by its contributor
            continue
        module = agents.load(session.agent)
        key = archive.key_of(session, module)
        if key in index["forgotten"] or "scan_error" in session.extra:
            continue
        entry = index["sessions"].get(key)
        deps = catalog.dependencies(module, session.source, env)
        fingerprint = cache.fingerprint_of(cache.stats(deps, memo))
        if is_current(entry, fingerprint, discovery_record(session), index):
            continue
        if entry and settled_before_ns is not None and _newest(fingerprint) > settled_before_ns:
            continue
        found.append(session)
    return found


def archive_some(env, sessions: list, seconds: float, settled_before_ns: int) -> Summary | None:
    """The mount's pass: archive what `pending` finds, for about `seconds` at most (the rest is
    for the next pass); None when there was nothing to do or another process holds the lock."""
    todo = pending(env, sessions, settled_before_ns)
    if not todo:
        return None
    try:
        with Writer(env, wait=False) as writer:
            writer.update(todo, deadline=time.monotonic() + seconds, settled_before_ns=settled_before_ns)
            writer.collect_garbage(orphans=False)
            return writer.summary
    except Busy:
        return None


def live_sessions(found) -> list:
    return [s for s in found.sessions if catalog.origin(s).in_store]


# the command -------------------------------------------------------------------------------------
def run_archive(args, env) -> int:
    if args.verify:
        return _run_verify(args, env)
    if args.schedule or args.unschedule:
        from archiving import schedule

        said = schedule.install([*invocation.self_command(), "archive"], env) if args.schedule else schedule.remove(env)
        print(f"trajectoriz: {said}", file=sys.stderr)
        return 0
    from core import parallel

    with Writer(env) as writer:  # first: an archive that cannot be written is said at once
        sessions = live_sessions(catalog.discovered(env))
        progress = parallel.Progress(len(sessions), "archiving")
        try:
            writer.update(sessions, progress)
            writer.collect_garbage()
        finally:
            progress.clear()
        summary, totals = writer.summary, archive_totals(writer.index)
    _keep_facts(sessions, env)
    for problem in summary.problems:
        print(f"trajectoriz: warning: {problem}", file=sys.stderr)
    _print_summary(args, summary, totals, env)
    return 0


def _keep_facts(sessions: list, env) -> None:
    """The document facts of the sessions not rendered since they last changed (new ones, grown
    ones), rendered on every core: a project archived daily reads INDEX.md, `list` and cards'
    sizes without rendering anything."""
    from rendering import documents

    facts = documents.Facts(env)
    try:
        facts.of_all(sessions)
    finally:
        facts.save()


def archive_totals(index: dict) -> dict:
    files = index["files"].values()
    return {"archive_sessions": len(index["sessions"]),
            "archive_native_bytes": sum(archive.native_size(r) for r in files),
            "archive_stored_bytes": sum(archive.stored_size(r) for r in files)}


def _print_summary(args, summary: Summary, totals: dict, env) -> None:
    if args.json:
        from core.jsonlib import orjson

        record = {k: v for k, v in summary.as_dict().items() if k != "problems"}
        sys.stdout.buffer.write(orjson.dumps({**record, **totals, "folder": archive.folder(env)}) + b"\n")
        return

    print(f"Archived {summary.archived} new and {summary.updated} changed session(s) of "
          f"{summary.sessions_seen} ({summary.unchanged} unchanged"
          f"{f', {summary.failed} unreadable' if summary.failed else ''}"
          f"{f', {summary.forgotten} skipped: forgotten (trajectoriz forget)' if summary.forgotten else ''}): "
          f"{human_bytes(summary.bytes_native)} read, {human_bytes(summary.bytes_stored)} stored.\n"
          f"The archive holds {totals['archive_sessions']} session(s), "
          f"{human_bytes(totals['archive_stored_bytes'])} for "
          f"{human_bytes(totals['archive_native_bytes'])} of native data, in {archive.folder(env)}")


def _run_verify(args, env) -> int:
    with Writer(env) as writer:
        problems = writer.verify()
        totals = archive_totals(writer.index)
        versions = len(writer.index["files"])
    if args.json:
        from core.jsonlib import orjson

        sys.stdout.buffer.write(orjson.dumps({**totals, "versions": versions, "damaged": problems}) + b"\n")
    else:
        for problem in problems:
            print(f"damaged: {problem}")
        print(f"Checked {versions} archived file version(s) of {totals['archive_sessions']} session(s): "
              + (f"{len(problems)} damaged (the next `trajectoriz archive` stores again those "
                 f"their agent still has)" if problems else "all intact"))
    return 1 if problems else 0
